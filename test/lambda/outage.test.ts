/**
 * An outage through the real handler, fauxqs and a webhook that goes away and comes back: the
 * breaker opens after OUTAGE_THRESHOLD failures, holds the rest of the batch back with the open
 * interval as visibility, lets one probe through per interval, and closes on the first answer, releasing
 * what it held in earlier batches.
 */
import type { SQSEvent } from 'aws-lambda';
import { expect, test } from 'vitest';
import { emulatorForFile, webhookForFile } from '../support/fixtures';
import { acknowledge, capturedTelemetry, invoke, relayFor, sleep } from '../support/relay';

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
  // Every batch says how long the breaker has been open, 0 once it is closed again: the alarm on it keeps its state through
  // the quiet minutes of an outage and is OK again with the first batch after the webhook's return, not ALARM then.
  const openSeconds = telemetry.emf.map((blob) => blob.BreakerOpenSeconds);
  expect(openSeconds).toHaveLength(4);
  expect(openSeconds.every((value) => typeof value === 'number')).toBe(true);
  expect(openSeconds.at(-1)).toBe(0);
  expect(Math.max(...(openSeconds as number[]).slice(0, -1))).toBeGreaterThan(0);
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

test("a request cut short by the invocation's deadline is no outage sign: it had less than REQUEST_TIMEOUT_MS", async () => {
  // A webhook that answers everything within REQUEST_TIMEOUT_MS (2 s): the first five in 1.2 s, the rest in 1.8 s. The
  // invocation has 2.5 s for requests: the last five start 1.2 s in, with 1.3 s left, and time out at the deadline.
  webhook.respondWith((_, index) => ({ status: 200, delayMs: index < 5 ? 1_200 : 1_800 }));
  for (let i = 0; i < 10; i += 1) await emulator.send(`late${i}`);
  const telemetry = capturedTelemetry();
  const env = { WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '5', REQUEST_TIMEOUT_MS: '2000', OUTAGE_THRESHOLD: '3', PACING: 'false' };
  const handler = relayFor(env, telemetry);
  const cut = await invoke(handler, await emulator.receiveEvent(10), 3_500);
  expect(webhook.requests).toHaveLength(10);
  expect(cut.batchItemFailures).toHaveLength(5);
  expect(telemetry.lines.filter((line) => String(line.message).includes('circuit breaker opened'))).toEqual([]);
  // The next invocation sends what it receives rather than holding it back.
  await sleep(3_000);
  webhook.respondWith(() => ({ status: 200 }));
  for (let i = 0; i < 5; i += 1) await emulator.send(`next${i}`);
  const next = await emulator.receiveEvent(10);
  expect(next.Records.length).toBeGreaterThan(0);
  expect((await invoke(handler, next)).batchItemFailures).toEqual([]);
});

test("nor does it halve the pace's requests in flight, as a timeout the webhook took the whole REQUEST_TIMEOUT_MS over does", async () => {
  // Paced: 2 in flight, answered in 1 s, make 4; those start with 1.5 s of the invocation's 2.5 s left, take 1.8 s, and time
  // out at the deadline.
  webhook.respondWith((_, index) => ({ status: 200, delayMs: index < 2 ? 1_000 : 1_800 }));
  for (let i = 0; i < 6; i += 1) await emulator.send(`paced${i}`);
  const telemetry = capturedTelemetry();
  const handler = relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '5', REQUEST_TIMEOUT_MS: '2000' }, telemetry);
  const event = await emulator.receiveEvent(10);
  expect(event.Records).toHaveLength(6);
  const cut = await invoke(handler, event, 3_500);
  expect(cut.batchItemFailures).toHaveLength(4);
  expect(telemetry.emf.at(-1)).toMatchObject({ PaceInFlightLimit: 4 });
  await sleep(3_000);
  webhook.respondWith(() => ({ status: 200 }));
});

test('no request starts, late in an invocation, with less time left than the webhook takes: it would time out, a duplicate', async () => {
  // One at a time, answered in 1.5 s, in 2.5 s for requests: the second would start with 1 s left.
  webhook.respondWith(() => ({ status: 200, delayMs: 1_500 }));
  webhook.requests.length = 0;
  for (let i = 0; i < 3; i += 1) await emulator.send(`late-start${i}`);
  const handler = relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '1', PACING: 'false' });
  const event = await emulator.receiveEvent(10);
  expect(event.Records).toHaveLength(3);
  const result = await invoke(handler, event, 3_500);
  expect(webhook.requests).toHaveLength(1);
  expect(result.batchItemFailures).toHaveLength(2);
  await sleep(1_000);
  webhook.respondWith(() => ({ status: 200 }));
});

