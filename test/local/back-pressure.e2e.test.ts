/**
 * Back-pressure through `npm start` (issue 21): a healthy webhook that asks the relay to slow
 * down (`429` + `Retry-After` above its capacity) or is briefly unavailable (`503`, no
 * `Retry-After`) loses nothing to the DLQ. Several pollers share one webhook, as concurrent
 * invocations do. Only where each message ends is asserted: delivered exactly once, the DLQ and
 * the queue empty; how fast is bench/scenarios/back-pressure.ts's business.
 */
import { describe, expect, test } from 'vitest';
import { type RateLimitedResponder, type RateLimitedWebhookOptions, rateLimitedResponder } from '../../testkit/rate-limited-webhook';
import { type RelayProcess, sendMessages, settle, stopRelay } from '../../testkit/relay-process';
import { localRelayForTest, webhookForTest } from '../support/fixtures';

/** Sends `count` messages at once to a relay with the stack's fan-out (5 pollers × 10 in flight), and waits for each to end somewhere. */
async function flood(
  count: number,
  options: RateLimitedWebhookOptions,
): Promise<{ ids: string[]; deadLettered: number; left: number; limit: RateLimitedResponder; relay: RelayProcess }> {
  const limit = rateLimitedResponder(options);
  const webhook = await webhookForTest(limit.respond);
  const { relay, ready, sqs } = await localRelayForTest({
    WEBHOOK_URL: webhook.url,
    LOG_FORMAT: 'json',
    POLLERS: '5',
    MAX_CONCURRENCY: '10',
    BATCH_SIZE: '10',
  });
  const ids = await sendMessages(sqs, ready.queueUrl, count);
  const { deadLettered, left } = await settle(sqs, ready, count, () => limit.delivered.size);
  console.info(
    `back-pressure e2e: ${limit.delivered.size} of ${count} delivered, ${deadLettered} dead-lettered, ${limit.refused()} of ${webhook.requests.length} requests refused`,
  );
  return { ids, deadLettered, left, limit, relay };
}

function expectDeliveredOnce(limit: RateLimitedResponder, ids: readonly string[]): void {
  expect(limit.duplicates()).toBe(0);
  expect(new Set(limit.delivered.keys())).toEqual(new Set(ids));
}

describe('a webhook that takes 50 requests/s and answers 429 + Retry-After: 1 above it', () => {
  test('300 messages sent at once: every one delivered exactly once, none dead-lettered, nothing left on the queue', async () => {
    const { ids, deadLettered, left, limit, relay } = await flood(300, { requestsPerSecond: 50 });
    expect(deadLettered).toBe(0);
    expect(left).toBe(0);
    expectDeliveredOnce(limit, ids);
    expect(await stopRelay(relay)).toBe(0);
  }, 180_000);
});

describe('a webhook that answers 500 for 40 s (a bad deploy), then recovers', () => {
  // 500, not 503: the breaker opens only once the 500s have gone on for 5 s, so the first attempts spend receives on their
  // backoff, and its holds spend more: 40 s outlasts five receives, so a receive count of 5 would give up.
  test('50 messages sent at once: the retry window, not the receive count, decides: every one delivered exactly once', async () => {
    const { ids, deadLettered, left, limit, relay } = await flood(50, { unavailableForMs: 40_000, unavailableStatus: 500 });
    expect(deadLettered).toBe(0);
    expect(left).toBe(0);
    expectDeliveredOnce(limit, ids);
    expect(await stopRelay(relay)).toBe(0);
  }, 240_000);
});

describe('MAX_REQUESTS_PER_SECOND=20, shared by 2 pollers as by 2 concurrent invocations', () => {
  test('120 messages to a webhook that takes everything: no second sees more than the ceiling (and a request of burst per poller)', async () => {
    const open = await webhookForTest();
    const { ready, sqs } = await localRelayForTest({
      WEBHOOK_URL: open.url,
      LOG_FORMAT: 'json',
      POLLERS: '2',
      MAX_CONCURRENCY: '10',
      BATCH_SIZE: '10',
      MAX_REQUESTS_PER_SECOND: '20',
    });
    await sendMessages(sqs, ready.queueUrl, 120);
    const delivered = (): number => new Set(open.requests.map((request) => request.headers['x-carrier-message-id'])).size;
    const { deadLettered, left } = await settle(sqs, ready, 120, delivered, Date.now() + 60_000);
    expect({ deadLettered, left, delivered: delivered() }).toEqual({ deadLettered: 0, left: 0, delivered: 120 });
    // An upper bound only: a slow machine sends fewer, never more.
    const times = open.requests.map((request) => request.receivedAt).sort((a, b) => a - b);
    const busiestSecond = Math.max(...times.map((start) => times.filter((t) => t >= start && t < start + 1000).length));
    expect(busiestSecond).toBeLessThanOrEqual(20 + 2);
  }, 120_000);
});
