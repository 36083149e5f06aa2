/**
 * The retry window end to end: fauxqs, a real webhook, and records received as
 * Lambda's event. A record's age in its window is what SQS says it is: the event's
 * `ApproximateFirstReceiveTimestamp`, set back here to stand for a message received hours ago.
 */
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, test } from 'vitest';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import { emulatorForFile, webhookForFile } from '../support/fixtures';
import { acknowledge, capturedTelemetry, invoke, relayFor } from '../support/relay';

const emulator = await emulatorForFile({ visibilityTimeout: 30, maxReceiveCount: 100 });
const webhook = await webhookForFile();

const HOUR_MS = 3_600_000;

/** The event with its records first received `hoursAgo` hours ago and received `receiveCount` times. */
function aged(event: SQSEvent, hoursAgo: number, receiveCount?: number): SQSEvent {
  return {
    Records: event.Records.map((record) => ({
      ...record,
      attributes: {
        ...record.attributes,
        ApproximateFirstReceiveTimestamp: String(Date.now() - hoursAgo * HOUR_MS),
        ...(receiveCount === undefined ? {} : { ApproximateReceiveCount: String(receiveCount) }),
      },
    })),
  };
}

/** The DLQ's messages, with their reason parsed. */
async function deadLettered(): Promise<{ body: string; reason: Record<string, unknown> }[]> {
  const messages = await emulator.receive(emulator.dlq, 10);
  return messages.map((message) => ({
    body: message.Body ?? '',
    reason: JSON.parse(message.MessageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue ?? '{}') as Record<string, unknown>,
  }));
}

/** When each message in flight on the main queue becomes visible again, ms since the epoch. */
function inflightDeadlines(): number[] {
  return (emulator.server.inspectQueue(emulator.queue.name)?.messages.inflight ?? []).map((entry) => entry.visibilityDeadline);
}

const env = (extra: Record<string, string> = {}): Record<string, string> => ({
  WEBHOOK_URL: webhook.url,
  DLQ_URL: emulator.dlq.url,
  MAX_RECEIVE_COUNT: '100',
  ...extra,
});

