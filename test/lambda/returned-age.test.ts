/**
 * `AgeOfOldestReturnedMessage`, through the real handler, fauxqs and a real webhook: seconds since the oldest record a batch
 * hands back to the queue was sent, 0 when it hands none back. SQS's own age metric leaves out a message once it has been
 * received three times, so through an outage or a refusing webhook only this one tells how long messages have waited (the
 * stack's returned-message-age alarm reads it).
 */
import type { SQSEvent } from 'aws-lambda';
import { expect, test } from 'vitest';
import { emulatorForFile, webhookForFile } from '../support/fixtures';
import { capturedTelemetry, invoke, relayFor } from '../support/relay';

const emulator = await emulatorForFile({ visibilityTimeout: 60 });
const webhook = await webhookForFile();

const TWO_HOURS_MS = 2 * 3600 * 1000;

/** A batch of `bodies` as the queue hands it out, each record's send time moved `agesMs[i]` into the past. */
async function batchSentAgo(bodies: readonly string[], agesMs: readonly number[]): Promise<SQSEvent> {
  for (const body of bodies) await emulator.send(body);
  const event = await emulator.receiveEvent(bodies.length);
  expect(event.Records.map((record) => record.body).sort()).toEqual([...bodies].sort());
  for (const record of event.Records) {
    const age = agesMs[bodies.indexOf(record.body)] ?? 0;
    record.attributes.SentTimestamp = String(Number(record.attributes.SentTimestamp) - age);
  }
  return event;
}

/**
 * The metric of the one batch `event` makes, the webhook answering `429` (with `retryAfter`, if given) to the bodies `refused`
 * picks, `200` to the rest.
 */
async function ageAfter(event: SQSEvent, refused: (body: string) => boolean, retryAfter?: string): Promise<unknown> {
  const headers: Record<string, string> = retryAfter === undefined ? {} : { 'Retry-After': retryAfter };
  webhook.respondWith((request) => (refused(request.body.toString()) ? { status: 429, headers } : { status: 200 }));
  const telemetry = capturedTelemetry();
  await invoke(relayFor({ WEBHOOK_URL: webhook.url, BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '30' }, telemetry), event);
  const ages = telemetry.emf.map((blob) => blob.AgeOfOldestReturnedMessage);
  expect(ages).toHaveLength(1);
  return ages[0];
}

test('a record sent two hours ago and refused: its age, though the relay received it only once', async () => {
  const event = await batchSentAgo(['old', 'new'], [TWO_HOURS_MS, 0]);
  const age = await ageAfter(event, () => true, '60');
  expect(age).toBeGreaterThanOrEqual(7_200);
  expect(age).toBeLessThan(7_230);
});

test('the oldest record delivered does not count: only those handed back', async () => {
  const event = await batchSentAgo(['delivered-old', 'refused-recent'], [TWO_HOURS_MS, 600_000]);
  const age = await ageAfter(event, (body) => body === 'refused-recent', '60');
  expect(age).toBeGreaterThanOrEqual(600);
  expect(age).toBeLessThan(630);
});

test('0 when the batch hands nothing back: the alarm is OK again with the batch that delivers the last of them', async () => {
  const event = await batchSentAgo(['late-a', 'late-b'], [TWO_HOURS_MS, TWO_HOURS_MS]);
  expect(await ageAfter(event, () => false)).toBe(0);
});
