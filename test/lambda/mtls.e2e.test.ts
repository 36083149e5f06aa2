/**
 * Mutual TLS, the Lambda handler end to end: an HTTPS webhook on 127.0.0.1 that demands a client
 * certificate signed by a private CA, every certificate made in the test (testkit/certificates.ts),
 * the certificate given as files (local runs, daemons) or as a Secrets Manager secret (the stand-in
 * on 127.0.0.1), rotated like the signing secret, and a webhook that refuses it: one clear ERROR,
 * the records retried, never dead-lettered. An OAuth token endpoint behind the same private CA is
 * trusted as the webhook is, and never presented the client certificate.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, describe, expect, inject, test } from 'vitest';
import { createCa, type IssuedCertificate, TEST_HOSTS } from '../../testkit/certificates';
import { freshRecords } from '../../testkit/records';
import { startTokenEndpoint } from '../../testkit/token-endpoint';
import { startWebhook } from '../../testkit/webhook';
import { emulatorForFile, secretsManagerForFile } from '../support/fixtures';
import { capturedTelemetry, invoke, relayFor, sleep } from '../support/relay';

const emulator = await emulatorForFile({ visibilityTimeout: 30, maxReceiveCount: 5 });
const secretsManager = await secretsManagerForFile();
const ca = createCa();
const relayCertificate = ca.client('relay');
/** The webhook: HTTPS with the private CA's server certificate, taking only client certificates that CA signed. */
const webhook = await startWebhook(() => ({ status: 200 }), {
  tls: { ...ca.server(TEST_HOSTS), clientCa: ca.certificate },
});
/** An OAuth token endpoint over HTTPS, its certificate from the same private CA, asking for (not requiring) a client certificate. */
const tokens = await startTokenEndpoint('relay', 'client-secret', { tls: ca.server(TEST_HOSTS) });
afterAll(async () => {
  await Promise.all([webhook.close(), tokens.close()]);
});
const dir = mkdtempSync(join(inject('scratchDir'), 'mtls-'));

/** Writes `files` (name → PEM) into the scratch directory; returns their paths. */
function write(files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(files).map(([name, pem]) => {
      const path = join(dir, name);
      writeFileSync(path, pem);
      return [name, path];
    }),
  );
}

/** The file variables for `certificate`, and the CA file trusting the webhook's certificate. */
function fileEnv(certificate: IssuedCertificate, prefix: string): Record<string, string> {
  const paths = write({ [`${prefix}.crt`]: certificate.certificate, [`${prefix}.key`]: certificate.privateKey, 'ca.crt': ca.certificate });
  return {
    CLIENT_CERTIFICATE_FILE: paths[`${prefix}.crt`] as string,
    CLIENT_KEY_FILE: paths[`${prefix}.key`] as string,
    CA_CERTIFICATE_FILE: paths['ca.crt'] as string,
  };
}

/** `count` fresh records of the emulator's queue (delivered ones need no SQS call). */
const records = (count: number): SQSRecord[] => freshRecords(count, emulator.queue.arn);

const FAST = { BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '1', OUTAGE_THRESHOLD: '0' };

describe('a client certificate', () => {
  test('from files: every request presents it, and the private CA is trusted for the webhook', async () => {
    webhook.requests.length = 0;
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...fileEnv(relayCertificate, 'files'), MAX_CONCURRENCY: '5' });
    expect((await invoke(handler, { Records: records(20) })).batchItemFailures).toEqual([]);
    expect(webhook.requests).toHaveLength(20);
    expect(webhook.requests.every((request) => request.clientCertificate === 'relay')).toBe(true);
  });

  test('from Secrets Manager, as the function reads it: JSON with the certificate, its key and the CA', async () => {
    webhook.requests.length = 0;
    const id = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:relay-certificate';
    secretsManager.secrets.set(
      id,
      JSON.stringify({ certificate: relayCertificate.certificate, privateKey: relayCertificate.privateKey, caCertificate: ca.certificate }),
    );
    const handler = relayFor({ WEBHOOK_URL: webhook.url, CLIENT_CERTIFICATE_SECRET_ARN: id });
    expect((await invoke(handler, { Records: records(5) })).batchItemFailures).toEqual([]);
    expect(webhook.requests.map((request) => request.clientCertificate)).toEqual(Array(5).fill('relay'));
  });

  test('rotated like the signing secret: a new pair is presented on new connections, a pair that does not match is refused, the last good kept', async () => {
    webhook.requests.length = 0;
    const telemetry = capturedTelemetry();
    const env = fileEnv(ca.client('relay-1'), 'rotating');
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...env, SECRETS_REFRESH_SECONDS: '1' }, telemetry);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toEqual([]);

    const second = ca.client('relay-2');
    write({ 'rotating.crt': second.certificate, 'rotating.key': second.privateKey });
    // Past the refresh and past the kept-alive connections' idle bound (4 s): a new connection, the new pair.
    await sleep(4_500);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toEqual([]);

    // A certificate without its own key: OpenSSL refuses the pair, the last good one stays.
    write({ 'rotating.crt': ca.client('relay-3').certificate });
    await sleep(4_500);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toEqual([]);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toEqual([]);
    expect(webhook.requests.map((request) => request.clientCertificate)).toEqual([
      'relay-1',
      'relay-1',
      'relay-2',
      'relay-2',
      'relay-2',
      'relay-2',
      'relay-2',
      'relay-2',
    ]);
    const errors = telemetry.lines.filter((line) => line.level === 'ERROR');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      message: 'The client certificate in its files is not valid; still using the last good value',
      error: expect.stringContaining('key values mismatch'),
    });
    // Nothing of a key in any line.
    for (const line of telemetry.lines) expect(JSON.stringify(line)).not.toContain('PRIVATE KEY');
  }, 30_000);
});

