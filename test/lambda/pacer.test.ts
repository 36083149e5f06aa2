/**
 * Unit and property tests of lambda/pacer.ts (docs/webhook-owners.md, "Back-pressure"): what an
 * answer says about the pace, the in-flight and rate limits, multiplicative decrease and additive
 * increase, the endpoint hold, FIFO waiters and their deadlines, the ceiling's token bucket, and a
 * simulation of several containers pacing themselves against one rate-limited webhook (issue 21).
 * Time is vitest's fake clock throughout: nothing here waits for real.
 */
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, inject, test, vi } from 'vitest';
import {
  DECREASE_FACTOR,
  HOLD_AFTER_REFUSALS,
  INCREASE_SHARE,
  MIN_REQUESTS_PER_SECOND,
  Pacer,
  type PaceSignal,
  type PacingSettings,
  paceSignalOf,
} from '../../lambda/pacer';
import type { TransportErrorKind, WebhookResult } from '../../lambda/transmitter';

const answered = (status: number): WebhookResult => ({ kind: 'response', status, retryAfter: undefined, excerpt: '', latencyMs: 1 });
const failed = (error: TransportErrorKind): WebhookResult => ({ kind: 'transport-error', error, message: '', latencyMs: 1 });

const settings = (overrides: Partial<PacingSettings> = {}): PacingSettings => ({
  adaptive: true,
  maxInFlight: 10,
  maxRequestsPerSecond: undefined,
  ...overrides,
});

/** A pacer on vitest's fake clock. */
const pacerOf = (overrides: Partial<PacingSettings> = {}): Pacer => new Pacer(settings(overrides), () => Date.now());

/** Lets resolved promises run their callbacks (fake timers do not advance). */
const settle = async (): Promise<void> => {
  await vi.advanceTimersByTimeAsync(0);
};

/** Sends `count` requests one after another as fast as the pace allows (the fake clock moving to each slot), each answered `signal`. */
async function sendPaced(pacer: Pacer, count: number, signal: PaceSignal = 'accepted'): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const slot = pacer.acquire(Number.POSITIVE_INFINITY);
    if (slot !== true) {
      let started = false;
      void slot.then(() => {
        started = true;
      });
      while (!started) await vi.advanceTimersByTimeAsync(1);
    }
    pacer.release(signal, 5);
  }
}

/** An acquire whose outcome the test can read once it settles: `undefined` while still waiting. */
function acquireWatched(pacer: Pacer, deadlineMs: number): { readonly started: () => boolean | undefined } {
  const slot = pacer.acquire(deadlineMs);
  let outcome: boolean | undefined = slot === true ? true : undefined;
  if (slot !== true) void slot.then((started) => (outcome = started));
  return { started: () => outcome };
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

describe('a fresh pacer', () => {
  test('is unpaced, with MAX_CONCURRENCY in flight', () => {
    expect(pacerOf().snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: 10 });
  });

  test('with a ceiling, runs at it', () => {
    expect(pacerOf({ maxRequestsPerSecond: 40 }).snapshot()).toEqual({ requestsPerSecond: 40, inFlightLimit: 10 });
  });

  test('starts MAX_CONCURRENCY requests at once (no await), and the next waits for a release', async () => {
    const pacer = pacerOf({ maxInFlight: 3 });
    for (let i = 0; i < 3; i += 1) expect(pacer.acquire(Date.now() + 1000)).toBe(true);
    const fourth = acquireWatched(pacer, Date.now() + 1000);
    await settle();
    expect(fourth.started()).toBeUndefined();
    pacer.release('neutral', 5);
    await settle();
    expect(fourth.started()).toBe(true);
  });
});