test('an invocation with little more time than the webhook takes still asks it: its first request goes', async () => {
  webhook.respondWith(() => ({ status: 200, delayMs: 2_000 }));
  webhook.requests.length = 0;
  for (let i = 0; i < 3; i += 1) await emulator.send(`short-room${i}`);
  const handler = relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '1', PACING: 'false' });
  // 3 s for requests: one answered in 2 s; the next would have 1 s, and waits.
  await invoke(handler, await emulator.receiveEvent(10), 4_000);
  expect(webhook.requests).toHaveLength(1);
  // 1.5 s for requests, under the 2 s the webhook takes: asked all the same (else never again), and timed out.
  await invoke(handler, await emulator.receiveEvent(10), 2_500);
  expect(webhook.requests).toHaveLength(2);
  await sleep(2_000);
  webhook.respondWith(() => ({ status: 200 }));
});

test('an invocation shorter than REQUEST_TIMEOUT_MS cuts every request: a webhook that never answers still opens the breaker', async () => {
  webhook.respondWith(() => ({ hang: true }));
  for (let i = 0; i < 5; i += 1) await emulator.send(`short${i}`);
  const telemetry = capturedTelemetry();
  const handler = relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '5', OUTAGE_THRESHOLD: '3', PACING: 'false' }, telemetry);
  await invoke(handler, await emulator.receiveEvent(10), 1_600);
  expect(telemetry.lines.filter((line) => String(line.message).includes('circuit breaker opened'))).toHaveLength(1);
});

test('a request with no HTTP answer is logged with status 0, which the saved query "refusals by status over time" counts', async () => {
  emulator.server.reset();
  webhook.requests.length = 0;
  webhook.respondWith(() => ({ resetBeforeResponse: true }));
  await emulator.send('no answer');
  const telemetry = capturedTelemetry();
  await invoke(relayFor({ WEBHOOK_URL: webhook.url, OUTAGE_THRESHOLD: '0' }, telemetry), await emulator.receiveEvent(1));
  expect(webhook.requests).toHaveLength(1);
  const retried = telemetry.lines.filter((line) => line.outcome === 'retry');
  expect(retried).toHaveLength(1);
  expect(retried[0]).toMatchObject({ status: 0, error: expect.any(String) });
});

