/**
 * Unit tests of lambda/batch.ts: the batch loop of docs/contract.md, "The batch" (bounded concurrency, every record
 * once, FIFO groups one at a time and in order, nothing started past the deadline), driven by a
 * fake asynchronous attempt that records what ran when.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { type BatchLoopOptions, lanesOf, type NotAttempted, runBatch } from '../../lambda/batch';
import { sqsRecord as syntheticRecord } from '../../testkit/records';

/** A record of a standard queue (`group` undefined) or of a FIFO queue's message group. */
function sqsRecord(id: string, group?: string): SQSRecord {
  const fifo = group !== undefined;
  return syntheticRecord(0, {
    messageId: id,
    receiptHandle: `handle-${id}`,
    body: `body of ${id}`,
    attributes: fifo
      ? { MessageGroupId: group, SequenceNumber: `1884949646046769${id.replace(/\D/g, '').padStart(4, '0')}`, MessageDeduplicationId: id }
      : {},
    eventSourceARN: fifo ? 'arn:aws:sqs:us-east-1:123456789012:q.fifo' : 'arn:aws:sqs:us-east-1:123456789012:q',
  });
}

/** Records from a compact description: `'A'` is a record of group A, `'-'` one without a group. */
const recordsOf = (groups: readonly (string | undefined)[]): SQSRecord[] => groups.map((group, index) => sqsRecord(`m${index}`, group));
const records = (spec: string): SQSRecord[] => recordsOf([...spec].map((c) => (c === '-' ? undefined : c)));

type Outcome = { readonly kind: 'ok' | 'failed'; readonly id: string };

/**
 * A fake attempt that waits a few macrotask turns (so attempts overlap), records the order in
 * which records started and how many were in flight, overall and per group.
 */
function fakeAttempt(options: { fails?: (record: SQSRecord) => boolean; turns?: (record: SQSRecord) => number } = {}) {
  const started: string[] = [];
  const inFlightGroups = new Map<string, number>();
  const state = { inFlight: 0, maxInFlight: 0, maxPerGroup: 0 };
  const attempt = async (record: SQSRecord): Promise<Outcome> => {
    started.push(record.messageId);
    state.inFlight += 1;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    const group = record.attributes.MessageGroupId;
    if (group !== undefined) {
      const now = (inFlightGroups.get(group) ?? 0) + 1;
      inFlightGroups.set(group, now);
      state.maxPerGroup = Math.max(state.maxPerGroup, now);
    }
    for (let turn = options.turns?.(record) ?? 1; turn > 0; turn -= 1) await nextMacrotask();
    state.inFlight -= 1;
    if (group !== undefined) inFlightGroups.set(group, (inFlightGroups.get(group) ?? 1) - 1);
    return { kind: options.fails?.(record) ? 'failed' : 'ok', id: record.messageId };
  };
  return { attempt, started, state };
}

const options = (concurrency: number, overrides: Partial<BatchLoopOptions<Outcome>> = {}): BatchLoopOptions<Outcome> => ({
  concurrency,
  blocksGroup: (outcome) => outcome.kind === 'failed',
  canStart: () => true,
  ...overrides,
});

const blocked: NotAttempted = { kind: 'not-attempted', reason: 'fifo-group-blocked' };
const deadline: NotAttempted = { kind: 'not-attempted', reason: 'deadline' };
const ok = (id: string): Outcome => ({ kind: 'ok', id });
const failed = (id: string): Outcome => ({ kind: 'failed', id });

describe('lanesOf', () => {
  test('one lane per record without a group, in batch order', () => {
    expect(lanesOf(records('----'))).toEqual([[0], [1], [2], [3]]);
  });

  test('one lane per message group, in the order of first appearance, records in batch order', () => {
    expect(lanesOf(records('AB-AAC-B'))).toEqual([[0, 3, 4], [1, 7], [2], [5], [6]]);
  });

  test('group ids are compared exactly', () => {
    expect(lanesOf(recordsOf(['a', 'A', 'a ', 'a']))).toEqual([[0, 3], [1], [2]]);
  });

  test('an empty batch has no lanes', () => {
    expect(lanesOf([])).toEqual([]);
  });
});

