/**
 * Releasing what the circuit breaker held back once it closes: the memory of held handles on its own
 * (cap, expiry, the current batch left alone), a property over any sequence of holds and releases,
 * and the relay's calls through a recording SQS client (no SQS at all) and a real webhook.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { type HeldRecord, HeldRecords, RELEASE_MARGIN_MS } from '../../lambda/held-records';
import { returnVisibility } from '../../lambda/return-visibility';
import { MAX_VISIBILITY_SECONDS } from '../../lambda/aws-limits';
import { RECEIVE_TO_INVOKE_SLACK_SECONDS } from '../../lambda/retry-timing';
import { CRASH_RESERVE_RECEIVES } from '../../lambda/retry-window';
import { webhookForFile } from '../support/fixtures';
import { batchOf, handlesSetTo, range, recordingSqs, recordOf } from '../support/recording-sqs';
import { capturedTelemetry, invoke, relayFor } from '../support/relay';

const QUEUE_A = 'arn:aws:sqs:us-east-1:000000000000:orders';
const QUEUE_B = 'arn:aws:sqs:us-east-1:000000000000:invoices';

const held = (
  messageId: string,
  untilMs: number,
  queueArn = QUEUE_A,
  receiptHandle = `h-${messageId}`,
  earliestMs = Number.NEGATIVE_INFINITY,
): HeldRecord => ({
  queueArn,
  messageId,
  receiptHandle,
  untilMs,
  earliestMs,
});

/** The handles `takeReleasable` hands back, per queue ARN, each change checked to be a release (visibility 0). */
function released(records: HeldRecords, nowMs: number, current: ReadonlySet<string> = new Set()): Record<string, string[]> {
  const byQueue: Record<string, string[]> = {};
  for (const [queueArn, changes] of records.takeReleasable(nowMs, current)) {
    for (const change of changes) expect(change.visibilitySeconds).toBe(0);
    byQueue[queueArn] = changes.map((change) => change.receiptHandle);
  }
  return byQueue;
}

