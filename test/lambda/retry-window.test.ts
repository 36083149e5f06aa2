/**
 * Unit and property tests of lambda/retry-window.ts (docs/webhook-owners.md, "Outages"): the
 * backstop derived from the window, where a window starts, and the spacing of retries that keeps
 * the relay's own returns from reaching the backstop before the window ends.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  backstopReceiveCount,
  CRASH_RESERVE_RECEIVES,
  delayInWindow,
  MAX_BACKSTOP_RECEIVES,
  MIN_BACKSTOP_RECEIVES,
  minimumRetryDelaySeconds,
  retryWindowMarginSeconds,
  windowStartOf,
} from '../../lambda/retry-window';
import { MAX_VISIBILITY_SECONDS } from '../../lambda/aws-limits';
import { clampVisibility, RECEIVE_TO_INVOKE_SLACK_SECONDS } from '../../lambda/retry-timing';

const HOUR = 3600;
const DAY = 24 * HOUR;
/** The longest one return can park a message, as the relay's clamp allows it with no time elapsed. */
const LONGEST_PARK = MAX_VISIBILITY_SECONDS - RECEIVE_TO_INVOKE_SLACK_SECONDS;
/** The stack's largest visibility timeout: 6 × Lambda's 900 s timeout + the 300 s batching window. */
const STACK_MAX_VISIBILITY = 6 * 900 + 300;

describe('backstopReceiveCount', () => {
  test.each([
    [0, 180, MIN_BACKSTOP_RECEIVES],
    [60, 180, MIN_BACKSTOP_RECEIVES],
    [HOUR, 180, 23], // 20 visibility timeouts + the reserve
    [DAY, 180, 483],
    [DAY, 1, MAX_BACKSTOP_RECEIVES],
    [14 * DAY, STACK_MAX_VISIBILITY, 216],
    [DAY, 0, MAX_BACKSTOP_RECEIVES], // a visibility of 0 counts as 1 s, not a division by zero
  ])('window %d s, visibility %d s → %d', (windowSeconds, visibilitySeconds, expected) => {
    expect(backstopReceiveCount(windowSeconds, visibilitySeconds)).toBe(expected);
  });

  test('property: within 10 … 1,000, at least the reserve above one receive per visibility timeout, monotone in the window', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 14 * DAY }),
        fc.integer({ min: 0, max: 14 * DAY }),
        fc.integer({ min: 0, max: MAX_VISIBILITY_SECONDS }),
        (a, b, visibility) => {
          const count = backstopReceiveCount(a, visibility);
          expect(Number.isInteger(count)).toBe(true);
          expect(count).toBeGreaterThanOrEqual(MIN_BACKSTOP_RECEIVES);
          expect(count).toBeLessThanOrEqual(MAX_BACKSTOP_RECEIVES);
          // Crashing once per visibility timeout, a message spans its window before the backstop (unless capped at 1,000).
          if (count < MAX_BACKSTOP_RECEIVES) expect((count - CRASH_RESERVE_RECEIVES) * Math.max(1, visibility)).toBeGreaterThanOrEqual(a);
          if (a <= b) expect(count).toBeLessThanOrEqual(backstopReceiveCount(b, visibility));
        },
      ),
    );
  });

  test('property: for any stack visibility timeout, the derived backstop leaves the relay enough 12-hour parks to span the window', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 60, max: 14 * DAY }),
        fc.integer({ min: 1, max: STACK_MAX_VISIBILITY }),
        (windowSeconds, visibility) => {
          const receivesForTheRelay = backstopReceiveCount(windowSeconds, visibility) - CRASH_RESERVE_RECEIVES - 1;
          expect(receivesForTheRelay * (LONGEST_PARK - 1)).toBeGreaterThanOrEqual(windowSeconds);
        },
      ),
    );
  });
});

