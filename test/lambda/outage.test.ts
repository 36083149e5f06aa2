/**
 * An outage through the real handler, fauxqs and a webhook that goes away and comes back: the
 * breaker opens after OUTAGE_THRESHOLD failures, holds the rest of the batch back with the open
 * interval as visibility, lets one probe through per interval, and closes on the first answer.
 */
import { expect, test } from 'vitest';
import { emulatorForFile, webhookForFile } from '../support/fixtures';
import { capturedTelemetry, invoke, relayFor, sleep } from '../support/relay';

const emulator = await emulatorForFile({ visibilityTimeout: 60 });
const webhook = await webhookForFile();

test('opens after 3 outage failures, holds the rest, probes once per interval, closes when the webhook answers', async () => {
  for (let i = 0; i < 20; i += 1) await emulator.send(`m${i}`);
  const telemetry = capturedTelemetry();
  const handler = relayFor(
    {
      WEBHOOK_URL: webhook.url,
      MAX_CONCURRENCY: '1',
      OUTAGE_THRESHOLD: '3',
      OUTAGE_BACKOFF_SECONDS: '1',
      OUTAGE_BACKOFF_MAX_SECONDS: '4',
      BACKOFF: 'fixed',
      BACKOFF_BASE_SECONDS: '20',
    },
    telemetry,
  );
  webhook.respondWith(() => ({ status: 503 })); // down: 503 without Retry-After

  const first = await emulator.receiveEvent(10);
  const invokedAt = Date.now();
  const down = await invoke(handler, first);
  expect(webhook.requests).toHaveLength(3); // the three that tripped it; seven held back unsent
  expect(down.batchItemFailures).toHaveLength(10);
  const inflight = emulator.server.inspectQueue(emulator.queue.name)?.messages.inflight ?? [];
  const heldFor = inflight.map((entry) => entry.visibilityDeadline - invokedAt).sort((a, b) => a - b);
  expect(heldFor.filter((ms) => ms < 5_000)).toHaveLength(7); // the open interval, 1 s
  expect(heldFor.filter((ms) => ms >= 19_000)).toHaveLength(3); // their own backoff, 20 s, being longer
  expect(telemetry.lines.filter((line) => line.level === 'WARN' && String(line.message).includes('circuit breaker opened'))).toHaveLength(
    1,
  );

  // Still within the interval: nothing goes out at all.
  const second = await emulator.receiveEvent(10);
  const heldAgain = await invoke(handler, second);
  expect(webhook.requests).toHaveLength(3);
  expect(heldAgain.batchItemFailures).toHaveLength(second.Records.length);

  // After the interval one probe goes; it fails, so the interval doubles.
  await sleep(1_100);
  const third = await emulator.receiveEvent(10);
  await invoke(handler, third);
  expect(webhook.requests).toHaveLength(4);

  // The webhook comes back; the next probe closes the breaker and the batch flows.
  webhook.respondWith(() => ({ status: 200 }));
  await sleep(2_100);
  const fourth = await emulator.receiveEvent(10);
  expect(fourth.Records.length).toBeGreaterThan(0);
  const up = await invoke(handler, fourth);
  expect(up.batchItemFailures).toEqual([]);
  expect(telemetry.lines.some((line) => line.level === 'INFO' && String(line.message).includes('circuit breaker closed'))).toBe(true);
  const openMetric = telemetry.emf.find((blob) => typeof blob.BreakerOpenSeconds === 'number');
  expect(openMetric).toBeDefined();
});

test('OUTAGE_THRESHOLD=0 switches the breaker off: every record is tried', async () => {
  webhook.respondWith(() => ({ status: 503 }));
  for (let i = 0; i < 10; i += 1) await emulator.send(`n${i}`);
  const event = await emulator.receiveEvent(10);
  await invoke(relayFor({ WEBHOOK_URL: webhook.url, OUTAGE_THRESHOLD: '0' }), event);
  expect(webhook.requests).toHaveLength(10);
});

test('records whose own failure tripped the breaker are parked at least for its interval, not their shorter backoff', async () => {
  emulator.server.reset();
  webhook.requests.length = 0;
  webhook.respondWith(() => ({ resetBeforeResponse: true }));
  for (let i = 0; i < 6; i += 1) await emulator.send(`t${i}`);
  const event = await emulator.receiveEvent(10);
  const invokedAt = Date.now();
  await invoke(
    relayFor({
      WEBHOOK_URL: webhook.url,
      MAX_CONCURRENCY: '1',
      OUTAGE_THRESHOLD: '3',
      OUTAGE_BACKOFF_SECONDS: '40',
      BACKOFF: 'fixed',
      BACKOFF_BASE_SECONDS: '1',
    }),
    event,
  );
  expect(webhook.requests).toHaveLength(3);
  const inflight = emulator.server.inspectQueue(emulator.queue.name)?.messages.inflight ?? [];
  expect(inflight).toHaveLength(6);
  for (const entry of inflight) expect(entry.visibilityDeadline - invokedAt).toBeGreaterThanOrEqual(39_000);
});

test('when the probe succeeds, the records waiting beside it go out in the same invocation', async () => {
  emulator.server.reset();
  webhook.requests.length = 0;
  webhook.respondWith(() => ({ status: 502 }));
  const handler = relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '10', OUTAGE_THRESHOLD: '2', OUTAGE_BACKOFF_SECONDS: '1' });
  for (let i = 0; i < 2; i += 1) await emulator.send(`trip${i}`);
  await invoke(handler, await emulator.receiveEvent(10));
  expect(webhook.requests).toHaveLength(2);
  webhook.respondWith(() => ({ status: 200, delayMs: 100 }));
  for (let i = 0; i < 8; i += 1) await emulator.send(`after${i}`);
  await sleep(1_100);
  const event = await emulator.receiveEvent(10);
  const response = await invoke(handler, event);
  expect(response.batchItemFailures).toEqual([]);
  expect(webhook.requests.length).toBe(2 + event.Records.length);
});