describe('HeldRecords', () => {
  test('releases every live hold once, grouped by queue, then nothing', () => {
    const records = new HeldRecords();
    records.remember([held('a', 60_000), held('b', 60_000, QUEUE_B), held('c', 60_000)], 0);
    expect(released(records, 1_000)).toEqual({ [QUEUE_A]: ['h-a', 'h-c'], [QUEUE_B]: ['h-b'] });
    expect(records.size).toBe(0);
    expect(released(records, 1_000)).toEqual({});
  });

  test('a hold that has run out, or is within the margin of it, is forgotten, not released', () => {
    const records = new HeldRecords();
    records.remember([held('gone', 10_000), held('ending', 10_000 + RELEASE_MARGIN_MS), held('live', 10_001 + RELEASE_MARGIN_MS)], 0);
    expect(released(records, 10_000)).toEqual({ [QUEUE_A]: ['h-live'] });
    records.remember([held('old', 5_000)], 0);
    records.remember([held('new', 60_000)], 5_000); // remembering sweeps what has run out
    expect(records.size).toBe(1);
  });

  test("the current batch's messages are never released", () => {
    const records = new HeldRecords();
    records.remember([held('a', 60_000), held('b', 60_000)], 0);
    expect(released(records, 0, new Set(['b']))).toEqual({ [QUEUE_A]: ['h-a'] });
  });

  test('a message held again replaces its older handle', () => {
    const records = new HeldRecords();
    records.remember([held('a', 60_000, QUEUE_A, 'first')], 0);
    records.remember([held('a', 90_000, QUEUE_A, 'second')], 30_000);
    expect(released(records, 30_000)).toEqual({ [QUEUE_A]: ['second'] });
  });

  test("a release keeps the retry window's late spacing: to what is left of it, or none when the hold ends no later", () => {
    const records = new HeldRecords();
    records.remember(
      [
        held('spare', 60_000, QUEUE_A, 'h-spare', 0), // receives to spare: no spacing
        held('spaced', 60_000, QUEUE_A, 'h-spaced', 25_500), // its spacing ends 25.5 s after the hold began
        held('last', 60_000, QUEUE_A, 'h-last', 60_000), // the spacing is the whole hold: its last receive
        held('nearly', 60_000, QUEUE_A, 'h-nearly', 59_500 - RELEASE_MARGIN_MS), // nothing worth shortening
      ],
      0,
    );
    const changes = records.takeReleasable(10_000, new Set()).get(QUEUE_A) ?? [];
    expect(changes.map(({ receiptHandle, visibilitySeconds }) => [receiptHandle, visibilitySeconds])).toEqual([
      ['h-spare', 0],
      ['h-spaced', 16], // 15.5 s left of it, rounded up: never short of the spacing
    ]);
  });

  test('past the cap the oldest are forgotten', () => {
    const records = new HeldRecords(3);
    records.remember([held('1', 60_000), held('2', 60_000)], 0);
    records.remember([held('3', 60_000), held('4', 60_000), held('5', 60_000)], 0);
    expect(records.size).toBe(3);
    expect(released(records, 0)).toEqual({ [QUEUE_A]: ['h-3', 'h-4', 'h-5'] });
  });

  test('property: whatever holds and releases, only live, latest, remembered handles outside the batch are released, once, never sooner than their spacing; never past the cap', () => {
    const CAP = 8;
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('hold' as const),
        holds: fc.array(
          fc.record({
            message: fc.integer({ min: 0, max: 15 }),
            queue: fc.constantFrom(QUEUE_A, QUEUE_B),
            seconds: fc.integer({ min: 0, max: 10 }),
            spacingSeconds: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 })),
          }),
          { maxLength: 6 },
        ),
      }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 6_000 }) }),
      fc.record({ kind: fc.constant('release' as const), current: fc.uniqueArray(fc.integer({ min: 0, max: 15 }), { maxLength: 4 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const records = new HeldRecords(CAP);
        let now = 0;
        let serial = 0;
        /** The model: each message's latest hold since the last release, and whether the cap may have dropped some. */
        let latest = new Map<string, HeldRecord>();
        let holdsSinceRelease = 0;
        const everReleased = new Set<string>();
        for (const s of steps) {
          if (s.kind === 'wait') now += s.ms;
          if (s.kind === 'hold') {
            const holds = s.holds.map((h) => {
              serial += 1;
              return held(`m${h.message}`, now + h.seconds * 1000, h.queue, `r${serial}`, now + h.spacingSeconds * 1000);
            });
            records.remember(holds, now);
            for (const h of holds) latest.set(h.messageId, h);
            holdsSinceRelease += holds.length;
          }
          if (s.kind === 'release') {
            const current = new Set(s.current.map((message) => `m${message}`));
            const changes = [...records.takeReleasable(now, current).values()].flat();
            const handles = changes.map((change) => change.receiptHandle);
            const byHandle = new Map([...latest.values()].map((h) => [h.receiptHandle, h]));
            // Released when the hold has more than the margin left, and the spacing ends sooner than that.
            const expected = [...latest.values()]
              .filter((h) => h.untilMs - now > RELEASE_MARGIN_MS && !current.has(h.messageId))
              .filter((h) => Math.max(0, h.earliestMs - now) < h.untilMs - now - RELEASE_MARGIN_MS - 1_000)
              .map((h) => h.receiptHandle);
            for (const { receiptHandle: handle, visibilitySeconds } of changes) {
              const hold = byHandle.get(handle);
              expect(hold, handle).toBeDefined();
              expect(current.has(hold?.messageId ?? '')).toBe(false);
              expect(visibilitySeconds * 1000).toBeGreaterThanOrEqual((hold?.earliestMs ?? 0) - now);
              expect(visibilitySeconds * 1000).toBeLessThan((hold?.untilMs ?? 0) - now - RELEASE_MARGIN_MS);
              expect(handles.filter((other) => other === handle)).toHaveLength(1);
              expect(everReleased.has(handle)).toBe(false);
              everReleased.add(handle);
            }
            // Without the cap's evictions, at least those (a spacing within a second of the hold's end may go either way).
            if (holdsSinceRelease <= CAP) for (const handle of expected) expect(handles).toContain(handle);
            latest = new Map();
            holdsSinceRelease = 0;
          }
          expect(records.size).toBeLessThanOrEqual(CAP);
        }
      }),
    );
  });
});

