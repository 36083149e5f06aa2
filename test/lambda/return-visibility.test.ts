/**
 * lambda/return-visibility.ts: how each record goes back to the queue, for every combination of its outcome (with the
 * webhook's `Retry-After` or the backoff's delay, a key's wait or none), the breaker (closed, or open with a 120 s
 * hold), the endpoint's hold (none, or 900 s left) and its retry window (off, with time and receives to spare, 60 s
 * from its end, near its backstop, past its end). The expectations are written out by hand, row by row, from the rules
 * in docs/contract.md and docs/operations.md; then properties over any input.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { RecordOutcome } from '../../lambda/record-outcome';
import { type RecordInWindow, returnVisibility } from '../../lambda/return-visibility';
import { MAX_VISIBILITY_SECONDS } from '../../lambda/aws-limits';
import { RECEIVE_TO_INVOKE_SLACK_SECONDS } from '../../lambda/retry-timing';

const BREAKER_HOLD = 120;
const ENDPOINT_HOLD = 900;

/** The windows of the table's columns. */
const WINDOWS = {
  off: undefined,
  // 20 hours left, first receive of 483: no spacing at all.
  spare: { timeLeftSeconds: 72_000, receiveCount: 1, maxReceiveCount: 483 },
  // A minute left, receives to spare: a delay that is not the webhook's is cut to the window's end.
  ending: { timeLeftSeconds: 60, receiveCount: 1, maxReceiveCount: 483 },
  // 10 hours left, 2 receives left to the relay (483 − 3 kept for crashes − 478): at least half of it, 5 hours.
  nearBackstop: { timeLeftSeconds: 36_000, receiveCount: 478, maxReceiveCount: 483 },
  // Over 10 s ago: nothing is cut any more.
  past: { timeLeftSeconds: -10, receiveCount: 9, maxReceiveCount: 483 },
} as const satisfies Record<string, RecordInWindow | undefined>;
type WindowName = keyof typeof WINDOWS;
const SPACING = { off: 0, spare: 0, ending: 0, nearBackstop: 18_000, past: 0 } as const;

/** Per window: the visibility set (`-`: none), and whether the next attempt is the last in the window (`!`). */
type Column = number | '-' | `${number}!`;
type Row = readonly [
  label: string,
  outcome: RecordOutcome,
  breakerOpen: boolean,
  endpointHeld: boolean,
  breakerHold: boolean,
  columns: Record<WindowName, Column>,
];

const backoff = (delaySeconds: number | undefined, outage = false): RecordOutcome => ({
  kind: 'retry',
  delaySeconds,
  delaySource: 'backoff',
  status: 500,
  outage,
});
const retryAfter = (delaySeconds: number, outage = false): RecordOutcome => ({
  kind: 'retry',
  delaySeconds,
  delaySource: 'retry-after',
  status: 429,
  outage,
});
const HELD: RecordOutcome = { kind: 'held', delaySeconds: BREAKER_HOLD };
const PACED: RecordOutcome = { kind: 'not-attempted', reason: 'paced' };
/** Kept by its pace key: a wait shorter than the endpoint's hold, and one longer. */
const KEY_WAIT_30: RecordOutcome = { kind: 'not-attempted', reason: 'paced', delaySeconds: 30 };
const KEY_WAIT_1200: RecordOutcome = { kind: 'not-attempted', reason: 'paced', delaySeconds: 1_200 };
const DEADLINE: RecordOutcome = { kind: 'not-attempted', reason: 'deadline' };
const BLOCKED: RecordOutcome = { kind: 'not-attempted', reason: 'fifo-group-blocked' };
const DELIVERED: RecordOutcome = { kind: 'delivered', status: 200 };
const DEAD_LETTERED: RecordOutcome = { kind: 'dead-lettered', status: 400, response: '', cause: 'refused permanently' };

const NONE = { off: '-', spare: '-', ending: '-', nearBackstop: '-', past: '-' } as const;