describe('a webhook that refuses the certificate', () => {
  test('one signed by a CA it does not trust: one ERROR, the records retried, never dead-lettered; a good one is taken again', async () => {
    const rogue = createCa('rogue CA').client('relay');
    const telemetry = capturedTelemetry();
    const env = fileEnv(rogue, 'rogue');
    const handler = relayFor(
      { WEBHOOK_URL: webhook.url, ...env, ...FAST, DLQ_URL: emulator.dlq.url, SECRETS_REFRESH_SECONDS: '1' },
      telemetry,
    );
    for (let batch = 0; batch < 2; batch += 1) {
      for (let i = 0; i < 3; i += 1) await emulator.send(`refused ${batch}.${i}`);
      const response = await invoke(handler, await emulator.receiveEvent(3));
      expect(response.batchItemFailures).toHaveLength(3);
    }
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
    expect(emulator.counts(emulator.queue)).toMatchObject({ inflight: 6 });
    const errors = telemetry.lines.filter((line) => line.level === 'ERROR');
    expect(errors).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(
          /^The webhook closed the connection right after the TLS handshake.*client certificate; records are retried$/,
        ),
        clientCertificate: 'presented',
      }),
    ]);

    // The operator installs the right certificate: read at the next refresh, accepted again, said once.
    write({ 'rogue.crt': relayCertificate.certificate, 'rogue.key': relayCertificate.privateKey });
    await sleep(1_100);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toEqual([]);
    expect(telemetry.lines.filter((line) => line.level === 'INFO' && /TLS/.test(line.message))).toEqual([
      expect.objectContaining({ message: 'The webhook accepts the TLS connection again' }),
    ]);
  });

  test('none presented where one is required: the ERROR names the TLS alert, certificate_required', async () => {
    const telemetry = capturedTelemetry();
    const { 'ca.crt': caFile } = write({ 'ca.crt': ca.certificate });
    const handler = relayFor({ WEBHOOK_URL: webhook.url, CA_CERTIFICATE_FILE: caFile as string, ...FAST }, telemetry);
    for (let batch = 0; batch < 2; batch += 1) {
      await emulator.send(`no certificate ${batch}`);
      expect((await invoke(handler, await emulator.receiveEvent())).batchItemFailures).toHaveLength(1);
    }
    const errors = telemetry.lines.filter((line) => line.level === 'ERROR');
    expect(errors).toEqual([
      expect.objectContaining({
        message:
          'The webhook refused the connection (no client certificate is configured) with the TLS alert certificate_required; records are retried',
        tlsAlert: 'certificate_required',
      }),
    ]);
    // The record's own line carries OpenSSL's words too.
    expect(telemetry.lines.find((line) => line.message === 'Message not delivered; returned to the queue')?.error).toMatch(
      /ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED/,
    );
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  });

  test('a webhook certificate the relay does not trust (the private CA not given): an ERROR that says so', async () => {
    const telemetry = capturedTelemetry();
    const paths = write({ 'no-ca.crt': relayCertificate.certificate, 'no-ca.key': relayCertificate.privateKey });
    const handler = relayFor(
      {
        WEBHOOK_URL: webhook.url,
        CLIENT_CERTIFICATE_FILE: paths['no-ca.crt'] as string,
        CLIENT_KEY_FILE: paths['no-ca.key'] as string,
        ...FAST,
      },
      telemetry,
    );
    await emulator.send('untrusted webhook');
    expect((await invoke(handler, await emulator.receiveEvent())).batchItemFailures).toHaveLength(1);
    expect(telemetry.lines.filter((line) => line.level === 'ERROR')).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(
          /^The webhook's TLS certificate is not trusted \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)\): its CA belongs in CA_CERTIFICATE_FILE/,
        ),
      }),
    ]);
  });
});