describe('retryWindowMarginSeconds', () => {
  test('12 hours for the last park plus one visibility timeout', () => {
    expect(retryWindowMarginSeconds(180)).toBe(MAX_VISIBILITY_SECONDS + 180);
    expect(retryWindowMarginSeconds(0)).toBe(MAX_VISIBILITY_SECONDS);
  });
});

describe('windowStartOf', () => {
  const now = 1_700_000_000_000;
  test.each([
    ['the first receive', { ApproximateFirstReceiveTimestamp: '1000', SentTimestamp: '500' }, 1000],
    ['the send time when the first receive is missing', { SentTimestamp: '500' }, 500],
    ['the send time when the first receive is 0', { ApproximateFirstReceiveTimestamp: '0', SentTimestamp: '500' }, 500],
    ['the send time when the first receive is garbage', { ApproximateFirstReceiveTimestamp: 'soon', SentTimestamp: '500' }, 500],
    ['the send time when the first receive is negative', { ApproximateFirstReceiveTimestamp: '-5', SentTimestamp: '500' }, 500],
    ['now when neither is usable', { ApproximateFirstReceiveTimestamp: '', SentTimestamp: 'Infinity' }, now],
    ['now when there are no timestamps', {}, now],
  ])('%s', (_, attributes, expected) => {
    expect(windowStartOf({ attributes: attributes as never }, now)).toBe(expected);
  });

  test('now when the record has no attributes at all', () => {
    expect(windowStartOf({ attributes: undefined as never }, now)).toBe(now);
  });
});

describe('minimumRetryDelaySeconds', () => {
  test('nothing once the window is over', () => {
    expect(minimumRetryDelaySeconds(0, 1, 100)).toBe(0);
    expect(minimumRetryDelaySeconds(-5, 1, 100)).toBe(0);
    expect(minimumRetryDelaySeconds(Number.NaN, 1, 100)).toBe(0);
  });

  test('all that is left when one receive (or none) is left to the relay', () => {
    const max = 20;
    expect(minimumRetryDelaySeconds(500, max - CRASH_RESERVE_RECEIVES - 1, max)).toBe(500);
    expect(minimumRetryDelaySeconds(500, max - CRASH_RESERVE_RECEIVES, max)).toBe(500);
    expect(minimumRetryDelaySeconds(500, max, max)).toBe(500);
  });

  test('half of what is left with two receives left; next to nothing while receives are plentiful', () => {
    const max = 20;
    expect(minimumRetryDelaySeconds(500, max - CRASH_RESERVE_RECEIVES - 2, max)).toBe(250);
    expect(minimumRetryDelaySeconds(DAY, 1, 1000)).toBeLessThan(1e-200);
  });

  test('enough that the receives left can each park 12 hours and no more', () => {
    // 3 receives left, 40 hours left: at least 40 h − 2 × 11 h 55 min gone now (more than a quarter of it).
    const delay = minimumRetryDelaySeconds(40 * HOUR, 20 - CRASH_RESERVE_RECEIVES - 3, 20);
    expect(delay).toBeGreaterThanOrEqual(40 * HOUR - 2 * LONGEST_PARK);
    expect(delay).toBeLessThan(40 * HOUR - 2 * LONGEST_PARK + 3); // a second or two of margin at most
  });
});