describe('within the window', () => {
  test('a 503 with Retry-After near the end of the window: returned for what it asked, not dead-lettered', async () => {
    webhook.respondWith(() => ({ status: 503, headers: { 'Retry-After': '60' } }));
    await emulator.send('still time');
    const event = aged(await emulator.receiveEvent(), 23);
    const invokedAt = Date.now();
    const response = await invoke(relayFor(env()), event);
    const returnedAt = Date.now();
    expect(response.batchItemFailures).toHaveLength(1);
    expect(await deadLettered()).toEqual([]);
    expect(emulator.counts(emulator.queue).inflight).toBe(1);
    // Hidden for the 60 s asked, set during the invocation: not a second less, nor an hour more.
    const visibleAt = inflightDeadlines()[0] as number;
    expect(visibleAt).toBeGreaterThanOrEqual(invokedAt + 60_000);
    expect(visibleAt).toBeLessThanOrEqual(returnedAt + 60_000);
  });

  test('a backoff that would overshoot the window is cut to its end, and the WARN says the next attempt is the last', async () => {
    const telemetry = capturedTelemetry();
    webhook.respondWith(() => ({ status: 500 }));
    await emulator.send('nearly out of time');
    // 24 h window, received 23.99 h ago: 36 s left; a fixed backoff of 300 s would overshoot it.
    const event = aged(await emulator.receiveEvent(), 23.99);
    const invokedAt = Date.now();
    const response = await invoke(relayFor(env({ BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '300' }), telemetry), event);
    expect(response.batchItemFailures).toHaveLength(1);
    const [entry] = emulator.server.inspectQueue(emulator.queue.name)?.messages.inflight ?? [];
    expect(entry?.visibilityDeadline).toBeLessThanOrEqual(invokedAt + 37_000 + 5_000);
    expect(entry?.visibilityDeadline).toBeGreaterThan(invokedAt + 30_000);
    const warning = telemetry.lines.find((line) => line.level === 'WARN');
    expect(warning?.message).toBe('Message not delivered; its next attempt is the last in its retry window');
    // The line states the delay SQS was given (cut to the window's end), beside the one asked for.
    expect(warning).toMatchObject({ delaySeconds: 300, visibilitySeconds: expect.any(Number) });
    expect(Math.abs(invokedAt + (warning?.visibilitySeconds as number) * 1000 - (entry?.visibilityDeadline ?? 0))).toBeLessThan(5_000);
  });

  test('near the backstop, a returned record is spaced out over what is left of its window', async () => {
    webhook.respondWith(() => ({ status: 429, headers: { 'Retry-After': '1' } }));
    await emulator.send('few receives left');
    // 100 receives, 3 kept for crashes, 95 used: 2 left to the relay, 10 hours of window left.
    const event = aged(await emulator.receiveEvent(), 14, 95);
    const telemetry = capturedTelemetry();
    const invokedAt = Date.now();
    const response = await invoke(relayFor(env(), telemetry), event);
    expect(response.batchItemFailures).toHaveLength(1);
    const [entry] = emulator.server.inspectQueue(emulator.queue.name)?.messages.inflight ?? [];
    // At least half the 10 hours left (the spread of the last two), far more than the 1 s asked.
    expect(entry?.visibilityDeadline).toBeGreaterThanOrEqual(invokedAt + 5 * HOUR_MS - 60_000);
    expect(await deadLettered()).toEqual([]);
    // Its log line says so: the visibility given, not the Retry-After's 1 s.
    const [line] = telemetry.lines.filter((logged) => logged.messageId === event.Records[0]?.messageId);
    expect(line).toMatchObject({ outcome: 'retry', status: 429, delaySeconds: 1 });
    expect(Math.abs(invokedAt + (line?.visibilitySeconds as number) * 1000 - (entry?.visibilityDeadline ?? 0))).toBeLessThan(5_000);
  });
});

