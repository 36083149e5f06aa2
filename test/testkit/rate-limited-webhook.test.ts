/** The back-pressure scenarios' webhook: its bucket refuses what is over it, and it counts each message id once. */
import { describe, expect, test } from 'vitest';
import { rateLimitedResponder } from '../../testkit/rate-limited-webhook';
import { webhookForTest } from '../support/fixtures';

const post = async (url: string, id: string): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'X-Carrier-Message-Id': id }, body: `body of ${id}` });

describe('rateLimitedResponder', () => {
  test('a burst over the bucket: its size accepted, the rest 429 + Retry-After: 1, each counted', async () => {
    // 1 request/s: at most one more token can come in while the 20 requests are answered.
    const limit = rateLimitedResponder({ requestsPerSecond: 1, burst: 5 });
    const webhook = await webhookForTest(limit.respond);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => post(webhook.url, `m${index}`)));
    const accepted = answers.filter((answer) => answer.status === 200).length;
    expect(accepted).toBeGreaterThanOrEqual(5);
    expect(accepted).toBeLessThanOrEqual(6);
    for (const answer of answers.filter((answer) => answer.status !== 200)) {
      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toBe('1');
    }
    expect(limit.delivered.size).toBe(accepted);
    expect(limit.refused()).toBe(20 - accepted);
    expect(webhook.requests).toHaveLength(20);
  });

  test('a message accepted twice is a duplicate; without the id header the body stands for it', async () => {
    const limit = rateLimitedResponder();
    const webhook = await webhookForTest(limit.respond);
    await post(webhook.url, 'a');
    await post(webhook.url, 'a');
    await fetch(webhook.url, { method: 'POST', body: 'no id' });
    expect([...limit.delivered]).toEqual([
      ['a', 2],
      ['no id', 1],
    ]);
    expect(limit.duplicates()).toBe(1);
  });

  test('unavailable: the given status without Retry-After from the first request for the given time, then 200', async () => {
    const limit = rateLimitedResponder({ unavailableForMs: 300, unavailableStatus: 500 });
    const webhook = await webhookForTest(limit.respond);
    const first = await post(webhook.url, 'a');
    expect(first.status).toBe(500);
    expect(first.headers.get('retry-after')).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await post(webhook.url, 'a')).status).toBe(200);
    expect(limit.refused()).toBe(1);
    expect(limit.lastDeliveryAt()).toBeDefined();
  });
});