describe('delayInWindow', () => {
  const requested = fc.option(fc.integer({ min: 0, max: MAX_VISIBILITY_SECONDS }), { nil: undefined });
  const timeLeft = fc.double({ min: 1e-3, max: 14 * DAY, noNaN: true });
  const receives = fc
    .integer({ min: MIN_BACKSTOP_RECEIVES, max: MAX_BACKSTOP_RECEIVES })
    .chain((max) => fc.tuple(fc.integer({ min: 1, max: max + 5 }), fc.constant(max)));

  test('a backoff delay past the window is cut to its end (whole seconds, rounded up), and that attempt is the last', () => {
    expect(delayInWindow(3600, false, 100.2, 1, 1000)).toEqual({ delaySeconds: 101, lastInWindow: true });
  });

  test('a Retry-After past the window is kept, and that attempt is the last', () => {
    expect(delayInWindow(3600, true, 100, 1, 1000)).toEqual({ delaySeconds: 3600, lastInWindow: true });
  });

  test("no requested delay and plentiful receives: the queue's own visibility timeout, not the last", () => {
    expect(delayInWindow(undefined, false, DAY, 1, 1000)).toEqual({ delaySeconds: undefined, lastInWindow: false });
  });

  test('the window is over: no delay is cut (a failed dead-letter copy must not bring the message straight back); none asked, the queue default', () => {
    expect(delayInWindow(undefined, false, -1, 1, 1000)).toEqual({ delaySeconds: undefined, lastInWindow: false });
    expect(delayInWindow(30, false, -1, 1, 1000)).toEqual({ delaySeconds: 30, lastInWindow: true });
    expect(delayInWindow(30, true, -1, 1, 1000)).toEqual({ delaySeconds: 30, lastInWindow: true });
    expect(delayInWindow(30, false, 0, 997, 1000)).toEqual({ delaySeconds: 30, lastInWindow: true });
    expect(delayInWindow(0, false, -3600, 1, 1000)).toEqual({ delaySeconds: 0, lastInWindow: true }); // nothing asked, nothing added
  });

  test('property: past the window, every delay asked is kept as asked', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: MAX_VISIBILITY_SECONDS }),
        fc.boolean(),
        fc.double({ min: -14 * DAY, max: 0, noNaN: true }),
        receives,
        (delay, honoured, left, [receiveCount, max]) => {
          expect(delayInWindow(delay, honoured, left, receiveCount, max).delaySeconds).toBe(delay);
        },
      ),
    );
  });

  test('property: a Retry-After is never shortened; any delay is at least the minimum', () => {
    fc.assert(
      fc.property(requested, fc.boolean(), timeLeft, receives, (delay, honoured, left, [receiveCount, max]) => {
        const fitted = delayInWindow(delay, honoured, left, receiveCount, max);
        const minimum = minimumRetryDelaySeconds(left, receiveCount, max);
        if (honoured && delay !== undefined) expect(fitted.delaySeconds).toBeGreaterThanOrEqual(delay);
        // A negligible minimum (under a millisecond, with over a second left) adds nothing.
        if (!(minimum < 0.001 && left > 1)) expect(fitted.delaySeconds ?? 0).toBeGreaterThanOrEqual(minimum);
        // A backoff delay is cut at the window's end, never below it.
        if (!honoured && delay !== undefined && delay > left) expect(fitted.delaySeconds).toBe(Math.ceil(left));
      }),
    );
  });

  test('property: lastInWindow exactly when the next attempt is at or after the window end', () => {
    fc.assert(
      fc.property(requested, fc.boolean(), timeLeft, receives, (delay, honoured, left, [receiveCount, max]) => {
        const fitted = delayInWindow(delay, honoured, left, receiveCount, max);
        expect(fitted.lastInWindow).toBe(fitted.delaySeconds !== undefined && fitted.delaySeconds >= left);
      }),
    );
  });
});

describe('lastInWindow as SQS carries it out (delayInWindow, then clampVisibility)', () => {
  // A fractional delay rounded to the nearest second could bring an attempt flagged as the last back
  // just before the window ends: the minimum is rounded up, so it cannot.
  test('property: where the 12-hour clamp does not cut the delay, lastInWindow exactly when SQS brings it back at or after the end', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 0, max: MAX_VISIBILITY_SECONDS }), { nil: undefined }),
        fc.boolean(),
        fc.double({ min: 1e-3, max: 14 * DAY, noNaN: true }),
        fc.integer({ min: MIN_BACKSTOP_RECEIVES, max: MAX_BACKSTOP_RECEIVES }),
        fc.integer({ min: 1, max: MAX_BACKSTOP_RECEIVES }),
        fc.double({ min: 0, max: 900, noNaN: true }),
        (requested, honoured, left, max, receiveCount, elapsedSeconds) => {
          const fitted = delayInWindow(requested, honoured, left, receiveCount, max);
          const delay = fitted.delaySeconds as number;
          fc.pre(delay <= LONGEST_PARK - Math.ceil(elapsedSeconds));
          expect(fitted.lastInWindow).toBe(clampVisibility(delay, elapsedSeconds) >= left);
        },
      ),
    );
  });
});

