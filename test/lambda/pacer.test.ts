/**
 * Unit and property tests of lambda/pacer.ts and lambda/pace.ts (docs/webhook-owners.md, "Back-pressure"): what an answer says
 * about the pace, the slow start, the cuts and what does not cut (a share of refusals a floor could explain), the endpoint hold
 * and its evidence, FIFO waiters and their deadlines, the ceiling's token bucket, rate-limit headers, per-key paces. The
 * simulations against model webhooks are in pacing-simulation.test.ts. Time is vitest's fake clock throughout.
 */
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, inject, test, vi } from 'vitest';
import { CLEAN_START_ANSWERS, CLEAN_START_MS, FLOOD_SHARE } from '../../lambda/clean-start';
import { UNMOVED_VERDICT_ANSWERS, VERDICT_ANSWERS } from '../../lambda/doubt';
import { LOWEST_KEPT_MS } from '../../lambda/latency-watch';
import {
  DECREASE_FACTOR,
  Pace,
  INITIAL_IN_FLIGHT,
  LONG_HOLD_SECONDS,
  MIN_REQUESTS_PER_SECOND,
  QUOTA_HEADROOM,
  type PacedAnswer,
  type PaceSignal,
} from '../../lambda/pace';
import { OTHERS_GONE_MS } from '../../lambda/refusal-floor';
import { HOLD_ACCEPTED_SHARE, HOLD_AFTER_MESSAGES, HOLD_EVIDENCE_MESSAGES, HOLD_EVIDENCE_MS } from '../../lambda/refusal-run';
import {
  FAST_PROBES_MS,
  FIRST_PROBE_MS,
  FRESH_PROBE_ANSWER_TIMES,
  FRESH_PROBE_EVERY_MS,
  FRESH_PROBE_MIN_MS,
  KEPT_BACK_MS,
  PROBE_AFTER_KEPT_BACK,
  PROBE_ANSWER_WAIT_TIMES,
  PROBE_EVERY_MS,
  QUICK_HOLD_SECONDS,
} from '../../lambda/endpoint-hold';
import {
  KEY_WAIT_MS,
  MAX_KEYS,
  MESSAGE_GROUP_KEY,
  type PaceClock,
  Pacer,
  type PacingSettings,
  paceKeyOf,
  paceSignalOf,
  SYSTEM_CLOCK,
} from '../../lambda/pacer';
import type { TransportErrorKind, WebhookResult } from '../../lambda/transmitter';
import { seeded } from '../../testkit/seeded-random';

const answered = (status: number): WebhookResult => ({ kind: 'response', status, retryAfter: undefined, excerpt: '', latencyMs: 1 });
const failed = (error: TransportErrorKind): WebhookResult => ({ kind: 'transport-error', error, message: '', latencyMs: 1 });

const settings = (overrides: Partial<PacingSettings> = {}): PacingSettings => ({
  adaptive: true,
  maxInFlight: 10,
  maxRequestsPerSecond: undefined,
  ...overrides,
});

/** Vitest's fake clock (the process's clock, faked), drawing `draws` in turn (then 0): with none, no random phase at all. */
const clockDrawing = (...draws: number[]): PaceClock => ({ ...SYSTEM_CLOCK, random: () => draws.shift() ?? 0 });

/** A pacer on vitest's fake clock, whose random draws are 0: a ceiling starts at once, and refusals do not move its phase. */
const pacerOf = (overrides: Partial<PacingSettings> = {}): Pacer => new Pacer(settings(overrides), clockDrawing());

let nextId = 0;
/** An answer of `signal`, for a message of its own unless `messageId` says which. */
const answer = (signal: PaceSignal, more: Partial<PacedAnswer> = {}): PacedAnswer => ({
  signal,
  latencyMs: 5,
  messageId: `m${nextId++}`,
  ...more,
});

/** Lets resolved promises run their callbacks (fake timers do not advance). */
const settle = async (): Promise<void> => {
  await vi.advanceTimersByTimeAsync(0);
};

/** An acquire whose outcome the test can read once it settles: `undefined` while still waiting. */
function acquireWatched(
  pacer: Pacer,
  deadlineMs: number,
  key?: string,
  firstReceive = false,
): { readonly started: () => boolean | undefined } {
  const slot = pacer.acquire(deadlineMs, key, firstReceive);
  let outcome: boolean | undefined = slot === true ? true : undefined;
  if (slot !== true) void slot.then((started) => (outcome = started));
  return { started: () => outcome };
}

/** One request, `gapMs` after the last (or as soon after as the pace lets it start), answered with `a`. */
async function exchange(pacer: Pacer, a: PacedAnswer, gapMs = 0, key?: string): Promise<void> {
  await vi.advanceTimersByTimeAsync(gapMs);
  const slot = pacer.acquire(Number.POSITIVE_INFINITY, key);
  if (slot !== true) {
    let started = false;
    void slot.then(() => (started = true));
    // Through a hold in one step, else in steps that grow to 100 ms (a token at the slowest pace is 2 s away).
    for (let step = 1; !started; step = Math.min(100, step * 2))
      await vi.advanceTimersByTimeAsync(Math.max(step, pacer.holdEndsAt() - Date.now()));
  }
  pacer.release(a, key);
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('paceSignalOf', () => {
  test.each([
    [200, 'accepted'],
    [201, 'accepted'],
    [204, 'accepted'],
    [299, 'accepted'],
    [429, 'slow-down'],
    [503, 'slow-down'],
    [504, 'slow-down'],
    [408, 'slow-down'],
    [100, 'neutral'],
    [301, 'neutral'],
    [304, 'neutral'],
    [400, 'neutral'],
    [404, 'neutral'],
    [409, 'neutral'],
    [500, 'neutral'],
    [502, 'neutral'],
  ] as const)('status %d → %s', (status, signal) => {
    expect(paceSignalOf(answered(status))).toBe(signal);
  });

  test.each([
    ['timeout', 'slow-down'],
    ['connection', 'neutral'],
    ['dns', 'neutral'],
    ['protocol', 'neutral'],
    ['invalid-request', 'neutral'],
  ] as const)('transport error %s → %s', (error, signal) => {
    expect(paceSignalOf(failed(error))).toBe(signal);
  });
});

describe('paceKeyOf', () => {
  const record = {
    attributes: { MessageGroupId: 'group-7' },
    messageAttributes: { tenant: { stringValue: 'acme', dataType: 'String', stringListValues: [], binaryListValues: [] } },
  } as never;
  test('a message attribute by name, the message group by MessageGroupId, nothing when absent', () => {
    expect(paceKeyOf(record, 'tenant')).toBe('acme');
    expect(paceKeyOf(record, MESSAGE_GROUP_KEY)).toBe('group-7');
    expect(paceKeyOf(record, 'region')).toBeUndefined();
    expect(paceKeyOf({ attributes: {}, messageAttributes: {} } as never, MESSAGE_GROUP_KEY)).toBeUndefined();
  });
});

describe('a fresh pacer', () => {
  test('adaptive: unpaced, with a slow start of 2 in flight that grows by one per acceptance up to MAX_CONCURRENCY', async () => {
    const pacer = pacerOf();
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: INITIAL_IN_FLIGHT });
    for (let i = 0; i < INITIAL_IN_FLIGHT; i += 1) expect(pacer.acquire(Infinity)).toBe(true);
    expect(pacer.acquire(Date.now())).not.toBe(true);
    pacer.release(answer('accepted'));
    pacer.release(answer('accepted'));
    expect(pacer.snapshot().inFlightLimit).toBe(INITIAL_IN_FLIGHT + 2);
    for (let i = 0; i < 20; i += 1) await exchange(pacer, answer('accepted'));
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: 10 });
  });

  test('a refusal the pace tolerates does not end the slow start; after a cut the in-flight limit grows by 1/limit per acceptance', async () => {
    const pacer = pacerOf();
    await exchange(pacer, answer('slow-down'));
    for (let i = 0; i < 4; i += 1) await exchange(pacer, answer('accepted'));
    // One refusal in five answers says nothing of how many the webhook takes at once: 2 + 4.
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: INITIAL_IN_FLIGHT + 4 });
    for (let i = 0; i < 40 && pacer.snapshot().requestsPerSecond === undefined; i += 1)
      await exchange(pacer, answer(i % 6 === 0 ? 'accepted' : 'slow-down'), 10);
    const cut = pacer.snapshot().inFlightLimit;
    for (let i = 0; i < 4; i += 1) await exchange(pacer, answer('accepted'), 200);
    // 1/limit each: at most one more over four acceptances, not the slow start's four.
    expect(pacer.snapshot().inFlightLimit).toBeLessThanOrEqual(cut + 1);
  });

  test('refusals that name a long wait (one tenant over its hourly quota) neither end the slow start nor pace anything', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 40; i += 1) await exchange(pacer, answer(i % 2 === 0 ? 'slow-down' : 'accepted', { retryAfterSeconds: 3600 }), 1);
    // Half of them refused for an hour: as fast as ever, and the in-flight limit grew by one an answer to MAX_CONCURRENCY.
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: 10 });
    expect(pacer.refusalFloor()).toBe(0);
    // Most refused, for an hour: still nothing paced (a hold's business, after 2 s of them). For 1 s, a token bucket's: paced.
    for (const [retryAfterSeconds, paced] of [
      [3600, false],
      [1, true],
    ] as const) {
      const most = pacerOf();
      for (let i = 0; i < 30; i += 1) await exchange(most, answer(i % 6 === 0 ? 'accepted' : 'slow-down', { retryAfterSeconds }), 10);
      expect(most.snapshot().requestsPerSecond !== undefined, `Retry-After: ${retryAfterSeconds}`).toBe(paced);
    }
  });

  test('PACING=false: MAX_CONCURRENCY in flight at once (no slow start); with a ceiling, it runs at it', () => {
    expect(pacerOf({ adaptive: false }).snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: 10 });
    expect(pacerOf({ maxRequestsPerSecond: 40 }).snapshot()).toEqual({ requestsPerSecond: 40, inFlightLimit: INITIAL_IN_FLIGHT });
  });

  test('the next request waits for a release when the in-flight limit is reached', async () => {
    const pacer = pacerOf({ adaptive: false, maxInFlight: 3 });
    for (let i = 0; i < 3; i += 1) expect(pacer.acquire(Date.now() + 1000)).toBe(true);
    const fourth = acquireWatched(pacer, Date.now() + 1000);
    await settle();
    expect(fourth.started()).toBeUndefined();
    pacer.release(answer('neutral'));
    await settle();
    expect(fourth.started()).toBe(true);
  });
});

