/**
 * OAuth, mutual TLS and a proxy all at once, as `npm start` and the daemon run them: the runner as
 * a child process, an HTTPS webhook demanding a client certificate and a bearer token, named
 * `webhook.test` and reached only through a CONNECT proxy that demands credentials, the token
 * endpoint (`oauth.test`) behind the same proxy. Messages go in with the AWS SDK; the webhook, the
 * token endpoint and the proxy say what came out; the output holds none of the secrets.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, test } from 'vitest';
import { createCa, TEST_HOSTS } from '../../testkit/certificates';
import { startConnectProxy } from '../../testkit/connect-proxy';
import { queueCounts, sendMessages, stopRelay, until } from '../../testkit/relay-process';
import { startTokenEndpoint } from '../../testkit/token-endpoint';
import { startWebhook } from '../../testkit/webhook';
import { emulatorForTest, localRelayForTest } from '../support/fixtures';

const CLIENT_SECRET = 'daemon-client-secret';
const PROXY_PASSWORD = 'daemon-proxy-password';

const ca = createCa();
const tokens = await startTokenEndpoint('relay', CLIENT_SECRET);
const proxy = await startConnectProxy(`relay:${PROXY_PASSWORD}`);
const webhook = await startWebhook(
  (request) =>
    // Its health check takes no token, but is behind the same proxy, CA and client certificate as the rest.
    request.path === '/health'
      ? { status: request.clientCertificate === 'relay' ? 204 : 401 }
      : { status: tokens.verify(request.headers.authorization) && request.clientCertificate === 'relay' ? 200 : 401 },
  { tls: { ...ca.server(TEST_HOSTS), clientCa: ca.certificate }, host: 'webhook.test' },
);
afterAll(async () => {
  await Promise.all([tokens.close(), proxy.close(), webhook.close()]);
});

const dir = mkdtempSync(join(inject('scratchDir'), 'enterprise-local-'));
const client = ca.client('relay');
const path = (name: string, text: string): string => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const proxyUrl = `http://relay:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`;
/** Everything at once: what a relay behind a corporate proxy sending to an enterprise's webhook sets. */
const ENTERPRISE = {
  WEBHOOK_URL: webhook.url,
  HTTPS_PROXY: proxyUrl,
  HTTP_PROXY: proxyUrl,
  // The test's token endpoint speaks plain http; a real one would be https.
  ALLOW_INSECURE_HTTP: 'true',
  OAUTH_TOKEN_URL: tokens.url.replace('127.0.0.1', 'oauth.test'),
  OAUTH_CLIENT_ID: 'relay',
  OAUTH_CLIENT_SECRET: CLIENT_SECRET,
  CLIENT_CERTIFICATE_FILE: path('relay.crt', client.certificate),
  CLIENT_KEY_FILE: path('relay.key', client.privateKey),
  CA_CERTIFICATE_FILE: path('ca.crt', ca.certificate),
  LOG_FORMAT: 'json',
};

/** What the relay printed holds neither secret, nor a token. */
function expectNoSecrets(output: string): void {
  expect(output).not.toContain(CLIENT_SECRET);
  expect(output).not.toContain(PROXY_PASSWORD);
  for (const token of tokens.issued) expect(output).not.toContain(token);
}

describe('npm start', () => {
  test('with the emulator: every message delivered with the token and the certificate, through the proxy; one token request', async () => {
    webhook.reset();
    tokens.grants.length = 0;
    const { relay, ready, sqs } = await localRelayForTest(ENTERPRISE);
    await sendMessages(sqs, ready.queueUrl, 30);
    await until(() => webhook.requests.length >= 30);
    await until(async () => Object.values(await queueCounts(sqs, ready.queueUrl)).every((count) => count === 0));
    expect(await queueCounts(sqs, ready.dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    expect(webhook.requests).toHaveLength(30);
    expect(tokens.grants).toHaveLength(1);
    expect(new Set(proxy.tunnels.map((tunnel) => tunnel.authority.split(':')[0]))).toEqual(new Set(['webhook.test', 'oauth.test']));
    expect(await stopRelay(relay)).toBe(0);
    expectNoSecrets(relay.output());
  }, 60_000);

  test('the health check reaches the webhook as deliveries do: through the proxy, trusting its CA, with the certificate', async () => {
    webhook.reset();
    const health = webhook.url.replace(/\/hook$/, '/health');
    const { relay, ready, sqs } = await localRelayForTest({
      ...ENTERPRISE,
      WEBHOOK_HEALTH_CHECK_URL: health,
      HEALTH_CHECK_INTERVAL_SECONDS: '1',
    });
    // Its first verdict: failing (reached directly, the proxy's host unknown, the CA untrusted) would pause polling for good.
    const [verdict] = await relay.waitForOutput(/Webhook health check (passing|failing)/);
    expect(verdict).toBe('Webhook health check passing');
    expect(webhook.requests.find((request) => request.path === '/health')).toMatchObject({ clientCertificate: 'relay' });
    await sendMessages(sqs, ready.queueUrl, 5);
    await until(() => webhook.requests.filter((request) => request.path === '/hook').length >= 5);
    expect(await stopRelay(relay)).toBe(0);
    expectNoSecrets(relay.output());
  }, 60_000);
});

describe('the daemon (QUEUE_URL)', () => {
  test('on an existing queue: the same, one token per poller', async () => {
    webhook.reset();
    tokens.grants.length = 0;
    const emulator = await emulatorForTest({ keepEnvironment: true, maxReceiveCount: 5 });
    const { relay } = await localRelayForTest({
      ...ENTERPRISE,
      ...emulator.daemonEnv,
      POLLERS: '2',
    });
    await sendMessages(emulator.sqs, emulator.queue.url, 30);
    await until(() => webhook.requests.length >= 30);
    await until(() => Object.values(emulator.counts(emulator.queue)).every((count) => count === 0));
    expect(webhook.requests).toHaveLength(30);
    // Each poller is a warm container of its own.
    expect(tokens.grants.length).toBeGreaterThanOrEqual(1);
    expect(tokens.grants.length).toBeLessThanOrEqual(2);
    expect(await stopRelay(relay)).toBe(0);
    expectNoSecrets(relay.output());
  }, 60_000);

  test('a refusal at start names the setting: a key file that does not exist', async () => {
    const { startRelayProcess } = await import('../../testkit/relay-process');
    const relay = startRelayProcess({ ...ENTERPRISE, CLIENT_KEY_FILE: join(dir, 'missing.key') });
    expect(await relay.exited).not.toBe(0);
    expect(relay.errors()).toMatch(/CLIENT_KEY_FILE must be a readable PEM file \(ENOENT\)/);
    expectNoSecrets(relay.output());
  }, 30_000);
});