describe('multiplicative decrease', () => {
  test('the first slow-down cuts from what was really sent: 1.25 × the requests started of late, and the in-flight limit', () => {
    const pacer = pacerOf();
    for (let i = 0; i < 10; i += 1) expect(pacer.acquire(Infinity)).toBe(true);
    pacer.release('slow-down', 5);
    // 10 started within the meter's first slot (100 ms): 100 requests/s offered.
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: 1.25 * 100 * DECREASE_FACTOR, inFlightLimit: Math.floor(10 * DECREASE_FACTOR) });
  });

  test('a later cut halves the rate at most, however little was sent meanwhile', () => {
    const pacer = pacerOf();
    for (let i = 0; i < 10; i += 1) expect(pacer.acquire(Infinity)).toBe(true);
    pacer.release('slow-down', 5);
    const first = pacer.snapshot().requestsPerSecond as number;
    vi.advanceTimersByTime(2000); // nothing sent for 2 s
    pacer.release('slow-down', 5);
    expect(pacer.snapshot().requestsPerSecond).toBeCloseTo((first / 2) * DECREASE_FACTOR, 10);
  });

  test('the answers to one burst are one signal: at most one cut per 100 ms (or two round trips, if longer)', () => {
    const pacer = pacerOf();
    pacer.release('slow-down', 5);
    const once = pacer.snapshot();
    vi.advanceTimersByTime(99);
    for (let i = 0; i < 20; i += 1) pacer.release('slow-down', 5);
    expect(pacer.snapshot()).toEqual(once);
    vi.advanceTimersByTime(1);
    pacer.release('slow-down', 5);
    expect(pacer.snapshot().inFlightLimit).toBe(Math.floor(10 * DECREASE_FACTOR * DECREASE_FACTOR));

    const slow = pacerOf();
    slow.release('slow-down', 300); // two round trips of 300 ms: 600 ms between cuts
    const cut = slow.snapshot();
    vi.advanceTimersByTime(599);
    slow.release('slow-down', 300);
    expect(slow.snapshot()).toEqual(cut);
    vi.advanceTimersByTime(1);
    slow.release('slow-down', 300);
    expect(slow.snapshot().requestsPerSecond).toBeLessThan(cut.requestsPerSecond as number);
  });

  test('never below MIN_REQUESTS_PER_SECOND and one request in flight', () => {
    const pacer = pacerOf();
    for (let i = 0; i < 100; i += 1) {
      pacer.release('slow-down', 5);
      vi.advanceTimersByTime(100);
    }
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: MIN_REQUESTS_PER_SECOND, inFlightLimit: 1 });
  });

  test('neutral answers (500, connection refused) change nothing', () => {
    const pacer = pacerOf();
    for (let i = 0; i < 50; i += 1) {
      pacer.release('neutral', 5);
      vi.advanceTimersByTime(100);
    }
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: 10 });
  });
});

