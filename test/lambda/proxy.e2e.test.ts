/**
 * A forward proxy, the Lambda handler end to end: a real CONNECT proxy on 127.0.0.1 that demands
 * credentials and resolves every name to 127.0.0.1 (so the webhook can be `webhook.test`, reached
 * only through it), an HTTPS webhook demanding a client certificate behind it, a token endpoint
 * behind it too. The pool and the timeouts behave as without a proxy; the proxy's credentials
 * appear nowhere.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, inject, test } from 'vitest';
import { loadConfig } from '../../lambda/config';
import { webhookConnector } from '../../lambda/connector';
import { WebhookTransmitter } from '../../lambda/transmitter';
import { createCa, TEST_HOSTS } from '../../testkit/certificates';
import { startConnectProxy } from '../../testkit/connect-proxy';
import { freshRecords } from '../../testkit/records';
import { startTokenEndpoint } from '../../testkit/token-endpoint';
import { startWebhook } from '../../testkit/webhook';
import { emulatorForFile } from '../support/fixtures';
import { capturedTelemetry, invoke, type LogLine, relayFor, sleep } from '../support/relay';

const PROXY_PASSWORD = 'hunter2-proxy';
const emulator = await emulatorForFile({ visibilityTimeout: 30, maxReceiveCount: 5 });
const proxy = await startConnectProxy(`relay:${PROXY_PASSWORD}`);
const ca = createCa();
const client = ca.client('relay');
const webhook = await startWebhook(() => ({ status: 200 }), {
  tls: { ...ca.server(TEST_HOSTS), clientCa: ca.certificate },
  host: 'webhook.test',
});
const tokens = await startTokenEndpoint('relay', 'client-secret');
afterAll(async () => {
  await Promise.all([proxy.close(), webhook.close(), tokens.close()]);
});
afterEach(() => {
  proxy.tunnels.length = 0;
  proxy.hanging = false;
  webhook.reset();
  tokens.grants.length = 0;
});

const dir = mkdtempSync(join(inject('scratchDir'), 'proxy-'));
const files = Object.fromEntries(
  Object.entries({ 'client.crt': client.certificate, 'client.key': client.privateKey, 'ca.crt': ca.certificate }).map(([name, pem]) => {
    writeFileSync(join(dir, name), pem);
    return [name, join(dir, name)];
  }),
) as Record<string, string>;
const CERTIFICATE = {
  CLIENT_CERTIFICATE_FILE: files['client.crt'] as string,
  CLIENT_KEY_FILE: files['client.key'] as string,
  CA_CERTIFICATE_FILE: files['ca.crt'] as string,
};
const PROXIED = { HTTPS_PROXY: `http://relay:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`, ...CERTIFICATE };

/** `count` fresh records of the emulator's queue (delivered ones need no SQS call). */
const records = (count: number): SQSRecord[] => freshRecords(count, emulator.queue.arn);

function expectNoProxyPassword(lines: readonly LogLine[]): void {
  for (const line of lines) expect(JSON.stringify(line)).not.toContain(PROXY_PASSWORD);
}

