/**
 * The batch loop (docs/contract.md, "The batch"): every record of a batch attempted at most once, at most
 * `concurrency` at a time, FIFO message groups one record at a time and in order, and nothing
 * started once the function's time is nearly up.
 */
import type { SQSRecord } from 'aws-lambda';
import { FIFO_SUFFIX } from './sqs-util';

/** Why a record was handed back without being sent (`paced`: the pace left no time to send it in this invocation). */
export type NotAttemptedReason = 'deadline' | 'fifo-group-blocked' | 'paced';

/** A record that was not sent at all; the batch loop produces these itself. */
export interface NotAttempted {
  readonly kind: 'not-attempted';
  readonly reason: NotAttemptedReason;
  /** For `paced`: seconds the pace asks it to stay away (what is left of a hold, or of its key's wait). */
  readonly delaySeconds?: number;
}

/** Options of {@link runBatch}. */
export interface BatchLoopOptions<Outcome> {
  /** Records in flight at once, at most. */
  readonly concurrency: number;
  /**
   * Whether an outcome leaves its FIFO group blocked: the group's later records must not be
   * sent once an earlier one was not acknowledged, or they would overtake it.
   */
  readonly blocksGroup: (outcome: Outcome) => boolean;
  /** Asked before each record: false once too little time is left to start a request. */
  readonly canStart: () => boolean;
}

/** True for a record from a FIFO queue (whose name, and so ARN, ends in `.fifo`). */
export function isFifoRecord(record: Pick<SQSRecord, 'eventSourceARN'>): boolean {
  return record.eventSourceARN?.endsWith(FIFO_SUFFIX) === true;
}

/** The record's receive count (`ApproximateReceiveCount`), this receive included: 1 when the event lacks it. */
export function receiveCountOf(record: Pick<SQSRecord, 'attributes'>): number {
  return Number(record.attributes?.ApproximateReceiveCount) || 1;
}

/**
 * Splits records into lanes that must each run in order: one lane per FIFO message group (in
 * the batch's order), and a lane of one for every other record. A standard queue's message
 * group (a "fair queue" tenant) promises no order, so it gets no lane of its own.
 */
export function lanesOf(records: readonly SQSRecord[]): number[][] {
  const lanes: number[][] = [];
  const byGroup = new Map<string, number[]>();
  records.forEach((record, index) => {
    const group = isFifoRecord(record) ? record.attributes?.MessageGroupId : undefined;
    if (group === undefined) {
      lanes.push([index]);
      return;
    }
    let lane = byGroup.get(group);
    if (lane === undefined) {
      lane = [];
      byGroup.set(group, lane);
      lanes.push(lane);
    }
    lane.push(index);
  });
  return lanes;
}

/**
 * Runs `attempt` over `records` and returns one outcome per record, in the records' order.
 * `attempt` should not throw; if it does, the error propagates to the caller, which decides.
 * A fixed pool of `concurrency` workers takes lanes from a shared cursor, so a batch of 10,000
 * records never holds more than `concurrency` requests or promises in flight.
 */
export async function runBatch<Outcome>(
  records: readonly SQSRecord[],
  options: BatchLoopOptions<Outcome>,
  attempt: (record: SQSRecord) => Promise<Outcome>,
): Promise<(Outcome | NotAttempted)[]> {
  const outcomes = new Array<Outcome | NotAttempted>(records.length);
  // Without a FIFO record every lane is one record, in order: no need to build 10,000 of them.
  const lanes = records.some(isFifoRecord) ? lanesOf(records) : undefined;
  const laneCount = lanes === undefined ? records.length : lanes.length;
  let nextLane = 0;
  const worker = async (): Promise<void> => {
    while (nextLane < laneCount) {
      const laneIndex = nextLane++;
      // Without lanes, lane number i is record i alone: no array per record.
      const lane = lanes?.[laneIndex];
      const laneLength = lanes === undefined ? 1 : (lane?.length ?? 0);
      // Once set, the rest of the lane is not sent, for this reason.
      let stopped: NotAttemptedReason | undefined;
      for (let position = 0; position < laneLength; position += 1) {
        const index = lane === undefined ? laneIndex : (lane[position] as number);
        const record = records[index] as SQSRecord;
        if (stopped === undefined && !options.canStart()) stopped = 'deadline';
        if (stopped !== undefined) {
          outcomes[index] = { kind: 'not-attempted', reason: stopped };
          continue;
        }
        const outcome = await attempt(record);
        outcomes[index] = outcome;
        if (options.blocksGroup(outcome)) stopped = 'fifo-group-blocked';
      }
    }
  };
  const workers = Math.max(1, Math.min(options.concurrency, laneCount));
  await Promise.all(Array.from({ length: workers }, worker));
  return outcomes;
}