describe('past the window', () => {
  test('a record still failing is dead-lettered with why: the window, the attempts, the last answer', async () => {
    const telemetry = capturedTelemetry();
    webhook.respondWith(() => ({ status: 503, headers: { 'Retry-After': '60' }, body: 'maintenance' }));
    const id = await emulator.send('out of time');
    const event = aged(await emulator.receiveEvent(), 25, 7);
    const response = await invoke(relayFor(env(), telemetry), event);
    expect(response.batchItemFailures).toEqual([]);
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
    const [copy, ...others] = await deadLettered();
    expect(others).toEqual([]);
    expect(copy?.body).toBe('out of time');
    expect(copy?.reason).toMatchObject({
      cause: 'retry window exhausted',
      status: 503,
      response: 'maintenance',
      attempts: 7,
      receiveCount: 7,
      originalMessageId: id,
    });
    expect(telemetry.lines.find((line) => line.level === 'WARN')?.message).toBe(
      'Message dead-lettered: still failing at the end of its retry window',
    );
  });

  test('a delivery past the window is a delivery: nothing is dead-lettered', async () => {
    await emulator.send('late but fine');
    const event = aged(await emulator.receiveEvent(), 30);
    const response = await invoke(relayFor(env()), event);
    expect(response.batchItemFailures).toEqual([]);
    expect(await deadLettered()).toEqual([]);
  });

  test('a record held by the open breaker past its window is dead-lettered too', async () => {
    // A refused connection is an outage: two in a row open the breaker, the rest are held.
    const down = relayFor(env({ WEBHOOK_URL: 'http://127.0.0.1:1/down', OUTAGE_THRESHOLD: '2', MAX_CONCURRENCY: '1' }));
    for (const body of ['a', 'b', 'c']) await emulator.send(body);
    const event = aged(await emulator.receiveEvent(), 25);
    const response = await invoke(down, event);
    expect(response.batchItemFailures).toEqual([]);
    const copies = await deadLettered();
    expect(copies.map((copy) => copy.body).sort()).toEqual(['a', 'b', 'c']);
    expect(copies.map((copy) => copy.reason.cause)).toEqual(['retry window exhausted', 'retry window exhausted', 'retry window exhausted']);
    expect(copies.some((copy) => String(copy.reason.response).includes('circuit breaker'))).toBe(true);
  });

  describe('when the dead-letter copy fails, the record goes back for the delay it asked, never at once', () => {
    // A DLQ that does not exist: every copy fails.
    const brokenDlq = (): Record<string, string> => ({ DLQ_URL: `${emulator.dlq.url}-gone` });

    test.each([
      ['a Retry-After', { status: 503, headers: { 'Retry-After': '120' } }, {}, 120],
      ['a backoff', { status: 500 }, { BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '45' }, 45],
    ])('%s', async (_, reply, settings, seconds) => {
      webhook.respondWith(() => reply);
      await emulator.send('no DLQ to go to');
      const event = aged(await emulator.receiveEvent(), 25, 9);
      const invokedAt = Date.now();
      const response = await invoke(relayFor(env({ ...brokenDlq(), ...settings })), event);
      expect(response.batchItemFailures).toHaveLength(1);
      // On the queue, hidden for what it asked: not handed back at once to hammer the webhook again.
      expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 1, delayed: 0 });
      expect(inflightDeadlines()[0]).toBeGreaterThanOrEqual(invokedAt + seconds * 1000);
      expect(emulator.counts(emulator.dlq).ready).toBe(0);
      expect(webhook.requests).toHaveLength(1);
    });

    test("a record held by the open breaker: back after the breaker's hold", async () => {
      const down = relayFor(
        env({ ...brokenDlq(), WEBHOOK_URL: 'http://127.0.0.1:1/down', OUTAGE_THRESHOLD: '1', MAX_CONCURRENCY: '1', BACKOFF: 'none' }),
      );
      for (const body of ['trips it', 'held']) await emulator.send(body);
      const event = aged(await emulator.receiveEvent(), 25);
      const invokedAt = Date.now();
      const response = await invoke(down, event);
      expect(response.batchItemFailures).toHaveLength(2);
      expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 2, delayed: 0 });
      // Both parked for the breaker's hold (10 s at first): the one that tripped it as well as the one held.
      for (const visibleAt of inflightDeadlines()) expect(visibleAt).toBeGreaterThanOrEqual(invokedAt + 10_000);
      expect(emulator.counts(emulator.dlq).ready).toBe(0);
    });
  });

  test("a record the endpoint's hold kept from being sent past its window is dead-lettered, not handed back at once", async () => {
    // Ten different messages refused with a short Retry-After: the whole endpoint asked for a 5 s pause, held at once.
    webhook.respondWith(() => ({ status: 429, headers: { 'Retry-After': '5' } }));
    const handler = relayFor(env({ MAX_CONCURRENCY: '10' }));
    for (let i = 0; i < 10; i += 1) await emulator.send(`refused ${i}`);
    await invoke(handler, await emulator.receiveEvent(10));
    const requestsBefore = webhook.requests.length;
    expect(requestsBefore).toBeGreaterThan(0);
    emulator.server.reset();

    const id = await emulator.send('waited out its window');
    const event = aged(await emulator.receiveEvent(), 25, 4);
    // An invocation shorter than what is left of the hold: the record cannot wait it out.
    const response = await invoke(handler, event, 3_000);
    expect(webhook.requests).toHaveLength(requestsBefore); // not sent: the hold is on
    expect(response.batchItemFailures).toEqual([]);
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
    const [copy, ...others] = await deadLettered();
    expect(others).toEqual([]);
    expect(copy?.body).toBe('waited out its window');
    expect(copy?.reason).toMatchObject({ cause: 'retry window exhausted', status: 0, originalMessageId: id, attempts: 4 });
    expect(String(copy?.reason.response)).toContain('hold');
  });

  test("within its window, a record the endpoint's hold kept back is returned until the hold ends (the webhook's Retry-After)", async () => {
    webhook.respondWith(() => ({ status: 429, headers: { 'Retry-After': '3600' } }));
    const handler = relayFor(env({ MAX_CONCURRENCY: '10' }));
    for (let i = 0; i < 30; i += 1) await emulator.send(`refused ${i}`);
    for (let batch = 0; batch < 3; batch += 1) await invoke(handler, await emulator.receiveEvent(10));
    emulator.server.reset();

    await emulator.send('kept back');
    // Twenty minutes of its window left: the hour asked is honoured rather than cut to the window's end.
    const event = aged(await emulator.receiveEvent(), 24 - 1 / 3);
    const invokedAt = Date.now();
    const response = await invoke(handler, event);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(inflightDeadlines()[0]).toBeGreaterThan(invokedAt + 3_000_000);
    expect(await deadLettered()).toEqual([]);
  });

  test('with the window off (RETRY_WINDOW_HOURS=0), age alone dead-letters nothing: the receive count decides', async () => {
    webhook.respondWith(() => ({ status: 500 }));
    await emulator.send('counted');
    const event = aged(await emulator.receiveEvent(), 100);
    const response = await invoke(relayFor(env({ RETRY_WINDOW_HOURS: '0', MAX_RECEIVE_COUNT: '5' })), event);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(await deadLettered()).toEqual([]);
  });
});