/** Every combination of breaker and endpoint hold for an outcome that neither changes. */
function regardless(label: string, outcome: RecordOutcome, columns: Record<WindowName, Column>): Row[] {
  return [false, true].flatMap((breakerOpen) =>
    [false, true].map((endpointHeld): Row => [label, outcome, breakerOpen, endpointHeld, false, columns]),
  );
}

const TABLE: Row[] = [
  ...regardless('delivered', DELIVERED, NONE),
  ...regardless('dead-lettered', DEAD_LETTERED, NONE),
  // A failure's own delay: the backoff may be cut to the window's end, a Retry-After never; past the window neither.
  ...regardless('backoff 30 s', backoff(30), { off: 30, spare: 30, ending: 30, nearBackstop: 18_000, past: '30!' }),
  ...regardless('Retry-After 600 s', retryAfter(600), { off: 600, spare: 600, ending: '600!', nearBackstop: 18_000, past: '600!' }),
  // A Retry-After of 0 (or a date in the past) is 1 s: at once, the message would come straight back, receive after receive.
  ...regardless('Retry-After 0 s', retryAfter(0), { off: 1, spare: 1, ending: 1, nearBackstop: 18_000, past: '1!' }),
  ...regardless('no delay (BACKOFF=none)', backoff(undefined), { off: '-', spare: '-', ending: '-', nearBackstop: 18_000, past: '-' }),
  // A failure that looked like an outage: its own delay while the breaker is closed; at least the hold while open.
  ...[false, true].flatMap((endpointHeld): Row[] => [
    [
      'outage, backoff 30 s',
      backoff(30, true),
      false,
      endpointHeld,
      false,
      { off: 30, spare: 30, ending: 30, nearBackstop: 18_000, past: '30!' },
    ],
    [
      'outage, backoff 30 s',
      backoff(30, true),
      true,
      endpointHeld,
      true,
      { off: 120, spare: 120, ending: '60!', nearBackstop: 18_000, past: '120!' },
    ],
    [
      'outage, backoff 300 s',
      backoff(300, true),
      true,
      endpointHeld,
      true,
      { off: 300, spare: 300, ending: '60!', nearBackstop: 18_000, past: '300!' },
    ],
    [
      'outage, no delay',
      backoff(undefined, true),
      false,
      endpointHeld,
      false,
      { off: '-', spare: '-', ending: '-', nearBackstop: 18_000, past: '-' },
    ],
    [
      'outage, no delay',
      backoff(undefined, true),
      true,
      endpointHeld,
      true,
      { off: 120, spare: 120, ending: '60!', nearBackstop: 18_000, past: '120!' },
    ],
    [
      'outage, Retry-After 600 s',
      retryAfter(600, true),
      false,
      endpointHeld,
      false,
      { off: 600, spare: 600, ending: '600!', nearBackstop: 18_000, past: '600!' },
    ],
    [
      'outage, Retry-After 600 s',
      retryAfter(600, true),
      true,
      endpointHeld,
      true,
      { off: 600, spare: 600, ending: '600!', nearBackstop: 18_000, past: '600!' },
    ],
    // A Retry-After shorter than the breaker's hold is raised to it, and, the webhook's own, never cut to the window's end.
    [
      'outage, Retry-After 60 s',
      retryAfter(60, true),
      false,
      endpointHeld,
      false,
      { off: 60, spare: 60, ending: '60!', nearBackstop: 18_000, past: '60!' },
    ],
    [
      'outage, Retry-After 60 s',
      retryAfter(60, true),
      true,
      endpointHeld,
      true,
      { off: 120, spare: 120, ending: '120!', nearBackstop: 18_000, past: '120!' },
    ],
    // Held unsent by the breaker: its hold while open; at once if it closed during the batch.
    ['held', HELD, false, endpointHeld, false, { off: 0, spare: 0, ending: 0, nearBackstop: 18_000, past: '0!' }],
    ['held', HELD, true, endpointHeld, true, { off: 120, spare: 120, ending: '60!', nearBackstop: 18_000, past: '120!' }],
  ]),
  // Kept from being sent by the endpoint's hold: until it ends (the webhook's own Retry-After, never cut); by the pace alone, at once.
  ...[false, true].flatMap((breakerOpen): Row[] => [
    ['paced, hold on', PACED, breakerOpen, true, false, { off: 900, spare: 900, ending: 900, nearBackstop: 18_000, past: 900 }],
    ['paced, no hold', PACED, breakerOpen, false, false, { off: 0, spare: 0, ending: 0, nearBackstop: 18_000, past: 0 }],
    // Kept by its key's pace: the longer of its key's wait and the endpoint's hold, honoured as a Retry-After is.
    [
      'key wait 30 s, hold on',
      KEY_WAIT_30,
      breakerOpen,
      true,
      false,
      { off: 900, spare: 900, ending: 900, nearBackstop: 18_000, past: 900 },
    ],
    ['key wait 30 s, no hold', KEY_WAIT_30, breakerOpen, false, false, { off: 30, spare: 30, ending: 30, nearBackstop: 18_000, past: 30 }],
    [
      'key wait 1200 s, hold on',
      KEY_WAIT_1200,
      breakerOpen,
      true,
      false,
      { off: 1_200, spare: 1_200, ending: 1_200, nearBackstop: 18_000, past: 1_200 },
    ],
    [
      'key wait 1200 s, no hold',
      KEY_WAIT_1200,
      breakerOpen,
      false,
      false,
      { off: 1_200, spare: 1_200, ending: 1_200, nearBackstop: 18_000, past: 1_200 },
    ],
  ]),
  ...regardless('not sent: deadline', DEADLINE, { off: 0, spare: 0, ending: 0, nearBackstop: 18_000, past: 0 }),
  ...regardless('not sent: FIFO group blocked', BLOCKED, { off: 0, spare: 0, ending: 0, nearBackstop: 18_000, past: 0 }),
];

