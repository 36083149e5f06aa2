/** lambda/rate-limit-headers.ts: every form of rate-limit headers the relay reads, and what it ignores. */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { quotaOf, RATE_LIMIT_HEADER_NAMES } from '../../lambda/rate-limit-headers';

const NOW = 1_700_000_000_000;

describe('the IETF draft, current form (-08 onward): RateLimit and RateLimit-Policy lists', () => {
  test('remaining and reset from RateLimit, the quota per window from the policy of the same name', () => {
    expect(quotaOf({ ratelimit: '"default";r=50;t=30', 'ratelimit-policy': '"default";q=100;w=60' }, NOW)).toEqual({
      remaining: 50,
      resetSeconds: 30,
      limit: 100,
      windowSeconds: 60,
    });
  });

  test('several policies: the one closest to running out binds', () => {
    const quota = quotaOf(
      { ratelimit: '"hour";r=900;t=3000, "day";r=100;t=36000', 'ratelimit-policy': '"hour";q=1000;w=3600, "day";q=5000;w=86400' },
      NOW,
    );
    expect(quota).toMatchObject({ remaining: 100, resetSeconds: 36000, limit: 5000, windowSeconds: 86400 });
  });

  test('a policy alone still says the long-run rate; one counted in other units than requests is left out', () => {
    expect(quotaOf({ 'ratelimit-policy': '"burst";q=100;w=60' }, NOW)).toMatchObject({ limit: 100, windowSeconds: 60 });
    expect(quotaOf({ 'ratelimit-policy': '"bytes";q=65535;qu="content-bytes";w=10' }, NOW)).toBeUndefined();
  });

  test('what remains of a quota in other units is left out with its policy: bytes spent are not requests spent', () => {
    const policy = '"req";q=1000;w=60, "bytes";q=100000;qu="content-bytes";w=60';
    expect(quotaOf({ ratelimit: '"req";r=999;t=60, "bytes";r=0;t=60', 'ratelimit-policy': policy }, NOW)).toEqual({
      remaining: 999,
      resetSeconds: 60,
      limit: 1000,
      windowSeconds: 60,
    });
    const bytesOnly = '"bytes";q=100000;qu="content-bytes";w=60';
    expect(quotaOf({ ratelimit: '"bytes";r=0;t=60', 'ratelimit-policy': bytesOnly }, NOW)).toBeUndefined();
  });

  test('a partition key and other parameters are read past', () => {
    expect(quotaOf({ ratelimit: '"peruser";r=5;t=2;pk=:cHsdsRa894==:;acme-x=1' }, NOW)).toMatchObject({ remaining: 5, resetSeconds: 2 });
  });
});

describe("the draft's earlier forms", () => {
  test('-07: RateLimit as a dictionary of limit, remaining, reset, with RateLimit-Policy 100;w=60', () => {
    expect(quotaOf({ ratelimit: 'limit=100, remaining=25, reset=5', 'ratelimit-policy': '100;w=60' }, NOW)).toEqual({
      remaining: 25,
      resetSeconds: 5,
      limit: 100,
      windowSeconds: 60,
    });
  });

  test('the first drafts: RateLimit-Limit (a policy list after it is read past), -Remaining, -Reset in seconds', () => {
    expect(quotaOf({ 'ratelimit-limit': '10, 10;w=1, 50;w=60', 'ratelimit-remaining': '4', 'ratelimit-reset': '7' }, NOW)).toMatchObject({
      remaining: 4,
      resetSeconds: 7,
      limit: 10,
    });
  });
});

describe('X-RateLimit-*', () => {
  test('reset in seconds, or as a Unix time in seconds (GitHub) or milliseconds', () => {
    const base = { 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '4999' };
    expect(quotaOf({ ...base, 'x-ratelimit-reset': '60' }, NOW)?.resetSeconds).toBe(60);
    expect(quotaOf({ ...base, 'x-ratelimit-reset': String(NOW / 1000 + 3600) }, NOW)?.resetSeconds).toBe(3600);
    expect(quotaOf({ ...base, 'x-ratelimit-reset': String(NOW + 90_000) }, NOW)?.resetSeconds).toBe(90);
    expect(quotaOf({ ...base, 'x-ratelimit-reset': String(NOW / 1000 - 5) }, NOW)?.resetSeconds).toBe(0);
  });

  test('a RateLimit field wins over them; none of them: nothing', () => {
    expect(quotaOf({ ratelimit: '"d";r=1;t=1', 'x-ratelimit-remaining': '900' }, NOW)?.remaining).toBe(1);
    expect(quotaOf({}, NOW)).toBeUndefined();
  });
});

describe('malformed fields are ignored, as the draft asks', () => {
  test.each([
    [{ ratelimit: '"d";r=-1;t=5' }],
    [{ ratelimit: '"d";r=abc' }],
    [{ ratelimit: 'garbage' }],
    [{ 'x-ratelimit-remaining': '1e3' }],
    [{ 'ratelimit-policy': 'q=;w=' }],
  ])('%j → nothing', (headers) => {
    expect(quotaOf(headers, NOW)).toBeUndefined();
  });

  test('property: any text in any of the fields gives undefined or whole, non-negative numbers, never throws', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...RATE_LIMIT_HEADER_NAMES), fc.string({ maxLength: 80 })), (headers) => {
        const quota = quotaOf(headers, NOW);
        for (const value of Object.values(quota ?? {})) {
          if (value !== undefined) expect(value).toBeGreaterThanOrEqual(0);
        }
      }),
      { numRuns: 500 },
    );
  });
});