describe('additive increase', () => {
  test('while the pace is what holds the container back, acceptances raise it by INCREASE_SHARE of itself per second, and the in-flight limit to MAX_CONCURRENCY', async () => {
    const pacer = pacerOf();
    for (let i = 0; i < 10; i += 1) expect(pacer.acquire(Infinity)).toBe(true);
    pacer.release('slow-down', 5);
    for (let i = 0; i < 9; i += 1) pacer.release('neutral', 5);
    const cut = pacer.snapshot().requestsPerSecond as number;
    const startedAt = Date.now();
    await sendPaced(pacer, 200);
    const seconds = (Date.now() - startedAt) / 1000;
    const rate = pacer.snapshot().requestsPerSecond as number;
    expect(rate).toBeGreaterThan(cut * (1 + INCREASE_SHARE * seconds * 0.5));
    expect(rate).toBeLessThan(cut * (1 + INCREASE_SHARE) ** (seconds + 1));
    expect(pacer.snapshot().inFlightLimit).toBe(10);
  });

  test('not while the batches, not the pace, hold it back: acceptances without demand raise nothing', () => {
    const pacer = pacerOf();
    for (let i = 0; i < 10; i += 1) expect(pacer.acquire(Infinity)).toBe(true);
    pacer.release('slow-down', 5);
    const cut = pacer.snapshot().requestsPerSecond;
    vi.advanceTimersByTime(2000);
    for (let i = 0; i < 100; i += 1) pacer.release('accepted', 5);
    expect(pacer.snapshot().requestsPerSecond).toBe(cut);
  });

  test('never above MAX_CONCURRENCY in flight nor above the ceiling', async () => {
    const pacer = pacerOf({ maxRequestsPerSecond: 20 });
    expect(pacer.acquire(Infinity)).toBe(true);
    pacer.release('slow-down', 5); // 1 started in the meter's first 100 ms: 10/s offered
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: 1.25 * 10 * DECREASE_FACTOR, inFlightLimit: 8 });
    await sendPaced(pacer, 300);
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: 20, inFlightLimit: 10 });
  });

  const signal = fc.constantFrom<PaceSignal>('accepted', 'slow-down', 'neutral');
  test('property: after any answers, 1 ≤ in-flight limit ≤ MAX_CONCURRENCY and MIN_REQUESTS_PER_SECOND ≤ rate ≤ ceiling', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.option(fc.integer({ min: 1, max: 500 }), { nil: undefined }),
        fc.array(fc.tuple(signal, fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 2000 })), { maxLength: 200 }),
        (maxInFlight, maxRequestsPerSecond, answers) => {
          const pacer = pacerOf({ maxInFlight, maxRequestsPerSecond });
          for (const [answer, latencyMs, gapMs] of answers) {
            vi.advanceTimersByTime(gapMs);
            pacer.release(answer, latencyMs);
            const { requestsPerSecond, inFlightLimit } = pacer.snapshot();
            expect(inFlightLimit).toBeGreaterThanOrEqual(1);
            expect(inFlightLimit).toBeLessThanOrEqual(maxInFlight);
            if (requestsPerSecond !== undefined) {
              expect(requestsPerSecond).toBeGreaterThanOrEqual(MIN_REQUESTS_PER_SECOND);
              expect(requestsPerSecond).toBeLessThanOrEqual(maxRequestsPerSecond ?? Number.POSITIVE_INFINITY);
            }
          }
        },
      ),
    );
  });
});

describe('PACING=false: only the ceilings', () => {
  test('no cut, no hold, whatever the webhook answers; refusals are still counted', () => {
    const pacer = pacerOf({ adaptive: false, maxInFlight: 4 });
    for (let i = 0; i < 3 * HOLD_AFTER_REFUSALS; i += 1) {
      expect(pacer.acquire(Date.now() + 1000)).toBe(true);
      pacer.release('slow-down', 5, 30);
      vi.advanceTimersByTime(100);
    }
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: undefined, inFlightLimit: 4 });
    for (let i = 0; i < 4; i += 1) expect(pacer.acquire(Date.now() + 1000)).toBe(true);
    expect(pacer.takeRefusedCount()).toBe(3 * HOLD_AFTER_REFUSALS);
    expect(pacer.takeRefusedCount()).toBe(0);
  });

  test('the ceiling still applies', async () => {
    const pacer = pacerOf({ adaptive: false, maxRequestsPerSecond: 2 });
    expect(pacer.acquire(Infinity)).toBe(true);
    pacer.release('slow-down', 5, 30);
    const next = acquireWatched(pacer, Infinity);
    await vi.advanceTimersByTimeAsync(499);
    expect(next.started()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(next.started()).toBe(true);
    expect(pacer.snapshot()).toEqual({ requestsPerSecond: 2, inFlightLimit: 10 });
  });
});