describe('a webhook that slows down rather than refuses', () => {
  /** `count` acceptances one after another, each taking `latencyMs` (or a draw of it). */
  async function takenIn(pacer: Pacer, count: number, latencyMs: () => number): Promise<void> {
    for (let i = 0; i < count; i += 1) await exchange(pacer, answer('accepted', { latencyMs: latencyMs() }));
  }

  test('the slow start ends once a round trip takes twice as long as the one before: requests queue at the webhook', async () => {
    // Rounds of the in-flight limit's answers (4 at least, the limit as the last ended), judged on their fastest answer at
    // their end: 4 answers, then 5. One more in flight per answer until then.
    const pacer = pacerOf({ maxInFlight: 50 });
    await takenIn(pacer, 4, () => 300);
    await takenIn(pacer, 5, () => 700);
    expect(pacer.snapshot().inFlightLimit).toBe(INITIAL_IN_FLIGHT + 8);
    await takenIn(pacer, 12, () => 700);
    expect(pacer.snapshot().inFlightLimit).toBe(INITIAL_IN_FLIGHT + 9);
    // Answers over a tenth of the request timeout (10 s): judged from a round's second answer, before the limit doubles again.
    const slow = pacerOf({ maxInFlight: 50 });
    await takenIn(slow, 4, () => 1_500);
    await takenIn(slow, 2, () => 3_100);
    expect(slow.snapshot().inFlightLimit).toBe(INITIAL_IN_FLIGHT + 5);
    await takenIn(slow, 4, () => 3_100);
    expect(slow.snapshot().inFlightLimit).toBe(INITIAL_IN_FLIGHT + 5);
    // A latency that only varies, even threefold, is no queue: the limit grows on to MAX_CONCURRENCY (a round of lucky fast
    // answers may end the slow start: seed 7's first two take 154 and 169 ms, the next two 443 and 360).
    for (const seed of [1, 2, 7]) {
      const draw = seeded(seed);
      const uneven = pacerOf();
      await takenIn(uneven, 50, () => 150 + 300 * draw());
      expect(uneven.snapshot().inFlightLimit, `seed ${seed}`).toBe(10);
    }
  });

  test('after the slow start, the in-flight limit grows only while the latest answers take under twice the fastest so far', async () => {
    const pacer = pacerOf();
    // A timeout ends the slow start (halving the limit): growth is one per round trip from there.
    await takenIn(pacer, 8, () => 100);
    pacer.release(answer('slow-down', { latencyMs: 10_000, timedOut: true }));
    const after = pacer.snapshot().inFlightLimit;
    await takenIn(pacer, 16, () => 100);
    const grown = pacer.snapshot().inFlightLimit;
    expect(grown).toBeGreaterThan(after);
    // Eight answers at over twice the fastest eight's mean: requests queue, the limit stays where it is.
    await takenIn(pacer, 8, () => 250);
    const queued = pacer.snapshot().inFlightLimit;
    await takenIn(pacer, 40, () => 250);
    expect(pacer.snapshot().inFlightLimit).toBe(queued);
    // Back near the fastest: it grows again.
    await takenIn(pacer, 40, () => 150);
    expect(pacer.snapshot().inFlightLimit).toBeGreaterThan(queued);
  });

  test(`a webhook slower for good is its new self after ${LOWEST_KEPT_MS / 1000} s to twice that: the limit grows again`, async () => {
    const pacer = pacerOf();
    await takenIn(pacer, 16, () => 5);
    pacer.release(answer('slow-down', { latencyMs: 10_000, timedOut: true }));
    // Twelve times slower from here: once a block of 8 says so, no more in flight.
    await takenIn(pacer, 8, () => 60);
    const cut = pacer.snapshot().inFlightLimit;
    await takenIn(pacer, 40, () => 60);
    expect(pacer.snapshot().inFlightLimit).toBe(cut);
    await vi.advanceTimersByTimeAsync(LOWEST_KEPT_MS);
    await takenIn(pacer, 40, () => 60);
    expect(pacer.snapshot().inFlightLimit).toBe(cut);
    await vi.advanceTimersByTimeAsync(LOWEST_KEPT_MS);
    await takenIn(pacer, 40, () => 60);
    expect(pacer.snapshot().inFlightLimit).toBeGreaterThan(cut);
  });

  test('a webhook slow whatever its load (5 s, the request timeout 10 s) is no queue: the limit grows on', async () => {
    const pacer = pacerOf({ requestTimeoutMs: 10_000 });
    await takenIn(pacer, 8, () => 5_000);
    pacer.release(answer('slow-down', { latencyMs: 10_000, timedOut: true }));
    await takenIn(pacer, 8, () => 5_500);
    const after = pacer.snapshot().inFlightLimit;
    await takenIn(pacer, 40, () => 5_000 + 1_000 * (nextId % 2));
    expect(pacer.snapshot().inFlightLimit).toBeGreaterThan(after);
  });

  test('a timeout halves the in-flight limit, once per round trip; with PACING=false it changes nothing', async () => {
    const pacer = pacerOf();
    await takenIn(pacer, 20, () => 100);
    expect(pacer.snapshot().inFlightLimit).toBe(10);
    pacer.release(answer('slow-down', { latencyMs: 10_000, timedOut: true }));
    expect(pacer.snapshot().inFlightLimit).toBe(5);
    // The others sent with it time out together: one halving for them all.
    pacer.release(answer('slow-down', { latencyMs: 10_000, timedOut: true }));
    expect(pacer.snapshot().inFlightLimit).toBe(5);
    await vi.advanceTimersByTimeAsync(10_000);
    pacer.release(answer('slow-down', { latencyMs: 10_000, timedOut: true }));
    expect(pacer.snapshot().inFlightLimit).toBe(2);
    const unpaced = pacerOf({ adaptive: false });
    unpaced.release(answer('slow-down', { latencyMs: 10_000, timedOut: true }));
    expect(unpaced.snapshot().inFlightLimit).toBe(10);
  });
});

describe('cuts', () => {
  /** `count` answers, `refusedEvery`-th a refusal (0: none), the clock moving `gapMs` before each. */
  async function answers(pacer: Pacer, count: number, refusedEvery: number, gapMs: number, retryAfterSeconds?: number): Promise<void> {
    for (let i = 1; i <= count; i += 1) {
      const refused = refusedEvery > 0 && i % refusedEvery === 0;
      await exchange(pacer, answer(refused ? 'slow-down' : 'accepted', refused ? { retryAfterSeconds } : {}), gapMs);
    }
  }

  test('most requests refused, with acceptances among them: a cut at once, to 85 % of 1.25 × what was sent', async () => {
    const pacer = pacerOf();
    await answers(pacer, 15, 0, 10); // 100 requests/s, slow start over
    await answers(pacer, 9, 3, 10); // a third refused: the pace doubts (the share could be a floor)…
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    for (let i = 0; i < 30; i += 1) await exchange(pacer, answer(i % 6 === 0 ? 'accepted' : 'slow-down'), 10); // … most refused
    const rate = pacer.snapshot().requestsPerSecond as number;
    expect(rate).toBeLessThanOrEqual(1.25 * 100 * DECREASE_FACTOR * 1.01);
    expect(rate).toBeGreaterThan(20);
  });

  test('a refused share some floor could explain, on a calm pace, is not cut at first: a doubt (the dips will tell), and then cut only so far', async () => {
    const pacer = pacerOf();
    await answers(pacer, 90, 5, 10); // 20 % refused at 100/s, for 0.9 s
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    await answers(pacer, 300, 5, 10); // three seconds more: no verdict yet at so few answers in the dips
    expect(pacer.snapshot().requestsPerSecond ?? Number.POSITIVE_INFINITY).toBeGreaterThanOrEqual(0.7 * 100);
  });

  test('paced when its doubt began (cut for congestion before), such a share is cut at once: no second over the capacity met before', async () => {
    const pacer = pacerOf();
    await answers(pacer, 15, 0, 10);
    await answers(pacer, 20, 1, 10); // swamped: cut
    await answers(pacer, 200, 0, 10); // calm again, still paced, growing back
    const before = pacer.snapshot().requestsPerSecond as number;
    const sentBefore = Math.min(before, 100);
    await answers(pacer, 50, 3, 10); // a third refused, for half a second: a doubt, and cuts meanwhile
    const rate = pacer.snapshot().requestsPerSecond as number;
    expect(rate).toBeLessThan(before);
    expect(rate).toBeGreaterThanOrEqual(0.7 * sentBefore * 0.99); // as far as the doubt keeps: refusals that persist cost 30 % at most
  });

  test('once cut (the pace not calm), refusals over no floor cut again, each time at most to half', async () => {
    const pacer = pacerOf();
    await answers(pacer, 15, 0, 10);
    await answers(pacer, 20, 1, 10); // swamped: cut
    const first = pacer.snapshot().requestsPerSecond as number;
    await answers(pacer, 40, 5, 10); // 20 %, right after a cut: congestion, cut
    const second = pacer.snapshot().requestsPerSecond as number;
    expect(second).toBeLessThan(first);
    expect(second).toBeGreaterThanOrEqual(MIN_REQUESTS_PER_SECOND);
  });

  test('never below MIN_REQUESTS_PER_SECOND and one request in flight, however many refusals', async () => {
    const pacer = pacerOf();
    await answers(pacer, 15, 0, 10);
    let lowest = { requestsPerSecond: Number.POSITIVE_INFINITY, inFlightLimit: Number.POSITIVE_INFINITY };
    for (let i = 0; i < 300; i += 1) {
      await exchange(pacer, answer(i % 10 === 0 ? 'accepted' : 'slow-down'), 100);
      const { requestsPerSecond = Number.POSITIVE_INFINITY, inFlightLimit } = pacer.snapshot();
      lowest = {
        requestsPerSecond: Math.min(lowest.requestsPerSecond, requestsPerSecond),
        inFlightLimit: Math.min(lowest.inFlightLimit, inFlightLimit),
      };
    }
    // Down to about the rate the webhook took (a request a second, or two), never below the slowest pace nor one in flight.
    expect(lowest.inFlightLimit).toBe(1);
    expect(lowest.requestsPerSecond).toBeGreaterThanOrEqual(MIN_REQUESTS_PER_SECOND);
    expect(lowest.requestsPerSecond).toBeLessThanOrEqual(2);
  });

  test('neutral answers (500, connection refused) change nothing', async () => {
    const pacer = pacerOf({ adaptive: false });
    for (let i = 0; i < 50; i += 1) await exchange(pacer, answer('neutral'), 100);
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: 10 });
  });

  test('refusals with no acceptance at all (a backlog refused for its own sake, or the whole endpoint) cut nothing', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 100; i += 1) await exchange(pacer, answer('slow-down', { retryAfterSeconds: 3600 }), 5);
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
  });
});

