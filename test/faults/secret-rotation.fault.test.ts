/**
 * Fault injection: a secret rotated to a value that does not parse, and a
 * Secrets Manager that fails. The real handler reads through Powertools and the SDK from a
 * stand-in Secrets Manager on 127.0.0.1; what the webhook receives is checked by the independent
 * `standardwebhooks` package. The last good value keeps signing, one ERROR names the secret
 * (never its value), and failed reads are spaced out instead of repeated for every record.
 */
import type { SQSRecord } from 'aws-lambda';
import { Webhook } from 'standardwebhooks';
import { describe, expect, test } from 'vitest';
import { sqsRecord } from '../../testkit/records';
import { type ReceivedRequest, signatureHeadersOf } from '../../testkit/webhook';
import { emulatorForFile, secretsManagerForFile, webhookForFile } from '../support/fixtures';
import { capturedTelemetry, invoke, relayFor, sleep } from '../support/relay';

const GOOD = `whsec_${Buffer.from('the signing key before rotation').toString('base64')}`;
const NEXT = `whsec_${Buffer.from('the signing key after a good rotation').toString('base64')}`;
/** Not base64: a rotation that pasted the wrong thing. */
const BAD = 'whsec_this-is-not*base64!';

const emulator = await emulatorForFile();
const webhook = await webhookForFile();
const secretsManager = await secretsManagerForFile();
let nextIndex = 0;

/** `count` new records of the emulator's queue (so that the relay's SQS calls about them can succeed). */
function records(count: number): SQSRecord[] {
  return Array.from({ length: count }, () => {
    nextIndex += 1;
    return sqsRecord(nextIndex, { body: `{"n":${nextIndex}}`, eventSourceARN: emulator.queue.arn });
  });
}

/** Whether `request` verifies with `secret` (standardwebhooks; the timestamp must be recent too). */
function verifies(secret: string, request: ReceivedRequest): boolean {
  try {
    new Webhook(secret).verify(request.body.toString(), signatureHeadersOf(request), { jsonParse: false });
    return true;
  } catch {
    return false;
  }
}

describe('a rotation to a value that does not parse', () => {
  test('the last good key keeps signing, one ERROR names the secret (not the value), and a later good rotation takes over', async () => {
    const id = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:rotating';
    secretsManager.secrets.set(id, GOOD);
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET_ARN: id, SECRETS_REFRESH_SECONDS: '1' }, telemetry);
    expect((await invoke(handler, { Records: records(2) })).batchItemFailures).toEqual([]);

    secretsManager.secrets.set(id, BAD);
    await sleep(1_100); // the good value is due to be read again
    const readsBefore = secretsManager.calls.count;
    const batch = records(10);
    expect((await invoke(handler, { Records: batch })).batchItemFailures).toEqual([]);
    expect(secretsManager.calls.count - readsBefore).toBe(1); // one read for the whole batch
    expect(webhook.requests).toHaveLength(12);
    expect(webhook.requests.every((request) => verifies(GOOD, request))).toBe(true);

    // Read again after the wait that follows a failed refresh: the same bad value, no second ERROR.
    await sleep(2_100);
    expect((await invoke(handler, { Records: records(3) })).batchItemFailures).toEqual([]);
    expect(secretsManager.calls.count - readsBefore).toBe(2);
    expect(webhook.requests.slice(12).every((request) => verifies(GOOD, request))).toBe(true);
    const errors = telemetry.lines.filter((line) => line.level === 'ERROR');
    expect(errors).toEqual([expect.objectContaining({ secret: id, error: expect.stringContaining('not valid') })]);
    const logged = JSON.stringify(telemetry.lines);
    expect(logged).not.toContain('this-is-not');
    expect(logged).not.toContain(GOOD.slice(6));

    // Fixed: the new key signs from the next read on.
    secretsManager.secrets.set(id, NEXT);
    await sleep(2_100);
    await invoke(handler, { Records: records(2) });
    const latest = webhook.requests.slice(-2);
    expect(latest.every((request) => verifies(NEXT, request) && !verifies(GOOD, request))).toBe(true);
    expect(telemetry.lines.filter((line) => line.level === 'ERROR')).toHaveLength(1);
  });

  test('with no good value ever read, a bad value sends nothing: every record is retried, one ERROR', async () => {
    const id = 'bad-from-the-start';
    secretsManager.secrets.set(id, BAD);
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET_ARN: id, BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '1' }, telemetry);
    const batch = records(20);
    const response = await invoke(handler, { Records: batch });
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(batch.map((record) => record.messageId));
    expect(webhook.requests).toHaveLength(0);
    expect(secretsManager.calls.count).toBeGreaterThan(0);
    // (The records are synthetic: SQS refuses their visibility changes, which are ERRORs of their own.)
    expect(telemetry.lines.filter((line) => line.level === 'ERROR' && line.secret !== undefined)).toEqual([
      expect.objectContaining({ secret: id, error: expect.stringContaining('not valid') }),
    ]);
    expect(JSON.stringify(telemetry.lines)).not.toContain('this-is-not');
  });
});

describe('Secrets Manager failing', () => {
  test('with no value read yet: a bounded number of reads over many records and invocations, nothing sent unsigned', async () => {
    const id = 'failing-cold';
    secretsManager.secrets.set(id, GOOD);
    secretsManager.failing = true;
    const handler = relayFor({
      WEBHOOK_URL: webhook.url,
      SIGNING_SECRET_ARN: id,
      MAX_CONCURRENCY: '10',
      BACKOFF: 'fixed',
      BACKOFF_BASE_SECONDS: '1',
    });
    const readsBefore = secretsManager.calls.count;
    for (let invocation = 0; invocation < 3; invocation += 1) {
      const batch = records(50);
      const response = await invoke(handler, { Records: batch });
      expect(response.batchItemFailures).toHaveLength(50);
    }
    // One read (the SDK's three attempts at most) for 150 records: the rest wait out the backoff.
    expect(secretsManager.calls.count - readsBefore).toBeLessThanOrEqual(3);
    expect(webhook.requests).toHaveLength(0);
  });

  test('with a good value read: it keeps signing every record, read again only after a wait, not once per record', async () => {
    const id = 'failing-warm';
    secretsManager.secrets.set(id, GOOD);
    const telemetry = capturedTelemetry();
    // Refresh 0: every record would read the secret again (the strictest setting).
    const handler = relayFor(
      { WEBHOOK_URL: webhook.url, SIGNING_SECRET_ARN: id, SECRETS_REFRESH_SECONDS: '0', MAX_CONCURRENCY: '10' },
      telemetry,
    );
    expect((await invoke(handler, { Records: records(1) })).batchItemFailures).toEqual([]);
    secretsManager.failing = true;
    const readsBefore = secretsManager.calls.count;
    const response = await invoke(handler, { Records: records(100) });
    expect(response.batchItemFailures).toEqual([]);
    expect(secretsManager.calls.count - readsBefore).toBeLessThanOrEqual(3);
    expect(webhook.requests).toHaveLength(101);
    expect(webhook.requests.every((request) => verifies(GOOD, request))).toBe(true);
    expect(telemetry.lines.filter((line) => line.level === 'WARN' && line.secret === id)).toHaveLength(1);
  });
});