test("the breaker's opening line and a failed probe's name the failure: the status, 0 and the error for no answer", async () => {
  emulator.server.reset();
  webhook.requests.length = 0;
  webhook.respondWith(() => ({ status: 503 }));
  for (let i = 0; i < 3; i += 1) await emulator.send(`d${i}`);
  const telemetry = capturedTelemetry();
  const env = { WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '1', OUTAGE_THRESHOLD: '2', OUTAGE_BACKOFF_SECONDS: '1' };
  const handler = relayFor(env, telemetry);
  await invoke(handler, await emulator.receiveEvent(3));
  const opened = telemetry.lines.filter((line) => String(line.message).startsWith('Webhook looks down: circuit breaker opened'));
  expect(opened).toHaveLength(1);
  expect(opened[0]).toMatchObject({ level: 'WARN', failures: 2, status: 503 });

  webhook.respondWith(() => ({ resetBeforeResponse: true }));
  await sleep(1_100);
  await invoke(handler, await emulator.receiveEvent(3));
  const probeFailed = telemetry.lines.filter((line) => line.message === 'Circuit breaker probe failed; still open');
  expect(probeFailed).toHaveLength(1);
  expect(probeFailed[0]).toMatchObject({ status: 0, error: expect.any(String) });
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

test('the probe that closes the breaker releases the batches it held: visible again at once, then each delivered once', async () => {
  const intervalSeconds = 4;
  webhook.respondWith(() => ({ status: 503 })); // down: 503 without Retry-After
  const bodies = Array.from({ length: 30 }, (_, index) => `r${index}`);
  for (const body of bodies) await emulator.send(body);
  const handler = relayFor({
    WEBHOOK_URL: webhook.url,
    MAX_CONCURRENCY: '10',
    OUTAGE_THRESHOLD: '3',
    OUTAGE_BACKOFF_SECONDS: String(intervalSeconds),
    OUTAGE_BACKOFF_MAX_SECONDS: String(intervalSeconds),
    BACKOFF: 'fixed',
    BACKOFF_BASE_SECONDS: '1',
  });
  /** One invocation as Lambda makes it: receive, invoke, delete what the handler acknowledged. */
  const relayOnce = async (): Promise<SQSEvent> => {
    const event = await emulator.receiveEvent(10);
    if (event.Records.length > 0) await acknowledge(emulator.sqs, emulator.queue.url, event, await invoke(handler, event));
    return event;
  };
  await relayOnce(); // the failures open the breaker: the batch is held for the interval
  const openedBy = Date.now();
  expect(webhook.requests).toHaveLength(10);
  // Halfway through the interval a second batch is held: its hold outlasts the probe by half an interval.
  await sleep((intervalSeconds * 1000) / 2);
  const held = await relayOnce();
  expect(held.Records).toHaveLength(10);
  expect(webhook.requests).toHaveLength(10);

  await sleep(openedBy + intervalSeconds * 1000 + 100 - Date.now()); // the probe is due
  webhook.respondWith(() => ({ status: 200 }));
  const upAt = Date.now();
  const closing = await relayOnce(); // its first record is the probe, and it succeeds
  expect(closing.Records.length).toBeGreaterThan(0);
  expect(webhook.requests.filter((request) => request.receivedAt >= upAt)).toHaveLength(closing.Records.length); // all sent: it closed
  // SQS's own state, right after the closing invocation: the second batch is receivable again, no longer in flight.
  const queue = emulator.server.inspectQueue(emulator.queue.name);
  const ready = new Set(queue?.messages.ready.map((message) => message.messageId));
  const inflight = new Set(queue?.messages.inflight.map((entry) => entry.message.messageId));
  expect(held.Records.filter((record) => !ready.has(record.messageId) || inflight.has(record.messageId))).toEqual([]);

  for (let rounds = 0; rounds < 50; rounds += 1) {
    const { ready: waiting, inflight: inFlight, delayed } = emulator.counts(emulator.queue);
    if (waiting + inFlight + delayed === 0) break;
    if ((await relayOnce()).Records.length === 0) await sleep(200);
  }
  expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  const deliveries = webhook.requests.filter((request) => request.receivedAt >= upAt).map((request) => request.body.toString());
  expect(deliveries.sort()).toEqual([...bodies].sort()); // each message exactly once
  expect(emulator.counts(emulator.dlq).ready).toBe(0);
}, 30_000);

test("a held record's hold: the outage's with the retry window on; with it off (SQS's count semantics), tripled per receive", async () => {
  emulator.server.reset();
  webhook.requests.length = 0;
  webhook.respondWith(() => ({ status: 503 }));
  /** One batch: a record that trips the breaker, then three held, on their 1st, 2nd and 3rd receive; their holds by body, s. */
  const holdsOf = async (env: Record<string, string>): Promise<Record<string, number>> => {
    emulator.server.reset();
    for (const body of ['trips', 'first', 'second', 'third']) await emulator.send(body);
    const event = await emulator.receiveEvent(10);
    const receives: Record<string, string> = { trips: '1', first: '1', second: '2', third: '3' };
    const records = event.Records.map((record) => ({
      ...record,
      attributes: { ...record.attributes, ApproximateReceiveCount: receives[record.body] ?? '1' },
    }));
    const invokedAt = Date.now();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '1', OUTAGE_THRESHOLD: '1', BACKOFF: 'none', ...env });
    await invoke(handler, { Records: records });
    const byId = new Map(records.map((record) => [record.messageId, record.body]));
    const inflight = emulator.server.inspectQueue(emulator.queue.name)?.messages.inflight ?? [];
    return Object.fromEntries(
      inflight.map((entry) => [byId.get(entry.message.messageId), Math.round((entry.visibilityDeadline - invokedAt) / 1000)]),
    );
  };
  expect(await holdsOf({})).toMatchObject({ first: 10, second: 10, third: 10 });
  expect(await holdsOf({ RETRY_WINDOW_HOURS: '0', MAX_RECEIVE_COUNT: '10' })).toMatchObject({ first: 10, second: 30, third: 90 });
});