describe('through a CONNECT proxy', () => {
  test('an HTTPS webhook with a client certificate: TLS end to end in the tunnel, the proxy authenticated, connections kept alive as without it', async () => {
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...PROXIED, MAX_CONCURRENCY: '5' }, telemetry);
    for (let batch = 0; batch < 3; batch += 1) expect((await invoke(handler, { Records: records(20) })).batchItemFailures).toEqual([]);
    expect(webhook.requests).toHaveLength(60);
    expect(webhook.requests.every((request) => request.clientCertificate === 'relay')).toBe(true);
    // The proxy saw only where to, with the credentials of the URL.
    const port = new URL(webhook.url).port;
    expect(new Set(proxy.tunnels.map((tunnel) => tunnel.authority))).toEqual(new Set([`webhook.test:${port}`]));
    expect(
      proxy.tunnels.every((tunnel) => tunnel.authorization === `Basic ${Buffer.from(`relay:${PROXY_PASSWORD}`).toString('base64')}`),
    ).toBe(true);
    // One tunnel per kept-alive connection: at most the concurrency, not one per request.
    expect(proxy.tunnels.length).toBeGreaterThan(0);
    expect(proxy.tunnels.length).toBeLessThanOrEqual(5);
    expectNoProxyPassword(telemetry.lines);
  });

  test('the OAuth token endpoint is reached through it too (HTTP_PROXY for an http:// one)', async () => {
    const tokenUrl = tokens.url.replace('127.0.0.1', 'oauth.test');
    const handler = relayFor({
      WEBHOOK_URL: webhook.url,
      ...PROXIED,
      HTTP_PROXY: PROXIED.HTTPS_PROXY,
      ALLOW_INSECURE_HTTP: 'true',
      OAUTH_TOKEN_URL: tokenUrl,
      OAUTH_CLIENT_ID: 'relay',
      OAUTH_CLIENT_SECRET: 'client-secret',
    });
    expect((await invoke(handler, { Records: records(3) })).batchItemFailures).toEqual([]);
    expect(tokens.grants).toHaveLength(1);
    expect(proxy.tunnels.map((tunnel) => tunnel.authority)).toContain(`oauth.test:${new URL(tokens.url).port}`);
    expect(webhook.requests.every((request) => request.headers.authorization === `Bearer ${tokens.issued.at(-1)}`)).toBe(true);
  });

  test('an HTTPS token endpoint behind the private CA, through the tunnel: trusted as the webhook is, never sent the client certificate', async () => {
    const secureTokens = await startTokenEndpoint('relay', 'client-secret', { tls: ca.server([...TEST_HOSTS, 'oauth.test']) });
    try {
      const tokenUrl = secureTokens.url.replace('127.0.0.1', 'oauth.test');
      const handler = relayFor({
        WEBHOOK_URL: webhook.url,
        ...PROXIED,
        OAUTH_TOKEN_URL: tokenUrl,
        OAUTH_CLIENT_ID: 'relay',
        OAUTH_CLIENT_SECRET: 'client-secret',
      });
      expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toEqual([]);
      expect(secureTokens.grants).toHaveLength(1);
      expect(secureTokens.grants[0]?.clientCertificate).toBeUndefined();
      expect(proxy.tunnels.map((tunnel) => tunnel.authority)).toContain(`oauth.test:${new URL(tokenUrl).port}`);
      expect(webhook.requests.every((request) => request.headers.authorization === `Bearer ${secureTokens.issued.at(-1)}`)).toBe(true);
    } finally {
      await secureTokens.close();
    }
  });

  test('wrong proxy credentials: the records are retried, the error says 407, the password is in no line', async () => {
    const telemetry = capturedTelemetry();
    const wrong = `http://relay:${PROXY_PASSWORD}-old@127.0.0.1:${proxy.port}`;
    const handler = relayFor(
      { WEBHOOK_URL: webhook.url, ...PROXIED, HTTPS_PROXY: wrong, BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '1' },
      telemetry,
    );
    await emulator.send('behind a proxy');
    const response = await invoke(handler, await emulator.receiveEvent());
    expect(response.batchItemFailures).toHaveLength(1);
    expect(webhook.requests).toHaveLength(0);
    const line = telemetry.lines.find((entry) => entry.message === 'Message not delivered; returned to the queue');
    expect(line?.error).toMatch(
      new RegExp(`the proxy 127\\.0\\.0\\.1:${proxy.port} answered 407 to CONNECT webhook\\.test:\\d+ \\(proxy authentication required`),
    );
    expectNoProxyPassword(telemetry.lines);
  });

  test('a proxy that never answers the CONNECT: the request timeout bounds it, as without a proxy', async () => {
    proxy.hanging = true;
    const handler = relayFor({
      WEBHOOK_URL: webhook.url,
      ...PROXIED,
      REQUEST_TIMEOUT_MS: '500',
      BACKOFF: 'fixed',
      BACKOFF_BASE_SECONDS: '1',
    });
    await emulator.send('stuck at the proxy');
    const started = Date.now();
    const response = await invoke(handler, await emulator.receiveEvent());
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(response.batchItemFailures).toHaveLength(1);
  });

  test('NO_PROXY: a covered host is reached directly (here: not at all, as webhook.test has no address)', async () => {
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...PROXIED, NO_PROXY: 'example.com, .test', BACKOFF: 'fixed' }, telemetry);
    await emulator.send('not through the proxy');
    expect((await invoke(handler, await emulator.receiveEvent())).batchItemFailures).toHaveLength(1);
    expect(proxy.tunnels).toHaveLength(0);
    expect(telemetry.lines.find((line) => line.message === 'Message not delivered; returned to the queue')?.error).toMatch(/^dns: /);
  });
});

describe('the pool through a proxy', () => {
  test('a connection idle past its bound is not reused: a new tunnel, as a new connection without a proxy', async () => {
    const config = { ...loadConfig({ WEBHOOK_URL: webhook.url, ...PROXIED }), webhookUrl: new URL(webhook.url) };
    const telemetry = capturedTelemetry();
    const transmitter = new WebhookTransmitter(config.webhookUrl, 2, {
      idleConnectionMaxMs: 300,
      connector: webhookConnector(config, telemetry.logger),
    });
    try {
      const post = () => transmitter.post(['Content-Type', 'text/plain', 'Content-Length', '2'], Buffer.from('hi'), 2_000);
      expect(await post()).toMatchObject({ kind: 'response', status: 200 });
      expect(await post()).toMatchObject({ kind: 'response', status: 200 });
      expect(proxy.tunnels).toHaveLength(1);
      await sleep(400);
      expect(await post()).toMatchObject({ kind: 'response', status: 200 });
      expect(proxy.tunnels).toHaveLength(2);
      // The idle one was closed by the sweep, its tunnel with it: only the one in use is open.
      await sleep(50);
      expect(proxy.tunnels.map((tunnel) => tunnel.open)).toEqual([false, true]);
    } finally {
      transmitter.close();
    }
  });
});
