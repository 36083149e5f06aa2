/**
 * OAuth 2.0 client credentials, the Lambda handler end to end: a real token endpoint and a real
 * webhook that checks the bearer token on 127.0.0.1 (testkit), fauxqs for the queue, the records
 * received as Lambda receives them. One token per container, renewed before it expires and on a
 * 401; a token endpoint that fails or hangs is the relay's problem, never the record's; the token
 * and the client secret appear nowhere.
 */
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, test, vi } from 'vitest';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import { freshRecords } from '../../testkit/records';
import { startTokenEndpoint } from '../../testkit/token-endpoint';
import { emulatorForFile, secretsManagerForFile, webhookForFile } from '../support/fixtures';
import { capturedTelemetry, invoke, type LogLine, relayFor, sleep } from '../support/relay';

const CLIENT_ID = 'relay client';
const CLIENT_SECRET = 'very-secret+client/secret';

const emulator = await emulatorForFile({ visibilityTimeout: 30, maxReceiveCount: 5 });
const tokens = await startTokenEndpoint(CLIENT_ID, CLIENT_SECRET);
const secretsManager = await secretsManagerForFile();
afterAll(() => tokens.close());
afterEach(() => {
  tokens.grants.length = 0;
  tokens.issued.length = 0;
  tokens.expiresInSeconds = 3600;
  tokens.failWith = undefined;
  tokens.retryAfterSeconds = undefined;
  tokens.hanging = false;
  vi.restoreAllMocks();
});
/** The webhook a resource server would be: 200 to a valid token, 401 otherwise. */
const webhook = await webhookForFile((request) => ({ status: tokens.verify(request.headers.authorization) ? 200 : 401 }));

const OAUTH = {
  OAUTH_TOKEN_URL: tokens.url,
  OAUTH_CLIENT_ID: CLIENT_ID,
  OAUTH_CLIENT_SECRET: CLIENT_SECRET,
  BACKOFF: 'fixed',
  BACKOFF_BASE_SECONDS: '1',
};

/** `count` fresh records of the emulator's queue (delivered ones need no SQS call). */
const records = (count: number): SQSRecord[] => freshRecords(count, emulator.queue.arn);

/** Every log line, the batch responses and dead letters as text, which must hold neither the secret nor a token. */
function expectNoSecrets(texts: readonly string[]): void {
  for (const text of texts) {
    expect(text).not.toContain(CLIENT_SECRET);
    expect(text).not.toContain(encodeURIComponent(CLIENT_SECRET));
    for (const token of tokens.issued) expect(text).not.toContain(token);
  }
}

const linesText = (lines: readonly LogLine[]): string[] => lines.map((line) => JSON.stringify(line));

/**
 * As if `ms` had passed: `Date.now()`, the clock a token's age is counted by (and the token endpoint's expiries), reads that
 * much later for the rest of the test. Timers and the network are untouched; the relay sees an older token, not a mock.
 */
function timePasses(ms: number): void {
  const now = Date.now;
  vi.spyOn(Date, 'now').mockImplementation(() => now() + ms);
}