describe('doubts and floors at a slow pace (a webhook answering in 200 ms: a few dozen requests a second)', () => {
  /** `seconds` of requests `gapMs` apart, each refused (`Retry-After: 1`) with probability `share`. */
  async function randomRefusals(pacer: Pacer, seconds: number, gapMs: number, share: number, random: () => number): Promise<void> {
    for (const end = Date.now() + seconds * 1000; Date.now() < end; ) {
      const refused = random() < share;
      await exchange(pacer, answer(refused ? 'slow-down' : 'accepted', refused ? { retryAfterSeconds: 1 } : {}), gapMs);
    }
  }

  test(`unpaced when its doubt began, a share that did not fall in dips too thin for ${VERDICT_ANSWERS} answers is persistence: a floor, still unpaced`, async () => {
    const pacer = pacerOf();
    await randomRefusals(pacer, 8, 40, 0.2, seeded(1)); // 25 requests/s, a fifth refused: a doubt of 5 s, ~25 answers in its dips
    expect(pacer.refusalFloor()).toBeGreaterThan(0.1);
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
  });

  test('paced when its doubt began (cut for congestion before), the same thin dips are no verdict: the floor stays as it was', async () => {
    const pacer = pacerOf();
    await randomRefusals(pacer, 0.15, 10, 0, seeded(2)); // the slow start over
    for (let i = 0; i < 9; i += 1) await exchange(pacer, answer(i % 3 === 2 ? 'slow-down' : 'accepted'), 10); // a doubt…
    for (let i = 0; i < 30; i += 1) await exchange(pacer, answer(i % 6 === 0 ? 'accepted' : 'slow-down'), 10); // … swamped: cut
    await randomRefusals(pacer, 2, 40, 0, seeded(2)); // calm again, still paced: the next refusals begin a doubt
    expect(pacer.snapshot().requestsPerSecond).toBeDefined();
    await randomRefusals(pacer, 8, 40, 0.2, seeded(1));
    expect(pacer.refusalFloor()).toBe(0);
    expect(pacer.snapshot().requestsPerSecond).toBeDefined();
  });

  test('a learned floor stays through the noise of its own share for a minute, and follows the share down once the refusals stop', async () => {
    const pacer = pacerOf();
    const random = seeded(3);
    await randomRefusals(pacer, 4, 5, 0.1, random); // 200 requests/s: a verdict of persistence within a second or two
    const learned = pacer.refusalFloor();
    expect(learned).toBeGreaterThan(0.05);
    await randomRefusals(pacer, 60, 33, 0.1, random); // the same tenth refused, at 30 requests/s
    expect(pacer.refusalFloor()).toBeGreaterThan(0.75 * learned);
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    await randomRefusals(pacer, 20, 5, 0, random);
    expect(pacer.refusalFloor()).toBe(0);
  });
});

/** The clock, ms, at which {@link drivenPace} starts its pace. */
const PACE_START = 1_000_000;

/** A fresh adaptive pace driven by hand, and `reply`: a request started at `startedAt` and answered at `at`. */
function drivenPace(): { pace: Pace; reply: (refused: boolean, startedAt: number, at: number, receivedBefore?: boolean) => void } {
  const pace = new Pace(
    { adaptive: true, maxInFlight: 10, maxRequestsPerSecond: undefined, sharedBy: 1, requestTimeoutMs: 10_000 },
    PACE_START,
  );
  const reply = (refused: boolean, startedAt: number, at: number, receivedBefore = false): void => {
    pace.take(startedAt);
    pace.answered({ signal: refused ? 'slow-down' : 'accepted', latencyMs: at - startedAt, receivedBefore }, at);
  };
  return { pace, reply };
}

/** Refused evenly at `share`: the nth answer is refused when it takes the count of refusals to the next whole number. */
const refusedAt = (n: number, share: number): boolean => Math.floor((n + 1) * share) > Math.floor(n * share);

/** Puts a calm, unpaced {@link drivenPace} in doubt (30 % refused over 20 answers); returns when the doubt begins (the next whole second). */
function inDoubt(reply: (refused: boolean, startedAt: number, at: number) => void): number {
  for (let i = 0; i < 20; i += 1) reply(i % 10 >= 7, PACE_START + 100 + 20 * i, PACE_START + 101 + 20 * i);
  return PACE_START + 1_000;
}

/**
 * Answers in pairs to a doubt begun at `since`: for each `[before, inDip]`, a request started in the slot before a dip and one
 * in the dip ([0, 250) and [250, 500) ms of each half second, four pairs a half second), refused as it says.
 */
function replyInPairs(
  reply: (refused: boolean, startedAt: number, at: number) => void,
  since: number,
  pairs: readonly (readonly [boolean, boolean])[],
): void {
  pairs.forEach(([before, inDip], n) => {
    const cycle = since + 500 * Math.floor(n / 4) + 60 * (n % 4);
    reply(before, cycle, cycle + 10);
    reply(inDip, cycle + 250, cycle + 260);
  });
}