describe('the endpoint hold', () => {
  /** The longest a token takes to come, at the slowest rate. */
  const TOKEN_MS = 1000 / MIN_REQUESTS_PER_SECOND;
  /** `count` refusals, each `Retry-After: retryAfter`, each once the bucket has a token again. */
  function refuse(pacer: Pacer, count: number, retryAfter: number | undefined): void {
    for (let i = 0; i < count; i += 1) {
      vi.advanceTimersByTime(TOKEN_MS);
      expect(pacer.acquire(Date.now() + 1)).toBe(true);
      pacer.release('slow-down', 5, retryAfter);
    }
  }

  test(`after ${HOLD_AFTER_REFUSALS} refusals in a row with a Retry-After, nothing starts until it has passed`, async () => {
    const pacer = pacerOf();
    refuse(pacer, HOLD_AFTER_REFUSALS, 3);
    const heldAt = Date.now();
    const waiting = acquireWatched(pacer, Infinity);
    await vi.advanceTimersByTimeAsync(2999);
    expect(waiting.started()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting.started()).toBe(true);
    expect(Date.now() - heldAt).toBe(3000);
  });

  test('a waiter whose deadline falls inside the hold gets false at once: its record goes back for the hold', async () => {
    const pacer = pacerOf();
    refuse(pacer, HOLD_AFTER_REFUSALS, 3);
    const waiting = acquireWatched(pacer, Date.now() + 1000);
    await settle();
    expect(waiting.started()).toBe(false);
    expect(pacer.holdRemainingSeconds()).toBe(3);
  });

  test(`not after ${HOLD_AFTER_REFUSALS - 1}; nor when an acceptance comes between`, () => {
    const pacer = pacerOf();
    refuse(pacer, HOLD_AFTER_REFUSALS - 1, 3);
    vi.advanceTimersByTime(TOKEN_MS);
    expect(pacer.acquire(Date.now() + 1)).toBe(true);
    pacer.release('accepted', 5);
    refuse(pacer, HOLD_AFTER_REFUSALS - 1, 3);
    vi.advanceTimersByTime(TOKEN_MS);
    expect(pacer.acquire(Date.now() + 1)).toBe(true); // not held
    pacer.release('slow-down', 5, 3); // the fifth in a row since the acceptance
    vi.advanceTimersByTime(2999);
    expect(pacer.acquire(Date.now() + 1)).not.toBe(true); // held, though a token is there
  });

  test('a refusal without Retry-After holds nothing (but counts toward the run)', () => {
    const pacer = pacerOf();
    refuse(pacer, 2 * HOLD_AFTER_REFUSALS, undefined);
    vi.advanceTimersByTime(TOKEN_MS);
    expect(pacer.acquire(Date.now() + 1)).toBe(true);
    pacer.release('slow-down', 5, 3); // a Retry-After after a run of refusals without one
    vi.advanceTimersByTime(2999); // a token is there (2 s at the slowest), but the hold is 3 s
    expect(pacer.acquire(Date.now() + 1)).not.toBe(true);
  });

  test('a later, shorter Retry-After does not shorten the hold', async () => {
    const pacer = pacerOf();
    refuse(pacer, HOLD_AFTER_REFUSALS, 10);
    pacer.release('slow-down', 5, 1);
    const waiting = acquireWatched(pacer, Infinity);
    await vi.advanceTimersByTimeAsync(9999);
    expect(waiting.started()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting.started()).toBe(true);
  });
});