describe('a webhook whose certificate is self-signed or from a private CA, no CA given (no mutual TLS)', () => {
  const server = ca.server(TEST_HOSTS);
  test.each([
    ['its certificate alone', server.certificate],
    ['its certificate and the self-signed root', `${server.certificate}${ca.certificate}`],
  ])("%s: the record's line names the relay's CA settings, not Node.js's --use-system-ca", async (_, certificate) => {
    const untrusted = await startWebhook(() => ({ status: 200 }), { tls: { certificate, privateKey: server.privateKey } });
    try {
      const telemetry = capturedTelemetry();
      const handler = relayFor({ WEBHOOK_URL: untrusted.url, ...FAST }, telemetry);
      await emulator.send('private CA, none given');
      expect((await invoke(handler, await emulator.receiveEvent())).batchItemFailures).toHaveLength(1);
      const error = String(telemetry.lines.find((line) => line.message === 'Message not delivered; returned to the queue')?.error);
      expect(error).toMatch(
        /^connection: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN): [^;(]+ \(its TLS certificate's CA is not trusted: a private CA belongs in CA_CERTIFICATE_FILE or the client certificate secret's caCertificate\)$/,
      );
      expect(error).not.toContain('--use-system-ca');
      expect(untrusted.requests).toEqual([]);
    } finally {
      await untrusted.close();
    }
  });
});

describe('an OAuth token endpoint behind the same private CA', () => {
  const OAUTH = { OAUTH_TOKEN_URL: tokens.url, OAUTH_CLIENT_ID: 'relay', OAUTH_CLIENT_SECRET: 'client-secret' };

  test('with the CA in CA_CERTIFICATE_FILE: trusted as the webhook is; the client certificate goes to the webhook only', async () => {
    webhook.requests.length = 0;
    tokens.grants.length = 0;
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...fileEnv(relayCertificate, 'oauth-files'), ...OAUTH });
    expect((await invoke(handler, { Records: records(3) })).batchItemFailures).toEqual([]);
    expect(tokens.grants).toHaveLength(1);
    expect(tokens.grants[0]?.clientCertificate).toBeUndefined();
    expect(webhook.requests.map((request) => [request.clientCertificate, request.headers.authorization])).toEqual(
      Array(3).fill(['relay', `Bearer ${tokens.issued.at(-1)}`]),
    );
  });

  test("with the CA in the secret's caCertificate: the same, the secret read once for both", async () => {
    webhook.requests.length = 0;
    tokens.grants.length = 0;
    const id = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:relay-certificate-oauth';
    secretsManager.secrets.set(
      id,
      JSON.stringify({ certificate: relayCertificate.certificate, privateKey: relayCertificate.privateKey, caCertificate: ca.certificate }),
    );
    const reads = secretsManager.calls.count;
    const handler = relayFor({ WEBHOOK_URL: webhook.url, CLIENT_CERTIFICATE_SECRET_ARN: id, ...OAUTH });
    expect((await invoke(handler, { Records: records(3) })).batchItemFailures).toEqual([]);
    expect(tokens.grants).toHaveLength(1);
    expect(tokens.grants[0]?.clientCertificate).toBeUndefined();
    expect(webhook.requests.every((request) => request.headers.authorization === `Bearer ${tokens.issued.at(-1)}`)).toBe(true);
    expect(secretsManager.calls.count - reads).toBe(1);
  });

  test('a token endpoint whose CA is not given: no token, the records retried, the error says where the CA goes', async () => {
    const stranger = await startTokenEndpoint('relay', 'client-secret', { tls: createCa('another CA').server(TEST_HOSTS) });
    try {
      const telemetry = capturedTelemetry();
      const handler = relayFor(
        { WEBHOOK_URL: webhook.url, ...fileEnv(relayCertificate, 'oauth-stranger'), ...OAUTH, OAUTH_TOKEN_URL: stranger.url, ...FAST },
        telemetry,
      );
      expect((await invoke(handler, { Records: records(1) })).batchItemFailures).toHaveLength(1);
      expect(stranger.grants).toHaveLength(0);
      expect(telemetry.lines.find((line) => line.level === 'ERROR')).toMatchObject({
        message: expect.stringMatching(/^No OAuth token/),
        error: expect.stringMatching(
          /(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN).*a private CA belongs in CA_CERTIFICATE_FILE or the client certificate secret's caCertificate/,
        ),
      });
    } finally {
      await stranger.close();
    }
  });
});