describe('refusals that persist however the pace goes (one tenant over a quota of a few a second, many requests refused at random)', () => {
  test.each([
    ['while first receives are taken', 30, 10],
    // Two or three in any one second, fewer than a share is judged on: batches mostly of that tenant's messages, come back.
    ['while first receives are taken only now and then, one every 400 ms', 8, 400],
  ])('a run of refusals of messages back from the queue, %s, is no hold', async (_case, firstReceives, gapMs) => {
    const pacer = pacerOf();
    for (let i = 0; i < firstReceives; i += 1) await exchange(pacer, answer('accepted'), gapMs);
    // A tenant's messages, refused a second ago, back from the queue together and refused again.
    for (let i = 0; i < 2 * HOLD_AFTER_MESSAGES; i += 1)
      await exchange(pacer, answer('slow-down', { retryAfterSeconds: 1, receivedBefore: true }), 2);
    expect(pacer.holdEndsAt()).toBe(0);
  });

  test.each([
    ['first receives refused too (a token bucket far below what is sent)', false],
    ['no first receive answered lately (a webhook refusing everything, its backlog going round)', true],
  ])('the same run is a hold with %s', async (_case, receivedBefore) => {
    const pacer = pacerOf();
    for (let i = 0; i < 30; i += 1) await exchange(pacer, answer('accepted'), 10);
    // Longer than the pace keeps its answers (4 s): no first receive answered since.
    await vi.advanceTimersByTimeAsync(4_100);
    for (let i = 0; i < HOLD_AFTER_MESSAGES; i += 1)
      await exchange(pacer, answer('slow-down', { retryAfterSeconds: 1, receivedBefore }), 2);
    expect(pacer.holdEndsAt()).toBeGreaterThan(Date.now());
  });

  // Refusals at random bunch: a third of requests refused makes a run of ten with few acceptances among them now and then.
  test("a run of first receives refused, while most of the last second's first receives were taken, is no hold; held once half are refused", async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 40; i += 1) await exchange(pacer, answer('accepted'), 10);
    for (let i = 0; i < HOLD_AFTER_MESSAGES; i += 1) await exchange(pacer, answer('slow-down', { retryAfterSeconds: 1 }), 2);
    expect(pacer.holdEndsAt()).toBe(0);
    // The run goes on, none taken: a token bucket far below what is sent. 40 of 80 refused in the last second is a hold.
    let refusals = HOLD_AFTER_MESSAGES;
    while (pacer.holdEndsAt() === 0 && refusals < 100) {
      await exchange(pacer, answer('slow-down', { retryAfterSeconds: 1 }), 2);
      refusals += 1;
    }
    expect(refusals).toBe(40);
    expect(pacer.holdEndsAt()).toBeGreaterThan(Date.now());
  });

  test("the same run on a pace answered fewer than 32 times in the last second (a young one, a token bucket's first flood) is a hold", async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 20; i += 1) await exchange(pacer, answer('accepted'), 10);
    for (let i = 0; i < HOLD_AFTER_MESSAGES; i += 1) await exchange(pacer, answer('slow-down', { retryAfterSeconds: 1 }), 2);
    expect(pacer.holdEndsAt()).toBeGreaterThan(Date.now());
  });

  test('refusals of messages back from the queue, while first receives are taken, are not the share the pace judges: no floor, no cut', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 15; i += 1) await exchange(pacer, answer('accepted'), 10);
    // Every other request is a message refused a second ago, back and refused again (a tenant over a quota of a few a second);
    // every message received for the first time is taken.
    for (let i = 0; i < 300; i += 1) {
      const back = i % 2 === 1;
      await exchange(pacer, back ? answer('slow-down', { retryAfterSeconds: 1, receivedBefore: true }) : answer('accepted'), 10);
    }
    expect(pacer.refusalFloor()).toBe(0);
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
  });

  test('refusals of messages back from the queue, while the first receives are too few to judge a share on but taken, are no cut', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 30; i += 1) await exchange(pacer, answer('accepted'), 5);
    // For 5 s, a tenant's messages, refused a second ago, back and refused again, fill the batches; one request in 100 is another
    // tenant's message received for the first time, taken: 2 a second, 8 in the 4 s the pace keeps, fewer than a share needs.
    for (let i = 0; i < 1_000; i += 1) {
      const first = i % 100 === 0;
      await exchange(pacer, first ? answer('accepted') : answer('slow-down', { retryAfterSeconds: 1, receivedBefore: true }), 5);
    }
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    expect(pacer.holdEndsAt()).toBe(0);
  });

  /**
   * A tenant over its quota among the others: a floor learned, unpaced, over 8 s of the tenant's messages back from the queue
   * every fourth request, refused at `backRefused`, and a fifth of first receives refused. Then only messages back from the
   * queue for `endMs` (the end of a drain, or the tenant's messages ahead of the rest), refused at `endRefused`.
   * @returns when the end was first cut or held, ms from its start (Infinity: never)
   */
  async function drainEnd(pacer: Pacer, backRefused: number, endRefused: number, endMs: number): Promise<number> {
    const random = seeded(7);
    let i = 0;
    for (const end = Date.now() + 8_000; Date.now() < end; i += 1) {
      const back = i % 4 === 3;
      const refused = random() < (back ? backRefused : 0.2);
      await exchange(pacer, answer(refused ? 'slow-down' : 'accepted', { retryAfterSeconds: 1, receivedBefore: back }), 5);
    }
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    expect(pacer.refusalFloor()).toBeGreaterThan(0.1);
    const start = Date.now();
    for (const end = start + endMs; Date.now() < end; ) {
      const refused = random() < endRefused;
      await exchange(pacer, answer(refused ? 'slow-down' : 'accepted', { retryAfterSeconds: 1, receivedBefore: true }), 5);
      if (pacer.snapshot().requestsPerSecond !== undefined || pacer.holdEndsAt() > Date.now()) return Date.now() - start;
    }
    return Number.POSITIVE_INFINITY;
  }

  test(`messages back from the queue, no first receive among them, refused as they were while unpaced: no cut, no hold for ${OTHERS_GONE_MS} ms`, async () => {
    const pacedAt = await drainEnd(pacerOf(), 0.95, 0.95, 2 * OTHERS_GONE_MS);
    // Then the others are likely all gone: the refused messages left are asked for no more than the pace allows.
    expect(pacedAt).toBeGreaterThanOrEqual(OTHERS_GONE_MS);
    expect(pacedAt).toBeLessThan(2 * OTHERS_GONE_MS);
  });

  test('messages back from the queue, no first receive among them, refused far more than they were: cut', async () => {
    // A token bucket at the end of a drain: the messages back from the queue were refused like the others, now most are.
    expect(await drainEnd(pacerOf(), 0.2, 0.8, OTHERS_GONE_MS)).toBeLessThan(OTHERS_GONE_MS);
  });

  test('a floor gone with a verdict of congestion takes the refused share of messages back from the queue with it', () => {
    const { pace, reply } = drivenPace();
    // A floor: 30 % refused, in the dips as before them.
    const since = inDoubt(reply);
    replyInPairs(
      reply,
      since,
      Array.from({ length: 40 }, (_, n): [boolean, boolean] => [n % 10 >= 7, n % 10 >= 7]),
    );
    expect(pace.refusalFloor).toBeGreaterThan(0.1);
    // Over it, the first receives refused no more than it explains and the messages back from the queue nine in ten.
    let at = since + 6_000;
    for (let n = 0; n < 400; n += 1, at += 5) reply(n % 4 === 3 ? n % 40 !== 3 : n % 10 >= 7, at, at + 2, n % 4 === 3);
    // Long after, the floor stale, 45 % of the first receives refused: a doubt, whose dips refuse none. Congestion: no floor.
    at += 40_000;
    for (let n = 0; n < 100; n += 1, at += 5) reply(refusedAt(n, 0.45), at, at + 2);
    const congested = Math.ceil(at / 1_000) * 1_000;
    replyInPairs(
      reply,
      congested,
      Array.from({ length: 16 }, (): [boolean, boolean] => [true, false]),
    );
    expect(pace.refusalFloor).toBe(0);
    // Then only messages back from the queue, nine in ten refused: nothing explains them now, they cut the pace.
    const rate = pace.snapshot().requestsPerSecond ?? Number.POSITIVE_INFINITY;
    at = congested + 6_500;
    for (let n = 0; n < 200; n += 1, at += 10) reply(n % 10 !== 0, at, at + 2, true);
    expect(pace.snapshot().requestsPerSecond).toBeLessThan(rate);
  });

  test('cuts begun unpaced that do not lower the refused share end as a floor: unpaced again, not cut down and down', async () => {
    const pacer = pacerOf();
    const random = seeded(4);
    // 55 % refused at random (429 without Retry-After: no evidence for a hold), whatever the pace: over half, so cut at once,
    // and never calm enough to doubt.
    for (const end = Date.now() + 6_000; Date.now() < end; ) await exchange(pacer, answer(random() < 0.55 ? 'slow-down' : 'accepted'), 5);
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    expect(pacer.refusalFloor()).toBeGreaterThan(0.4);
  });

  test("cuts begun unpaced whose share falls as a token bucket's would, within the noise of few answers, are congestion: no floor", () => {
    const { pace, reply } = drivenPace();
    // 40 requests/s, 60 % refused (a token bucket of 16/s): cut within the second. Then 20/s, where that bucket refuses 20 %:
    // 35 % is not significantly below 60 % over so few answers, but it is no more than the bucket explains, so the cuts go on.
    let n = 0;
    for (let at = PACE_START + 100; at < PACE_START + 1_200; at += 25, n += 1) reply(refusedAt(n, 0.6), at, at + 1);
    n = 0;
    for (let at = PACE_START + 1_200; at < PACE_START + 3_200; at += 50, n += 1) reply(refusedAt(n, 0.35), at, at + 1);
    expect(pace.refusalFloor).toBe(0);
    expect(pace.snapshot().requestsPerSecond).toBeLessThan(10);
  });

  test('a doubt begun unpaced and ended as congestion on noise: its cuts are tried like cuts begun unpaced, and end as a floor', () => {
    const { pace, reply } = drivenPace();
    const since = inDoubt(reply);
    // The dips' noise says congestion: every request before a dip refused, none in it (8 of each).
    for (let n = 0; n < 8; n += 1) {
      const cycle = since + 500 * Math.floor(n / 2) + 100 * (n % 2);
      reply(true, cycle, cycle + 10);
      reply(false, cycle + 250, cycle + 260);
    }
    expect(pace.refusalFloor).toBe(0);
    // Then, sent as fast as the pace lets them (200/s at most), a second of acceptances and 6 s of a quarter refused whatever
    // the pace.
    let n = 0;
    for (let at = since + 2_000; at < since + 9_000; n += 1) {
      reply(at >= since + 3_000 && n % 4 === 0, at, at + 5);
      at += Math.max(5, pace.waitMs(at + 5));
    }
    expect(pace.refusalFloor).toBeGreaterThan(0.15);
    expect(pace.snapshot().requestsPerSecond).toBeUndefined();
  });

  test('cuts whose share fell (a flood, passed) and then, cut to 40 % and less, left the rest of it unmoved end as a floor', () => {
    const { pace, reply } = drivenPace();
    // Sent as fast as the pace lets them (2,000/s at most): 200 ms of 60 % refused (a flood: cut, and the share falls with the
    // cuts), then a tenth refused at random whatever the pace. Cut at every refusal, never calm, the pace would never doubt.
    const random = seeded(5);
    for (let at = PACE_START + 100; at < PACE_START + 12_000; ) {
      reply(random() < (at < PACE_START + 300 ? 0.6 : 0.1), at, at + 2);
      at += Math.max(0.5, pace.waitMs(at + 2));
    }
    expect(pace.refusalFloor).toBeGreaterThan(0.05);
    expect(pace.snapshot().requestsPerSecond).toBeUndefined();
  });

  test('a doubt looks for a fall at 8, 16, 32 and 40 answers, not after each: a gap at 13 that closes by 16 is no verdict', () => {
    const { pace, reply } = drivenPace();
    const since = inDoubt(reply);
    // Refused [before, in the dip]: equal shares at 8; before far above the dip at 13 (2 standard errors and more); close again
    // at 16, and at 32 and 40.
    const pairs: [boolean, boolean][] = [];
    for (let n = 1; n <= 40; n += 1) {
      if (n <= 8) pairs.push([n <= 2, n <= 2]);
      else if (n <= 14) pairs.push([true, false]);
      else if (n <= 16) pairs.push([false, true]);
      else pairs.push([n % 4 === 0, n % 4 === 0]);
    }
    replyInPairs(reply, since, pairs);
    // No verdict of congestion on the way: at 40 answers each the shares did not differ, so they persist, a floor.
    expect(pace.refusalFloor).toBeGreaterThan(0.2);
  });

  /** {@link UNMOVED_VERDICT_ANSWERS} pairs, each of the two refused as `refused(n)` says. */
  const unmovedPairs = (refused: (n: number) => boolean): [boolean, boolean][] =>
    Array.from({ length: UNMOVED_VERDICT_ANSWERS }, (_, n) => [refused(n), refused(n)]);

  test('a doubt begun unpaced whose dips refuse no smaller a share than the slots before them is persistence at 16 answers each', () => {
    const { pace, reply } = drivenPace();
    // A quarter refused, before the dips and in them.
    replyInPairs(
      reply,
      inDoubt(reply),
      unmovedPairs((n) => n % 4 === 0),
    );
    expect(pace.refusalFloor).toBeCloseTo(0.25);
    expect(pace.snapshot().requestsPerSecond).toBeUndefined();
  });

  test('not with no refusal in the dips: nothing persists, the doubt goes on', () => {
    const { pace, reply } = drivenPace();
    const since = inDoubt(reply);
    replyInPairs(
      reply,
      since,
      unmovedPairs(() => false),
    );
    // Still in doubt: a dip slows it down.
    pace.waitMs(since + 2_300);
    expect(pace.snapshot().requestsPerSecond).toBeDefined();
  });

  test.each([
    ['a fifth', 0.2, false],
    ['three in ten', 0.3, true],
  ])('a floor a doubt learned on few answers is that noisy: %s refused over it cuts the pace: %s', (_case, share, cut) => {
    const { pace, reply } = drivenPace();
    const since = inDoubt(reply);
    // One in 16 refused, before the dips and in them: a floor of 6.25 % on 32 answers.
    replyInPairs(
      reply,
      since,
      unmovedPairs((n) => n % 16 === 0),
    );
    expect(pace.refusalFloor).toBeCloseTo(0.0625);
    expect(pace.snapshot().requestsPerSecond).toBeUndefined();
    // A second of 100 answers, refused evenly at `share`. Over a floor known exactly, 17.6 % would cut (6.25 % + 5 points, and
    // two standard errors of 100 answers); over one measured on 32 answers, 24 % (two standard errors of both).
    const from = since + 2_500;
    for (let n = 0; n < 100; n += 1) reply(refusedAt(n, share), from + 10 * n, from + 10 * n + 5);
    expect(pace.snapshot().requestsPerSecond !== undefined).toBe(cut);
  });
});

