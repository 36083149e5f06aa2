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

  const postAs = async (url: string, id: string, tenant?: string): Promise<Response> =>
    fetch(url, {
      method: 'POST',
      headers: { 'X-Carrier-Message-Id': id, ...(tenant ? { 'X-Carrier-Attr-tenant': tenant } : {}) },
      body: id,
    });

  test('refuse: a message refused for its own sake with its Retry-After, the others taken; refusedIds and deliveredAt tell which', async () => {
    const limit = rateLimitedResponder({ refuse: ({ tenant }) => (tenant === 'over' ? 3600 : undefined) });
    const webhook = await webhookForTest(limit.respond);
    const refused = await postAs(webhook.url, 'a', 'over');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('3600');
    expect((await postAs(webhook.url, 'b', 'fine')).status).toBe(200);
    expect([...limit.refusedIds]).toEqual(['a']);
    expect([...limit.deliveredAt.keys()]).toEqual(['b']);
  });

  test('tenantLimits: a tenant over its requests per second is refused (Retry-After: 1), the others not', async () => {
    const limit = rateLimitedResponder({ tenantLimits: { slow: 1 } });
    const webhook = await webhookForTest(limit.respond);
    const slow = await Promise.all(['s1', 's2', 's3'].map((id) => postAs(webhook.url, id, 'slow')));
    const fast = await Promise.all(['f1', 'f2', 'f3'].map((id) => postAs(webhook.url, id, 'fast')));
    expect(slow.filter((answer) => answer.status === 200)).toHaveLength(1);
    expect(fast.every((answer) => answer.status === 200)).toBe(true);
  });

  test('announce: a fixed window that says how much is left (RateLimit, RateLimit-Policy), and refuses past it until it ends', async () => {
    const limit = rateLimitedResponder({ requestsPerSecond: 3, announce: true });
    const webhook = await webhookForTest(limit.respond);
    // Within one window of the clock: start right after a second begins.
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 5));
    const answers = [];
    for (const id of ['a', 'b', 'c', 'd']) answers.push(await post(webhook.url, id));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    expect(answers[0]?.headers.get('ratelimit-policy')).toBe('"default";q=3;w=1');
    expect(answers[0]?.headers.get('ratelimit')).toBe('"default";r=2;t=1');
    expect(answers[3]?.headers.get('retry-after')).toBe('1');
  });
});