describe('a breaker that opens and closes again and again', () => {
  const LONGEST_PARK = MAX_VISIBILITY_SECONDS - RECEIVE_TO_INVOKE_SLACK_SECONDS;
  /**
   * One message held by an open breaker on every receive, and released when the breaker closes `closeAfter` seconds
   * later, from its first receive to its window's end: the receives it had before the window ended (or the backstop).
   */
  function receivesWhileFlapping(windowSeconds: number, maxReceiveCount: number, holdSeconds: number, closeAfter: number): number {
    const records = new HeldRecords();
    let at = 0;
    let receiveCount = 1;
    // Past the backstop SQS would have moved it: no need to follow it further.
    while (at < windowSeconds && receiveCount <= maxReceiveCount) {
      const window = { timeLeftSeconds: windowSeconds - at, receiveCount, maxReceiveCount };
      const decided = returnVisibility(
        { kind: 'held', delaySeconds: holdSeconds },
        { breakerHoldSeconds: holdSeconds, endpointHoldSeconds: 0, window, elapsedSeconds: 0 },
      );
      const visibility = decided.visibilitySeconds ?? 0;
      records.remember(
        [held('flapping', (at + visibility) * 1000, QUEUE_A, `r${receiveCount}`, (at + decided.releaseFloorSeconds) * 1000)],
        at * 1000,
      );
      const closedAt = at + Math.min(closeAfter, visibility);
      const [release] = records.takeReleasable(closedAt * 1000, new Set()).get(QUEUE_A) ?? [];
      at = release === undefined ? at + visibility : closedAt + release.visibilitySeconds;
      if (at < windowSeconds) receiveCount += 1;
    }
    return receiveCount;
  }

  test("property: each release keeps the window's spacing, so the receives kept for crashes are never spent", () => {
    fc.assert(
      fc.property(
        fc
          .tuple(fc.integer({ min: 60, max: 14 * 86_400 }), fc.integer({ min: 10, max: 1_000 }))
          .filter(([windowSeconds, max]) => windowSeconds <= (max - CRASH_RESERVE_RECEIVES - 1) * (LONGEST_PARK - 1)),
        fc.integer({ min: 1, max: 900 }),
        fc.double({ min: 0.5, max: 900, noNaN: true }),
        ([windowSeconds, max], holdSeconds, closeAfter) => {
          expect(receivesWhileFlapping(windowSeconds, max, holdSeconds, closeAfter)).toBeLessThan(max - CRASH_RESERVE_RECEIVES);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('example: the defaults (24 hours, 483 receives), the breaker closing 2 s after each 10-second hold', () => {
    expect(receivesWhileFlapping(86_400, 483, 10, 2)).toBeLessThan(483 - CRASH_RESERVE_RECEIVES);
  });
});

const webhook = await webhookForFile();

describe('the relay releases what the breaker held when it closes', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  // Pacing off: its clock is Date, which these tests move by hand.
  const SETTINGS = {
    MAX_CONCURRENCY: '1',
    OUTAGE_THRESHOLD: '2',
    OUTAGE_BACKOFF_SECONDS: '30',
    BACKOFF: 'fixed',
    BACKOFF_BASE_SECONDS: '5',
    PACING: 'false',
  };

  test("a later invocation whose probe succeeds sets exactly the earlier holds' handles to 0, per queue, ≤ 10 a call", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const startedAt = Date.now();
    const at = (seconds: number): void => void vi.setSystemTime(startedAt + seconds * 1000);
    const invalid = new Set<string>();
    const { sqs, visibilityCalls } = recordingSqs(invalid);
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...SETTINGS }, { sqs, logger: telemetry.logger, metrics: telemetry.metrics });
    webhook.respondWith(() => ({ status: 503 }));

    // t=0: two failures open the breaker; the rest of the batch is held 30 s (the two failed ones too).
    await invoke(handler, batchOf(range(0, 5).map((i) => recordOf(i, QUEUE_A, `a1-${i}`))));
    expect(webhook.requests).toHaveLength(2);
    // t=10: two batches, from two queues, all held until t=40.
    at(10);
    const heldA = range(5, 18).map((i) => recordOf(i, QUEUE_A, `a2-${i}`));
    const heldB = range(20, 24).map((i) => recordOf(i, QUEUE_B, `b-${i}`));
    expect((await invoke(handler, batchOf(heldA))).batchItemFailures).toHaveLength(13);
    expect((await invoke(handler, batchOf(heldB))).batchItemFailures).toHaveLength(4);
    expect(webhook.requests).toHaveLength(2);
    expect(handlesSetTo(visibilityCalls, 0)).toEqual({}); // nothing released while open

    // t=30.5: the probe goes out and succeeds. The t=0 holds are ending anyway; the t=10 ones are released,
    // but for message 5, which is in this batch again (under a new handle), and none of this batch's handles.
    at(30.5);
    webhook.respondWith(() => ({ status: 200 }));
    invalid.add('b-21'); // deleted meanwhile, say: SQS refuses its handle
    const current = [...range(30, 33).map((i) => recordOf(i, QUEUE_A, `a3-${i}`)), recordOf(5, QUEUE_A, 'a3-5-again')];
    const callsBefore = visibilityCalls.length;
    const response = await invoke(handler, batchOf(current));
    expect(response.batchItemFailures).toEqual([]); // the handle SQS refused fails nothing
    const releases = visibilityCalls.slice(callsBefore);
    expect(handlesSetTo(releases, 0)).toEqual({
      orders: range(6, 18)
        .map((i) => `a2-${i}`)
        .sort(),
      invoices: ['b-20', 'b-21', 'b-22', 'b-23'],
    });
    expect(
      releases.every((call) => (call.Entries ?? []).length <= 10 && call.Entries?.every((entry) => entry.VisibilityTimeout === 0)),
    ).toBe(true);
    expect(releases).toHaveLength(3); // 12 of orders in two calls, 4 of invoices in one
    expect(telemetry.lines.filter((line) => line.level === 'ERROR')).toEqual([]);
    expect(telemetry.lines.find((line) => line.message.includes('Held record not released'))).toMatchObject({ level: 'DEBUG' });
    expect(telemetry.lines.find((line) => line.message.includes('held by the circuit breaker released'))).toMatchObject({
      released: 15,
      notReleased: 1,
    });

    // Released once: the next invocation, the breaker still closed, releases nothing.
    await invoke(handler, batchOf([recordOf(40, QUEUE_A, 'a4-40')]));
    expect(visibilityCalls.slice(callsBefore + releases.length)).toEqual([]);
  });

  test("released handles keep their retry window's late spacing: one with receives to spare at once, one near the backstop no sooner than its spacing", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const startedAt = Date.now();
    const at = (seconds: number): void => void vi.setSystemTime(startedAt + seconds * 1000);
    const { sqs, visibilityCalls } = recordingSqs();
    // A backstop of 20: 3 kept for crashes, so a record on its 15th receive has 2 left to the relay.
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...SETTINGS, MAX_RECEIVE_COUNT: '20' }, { sqs });
    webhook.respondWith(() => ({ status: 503 }));
    await invoke(handler, batchOf(range(0, 2).map((i) => recordOf(i, QUEUE_A, `trip-${i}`))));
    expect(webhook.requests).toHaveLength(2); // open

    // t=10: 50 s left of a 24-hour window and 2 receives left: the spacing wants at least half of it, 25 s; the hold is 30 s.
    at(10);
    const windowMs = 24 * 3_600_000;
    const spare = recordOf(5, QUEUE_A, 'spare');
    const nearBackstop = recordOf(6, QUEUE_A, 'near-backstop', windowMs - 50_000, 15);
    await invoke(handler, batchOf([spare, nearBackstop]));
    const heldFor = Object.fromEntries(
      visibilityCalls.flatMap((call) => call.Entries ?? []).map((entry) => [entry.ReceiptHandle, entry.VisibilityTimeout]),
    );
    expect(heldFor).toMatchObject({ spare: 30, 'near-backstop': 30 });

    // t=30.5: the probe (a fresh record) closes the breaker; the held ones are released, each no sooner than its spacing.
    at(30.5);
    webhook.respondWith(() => ({ status: 200 }));
    const callsBefore = visibilityCalls.length;
    await invoke(handler, batchOf([recordOf(9, QUEUE_A, 'probe')]));
    const releases = visibilityCalls.slice(callsBefore).flatMap((call) => call.Entries ?? []);
    expect(Object.fromEntries(releases.map((entry) => [entry.ReceiptHandle, entry.VisibilityTimeout]))).toEqual({
      spare: 0,
      'near-backstop': 5, // its spacing ends at t=35: 4.5 s left, rounded up
    });
  });

  // The path beside the release: the breaker closes during the very batch it held records of, so they are never held.
  test('a record held in a batch during which the breaker closes again comes back at once (no release needed)', async () => {
    const { sqs, visibilityCalls } = recordingSqs();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, ...SETTINGS, MAX_CONCURRENCY: '3' }, { sqs });
    // Record 0 answers last, and normally: a request started before the breaker opened shows the webhook is up.
    webhook.respondWith((request) => (request.body.toString() === '0' ? { status: 200, delayMs: 300 } : { status: 503 }));
    const response = await invoke(handler, batchOf(range(0, 10).map((i) => recordOf(i, QUEUE_A, `h-${i}`))));
    const sent = new Set(webhook.requests.map((request) => `h-${request.body.toString()}`));
    expect(sent.size).toBeLessThan(10);
    const heldHandles = range(0, 10)
      .map((i) => `h-${i}`)
      .filter((handle) => !sent.has(handle));
    expect(response.batchItemFailures).toHaveLength(9);
    expect(handlesSetTo(visibilityCalls, 0)).toEqual({ orders: heldHandles.sort() });
  });
});