describe('a flood after a clean start (containers that reach a token bucket together)', () => {
  /**
   * `clean` first receives taken, 10 ms apart (100/s) from the pace's start, spread over `overMs` if given; then 300 ms
   * of answers 2.5 ms apart (400/s), refused evenly at `share` from the first. Returns the pace's rate at its first cut, or
   * undefined if it stayed unpaced.
   */
  function flood(clean: number, share: number, overMs = 10 * clean): number | undefined {
    const { pace, reply } = drivenPace();
    for (let n = 0; n < clean; n += 1) {
      const at = PACE_START + Math.round(((n + 1) * overMs) / clean);
      reply(false, at - 1, at);
    }
    const from = PACE_START + overMs;
    for (let n = 0; n < 120; n += 1) {
      reply(refusedAt(n + 1, share), from + 2.5 * n, from + 2.5 * n + 1);
      const rate = pace.snapshot().requestsPerSecond;
      if (rate !== undefined) return rate;
    }
    return undefined;
  }

  test(`after ${CLEAN_START_ANSWERS} first receives taken, half refused of late is cut at once, on what was taken of late`, () => {
    // Doubting, the pace would stay unpaced until the next whole second and dip then, sending all the while at twice the rate.
    const rate = flood(CLEAN_START_ANSWERS, 0.5);
    expect(rate).toBeDefined();
    // Judged on the second before, a ramp at 100/s, the cut would go to 85 % of 1.25 × ~120/s; on the latest 250 ms, which
    // sent 220/s and took 140/s, it keeps half of 1.25 × 220.
    expect(rate as number).toBeGreaterThan(130);
  });

  test.each([
    ['one first receive fewer taken first: refusals that may be a floor of its own', CLEAN_START_ANSWERS - 1, 0.5],
    [`a share under ${100 * FLOOD_SHARE} % refused (a tenant with a third of the messages out of its burst)`, CLEAN_START_ANSWERS, 0.4],
  ] as const)('no cut, a doubt, for %s', (_case, clean, share) => {
    expect(flood(clean, share)).toBeUndefined();
  });

  test(`refusals that begin more than ${CLEAN_START_MS / 1000} s after the start are no start's flood: a doubt`, () => {
    expect(flood(CLEAN_START_ANSWERS, 0.5, CLEAN_START_MS + 1000)).toBeUndefined();
  });
});

describe('PACING=false: only the ceilings', () => {
  test('no cut, no hold, whatever the webhook answers; refusals are still counted', async () => {
    const pacer = pacerOf({ adaptive: false, maxInFlight: 4 });
    for (let i = 0; i < 3 * HOLD_AFTER_MESSAGES; i += 1) await exchange(pacer, answer('slow-down', { retryAfterSeconds: 30 }), 10);
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: 4 });
    expect(pacer.holdEndsAt()).toBe(0);
    for (let i = 0; i < 4; i += 1) expect(pacer.acquire(Date.now() + 1000)).toBe(true);
    expect(pacer.takeRefusedCount()).toBe(3 * HOLD_AFTER_MESSAGES);
    expect(pacer.takeRefusedCount()).toBe(0);
  });

  test('the ceiling still applies', async () => {
    const pacer = pacerOf({ adaptive: false, maxRequestsPerSecond: 2 });
    expect(pacer.acquire(Infinity)).toBe(true);
    pacer.release(answer('slow-down', { retryAfterSeconds: 30 }));
    const next = acquireWatched(pacer, Infinity);
    await vi.advanceTimersByTimeAsync(499);
    expect(next.started()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(next.started()).toBe(true);
  });
});