describe('returnVisibility, every combination', () => {
  const cases = TABLE.flatMap(([label, outcome, breakerOpen, endpointHeld, breakerHold, columns]) =>
    (Object.keys(WINDOWS) as WindowName[]).map((window) => ({
      label,
      outcome,
      breakerOpen,
      endpointHeld,
      breakerHold,
      window,
      column: columns[window],
    })),
  );

  test('the table covers every outcome with every breaker and endpoint hold (each in every window)', () => {
    // One row only with the breaker open: closed, its outcome is the backoff row's own.
    const extra = new Set(['outage, backoff 300 s']);
    const combos = new Map<string, Set<string>>();
    for (const [label, outcome, breakerOpen, endpointHeld] of TABLE) {
      if (extra.has(label)) continue;
      const key = JSON.stringify(outcome);
      combos.set(key, (combos.get(key) ?? new Set()).add(`${breakerOpen}/${endpointHeld}`));
    }
    expect(combos.size).toBe(16);
    for (const [outcome, seen] of combos) expect(seen.size, outcome).toBe(4);
  });

  test.each(cases)(
    '$label, breaker open $breakerOpen, endpoint held $endpointHeld, window $window → $column',
    ({ outcome, breakerOpen, endpointHeld, breakerHold, window, column }) => {
      const decided = returnVisibility(outcome, {
        breakerHoldSeconds: breakerOpen ? BREAKER_HOLD : undefined,
        endpointHoldSeconds: endpointHeld ? ENDPOINT_HOLD : 0,
        window: WINDOWS[window],
        elapsedSeconds: 0,
      });
      const acknowledged = outcome.kind === 'delivered' || outcome.kind === 'dead-lettered';
      expect(decided).toEqual({
        visibilitySeconds: column === '-' ? undefined : Number.parseInt(String(column), 10),
        breakerHold,
        releaseFloorSeconds: acknowledged ? 0 : SPACING[window],
        lastInWindow: String(column).endsWith('!'),
      });
    },
  );
});