describe('runBatch: standard queues', () => {
  test('every record attempted exactly once, outcomes in record order', async () => {
    const batch = records('-'.repeat(25));
    // later records finish first, so completion order differs from record order
    const fake = fakeAttempt({ turns: (record) => 30 - Number(record.messageId.slice(1)) });
    const outcomes = await runBatch(batch, options(5), fake.attempt);
    expect(outcomes).toEqual(batch.map((record) => ok(record.messageId)));
    expect([...fake.started].sort()).toEqual(batch.map((record) => record.messageId).sort());
  });

  test.each([1, 2, 3, 10])('never more than concurrency=%d attempts in flight, and the pool is used', async (concurrency) => {
    const fake = fakeAttempt({ turns: (record) => 1 + (Number(record.messageId.slice(1)) % 4) });
    await runBatch(records('-'.repeat(40)), options(concurrency), fake.attempt);
    expect(fake.state.maxInFlight).toBe(concurrency);
  });

  test('concurrency 1 attempts strictly one after another, in record order', async () => {
    const batch = records('-'.repeat(8));
    const fake = fakeAttempt();
    await runBatch(batch, options(1), fake.attempt);
    expect(fake.state.maxInFlight).toBe(1);
    expect(fake.started).toEqual(batch.map((record) => record.messageId));
  });

  test('concurrency above the batch size is fine', async () => {
    const fake = fakeAttempt();
    const outcomes = await runBatch(records('---'), options(1000), fake.attempt);
    expect(outcomes).toEqual([ok('m0'), ok('m1'), ok('m2')]);
    expect(fake.state.maxInFlight).toBe(3);
  });

  test('a failure in a standard queue blocks nothing', async () => {
    const fake = fakeAttempt({ fails: (record) => record.messageId === 'm0' });
    const outcomes = await runBatch(records('---'), options(1), fake.attempt);
    expect(outcomes).toEqual([failed('m0'), ok('m1'), ok('m2')]);
  });

  test('an empty batch gives no outcomes and no attempts', async () => {
    const fake = fakeAttempt();
    expect(await runBatch([], options(10), fake.attempt)).toEqual([]);
    expect(fake.started).toEqual([]);
  });

  test('an attempt that throws rejects the batch (the caller decides)', async () => {
    const attempt = async (record: SQSRecord): Promise<Outcome> => {
      await nextMacrotask();
      if (record.messageId === 'm1') throw new Error('attempt exploded');
      return ok(record.messageId);
    };
    await expect(runBatch(records('---'), options(2), attempt)).rejects.toThrow('attempt exploded');
  });

  test('a batch of 10,000 records with concurrency 10', async () => {
    const batch = records('-'.repeat(10_000));
    const fake = fakeAttempt({ turns: (record) => Number(record.messageId.slice(1)) % 3 });
    const outcomes = await runBatch(batch, options(10), fake.attempt);
    expect(fake.state.maxInFlight).toBe(10);
    expect(fake.started).toHaveLength(10_000);
    expect(new Set(fake.started).size).toBe(10_000);
    expect(outcomes).toHaveLength(10_000);
    expect(outcomes).toEqual(outcomes.map((_, index) => ok(`m${index}`)));
  });

  test('a FIFO batch of 10,000 records in 50 groups with concurrency 10', async () => {
    const batch = recordsOf(Array.from({ length: 10_000 }, (_, index) => `g${(index * 7) % 50}`));
    const fake = fakeAttempt({ turns: (record) => Number(record.messageId.slice(1)) % 2 });
    const outcomes = await runBatch(batch, options(10), fake.attempt);
    expect(fake.state.maxInFlight).toBe(10);
    expect(fake.state.maxPerGroup).toBe(1);
    expect(outcomes.every((outcome, index) => outcome.kind === 'ok' && outcome.id === `m${index}`)).toBe(true);
    const position = new Map(fake.started.map((id, order) => [id, order]));
    for (const lane of lanesOf(batch)) {
      const orders = lane.map((index) => position.get(`m${index}`) as number);
      expect(orders).toEqual([...orders].sort((a, b) => a - b));
    }
  });
});