describe('the endpoint hold', () => {
  /** `count` refusals of different messages (or of `ids`, in turn), each with `retryAfter`, `gapMs` apart. */
  async function refuse(pacer: Pacer, count: number, retryAfter: number | undefined, gapMs = 1, ids?: readonly string[]): Promise<void> {
    for (let i = 0; i < count; i += 1) {
      await exchange(
        pacer,
        answer('slow-down', { retryAfterSeconds: retryAfter, ...(ids ? { messageId: ids[i % ids.length] } : {}) }),
        gapMs,
      );
    }
  }

  test(`${HOLD_AFTER_MESSAGES} different messages refused with a short Retry-After and none taken: held for it, at once`, async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_AFTER_MESSAGES - 1, 3);
    expect(pacer.holdEndsAt()).toBe(0);
    await refuse(pacer, 1, 3);
    const heldAt = Date.now();
    expect(pacer.holdEndsAt()).toBe(heldAt + 3000);
    const waiting = acquireWatched(pacer, Infinity);
    await vi.advanceTimersByTimeAsync(2999);
    expect(waiting.started()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting.started()).toBe(true);
  });

  test('the shortest Retry-After among the refusals, not the longest', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < HOLD_AFTER_MESSAGES; i += 1)
      await exchange(pacer, answer('slow-down', { retryAfterSeconds: i === 4 ? 2 : 3600 }), 120);
    expect(pacer.holdEndsAt()).toBe(Date.now() + 2000);
  });

  test(`a long Retry-After only once the refusals have gone on for ${HOLD_EVIDENCE_MS} ms, and ${LONG_HOLD_SECONDS} s at first`, async () => {
    const pacer = pacerOf();
    const firstAt = Date.now() + 20;
    await refuse(pacer, 5 * HOLD_AFTER_MESSAGES, 3600, 20); // 980 ms of refusals: one tenant's backlog passes sooner
    expect(pacer.holdEndsAt()).toBe(0);
    while (pacer.holdEndsAt() === 0 && Date.now() < firstAt + HOLD_EVIDENCE_MS + 1000) await refuse(pacer, 1, 3600, 20);
    expect(Date.now() - firstAt).toBeGreaterThanOrEqual(HOLD_EVIDENCE_MS);
    expect(pacer.holdEndsAt()).toBe(Date.now() + LONG_HOLD_SECONDS * 1000);
  });

  test(`… or once ${HOLD_EVIDENCE_MESSAGES} different messages were refused, if that is sooner (a fast webhook refusing everything)`, async () => {
    const pacer = pacerOf();
    const firstAt = Date.now() + 1;
    await refuse(pacer, HOLD_EVIDENCE_MESSAGES - 1, 3600, 1);
    expect(pacer.holdEndsAt()).toBe(0);
    await refuse(pacer, 1, 3600, 1);
    expect(Date.now() - firstAt).toBeLessThan(HOLD_EVIDENCE_MS);
    expect(pacer.holdEndsAt()).toBe(Date.now() + LONG_HOLD_SECONDS * 1000);
  });

  test('a record a long hold keeps back again and again goes back for twice as long from its third receive, never past the hold', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 200 && pacer.holdEndsAt() === 0; i += 1)
      await exchange(pacer, answer('slow-down', { retryAfterSeconds: 3600 }), 10);
    expect(pacer.holdEndsAt()).toBe(Date.now() + LONG_HOLD_SECONDS * 1000);
    expect([1, 2, 3, 4, 5].map((receiveCount) => pacer.retryInSeconds(undefined, receiveCount))).toEqual([1, 1, 2, 4, LONG_HOLD_SECONDS]);
  });

  test('a long hold is probed: its records go back at once for a second, a request every 2 s; one the webhook takes ends the hold', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 200 && pacer.holdEndsAt() === 0; i += 1)
      await exchange(pacer, answer('slow-down', { retryAfterSeconds: 3600 }), 10);
    expect(pacer.holdEndsAt()).toBe(Date.now() + LONG_HOLD_SECONDS * 1000);
    expect(await pacer.acquire(Date.now() + 60_000)).toBe(false);
    // Its records come back a second later, not after the whole hold: a probe taken ends it.
    expect(pacer.retryInSeconds()).toBe(KEPT_BACK_MS / 1000);
    await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
    expect(pacer.acquire(Date.now() + 60_000)).toBe(true);
    pacer.release(answer('slow-down', { retryAfterSeconds: 3600 }));
    expect(await pacer.acquire(Date.now() + 60_000)).toBe(false);
    await vi.advanceTimersByTimeAsync(PROBE_EVERY_MS);
    expect(pacer.acquire(Date.now() + 60_000)).toBe(true);
    pacer.release(answer('accepted'));
    expect(pacer.holdEndsAt()).toBe(Date.now());
    expect(pacer.acquire(Date.now() + 60_000)).toBe(true);
  });

  test(`a long hold is probed by the records it keeps back too: the one after ${PROBE_AFTER_KEPT_BACK} of them, then after twice as many`, async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_EVIDENCE_MESSAGES, 3600, 1);
    expect(pacer.holdEndsAt()).toBeGreaterThan(Date.now());
    // Within the first probe's 250 ms, a later batch's records go back one after another (a backlog's, going through the queue):
    const keptBackUntilProbe = async (): Promise<number> => {
      for (let kept = 0; kept < 1000; kept += 1) {
        const slot = pacer.acquire(Date.now() + 60_000);
        if (slot === true) return kept;
        expect(await slot).toBe(false);
      }
      return Number.NaN;
    };
    expect(await keptBackUntilProbe()).toBe(PROBE_AFTER_KEPT_BACK);
    pacer.release(answer('slow-down', { retryAfterSeconds: 3600 })); // one more of the backlog
    expect(await keptBackUntilProbe()).toBe(PROBE_AFTER_KEPT_BACK);
    pacer.release(answer('slow-down', { retryAfterSeconds: 3600 }));
    expect(await keptBackUntilProbe()).toBe(2 * PROBE_AFTER_KEPT_BACK);
    expect(Date.now() - (pacer.holdEndsAt() - LONG_HOLD_SECONDS * 1000)).toBeLessThan(FIRST_PROBE_MS);
    // Another tenant's record, taken: the hold is over, long before its clock's first probe.
    pacer.release(answer('accepted'));
    expect(pacer.holdEndsAt()).toBe(Date.now());
    expect(pacer.acquire(Date.now() + 60_000)).toBe(true);
  });

  test('messages received before, refused again with a long Retry-After, are no evidence for a hold: they were refused before', async () => {
    const pacer = pacerOf();
    // A tenant's backlog back from the queue after its Retry-After, all refused again: the endpoint is not held for it.
    for (let i = 0; i < 2 * HOLD_EVIDENCE_MESSAGES; i += 1)
      await exchange(pacer, answer('slow-down', { retryAfterSeconds: 60, receivedBefore: true }), 1);
    expect(pacer.holdEndsAt()).toBe(0);
    expect(pacer.acquire(Date.now() + 60_000)).toBe(true);
    // The same refusals of messages received for the first time: held.
    for (let i = 0; i < HOLD_EVIDENCE_MESSAGES; i += 1) await exchange(pacer, answer('slow-down', { retryAfterSeconds: 60 }), 1);
    expect(pacer.holdEndsAt()).toBe(Date.now() + LONG_HOLD_SECONDS * 1000);
  });

  test(`in a long hold, a record received for the first time is a probe ${FRESH_PROBE_ANSWER_TIMES} answer times after the last (${FRESH_PROBE_MIN_MS} ms at least), not ${FRESH_PROBE_EVERY_MS} or ${PROBE_EVERY_MS} ms`, async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_EVIDENCE_MESSAGES, 3600, 1); // answered in 5 ms
    expect(pacer.holdEndsAt()).toBe(Date.now() + LONG_HOLD_SECONDS * 1000);
    // Not even a fresh record before the first probe's time (the batches under way go back first).
    expect(await pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(false);
    await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
    expect(pacer.acquire(Date.now() + 60_000)).toBe(true);
    pacer.release(answer('slow-down', { retryAfterSeconds: 3600, receivedBefore: true }));
    await vi.advanceTimersByTimeAsync(FRESH_PROBE_ANSWER_TIMES * 5 - 1);
    expect(await pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    // A record kept back or refused before waits for the clock's probe; one received for the first time goes now.
    expect(await pacer.acquire(Date.now() + 60_000)).toBe(false);
    expect(pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(true);
    // Another tenant's message, taken: the hold is over.
    pacer.release(answer('accepted'));
    expect(pacer.holdEndsAt()).toBe(Date.now());
    expect(pacer.acquire(Date.now() + 60_000)).toBe(true);
  });

  test(`… of a webhook answering in 100 ms, ${FRESH_PROBE_ANSWER_TIMES} of its answer times; ${FRESH_PROBE_EVERY_MS} ms at most`, async () => {
    const cases: [latencyMs: number, spacingMs: number][] = [
      [100, FRESH_PROBE_ANSWER_TIMES * 100],
      [1_000, FRESH_PROBE_EVERY_MS],
    ];
    for (const [latencyMs, spacingMs] of cases) {
      const pacer = pacerOf();
      while (pacer.holdEndsAt() === 0) await exchange(pacer, answer('slow-down', { retryAfterSeconds: 3600, latencyMs }), 1);
      await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
      expect(pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(true);
      pacer.release(answer('slow-down', { retryAfterSeconds: 3600, latencyMs, receivedBefore: true }));
      await vi.advanceTimersByTimeAsync(spacingMs - 1);
      expect(await pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(true);
    }
  });

  test(`… for the first ${FAST_PROBES_MS} ms of a run of holds; then ${FRESH_PROBE_EVERY_MS} ms apart: refusals that go on are more likely everyone's`, async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_EVIDENCE_MESSAGES, 3600, 1); // answered in 5 ms
    const began = Date.now();
    const probeAfter = async (spacingMs: number): Promise<void> => {
      await vi.advanceTimersByTimeAsync(spacingMs - 1);
      expect(await pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(true);
      pacer.release(answer('slow-down', { retryAfterSeconds: 3600 }));
    };
    await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
    expect(pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(true);
    pacer.release(answer('slow-down', { retryAfterSeconds: 3600 }));
    while (Date.now() - began < FAST_PROBES_MS) await probeAfter(FRESH_PROBE_ANSWER_TIMES * 5);
    await probeAfter(FRESH_PROBE_EVERY_MS);
    await probeAfter(FRESH_PROBE_EVERY_MS);
  });

  test('in a long hold, a record received for the first time while a probe is out waits for its answer: taken, it goes at once', async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_EVIDENCE_MESSAGES, 3600, 1); // answered in 5 ms
    await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
    expect(pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(true);
    // Its batch: the records received for the first time wait; one received before goes back to the queue, as before.
    const waiting = [
      acquireWatched(pacer, Date.now() + 60_000, undefined, true),
      acquireWatched(pacer, Date.now() + 60_000, undefined, true),
    ];
    expect(await pacer.acquire(Date.now() + 60_000)).toBe(false);
    await vi.advanceTimersByTimeAsync(5);
    expect(waiting.map((w) => w.started())).toEqual([undefined, undefined]);
    pacer.release(answer('accepted'));
    await settle();
    expect(waiting.map((w) => w.started())).toEqual([true, true]);
    expect(pacer.holdEndsAt()).toBe(Date.now());
  });

  test(`… refused, they go back to the queue at once; nor do they wait past ${PROBE_ANSWER_WAIT_TIMES} answer times for it`, async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_EVIDENCE_MESSAGES, 3600, 1); // answered in 5 ms
    await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
    expect(pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(true);
    const refused = acquireWatched(pacer, Date.now() + 60_000, undefined, true);
    pacer.release(answer('slow-down', { retryAfterSeconds: 3600 }));
    await settle();
    expect(refused.started()).toBe(false);
    await vi.advanceTimersByTimeAsync(FRESH_PROBE_ANSWER_TIMES * 5);
    expect(pacer.acquire(Date.now() + 60_000, undefined, true)).toBe(true);
    // A probe not answered in time: the records waiting for it go back then, as a hold's do.
    const unanswered = acquireWatched(pacer, Date.now() + 60_000, undefined, true);
    await vi.advanceTimersByTimeAsync(PROBE_ANSWER_WAIT_TIMES * 5 - 1);
    expect(unanswered.started()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(unanswered.started()).toBe(false);
    expect(pacer.holdEndsAt()).toBeGreaterThan(Date.now());
  });

  test("a long hold's probes take none of the pace's tokens: ended by the clock, the pace sends at once, not owing a token a probe", async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_EVIDENCE_MESSAGES, 3600, 1);
    const endsAt = pacer.holdEndsAt();
    // The webhook took nothing of late: the pace after the hold is the slowest, a token every 2 s.
    await vi.advanceTimersByTimeAsync(FIRST_PROBE_MS);
    let probes = 0;
    while (Date.now() < endsAt - 100) {
      if (pacer.acquire(endsAt, undefined, true) === true) {
        probes += 1;
        // Answered 500: a refusal of a message received for the first time would count toward another hold.
        pacer.release(answer('neutral'));
      }
      await vi.advanceTimersByTimeAsync(50);
    }
    expect(probes).toBeGreaterThanOrEqual(20);
    await vi.advanceTimersByTimeAsync(endsAt - Date.now());
    expect(pacer.holdEndsAt()).toBeLessThanOrEqual(Date.now());
    expect(pacer.snapshot().requestsPerSecond).toBe(MIN_REQUESTS_PER_SECOND);
    expect(pacer.acquire(Date.now() + 60_000)).toBe(true);
  });

  test('the same messages refused again and again are not many messages', async () => {
    const pacer = pacerOf();
    await refuse(pacer, 100, QUICK_HOLD_SECONDS, 1, ['a', 'b', 'c', 'd', 'e']);
    expect(pacer.holdEndsAt()).toBe(0);
  });

  test('acceptances among the refusals (more than a fifth) end the run: a webhook taking most is not refusing everything', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 100; i += 1) await exchange(pacer, answer(i % 3 === 0 ? 'accepted' : 'slow-down', { retryAfterSeconds: 1 }), 1);
    expect(pacer.holdEndsAt()).toBe(0);
  });

  test('a neutral answer (500, 404) ends the run; refusals without Retry-After (429, 504, 408, timeouts) are no evidence', async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_AFTER_MESSAGES - 1, 1);
    await exchange(pacer, answer('neutral'));
    await refuse(pacer, HOLD_AFTER_MESSAGES - 1, 1);
    await refuse(pacer, 3 * HOLD_AFTER_MESSAGES, undefined);
    expect(pacer.holdEndsAt()).toBe(0);
    await refuse(pacer, 1, 1);
    expect(pacer.holdEndsAt()).toBe(Date.now() + 1000);
  });

  test('a hold does not leave the trigger armed: the next refusal after it does not hold again', async () => {
    const pacer = pacerOf();
    await refuse(pacer, HOLD_AFTER_MESSAGES, 1);
    const first = pacer.holdEndsAt();
    await vi.advanceTimersByTimeAsync(1000);
    await refuse(pacer, 1, 1);
    expect(pacer.holdEndsAt()).toBe(first);
  });

  test('waiters the hold outlasts stop waiting at once (false) when it begins; those it does not, start after it', async () => {
    const pacer = pacerOf({ maxInFlight: 2 });
    await refuse(pacer, HOLD_AFTER_MESSAGES - 1, 3);
    // Two requests in flight; four more wait for a slot: two until well after the hold, two only for a second.
    expect(pacer.acquire(Infinity)).toBe(true);
    expect(pacer.acquire(Infinity)).toBe(true);
    const patient = [acquireWatched(pacer, Date.now() + 10_000), acquireWatched(pacer, Date.now() + 10_000)];
    const hurried = [acquireWatched(pacer, Date.now() + 1000), acquireWatched(pacer, Date.now() + 1000)];
    pacer.release(answer('slow-down', { retryAfterSeconds: 3 })); // the tenth: the hold begins
    await settle();
    expect(hurried.map((w) => w.started())).toEqual([false, false]);
    expect(pacer.retryInSeconds()).toBe(3);
    expect(patient.map((w) => w.started())).toEqual([undefined, undefined]);
    await vi.advanceTimersByTimeAsync(3000);
    expect(patient.map((w) => w.started())).toEqual([true, undefined]); // one slot free; the other when a release comes
    pacer.release(answer('accepted'));
    // After a hold the pace starts again slowly (it doubles each second from what the webhook took): soon, not at once.
    await vi.advanceTimersByTimeAsync(2000);
    expect(patient.map((w) => w.started())).toEqual([true, true]);
  });
});