describe('returnVisibility, any input', () => {
  const outcome: fc.Arbitrary<RecordOutcome> = fc.oneof(
    fc.record({
      kind: fc.constant('retry' as const),
      delaySeconds: fc.option(fc.integer({ min: 0, max: MAX_VISIBILITY_SECONDS }), { nil: undefined }),
      delaySource: fc.constantFrom('retry-after' as const, 'backoff' as const),
      outage: fc.boolean(),
    }),
    fc.constant(HELD),
    fc.constantFrom(PACED, DEADLINE, BLOCKED),
    fc.record({
      kind: fc.constant('not-attempted' as const),
      reason: fc.constant('paced' as const),
      delaySeconds: fc.integer({ min: 0, max: MAX_VISIBILITY_SECONDS }),
    }),
  );
  const circumstances = fc.record({
    breakerHoldSeconds: fc.option(fc.integer({ min: 1, max: MAX_VISIBILITY_SECONDS }), { nil: undefined }),
    endpointHoldSeconds: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: MAX_VISIBILITY_SECONDS })),
    window: fc.option(
      fc.integer({ min: 10, max: 1_000 }).chain((maxReceiveCount) =>
        fc.record({
          timeLeftSeconds: fc.double({ min: -86_400, max: 14 * 86_400, noNaN: true }),
          receiveCount: fc.integer({ min: 1, max: maxReceiveCount + 5 }),
          maxReceiveCount: fc.constant(maxReceiveCount),
        }),
      ),
      { nil: undefined },
    ),
    elapsedSeconds: fc.double({ min: 0, max: 900, noNaN: true }),
  });

  test('property: within what SQS accepts; past the window, never sooner than asked; while the breaker is open, a hold is at least its length', () => {
    fc.assert(
      fc.property(outcome, circumstances, (o, c) => {
        const { visibilitySeconds, breakerHold, releaseFloorSeconds } = returnVisibility(o, c);
        const ceiling = MAX_VISIBILITY_SECONDS - RECEIVE_TO_INVOKE_SLACK_SECONDS - Math.ceil(c.elapsedSeconds);
        if (visibilitySeconds !== undefined) {
          expect(Number.isInteger(visibilitySeconds)).toBe(true);
          expect(visibilitySeconds).toBeGreaterThanOrEqual(0);
          expect(visibilitySeconds).toBeLessThanOrEqual(ceiling);
          expect(releaseFloorSeconds <= visibilitySeconds || releaseFloorSeconds > ceiling).toBe(true);
        }
        const asked =
          o.kind === 'retry'
            ? o.delaySource === 'retry-after'
              ? Math.max(o.delaySeconds ?? 0, 1)
              : o.delaySeconds
            : o.kind === 'held'
              ? c.breakerHoldSeconds
              : o.kind === 'not-attempted' && o.reason === 'paced'
                ? Math.max(o.delaySeconds ?? 0, c.endpointHoldSeconds)
                : 0;
        // Past the window nothing asked is cut: a record whose dead-letter copy failed must not come straight back.
        if (c.window !== undefined && c.window.timeLeftSeconds <= 0 && asked !== undefined)
          expect(visibilitySeconds).toBe(Math.min(Math.max(asked, breakerHold ? (c.breakerHoldSeconds ?? 0) : 0), ceiling));
        if (breakerHold) {
          expect(c.breakerHoldSeconds).toBeDefined();
          const windowEnd =
            c.window !== undefined && c.window.timeLeftSeconds > 0 ? Math.ceil(c.window.timeLeftSeconds) : Number.POSITIVE_INFINITY;
          expect(visibilitySeconds).toBeGreaterThanOrEqual(Math.min(c.breakerHoldSeconds ?? 0, windowEnd, ceiling));
        }
        // A webhook's Retry-After is never shortened but by SQS's own limit, and never brings its record back at once.
        if (o.kind === 'retry' && o.delaySource === 'retry-after' && o.delaySeconds !== undefined)
          expect(visibilitySeconds).toBe(Math.min(Math.max(visibilitySeconds ?? 0, o.delaySeconds, 1), ceiling));
      }),
      { numRuns: 2_000 },
    );
  });
});