describe('a refusal with a short Retry-After', () => {
  test('is handed back for it, not waited out: every attempt is a receive, and X-Carrier-Receive-Count counts them', async () => {
    let calls = 0;
    webhook.respondWith(() => (++calls <= 2 ? { status: 429, headers: { 'Retry-After': '1' } } : { status: 200 }));
    await emulator.send('patience');
    const handler = relayFor(env());
    for (let receive = 1; receive <= 3; receive += 1) {
      const event = await emulator.receiveEvent(10, 5);
      const response = await invoke(handler, event);
      expect(response.batchItemFailures).toHaveLength(receive < 3 ? 1 : 0);
      await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    }
    expect(webhook.requests.map((request) => request.headers['x-carrier-receive-count'])).toEqual(['1', '2', '3']);
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  });
});

describe('the pace, seen by the operator', () => {
  test('refusals lower it: one INFO line for the change, and the pace and the refusals as metrics of the batch; an unpaced batch publishes no rate', async () => {
    const telemetry = capturedTelemetry();
    const handler = relayFor(env(), telemetry);
    for (let i = 0; i < 5; i += 1) await emulator.send(`fine ${i}`);
    const calm = await emulator.receiveEvent();
    await acknowledge(emulator.sqs, emulator.queue.url, calm, await invoke(handler, calm));
    // A fresh container starts with 2 requests in flight and adds one per 2xx until the first refusal.
    expect(telemetry.emf.at(-1)).toMatchObject({ PaceInFlightLimit: 7, RequestsRefused: 0 });
    expect(telemetry.emf.at(-1)).not.toHaveProperty('PaceRequestsPerSecond');

    // A webhook swamped: most of what it answers is refused (a share a webhook refusing single messages does not reach).
    webhook.respondWith(() => ({ status: 429 }));
    // One batch of 40 (as a batching window gathers them): enough answers within a quarter second to be sure.
    for (let i = 0; i < 40; i += 1) await emulator.send(`refused ${i}`);
    const refused = await emulator.receiveEvent(10);
    for (let i = 0; i < 3; i += 1) refused.Records.push(...(await emulator.receiveEvent(10)).Records);
    await invoke(handler, refused);
    const metrics = telemetry.emf.at(-1) as Record<string, unknown>;
    expect(metrics.RequestsRefused).toBe(40);
    expect(metrics.PaceRequestsPerSecond).toBeGreaterThan(0);
    expect(metrics.PaceInFlightLimit).toBeLessThan(10);
    const paceLines = telemetry.lines.filter((line) => String(line.message).startsWith('Webhook asked to slow down'));
    expect(paceLines).toHaveLength(1);
    expect(paceLines[0]).toMatchObject({ level: 'INFO', previousRequestsPerSecond: 'unlimited' });
  });
});