describe('waiters', () => {
  test('start in arrival order as slots free up', async () => {
    const pacer = pacerOf({ adaptive: false, maxInFlight: 2 });
    pacer.acquire(Infinity);
    pacer.acquire(Infinity);
    const order: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      const slot = pacer.acquire(Infinity);
      expect(slot).not.toBe(true);
      void (slot as Promise<boolean>).then(() => order.push(i));
    }
    for (let i = 0; i < 6; i += 1) {
      pacer.release(answer('neutral'));
      await settle();
    }
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  test('a newcomer does not overtake a waiter, even when a slot is free for it', async () => {
    const pacer = pacerOf({ maxRequestsPerSecond: 10 }); // one token per 100 ms
    expect(pacer.acquire(Infinity)).toBe(true);
    const first = acquireWatched(pacer, Infinity);
    vi.advanceTimersByTime(100); // the token is due, but the timer has not fired yet
    expect(pacer.acquire(Infinity)).not.toBe(true);
    await settle();
    expect(first.started()).toBe(true);
  });

  test('a waiter past its deadline gets false, and the slot goes to the next', async () => {
    const pacer = pacerOf({ adaptive: false, maxInFlight: 1 });
    pacer.acquire(Infinity);
    const now = Date.now();
    const early = acquireWatched(pacer, now + 100);
    const late = acquireWatched(pacer, now + 1000);
    await vi.advanceTimersByTimeAsync(100);
    expect(early.started()).toBe(false);
    expect(late.started()).toBeUndefined();
    pacer.release(answer('neutral'));
    await settle();
    expect(late.started()).toBe(true);
    expect(pacer.acquire(Infinity)).not.toBe(true);
  });

  test('an acquire already past its deadline, with no slot free, is false at once; giveBack frees a slot without a verdict', async () => {
    const pacer = pacerOf({ adaptive: false, maxInFlight: 1 });
    pacer.acquire(Infinity);
    expect(await pacer.acquire(Date.now())).toBe(false);
    pacer.giveBack();
    expect(pacer.acquire(Infinity)).toBe(true);
    expect(pacer.takeRefusedCount()).toBe(0);
  });
});

describe('rate-limit headers: a webhook that says its limit is paced before it refuses', () => {
  test('to its part of the quota per window: 90 % of 200/s over 5 containers is 36/s each', async () => {
    const pacer = pacerOf({ sharedBy: 5 });
    await exchange(pacer, answer('accepted', { quota: { remaining: 150, resetSeconds: 1, limit: 200, windowSeconds: 1 } }));
    expect(pacer.snapshot().requestsPerSecond).toBeCloseTo((QUOTA_HEADROOM * 200) / 5, 10);
  });

  test('over a long reset, to its part of what remains: 90 of an hourly 5,000 left for 900 s', async () => {
    const pacer = pacerOf({ sharedBy: 1 });
    await exchange(pacer, answer('accepted', { quota: { remaining: 90, resetSeconds: 900, limit: 5000, windowSeconds: undefined } }));
    expect(pacer.snapshot().requestsPerSecond).toBeCloseTo((QUOTA_HEADROOM * 90) / 900, 10);
  });

  test('when its part of what remains is under one request, nothing until the reset (less the second it may round up)', async () => {
    const pacer = pacerOf({ sharedBy: 5 });
    await exchange(pacer, answer('accepted', { quota: { remaining: 4, resetSeconds: 10, limit: 100, windowSeconds: 60 } }));
    expect(pacer.holdEndsAt()).toBe(Date.now() + 9000);
  });

  test('what remains, spread to the reset, binds until the reset only: the quota per window after it', async () => {
    const pacer = pacerOf({ sharedBy: 1 });
    await exchange(pacer, answer('accepted', { quota: { remaining: 90, resetSeconds: 900, limit: 5000, windowSeconds: undefined } }));
    vi.advanceTimersByTime(900_000);
    expect(pacer.acquire(Infinity)).toBe(true);
    expect(pacer.snapshot().requestsPerSecond).toBeCloseTo((QUOTA_HEADROOM * 5000) / 900, 10);
  });

  test('a spent quota holds until its reset, and the pace after it is the quota per window, not a request an hour', async () => {
    const pacer = pacerOf({ sharedBy: 1 });
    await exchange(pacer, answer('accepted', { quota: { remaining: 0, resetSeconds: 20, limit: 10, windowSeconds: undefined } }));
    expect(pacer.holdEndsAt()).toBe(Date.now() + 19_000);
    vi.advanceTimersByTime(19_000);
    expect(pacer.snapshot().requestsPerSecond).toBeCloseTo((QUOTA_HEADROOM * 10) / 20, 10);
    expect(pacer.acquire(Infinity)).toBe(true);
  });

  test('what they said stops binding 10 s after the last answer that carried them; PACING=false reads none', async () => {
    const pacer = pacerOf();
    await exchange(pacer, answer('accepted', { quota: { remaining: 5, resetSeconds: 1, limit: 10, windowSeconds: 1 } }));
    expect(pacer.snapshot().requestsPerSecond).toBeDefined();
    vi.advanceTimersByTime(10_001);
    expect(pacer.acquire(Infinity)).toBe(true);
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    const fixed = pacerOf({ adaptive: false });
    await exchange(fixed, answer('accepted', { quota: { remaining: 0, resetSeconds: 60, limit: 10, windowSeconds: 60 } }));
    expect(fixed.snapshot().requestsPerSecond).toBeUndefined();
    expect(fixed.holdEndsAt()).toBe(0);
  });
});

describe('per-key paces', () => {
  test("a key refused for its own sake is slowed alone: its requests go back at once, another key's start", async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 15; i += 1) await exchange(pacer, answer('accepted'), 10, 'fast');
    for (let i = 0; i < 15; i += 1) await exchange(pacer, answer('accepted'), 10, 'slow');
    // 'slow' refused four times in five, 'fast' never: 'slow' is cut, the endpoint is not.
    for (let i = 0; i < 40; i += 1) {
      await exchange(pacer, answer('accepted'), 5, 'fast');
      if (pacer.acquire(Infinity, 'slow') === true)
        pacer.release(answer(i % 5 === 0 ? 'accepted' : 'slow-down', { retryAfterSeconds: 1 }), 'slow');
    }
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    const slow = pacer.acquire(Date.now() + 30_000, 'slow');
    expect(slow).not.toBe(true);
    expect(pacer.retryInSeconds('slow')).toBeGreaterThan(0);
    expect(pacer.acquire(Date.now() + 30_000, 'fast')).toBe(true);
  });

  test("a key's refusals once it is paced are its own: they neither cut nor hold the endpoint", async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 15; i += 1) await exchange(pacer, answer('accepted'), 10, 'others');
    // The limited tenant refused, every message a different one, with a Retry-After: its own pace is cut, then held.
    for (let i = 0; i < 60; i += 1) {
      await exchange(pacer, answer('accepted'), 5, 'others');
      if (pacer.acquire(Infinity, 'limited') === true) pacer.release(answer('slow-down', { retryAfterSeconds: 1 }), 'limited');
    }
    expect(pacer.retryInSeconds('limited')).toBeGreaterThan(0);
    // Then a run of its backlog alone: twenty different messages refused with a Retry-After, which from keys not yet paced
    // would hold the endpoint. Its own refusals, once it is paced, hold only the key.
    for (let i = 0; i < 20; i += 1) await exchange(pacer, answer('slow-down', { retryAfterSeconds: 1 }), 0, 'limited');
    expect(pacer.holdEndsAt()).toBe(0);
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    expect(pacer.acquire(Date.now() + 30_000, 'others')).toBe(true);
  });

  test(`a key's wait up to ${KEY_WAIT_MS} ms is waited; a waiter for a key does not hold up another key's`, async () => {
    const pacer = pacerOf({ adaptive: false, maxInFlight: 5 });
    expect(pacer.acquire(Infinity, 'a')).toBe(true);
    expect(pacer.acquire(Infinity, 'b')).toBe(true);
    expect(pacer.acquire(Infinity)).toBe(true);
    expect(pacer.acquire(Infinity)).toBe(true);
    expect(pacer.acquire(Infinity)).toBe(true);
    const b = acquireWatched(pacer, Infinity, 'b');
    const a = acquireWatched(pacer, Infinity, 'a');
    pacer.release(answer('neutral'));
    await settle();
    expect([b.started(), a.started()]).toEqual([true, undefined]);
  });

  test("paced per key, an answer's rate-limit headers pace its key, not the endpoint", async () => {
    const pacer = pacerOf({ sharedBy: 1 });
    await exchange(pacer, answer('accepted', { quota: { remaining: 0, resetSeconds: 60, limit: 60, windowSeconds: 60 } }), 0, 'tenant-a');
    expect(pacer.snapshot().requestsPerSecond).toBeUndefined();
    expect(pacer.acquire(Infinity, 'tenant-b')).toBe(true);
    expect(pacer.retryInSeconds('tenant-a')).toBeGreaterThan(0);
    // Its quota is back at the reset: a request a second, not the hour a pace of nothing left would ask of its records.
    vi.advanceTimersByTime(59_000);
    expect(pacer.acquire(Infinity, 'tenant-a')).toBe(true);
    expect(pacer.retryInSeconds('tenant-a')).toBeLessThanOrEqual(2);
  });

  test(`at most ${MAX_KEYS} keys: the least recently used is forgotten`, () => {
    const pacer = pacerOf({ adaptive: false, maxInFlight: 1 });
    for (let i = 0; i <= MAX_KEYS; i += 1) {
      expect(pacer.acquire(Infinity, `k${i}`)).toBe(true);
      pacer.release(answer('accepted'), `k${i}`);
    }
    expect(pacer.keyCount).toBe(MAX_KEYS);
  });
});