describe('runBatch: FIFO message groups', () => {
  test('records of one group go one at a time and in batch order, groups in parallel', async () => {
    const batch = records('ABABABAB');
    const fake = fakeAttempt({ turns: (record) => (record.attributes.MessageGroupId === 'A' ? 3 : 1) });
    const outcomes = await runBatch(batch, options(10), fake.attempt);
    expect(outcomes.every((outcome) => outcome.kind === 'ok')).toBe(true);
    expect(fake.state.maxPerGroup).toBe(1);
    expect(fake.state.maxInFlight).toBe(2);
    expect(fake.started.filter((id) => Number(id.slice(1)) % 2 === 0)).toEqual(['m0', 'm2', 'm4', 'm6']);
    expect(fake.started.filter((id) => Number(id.slice(1)) % 2 === 1)).toEqual(['m1', 'm3', 'm5', 'm7']);
  });

  test('after a failure the later records of that group are not sent; other groups go on', async () => {
    // A: m0 ok, m2 fails, m4 and m6 blocked; B: all four delivered; m8 (no group) delivered
    const batch = records('ABABABAB-');
    const fake = fakeAttempt({ fails: (record) => record.messageId === 'm2' });
    const outcomes = await runBatch(batch, options(3), fake.attempt);
    expect(outcomes).toEqual([ok('m0'), ok('m1'), failed('m2'), ok('m3'), blocked, ok('m5'), blocked, ok('m7'), ok('m8')]);
    expect(fake.started).not.toContain('m4');
    expect(fake.started).not.toContain('m6');
  });

  test('a failure on the first record blocks its whole group', async () => {
    const fake = fakeAttempt({ fails: (record) => record.messageId === 'm0' });
    expect(await runBatch(records('AAA'), options(10), fake.attempt)).toEqual([failed('m0'), blocked, blocked]);
    expect(fake.started).toEqual(['m0']);
  });

  test('whether an outcome blocks is the caller’s decision', async () => {
    const fake = fakeAttempt({ fails: () => true });
    const outcomes = await runBatch(records('AA'), options(10, { blocksGroup: () => false }), fake.attempt);
    expect(outcomes).toEqual([failed('m0'), failed('m1')]);
  });

  // DOUBT in lambda/batch.ts, lanesOf: `record.attributes?.MessageGroupId`:
  // lanes are keyed on the presence of MessageGroupId, not on the queue being FIFO. Since 2025
  // *standard* queues accept a MessageGroupId too ("fair queues", a tenant id); such records carry
  // the attribute but have no ordering guarantee to protect. They are serialized per tenant, and
  // after one failure the tenant's later records in the batch are handed back unsent
  // ('fifo-group-blocked'): each such return still counts as a receive, pushing a message that was
  // never attempted toward maxReceiveCount and the DLQ. docs/contract.md, "The batch" asks for group ordering on FIFO
  // queues only. (Checking eventSourceARN for ".fifo" would fix it.)
  test('DOUBT: a standard (fair) queue with MessageGroupId is not blocked by an earlier failure', async () => {
    const standard = (id: string): SQSRecord => ({ ...sqsRecord(id, 'tenant-1'), eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:q' });
    const fake = fakeAttempt({ fails: (record) => record.messageId === 'm0' });
    const outcomes = await runBatch([standard('m0'), standard('m1')], options(10), fake.attempt);
    expect(outcomes).toEqual([failed('m0'), ok('m1')]);
  });

  test('a FIFO batch with concurrency 1 keeps the batch order overall', async () => {
    const batch = records('ABCABC');
    const fake = fakeAttempt();
    await runBatch(batch, options(1), fake.attempt);
    // lanes run one after another: all of A, then B, then C
    expect(fake.started).toEqual(['m0', 'm3', 'm1', 'm4', 'm2', 'm5']);
  });
});

describe('runBatch: the deadline', () => {
  test('canStart false from the start: nothing is attempted, every record is a deadline outcome', async () => {
    const fake = fakeAttempt();
    const outcomes = await runBatch(records('-----'), options(2, { canStart: () => false }), fake.attempt);
    expect(outcomes).toEqual([deadline, deadline, deadline, deadline, deadline]);
    expect(fake.started).toEqual([]);
  });

  test('once canStart turns false no further attempt starts; the rest are deadline outcomes', async () => {
    let starts = 0;
    const fake = fakeAttempt();
    const outcomes = await runBatch(
      records('-'.repeat(10)),
      options(1, {
        canStart: () => {
          starts += 1;
          return starts <= 4;
        },
      }),
      fake.attempt,
    );
    expect(fake.started).toEqual(['m0', 'm1', 'm2', 'm3']);
    expect(outcomes.slice(0, 4)).toEqual([ok('m0'), ok('m1'), ok('m2'), ok('m3')]);
    expect(outcomes.slice(4)).toEqual(Array.from({ length: 6 }, () => deadline));
  });

  test('canStart is asked before every record', async () => {
    let asked = 0;
    await runBatch(
      records('-A-AB'),
      options(2, {
        canStart: () => {
          asked += 1;
          return true;
        },
      }),
      fakeAttempt().attempt,
    );
    expect(asked).toBe(5);
  });

  test('in a FIFO group, the deadline leaves the rest of the group unsent', async () => {
    let starts = 0;
    const fake = fakeAttempt();
    const outcomes = await runBatch(
      records('AAAA'),
      options(1, {
        canStart: () => {
          starts += 1;
          return starts <= 1;
        },
      }),
      fake.attempt,
    );
    expect(fake.started).toEqual(['m0']);
    expect(outcomes[0]).toEqual(ok('m0'));
    expect(outcomes[1]).toEqual(deadline);
    // Not sent either way; runBatch labels them as blocked by the group rather than by the deadline.
    for (const outcome of outcomes.slice(2)) expect(outcome).toMatchObject({ kind: 'not-attempted' });
  });
});

describe('property: random groups, failures, timings and concurrency', () => {
  test('FIFO order and blocking hold, every record gets exactly one outcome, concurrency is respected', async () => {
    const spec = fc.array(
      fc.record({
        group: fc.option(fc.constantFrom('A', 'B', 'C', 'D'), { nil: undefined }),
        fails: fc.boolean(),
        turns: fc.integer({ min: 0, max: 3 }),
      }),
      { maxLength: 30 },
    );
    await fc.assert(
      fc.asyncProperty(spec, fc.integer({ min: 1, max: 6 }), async (items, concurrency) => {
        const batch = recordsOf(items.map((item) => item.group));
        const itemOf = (record: SQSRecord) => items[Number(record.messageId.slice(1))] as (typeof items)[number];
        const fake = fakeAttempt({ fails: (record) => itemOf(record).fails, turns: (record) => itemOf(record).turns });
        const outcomes = await runBatch(batch, options(concurrency), fake.attempt);

        expect(outcomes).toHaveLength(batch.length);
        expect(new Set(fake.started).size).toBe(fake.started.length); // at most once each
        expect(fake.state.maxInFlight).toBeLessThanOrEqual(concurrency);
        expect(fake.state.maxPerGroup).toBeLessThanOrEqual(1);

        const startOrder = new Map(fake.started.map((id, order) => [id, order]));
        const groupBlocked = new Set<string>();
        const lastStartInGroup = new Map<string, number>();
        items.forEach((item, index) => {
          const id = `m${index}`;
          const outcome = outcomes[index];
          if (item.group === undefined) {
            expect(outcome).toEqual({ kind: item.fails ? 'failed' : 'ok', id });
            return;
          }
          if (groupBlocked.has(item.group)) {
            // never attempted after an earlier record of its group got a blocking outcome
            expect(startOrder.has(id)).toBe(false);
            expect(outcome).toEqual(blocked);
            return;
          }
          expect(outcome).toEqual({ kind: item.fails ? 'failed' : 'ok', id });
          // attempts within a group follow the batch order
          const order = startOrder.get(id) as number;
          expect(order).toBeGreaterThan(lastStartInGroup.get(item.group) ?? -1);
          lastStartInGroup.set(item.group, order);
          if (item.fails) groupBlocked.add(item.group);
        });
      }),
      { numRuns: 200 },
    );
  });
});