describe('one token per container', () => {
  test('concurrent requests share one token request; each carries the token; Basic client authentication with scope and audience', async () => {
    const telemetry = capturedTelemetry();
    const handler = relayFor(
      {
        WEBHOOK_URL: webhook.url,
        ...OAUTH,
        OAUTH_SCOPE: 'orders:write  audit',
        OAUTH_AUDIENCE: 'https://api.example.com',
        MAX_CONCURRENCY: '10',
      },
      telemetry,
    );
    const response = await invoke(handler, { Records: records(10) });
    expect(response.batchItemFailures).toEqual([]);
    expect(tokens.grants).toHaveLength(1);
    expect(tokens.grants[0]).toEqual({
      receivedAt: expect.any(Number),
      clientAuthentication: 'client_secret_basic',
      clientId: CLIENT_ID,
      form: { grant_type: 'client_credentials', scope: 'orders:write audit', audience: 'https://api.example.com' },
    });
    expect(webhook.requests).toHaveLength(10);
    for (const request of webhook.requests) expect(request.headers.authorization).toBe(`Bearer ${tokens.issued[0]}`);
    // A second batch of the warm container: no new token.
    expect((await invoke(handler, { Records: records(10) })).batchItemFailures).toEqual([]);
    expect(tokens.grants).toHaveLength(1);
    expectNoSecrets(linesText(telemetry.lines));
  });

  test('client_secret_post sends the id and the secret in the form', async () => {
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, OAUTH_CLIENT_AUTHENTICATION: 'client_secret_post' });
    expect((await invoke(handler, { Records: records(3) })).batchItemFailures).toEqual([]);
    expect(tokens.grants).toEqual([
      {
        receivedAt: expect.any(Number),
        clientAuthentication: 'client_secret_post',
        clientId: CLIENT_ID,
        form: { grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET },
      },
    ]);
  });

  test('the client secret from Secrets Manager: a newline around it (a secret saved from a file) is not sent, as a variable is trimmed', async () => {
    const id = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:relay-oauth-client';
    secretsManager.secrets.set(id, `${CLIENT_SECRET}\n`);
    const { OAUTH_CLIENT_SECRET: _given, ...fromSecret } = OAUTH;
    for (const authentication of ['client_secret_basic', 'client_secret_post']) {
      const handler = relayFor({
        WEBHOOK_URL: webhook.url,
        ...fromSecret,
        OAUTH_CLIENT_SECRET_ARN: id,
        OAUTH_CLIENT_AUTHENTICATION: authentication,
      });
      expect((await invoke(handler, { Records: records(3) })).batchItemFailures).toEqual([]);
    }
    expect(tokens.issued).toHaveLength(2);
  });

  test('10,000 records with a one-hour token: one token request', async () => {
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, MAX_CONCURRENCY: '50' });
    for (let batch = 0; batch < 100; batch += 1) expect((await invoke(handler, { Records: records(100) })).batchItemFailures).toEqual([]);
    expect(webhook.requests).toHaveLength(10_000);
    expect(tokens.grants).toHaveLength(1);
  }, 120_000);

  test('10,000 records with two-second tokens: each renewed before it expires, one token request per lifetime', async () => {
    tokens.expiresInSeconds = 2;
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, MAX_CONCURRENCY: '50' });
    const started = Date.now();
    // Spread over several lifetimes: 100 batches of 100, each followed by a short pause.
    for (let batch = 0; batch < 100; batch += 1) {
      expect((await invoke(handler, { Records: records(100) })).batchItemFailures).toEqual([]);
      await sleep(50);
    }
    const seconds = (Date.now() - started) / 1000;
    // Not one request more: a 401 (an expired token) would have been resent.
    expect(webhook.requests).toHaveLength(10_000);
    // Each new token was asked for while the one before was still good: renewed, not replaced once expired.
    for (let i = 1; i < tokens.grants.length; i += 1)
      expect(tokens.grants[i]?.receivedAt, `token ${i + 1}`).toBeLessThan(tokens.expiryOf(tokens.issued[i - 1] as string) as number);
    // Renewed at 80 % of a two-second lifetime: about one request per 1.6 s, never one per record or batch.
    expect(tokens.grants.length).toBeGreaterThanOrEqual(Math.floor(seconds / 2));
    expect(tokens.grants.length).toBeLessThanOrEqual(Math.ceil(seconds / 1.6) + 1);
  }, 180_000);
});