describe('waiters', () => {
  test('start in arrival order as slots free up', async () => {
    const pacer = pacerOf({ maxInFlight: 2 });
    pacer.acquire(Infinity);
    pacer.acquire(Infinity);
    const order: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      const slot = pacer.acquire(Infinity);
      expect(slot).not.toBe(true);
      void (slot as Promise<boolean>).then(() => order.push(i));
    }
    for (let i = 0; i < 6; i += 1) {
      pacer.release('neutral', 5);
      await settle();
    }
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  test('a newcomer does not overtake a waiter, even when a slot is free for it', async () => {
    const pacer = pacerOf({ maxRequestsPerSecond: 10 }); // one token per 100 ms
    expect(pacer.acquire(Infinity)).toBe(true);
    const first = acquireWatched(pacer, Infinity);
    vi.advanceTimersByTime(100); // the token is due, but the timer has not fired yet
    const second = pacer.acquire(Infinity);
    expect(second).not.toBe(true);
    await settle();
    expect(first.started()).toBe(true);
  });

  test('a waiter past its deadline gets false, and the slot goes to the next', async () => {
    const pacer = pacerOf({ maxInFlight: 1 });
    pacer.acquire(Infinity);
    const now = Date.now();
    const early = acquireWatched(pacer, now + 100);
    const late = acquireWatched(pacer, now + 1000);
    await vi.advanceTimersByTimeAsync(100);
    expect(early.started()).toBe(false);
    expect(late.started()).toBeUndefined();
    pacer.release('neutral', 5);
    await settle();
    expect(late.started()).toBe(true);
    expect(pacer.acquire(Infinity)).not.toBe(true); // the one slot is the late waiter's
  });

  test('an acquire already past its deadline, with no slot free, is false at once', async () => {
    const pacer = pacerOf({ maxInFlight: 1 });
    pacer.acquire(Infinity);
    const slot = pacer.acquire(Date.now());
    expect(await slot).toBe(false);
  });

  type Op =
    | { readonly kind: 'acquire'; readonly deadlineInMs: number }
    | { readonly kind: 'release'; readonly signal: PaceSignal; readonly latencyMs: number; readonly retryAfter: number | undefined }
    | { readonly kind: 'advance'; readonly ms: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('acquire' as const), deadlineInMs: fc.integer({ min: 0, max: 5000 }) }),
    fc.record({
      kind: fc.constant('release' as const),
      signal: fc.constantFrom<PaceSignal>('accepted', 'slow-down', 'neutral'),
      latencyMs: fc.integer({ min: 0, max: 500 }),
      retryAfter: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
    }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 1500 }) }),
  );

  test('property: no start beyond the in-flight limit; waiters start in arrival order, before their deadline, or get false at it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.integer({ min: 1, max: 6 }),
        fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
        fc.array(op, { maxLength: 80 }),
        async (adaptive, maxInFlight, maxRequestsPerSecond, ops) => {
          const pacer = pacerOf({ adaptive, maxInFlight, maxRequestsPerSecond });
          let inFlight = 0;
          let arrivals = 0;
          const started: number[] = [];
          const pending = new Set<number>();
          const violations: string[] = [];
          const onStart = (id: number): void => {
            inFlight += 1;
            started.push(id);
            const limit = pacer.snapshot().inFlightLimit;
            if (inFlight > limit || inFlight > maxInFlight) violations.push(`start ${id}: ${inFlight} in flight, limit ${limit}`);
          };
          for (const o of ops) {
            if (o.kind === 'acquire') {
              const id = arrivals++;
              const deadline = Date.now() + o.deadlineInMs;
              const slot = pacer.acquire(deadline);
              if (slot === true) {
                if (pending.size > 0) violations.push(`start ${id} overtook a waiter`);
                onStart(id);
              } else {
                pending.add(id);
                void slot.then((ok) => {
                  pending.delete(id);
                  if (ok && Date.now() >= deadline) violations.push(`start ${id} after its deadline`);
                  if (!ok && Date.now() < deadline) violations.push(`gave up on ${id} before its deadline`);
                  if (ok) onStart(id);
                });
              }
            } else if (o.kind === 'release') {
              if (inFlight === 0) continue;
              inFlight -= 1;
              pacer.release(o.signal, o.latencyMs, o.retryAfter);
            } else {
              await vi.advanceTimersByTimeAsync(o.ms);
            }
            await settle();
          }
          expect(violations).toEqual([]);
          expect(started).toEqual([...started].sort((a, b) => a - b));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('the ceiling: a token bucket', () => {
  /**
   * Greedy callers (one per slot, each starting again as soon as its answer is in) for `seconds`:
   * the start times, ms.
   */
  async function greedyStarts(pacer: Pacer, slots: number, latencyMs: number, seconds: number): Promise<number[]> {
    const starts: number[] = [];
    const end = Date.now() + seconds * 1000;
    const caller = async (): Promise<void> => {
      // acquire() past its deadline still starts a request when a slot is free: the caller checks the time.
      while (Date.now() < end) {
        const slot = pacer.acquire(end);
        if (slot !== true && !(await slot)) return;
        starts.push(Date.now());
        await new Promise((resolve) => setTimeout(resolve, latencyMs));
        pacer.release('accepted', latencyMs);
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

/**
 * Issue 21's scenario, simulated: `containers` pacers (5 concurrent invocations × 10 in flight, the
 * stack's defaults) against one webhook with a token bucket of `rate` requests/s holding `burst`
 * tokens, which answers `429` + `Retry-After` above it. A refused record goes back to the queue, as
 * the relay does (the backlog is endless: another record takes its place). 'batches' runs invocations of 10 records, the
 * next only once the last record of the previous is done (Lambda's and local mode's way);
 * 'workers' keeps every slot busy. Seeded latencies (0.5–1.5 × `latencyMs`), on the fake clock.
 */
interface Scenario {
  readonly mode: 'batches' | 'workers';
  readonly rate: number;
  /** The webhook bucket's size, in seconds of its rate (at least one request). */
  readonly burstSeconds: number;
  readonly latencyMs: number;
  readonly adaptive?: boolean;
  /** From and to (ms from the start): the webhook refuses everything, as during a deploy or a quota reset. */
  readonly refusingAll?: readonly [number, number];
}

/** What the webhook took, as a share of its rate, and the share of requests it refused, after a warm-up. */
interface Measured {
  readonly achieved: number;
  readonly refused: number;
}

const CONTAINERS = 5;
const MAX_IN_FLIGHT = 10;
const RETRY_AFTER_SECONDS = 1;

/** A small seeded generator (mulberry32): the same run every time. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function simulate(scenario: Scenario, warmUpMs: number, measureMs: number, seed = 1): Promise<Measured> {
  const random = seeded(seed);
  const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  const start = Date.now();
  const measureFrom = start + warmUpMs;
  const end = measureFrom + measureMs;
  const capacity = Math.max(1, scenario.rate * scenario.burstSeconds);
  let tokens = capacity;
  let refilledAt = start;
  let accepted = 0;
  let refused = 0;
  /** The webhook: a token per request, else 429. */
  const answer = (): boolean => {
    const now = Date.now();
    tokens = Math.min(capacity, tokens + ((now - refilledAt) / 1000) * scenario.rate);
    refilledAt = now;
    const refusing = scenario.refusingAll !== undefined && now >= start + scenario.refusingAll[0] && now < start + scenario.refusingAll[1];
    const ok = tokens >= 1 && !refusing;
    if (ok) tokens -= 1;
    if (now >= measureFrom && now < end) {
      if (ok) accepted += 1;
      else refused += 1;
    }
    return ok;
  };
  /** One record: sent once, when the pace allows before the run ends. */
  const deliver = async (pacer: Pacer): Promise<void> => {
    if (Date.now() < end) {
      const slot = pacer.acquire(end);
      if (slot !== true && !(await slot)) return;
      const latencyMs = scenario.latencyMs * (0.5 + random());
      await wait(latencyMs / 2);
      const ok = answer();
      await wait(latencyMs / 2);
      pacer.release(ok ? 'accepted' : 'slow-down', latencyMs, ok ? undefined : RETRY_AFTER_SECONDS);
    }
  };
  const container = async (): Promise<void> => {
    const pacer = new Pacer(settings({ adaptive: scenario.adaptive ?? true, maxInFlight: MAX_IN_FLIGHT }), () => Date.now());
    await wait(random() * 20);
    if (scenario.mode === 'workers') {
      await Promise.all(
        Array.from({ length: MAX_IN_FLIGHT }, async () => {
          while (Date.now() < end) await deliver(pacer);
        }),
      );
      return;
    }
    while (Date.now() < end) {
      await Promise.all(Array.from({ length: MAX_IN_FLIGHT }, () => deliver(pacer)));
      await wait(10 + random() * 20); // the next receive
    }
  };
  const done = Promise.all(Array.from({ length: CONTAINERS }, container));
  await vi.advanceTimersByTimeAsync(end - start + RETRY_AFTER_SECONDS * 1000 + 2 * scenario.latencyMs + 100);
  await done;
  return { achieved: accepted / ((scenario.rate * measureMs) / 1000), refused: refused / Math.max(1, accepted + refused) };
}

describe('simulation: 5 containers × 10 in flight against a webhook taking R requests/s (issue 21)', () => {
  // Issue 21's goal: at most 10 % of requests refused and at least 80 % of R achieved, here over
  // 15 s after a 5 s warm-up. The bounds hold for every seed from 1 to 10, not just the one used.
  // A webhook bucket under 0.1 s of R leaves 'batches' short of 80 %: each invocation waits for its
  // slowest record, and no constant tried fixes that. With
  // a bucket of one request, the 5 containers' uncoordinated requests bunch: a small share of R.
  test.each([
    // mode, R, webhook burst (s of R), latency ms: at least this share of R, at most this share refused
    ['batches', 200, 0.1, 20, 0.8, 0.05],
    // A slow webhook (100 ms) with a small bucket: about 12 % refused, over the 10 %.
    ['batches', 50, 0.1, 100, 0.8, 0.15],
    ['batches', 200, 1, 100, 0.85, 0.05],
    ['workers', 200, 0.1, 5, 0.95, 0.05],
  ] as const)(
    '%s, R = %d/s, bucket %d s, %d ms: ≥ %d of R, ≤ %d refused',
    async (mode, rate, burstSeconds, latencyMs, achieved, refused) => {
      const measured = await simulate({ mode, rate, burstSeconds, latencyMs }, 5000, 15_000);
      expect(measured.achieved).toBeGreaterThanOrEqual(achieved);
      expect(measured.refused).toBeLessThanOrEqual(refused);
    },
  );

  test('from the first request (the bench drains N messages from a standing start): ≤ 10 % refused, ≥ 80 % of R', async () => {
    const measured = await simulate({ mode: 'batches', rate: 200, burstSeconds: 1, latencyMs: 20 }, 0, 20_000);
    expect(measured.refused).toBeLessThanOrEqual(0.1);
    expect(measured.achieved).toBeGreaterThanOrEqual(0.8);
  });

  // A run of refusals cuts the pace at most by half per decrease (not down to what was offered):
  // the pace comes back within seconds after a deploy or a quota reset.
  test('after 3 s of refusals (429 + Retry-After: 1 to everything), back to ≥ 70 % of R over the next 20 s', async () => {
    const measured = await simulate(
      { mode: 'workers', rate: 200, burstSeconds: 0.1, latencyMs: 20, refusingAll: [10_000, 13_000] },
      13_000,
      20_000,
    );
    expect(measured.achieved).toBeGreaterThanOrEqual(0.7);
  });

  test('the comparison: PACING=false floods the webhook (most requests refused)', async () => {
    const measured = await simulate({ mode: 'batches', rate: 200, burstSeconds: 0.1, latencyMs: 20, adaptive: false }, 5000, 15_000);
    expect(measured.refused).toBeGreaterThan(0.5);
  });
});

describe('in a process with nothing else to do (a Lambda invocation whose requests all wait on the pace)', () => {
  test('a waiting acquire keeps the process alive until its slot: the runtime would otherwise exit mid-invocation', () => {
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