/** One return of a message: how long its invocation took, what it asked for, and how much later than asked SQS gave it back. */
interface Return {
  readonly elapsedSeconds: number;
  readonly requested: number | undefined;
  readonly honoured: boolean;
  readonly lateSeconds: number;
}

/**
 * Follows one message that fails every attempt, returned as the relay returns it (delayInWindow,
 * then clampVisibility), from its first receive to its window's end. Returns the receives it had
 * before the window ended.
 */
function receivesBeforeWindowEnd(windowSeconds: number, maxReceiveCount: number, returns: readonly Return[]): number {
  let at = 0; // seconds since the first receive
  let receiveCount = 1;
  for (let i = 0; at < windowSeconds; i += 1) {
    const step = returns[i % returns.length] as Return;
    const returnedAt = at + step.elapsedSeconds;
    const left = windowSeconds - returnedAt;
    if (left <= 0) break; // the relay gives up on it (dead-letters it) in this invocation
    const fitted = delayInWindow(step.requested, step.honoured, left, receiveCount, maxReceiveCount);
    at = returnedAt + clampVisibility(fitted.delaySeconds ?? 0, step.elapsedSeconds) + step.lateSeconds;
    if (at < windowSeconds) receiveCount += 1;
  }
  return receiveCount;
}

describe('the backstop is not reached before the window ends', () => {
  /** Windows and backstops where the relay's receives can span the window at all: (max − reserve − 1) parks of at most 12 h. */
  const windowAndBackstop = fc
    .tuple(fc.integer({ min: 60, max: 14 * DAY }), fc.integer({ min: MIN_BACKSTOP_RECEIVES, max: MAX_BACKSTOP_RECEIVES }))
    .filter(([windowSeconds, max]) => windowSeconds <= (max - CRASH_RESERVE_RECEIVES - 1) * (LONGEST_PARK - 1));
  const returnOf = (elapsed: fc.Arbitrary<number>, late: fc.Arbitrary<number>): fc.Arbitrary<Return> =>
    fc.record({
      elapsedSeconds: elapsed,
      requested: fc.option(fc.oneof(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: MAX_VISIBILITY_SECONDS })), {
        nil: undefined,
      }),
      honoured: fc.boolean(),
      lateSeconds: late,
    });

  test('property: whole-second invocation times; any delays asked', () => {
    fc.assert(
      fc.property(
        windowAndBackstop,
        fc.array(
          returnOf(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 900 })), fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 10 }))),
          {
            minLength: 1,
            maxLength: 20,
          },
        ),
        ([windowSeconds, max], returns) => {
          expect(receivesBeforeWindowEnd(windowSeconds, max, returns)).toBeLessThan(max - CRASH_RESERVE_RECEIVES);
        },
      ),
      { numRuns: 2000 },
    );
  });

  // Fractions of a second: clampVisibility rounds to the nearest second, and its ceiling takes a whole
  // second off for any fraction elapsed. The minimum is rounded up and the longest park kept a second
  // short of that ceiling, so that the last return never brings a message back early.
  test('property: any invocation times (fractions of a second); any delays asked', () => {
    fc.assert(
      fc.property(
        windowAndBackstop,
        fc.array(
          returnOf(
            fc.oneof(fc.constant(0), fc.double({ min: 0, max: 900, noNaN: true })),
            fc.oneof(fc.constant(0), fc.double({ min: 0, max: 10, noNaN: true })),
          ),
          {
            minLength: 1,
            maxLength: 20,
          },
        ),
        ([windowSeconds, max], returns) => {
          expect(receivesBeforeWindowEnd(windowSeconds, max, returns)).toBeLessThan(max - CRASH_RESERVE_RECEIVES);
        },
      ),
      { numRuns: 2000 },
    );
  });

  // The defaults (24-hour window, 180 s visibility → backstop 483), a webhook failing in 250 ms every
  // time: rounded to the nearest second, the 479th return would ask for the 24,916.25 s left and get
  // 24,916 s, and receive 480 (one of the reserve's) would come a quarter of a second early.
  test('example: a 24-hour window with the derived backstop, each invocation taking 250 ms', () => {
    const max = backstopReceiveCount(DAY, 180);
    const receives = receivesBeforeWindowEnd(DAY, max, [{ elapsedSeconds: 0.25, requested: undefined, honoured: false, lateSeconds: 0 }]);
    expect(receives).toBeLessThan(max - CRASH_RESERVE_RECEIVES);
  });
});