describe('a 401 from the webhook', () => {
  test('renews the token once and resends that record once, on the same attempt', async () => {
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, MAX_CONCURRENCY: '1' }, telemetry);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toEqual([]);
    timePasses(10_100); // older than the 10 s below which a 401 does not renew (a webhook refusing every token)
    tokens.revoke(tokens.issued[0] as string);
    const batch = records(3);
    const response = await invoke(handler, { Records: batch });
    expect(response.batchItemFailures).toEqual([]);
    expect(tokens.grants).toHaveLength(2);
    // The first record of the batch: refused with the old token, sent again with the new one, on its first receive.
    const firstId = batch[0]?.messageId;
    const itsRequests = webhook.requests.filter((request) => request.headers['x-carrier-message-id'] === firstId);
    expect(itsRequests.map((request) => request.headers.authorization)).toEqual([
      `Bearer ${tokens.issued[0]}`,
      `Bearer ${tokens.issued[1]}`,
    ]);
    expect(itsRequests.map((request) => request.headers['x-carrier-receive-count'])).toEqual(['1', '1']);
    expect(webhook.requests).toHaveLength(2 + 3 + 1);
    expectNoSecrets(linesText(telemetry.lines));
  });

  test('ten requests refused at once share one renewal', async () => {
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, MAX_CONCURRENCY: '10' });
    expect((await invoke(handler, { Records: records(1) })).batchItemFailures).toEqual([]);
    timePasses(10_100);
    tokens.revoke(tokens.issued[0] as string);
    expect((await invoke(handler, { Records: records(10) })).batchItemFailures).toEqual([]);
    expect(tokens.grants).toHaveLength(2);
  });

  test('a token revoked under 10 s after it was issued: the records retried (none dead-lettered), then sent with a new one', async () => {
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, DLQ_URL: emulator.dlq.url, MAX_CONCURRENCY: '1' });
    expect((await invoke(handler, { Records: records(1) })).batchItemFailures).toEqual([]);
    tokens.revoke(tokens.issued[0] as string);
    const batch = records(3);
    const refused = await invoke(handler, { Records: batch });
    expect(refused.batchItemFailures).toHaveLength(3);
    expect(tokens.grants).toHaveLength(1);
    timePasses(10_100);
    expect((await invoke(handler, { Records: batch })).batchItemFailures).toEqual([]);
    expect(tokens.grants).toHaveLength(2);
    expect(await emulator.receive(emulator.dlq)).toEqual([]);
  });

  test('a second 401 is the webhook answer, permanent as today: dead-lettered, and its reason does not quote the token', async () => {
    // A webhook that refuses every token, and quotes the one it got.
    webhook.respondWith((request) => ({ status: 401, body: `token ${String(request.headers.authorization)} is not for this API` }));
    await emulator.send('refused');
    const event: SQSEvent = await emulator.receiveEvent();
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, DLQ_URL: emulator.dlq.url }, telemetry);
    // The first token, refused at once: too young to renew, the record is retried.
    expect((await invoke(handler, event)).batchItemFailures).toHaveLength(1);
    // Back from the queue once the token may be renewed (the emulator keeps time by the same clock).
    timePasses(10_100);
    const response = await invoke(handler, await emulator.receiveEvent());
    expect(response.batchItemFailures).toEqual([]);
    // Sent three times, the last two on one attempt: the new token was refused too.
    expect(webhook.requests).toHaveLength(3);
    expect(tokens.grants).toHaveLength(2);
    const [copy] = await emulator.receive(emulator.dlq);
    expect(copy?.Body).toBe('refused');
    const reason = copy?.MessageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue ?? '';
    expect(reason).toContain('"status":401');
    expect(reason).toContain('is not for this API');
    expectNoSecrets([reason, ...linesText(telemetry.lines)]);
    // A young token is not renewed again for every record a wrong audience refuses: that record is retried.
    await emulator.send('refused too');
    expect((await invoke(handler, await emulator.receiveEvent())).batchItemFailures).toHaveLength(1);
    expect(tokens.grants).toHaveLength(2);
  });
});

