/** The back-pressure scenarios' webhook: its bucket refuses what is over it, and it counts each message id once. */
import { afterEach, describe, expect, test } from 'vitest';
import { type RateLimitedWebhook, startRateLimitedWebhook } from '../../testkit/rate-limited-webhook';

let webhook: RateLimitedWebhook | undefined;
afterEach(async () => {
  await webhook?.close();
  webhook = undefined;
});

const post = async (url: string, id: string): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'X-Carrier-Message-Id': id }, body: `body of ${id}` });

describe('startRateLimitedWebhook', () => {
  test('a burst over the bucket: its size accepted, the rest 429 + Retry-After: 1, each counted', async () => {
    // 1 request/s: at most one more token can come in while the 20 requests are answered.
    webhook = await startRateLimitedWebhook({ requestsPerSecond: 1, burst: 5 });
    const url = webhook.url;
    const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => post(url, `m${index}`)));
    const accepted = answers.filter((answer) => answer.status === 200).length;
    expect(accepted).toBeGreaterThanOrEqual(5);
    expect(accepted).toBeLessThanOrEqual(6);
    for (const answer of answers.filter((answer) => answer.status !== 200)) {
      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toBe('1');
    }
    expect(webhook.delivered.size).toBe(accepted);
    expect(webhook.refused()).toBe(20 - accepted);
    expect(webhook.requests()).toBe(20);
  });

  test('a message accepted twice is a duplicate; without the id header the body stands for it', async () => {
    webhook = await startRateLimitedWebhook();
    await post(webhook.url, 'a');
    await post(webhook.url, 'a');
    await fetch(webhook.url, { method: 'POST', body: 'no id' });
    expect([...webhook.delivered]).toEqual([
      ['a', 2],
      ['no id', 1],
    ]);
    expect(webhook.duplicates()).toBe(1);
  });

  test('unavailable: the given status without Retry-After from the first request for the given time, then 200', async () => {
    webhook = await startRateLimitedWebhook({ unavailableForMs: 300, unavailableStatus: 500 });
    const first = await post(webhook.url, 'a');
    expect(first.status).toBe(500);
    expect(first.headers.get('retry-after')).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await post(webhook.url, 'a')).status).toBe(200);
    expect(webhook.refused()).toBe(1);
    expect(webhook.lastDeliveryAt()).toBeDefined();
  });
});