/**
 * Follows one message failing at once on every attempt, from its first receive: the times of its receives (seconds
 * since the first) and the receive on which the relay gives up on it, past its window (or `undefined` if SQS's
 * backstop comes first).
 */
function failingMessage(windowSeconds: number, maxReceiveCount: number): { receivesAt: number[]; givenUpOn: number | undefined } {
  const receivesAt = [0];
  for (let receive = 1; receive <= maxReceiveCount; receive += 1) {
    const at = receivesAt[receive - 1] as number;
    const left = windowSeconds - at;
    if (left <= 0) return { receivesAt, givenUpOn: receive };
    const fitted = delayInWindow(2, false, left, receive, maxReceiveCount); // the default backoff's first delay
    receivesAt.push(at + clampVisibility(fitted.delaySeconds ?? 0, 0));
  }
  return { receivesAt: receivesAt.slice(0, maxReceiveCount), givenUpOn: undefined };
}

describe('what the docs say of a small backstop (docs/operations.md, "The retry window")', () => {
  test("a count of 5 and a 24-hour window: about 12 hours apart twice, then the window's end, dead-lettered on receive 4 of 5", () => {
    const { receivesAt, givenUpOn } = failingMessage(DAY, 5);
    expect(givenUpOn).toBe(4);
    expect(receivesAt).toEqual([0, LONGEST_PARK, 2 * LONGEST_PARK, DAY]);
    expect(LONGEST_PARK).toBe(11 * HOUR + 55 * 60); // "11 hours 55 minutes"
  });

  test("the derived backstop of 483 with the defaults: given up on at the window's end, the 3 receives for crashes untouched", () => {
    const max = backstopReceiveCount(DAY, 180);
    const { receivesAt, givenUpOn } = failingMessage(DAY, max);
    expect(givenUpOn).toBeDefined();
    expect(givenUpOn as number).toBeLessThanOrEqual(max - CRASH_RESERVE_RECEIVES);
    expect(receivesAt.at(-1)).toBeGreaterThanOrEqual(DAY);
  });

  test("a crash loop: the derived backstop spans the window up to about 50 hours at 180 s; past that SQS's cap of 1,000 binds first", () => {
    const crashingFor = (windowSeconds: number): number => backstopReceiveCount(windowSeconds, 180) * 180; // one receive per visibility timeout
    expect(crashingFor(49 * HOUR)).toBeGreaterThanOrEqual(49 * HOUR);
    expect(backstopReceiveCount(50 * HOUR, 180)).toBe(MAX_BACKSTOP_RECEIVES);
    expect(crashingFor(72 * HOUR)).toBe(50 * HOUR); // at the DLQ after 50 hours, 22 before its window's end
  });
});