describe('properties', () => {
  type Op =
    | { readonly kind: 'acquire'; readonly deadlineInMs: number; readonly key: string | undefined }
    | {
        readonly kind: 'release';
        readonly signal: PaceSignal;
        readonly latencyMs: number;
        readonly retryAfter: number | undefined;
        readonly message: number;
      }
    | { readonly kind: 'advance'; readonly ms: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      arbitrary: fc.record({
        kind: fc.constant('acquire' as const),
        deadlineInMs: fc.integer({ min: 0, max: 5000 }),
        key: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }),
      }),
      weight: 3,
    },
    {
      arbitrary: fc.record({
        kind: fc.constant('release' as const),
        signal: fc.oneof(
          { arbitrary: fc.constant<PaceSignal>('slow-down'), weight: 6 },
          { arbitrary: fc.constant<PaceSignal>('accepted'), weight: 1 },
          { arbitrary: fc.constant<PaceSignal>('neutral'), weight: 1 },
        ),
        latencyMs: fc.integer({ min: 0, max: 500 }),
        retryAfter: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined, freq: 6 }),
        message: fc.integer({ min: 0, max: 30 }),
      }),
      weight: 3,
    },
    { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 1500 }) }), weight: 1 },
  );

  // Real sizes: up to 400 operations (fast-check's default array is 10 long, too short to reach a hold).
  test("waiters: no start beyond the in-flight limit; endpoint order kept; false before the deadline only for a hold that outlasts it, or a key's wait", async () => {
    let holds = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.integer({ min: 1, max: 6 }),
        fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
        fc.array(op, { minLength: 50, maxLength: 400 }),
        async (adaptive, maxInFlight, maxRequestsPerSecond, ops) => {
          const pacer = pacerOf({ adaptive, maxInFlight, maxRequestsPerSecond });
          const inFlight: (string | undefined)[] = [];
          let arrivals = 0;
          const started: { id: number; key: string | undefined }[] = [];
          const pending = new Map<number, string | undefined>();
          const violations: string[] = [];
          const onStart = (id: number, key: string | undefined): void => {
            inFlight.push(key);
            started.push({ id, key });
            if (inFlight.length > maxInFlight) violations.push(`start ${id}: ${inFlight.length} in flight, at most ${maxInFlight}`);
          };
          for (const o of ops) {
            if (o.kind === 'acquire') {
              const id = arrivals++;
              const deadline = Date.now() + o.deadlineInMs;
              const slot = pacer.acquire(deadline, o.key);
              if (slot === true) {
                if ([...pending.values()].some((key) => key === undefined) && o.key === undefined)
                  violations.push(`start ${id} overtook a waiter`);
                onStart(id, o.key);
              } else {
                pending.set(id, o.key);
                void slot.then((ok) => {
                  pending.delete(id);
                  if (ok && Date.now() >= deadline) violations.push(`start ${id} after its deadline`);
                  const heldPast = pacer.holdEndsAt() > deadline;
                  const keyWait = o.key !== undefined && pacer.retryInSeconds(o.key) > 0;
                  if (!ok && Date.now() < deadline && !heldPast && !keyWait) violations.push(`gave up on ${id} before its deadline`);
                  if (ok) onStart(id, o.key);
                });
              }
            } else if (o.kind === 'release') {
              const key = inFlight.shift();
              if (inFlight.length === 0 && key === undefined && started.length === 0) continue;
              const before = pacer.holdEndsAt();
              pacer.release({ signal: o.signal, latencyMs: o.latencyMs, retryAfterSeconds: o.retryAfter, messageId: `m${o.message}` }, key);
              if (pacer.holdEndsAt() !== before) holds += 1;
            } else {
              await vi.advanceTimersByTimeAsync(o.ms);
            }
            await settle();
          }
          expect(violations).toEqual([]);
          // Requests without a key start in arrival order among themselves.
          const endpointOnly = started.filter((s) => s.key === undefined).map((s) => s.id);
          expect(endpointOnly).toEqual([...endpointOnly].sort((a, b) => a - b));
        },
      ),
      { numRuns: 100 },
    );
    // The runs reach the hold, or the property says nothing about it.
    expect(holds).toBeGreaterThan(0);
  });

  test('a hold lasts the shortest Retry-After among the refusals that began it, and needs that many different messages', async () => {
    let holds = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            signal: fc.oneof(
              { arbitrary: fc.constant<PaceSignal>('slow-down'), weight: 12 },
              { arbitrary: fc.constant<PaceSignal>('accepted'), weight: 1 },
              { arbitrary: fc.constant<PaceSignal>('neutral'), weight: 1 },
            ),
            retryAfter: fc.option(fc.integer({ min: 0, max: QUICK_HOLD_SECONDS }), { nil: undefined, freq: 8 }),
            message: fc.integer({ min: 0, max: 40 }),
            gapMs: fc.integer({ min: 0, max: 200 }),
          }),
          { minLength: 50, maxLength: 400 },
        ),
        async (answers) => {
          const pacer = pacerOf();
          /**
           * Refusals with a Retry-After since the last hold, neutral answer, or more acceptances than a fifth of them: the run as
           * the rule defines it.
           */
          let run: { message: string; retryAfter: number }[] = [];
          let accepted = 0;
          for (const a of answers) {
            const before = pacer.holdEndsAt();
            const messageId = `m${a.message}`;
            await exchange(pacer, { signal: a.signal, latencyMs: 1, retryAfterSeconds: a.retryAfter, messageId }, a.gapMs);
            if (a.signal === 'accepted' && run.length > 0) {
              accepted += 1;
              if (accepted > HOLD_ACCEPTED_SHARE * Math.max(HOLD_AFTER_MESSAGES, new Set(run.map((r) => r.message)).size)) run = [];
            }
            if (a.signal === 'neutral' || run.length === 0) accepted = 0;
            if (a.signal === 'neutral') run = [];
            if (a.signal === 'slow-down' && a.retryAfter !== undefined) run.push({ message: messageId, retryAfter: a.retryAfter });
            if (pacer.holdEndsAt() === before) continue;
            holds += 1;
            expect(new Set(run.map((r) => r.message)).size).toBeGreaterThanOrEqual(HOLD_AFTER_MESSAGES);
            expect(pacer.holdEndsAt() - Date.now()).toBeLessThanOrEqual(1000 * Math.min(...run.map((r) => r.retryAfter)));
            run = [];
            accepted = 0;
          }
        },
      ),
      { numRuns: 50 },
    );
    expect(holds).toBeGreaterThan(0);
  }, 120_000);

  test('with a ceiling, no second sees more starts than the ceiling and its burst, whatever the answers', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 5, max: 200 }),
        fc.array(fc.constantFrom<PaceSignal>('accepted', 'slow-down', 'neutral'), { minLength: 100, maxLength: 300 }),
        async (ceiling, signals) => {
          const pacer = pacerOf({ maxRequestsPerSecond: ceiling });
          const starts: number[] = [];
          for (const signal of signals) {
            await exchange(pacer, answer(signal));
            starts.push(Date.now());
          }
          const burst = Math.max(1, ceiling * 0.1);
          for (let first = 0, last = 0; last < starts.length; last += 1) {
            while ((starts[last] as number) - (starts[first] as number) >= 1000) first += 1;
            expect(last - first + 1).toBeLessThanOrEqual(ceiling + burst);
          }
        },
      ),
      { numRuns: 20 },
    );
  }, 120_000);
});

describe('the ceiling: a token bucket', () => {
  /** Greedy callers (one per slot, each starting again as soon as its answer is in) for `seconds`: the start times, ms. */
  async function greedyStarts(pacer: Pacer, slots: number, latencyMs: number, seconds: number): Promise<number[]> {
    const starts: number[] = [];
    const end = Date.now() + seconds * 1000;
    const caller = async (): Promise<void> => {
      while (Date.now() < end) {
        const slot = pacer.acquire(end);
        if (slot !== true && !(await slot)) return;
        starts.push(Date.now());
        await new Promise((resolve) => setTimeout(resolve, latencyMs));
        pacer.release(answer('accepted', { latencyMs }));
      }
    };
    const done = Promise.all(Array.from({ length: slots }, caller));
    await vi.advanceTimersByTimeAsync(seconds * 1000 + latencyMs + 1);
    await done;
    return starts;
  }

  /** The most starts in any window of `windowMs` (a sliding window over sorted times). */
  function mostIn(starts: readonly number[], windowMs: number): number {
    let most = 0;
    for (let first = 0, last = 0; last < starts.length; last += 1) {
      while ((starts[last] as number) - (starts[first] as number) >= windowMs) first += 1;
      most = Math.max(most, last - first + 1);
    }
    return most;
  }

  // The bucket holds max(1, rate × 10 ms) tokens: at most that many starts above the rate in any window.
  test.each([
    [7, 10, 5],
    [40, 10, 20],
    [250, 50, 2],
    [1000, 50, 1],
  ])(
    'at a ceiling of %d/s (%d slots, %d ms answers), starts in any second ≤ ceiling + burst, and at least 95 percent of it over 30 s',
    async (ceiling, slots, latencyMs) => {
      for (const adaptive of [true, false]) {
        const pacer = pacerOf({ adaptive, maxInFlight: slots, maxRequestsPerSecond: ceiling });
        const starts = await greedyStarts(pacer, slots, latencyMs, 30);
        const burst = Math.max(1, ceiling * 0.01);
        expect(mostIn(starts, 1000)).toBeLessThanOrEqual(ceiling + burst);
        expect(mostIn(starts, 100)).toBeLessThanOrEqual(Math.ceil(ceiling / 10 + burst));
        expect(starts.length).toBeGreaterThanOrEqual(0.95 * ceiling * 30);
      }
    },
  );
});

describe('containers given the same rate are moved out of step at random', () => {
  /** Ms until the next request may start once `pacer` is asked (the clock runs a millisecond at a time). */
  async function msToStart(pacer: Pacer): Promise<number> {
    const from = Date.now();
    const next = acquireWatched(pacer, Number.POSITIVE_INFINITY);
    while (next.started() === undefined) await vi.advanceTimersByTimeAsync(1);
    return Date.now() - from;
  }

  /** Ms from a refusal (or acceptance) at a ceiling of 10/s until the next request may start, the refusal drawing `draw`. */
  async function nextStartAfter(signal: PaceSignal, adaptive: boolean, draw: number): Promise<number> {
    const pacer = new Pacer(settings({ adaptive, maxRequestsPerSecond: 10 }), clockDrawing(0, draw));
    expect(pacer.acquire(Number.POSITIVE_INFINITY)).toBe(true);
    pacer.release(answer(signal, { retryAfterSeconds: signal === 'slow-down' ? 1 : undefined }));
    return msToStart(pacer);
  }

  // Containers started together would take their first requests together, and every one after.
  test.each([true, false])('PACING=%s: a ceiling starts at a drawn moment of its first interval', async (adaptive) => {
    expect(await msToStart(new Pacer(settings({ adaptive, maxRequestsPerSecond: 10 }), clockDrawing(0.25)))).toBe(25);
    expect(await msToStart(new Pacer(settings({ adaptive, maxRequestsPerSecond: 10 }), clockDrawing(0.75)))).toBe(75);
    expect(await msToStart(new Pacer(settings({ adaptive }), clockDrawing(0.75)))).toBe(0);
  });

  test.each([true, false])(
    'PACING=%s: refused, the next request starts a drawn share of 100 ms later; taken, on time',
    async (adaptive) => {
      expect(await nextStartAfter('accepted', adaptive, 0.5)).toBe(100);
      expect(await nextStartAfter('slow-down', adaptive, 0.5)).toBe(150);
      expect(await nextStartAfter('slow-down', adaptive, 0.25)).toBe(125);
    },
  );

  test('requests refused together move it once: a slow webhook answers many in flight at the same moment', async () => {
    const pacer = new Pacer(settings({ adaptive: false, maxRequestsPerSecond: 10 }), clockDrawing(0, 0.5, 0.5));
    const first = acquireWatched(pacer, Number.POSITIVE_INFINITY);
    const second = acquireWatched(pacer, Number.POSITIVE_INFINITY);
    await vi.advanceTimersByTimeAsync(100);
    expect([first.started(), second.started()]).toEqual([true, true]);
    for (let i = 0; i < 2; i += 1) pacer.release(answer('slow-down', { retryAfterSeconds: 1 }));
    expect(await msToStart(pacer)).toBe(150);
  });
});

describe('in a process with nothing else to do (a Lambda invocation whose requests all wait on the pace)', () => {
  test('a waiting acquire keeps the process alive until its slot: the runtime would otherwise exit mid-invocation', async () => {
    vi.useRealTimers();
    const script = join(mkdtempSync(join(inject('scratchDir'), 'pacer-')), 'alone.mts');
    const pacer = pathToFileURL(join(import.meta.dirname, '../../lambda/pacer.ts')).href;
    writeFileSync(
      script,
      [
        `import { Pacer } from ${JSON.stringify(pacer)};`,
        'const pacer = new Pacer({ adaptive: true, maxInFlight: 10, maxRequestsPerSecond: 2 });',
        'pacer.acquire(Date.now() + 5000); // the one token',
        'console.log("started: " + (await pacer.acquire(Date.now() + 5000))); // the next, half a second later',
      ].join('\n'),
    );
    const child = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 30_000 });
    expect({ status: child.status, stdout: child.stdout.trim() }).toEqual({ status: 0, stdout: 'started: true' });
  });
});