describe('a token endpoint that fails', () => {
  test('records are retried with backoff, never dead-lettered (even past their window), the breaker stays closed, one ERROR', async () => {
    tokens.failWith = 503;
    for (let i = 0; i < 3; i += 1) await emulator.send(`waiting ${i}`);
    const event = await emulator.receiveEvent(3);
    // Received first two days ago: past a 24-hour retry window, where a webhook failure would be dead-lettered.
    const old = String(Date.now() - 48 * 3600_000);
    for (const record of event.Records) record.attributes.ApproximateFirstReceiveTimestamp = old;
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, DLQ_URL: emulator.dlq.url, OUTAGE_THRESHOLD: '1' }, telemetry);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const response = await invoke(handler, event);
      expect(response.batchItemFailures).toHaveLength(3);
    }
    expect(webhook.requests).toHaveLength(0);
    // Not one token request per record, nor per batch: the second and third batches came within the first backoff.
    expect(tokens.grants).toHaveLength(1);
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
    // Invisible for their backoff, not back at once.
    expect(emulator.counts(emulator.queue)).toMatchObject({ ready: 0, inflight: 3 });
    const errors = telemetry.lines.filter((line) => line.level === 'ERROR');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ message: expect.stringMatching(/^No OAuth token/), error: expect.stringContaining('HTTP 503') });
    expect(telemetry.lines.some((line) => /circuit breaker opened/i.test(line.message))).toBe(false);

    // The endpoint recovers: after its backoff, the next batch gets a token and is delivered.
    tokens.failWith = undefined;
    await sleep(1_100);
    const response = await invoke(handler, event);
    expect(response.batchItemFailures).toEqual([]);
    expect(webhook.requests).toHaveLength(3);
    expect(telemetry.lines.filter((line) => line.message === 'OAuth token obtained again')).toHaveLength(1);
    expectNoSecrets(linesText(telemetry.lines));
  }, 30_000);

  test("a 429 with Retry-After: no token request before it, and the records wait that long too, not the relay's own backoff", async () => {
    tokens.failWith = 429;
    tokens.retryAfterSeconds = 30;
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH }, telemetry);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toHaveLength(2);
    expect(telemetry.lines.find((line) => line.level === 'ERROR')).toMatchObject({
      error: expect.stringContaining('HTTP 429'),
      retryInSeconds: 30,
    });
    const returned = telemetry.lines.filter((line) => line.outcome === 'retry');
    expect(returned.map((line) => line.delaySeconds)).toEqual([30, 30]);
    // Past the relay's own first wait (1 s), within the endpoint's: not asked again.
    await sleep(1_100);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toHaveLength(2);
    expect(tokens.grants).toHaveLength(1);
  });

  test('a token endpoint that never answers holds records no longer than the invocation allows', async () => {
    tokens.hanging = true;
    const telemetry = capturedTelemetry();
    // A request timeout far past the invocation's 3 s: only the deadline can end the wait.
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, REQUEST_TIMEOUT_MS: '60000', DEADLINE_MARGIN_MS: '500' }, telemetry);
    const started = Date.now();
    const response = await invoke(handler, { Records: records(5) }, 3_000);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(response.batchItemFailures).toHaveLength(5);
    expect(tokens.grants).toHaveLength(1);
    expect(webhook.requests).toHaveLength(0);
  }, 30_000);

  test('a refusal of the client (invalid_client) is one ERROR naming it, its description scrubbed of the secret', async () => {
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...OAUTH, OAUTH_CLIENT_SECRET: `${CLIENT_SECRET}-wrong` }, telemetry);
    for (let i = 0; i < 4; i += 1) await emulator.send(`refused client ${i}`);
    const response = await invoke(handler, await emulator.receiveEvent(4));
    expect(response.batchItemFailures).toHaveLength(4);
    const errors = telemetry.lines.filter((line) => line.level === 'ERROR');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.error).toMatch(/HTTP 401 invalid_client: the secret … is not the client's/);
    expectNoSecrets(linesText(telemetry.lines));
    for (const line of linesText(telemetry.lines)) expect(line).not.toContain(`${CLIENT_SECRET}-wrong`);
  });
});
