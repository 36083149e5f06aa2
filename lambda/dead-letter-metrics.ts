/**
 * The `cause` dimension of `DeadLettered`: per batch, how many records went, or go next, to the
 * dead-letter queue, by cause (`dead-letter-causes.ts`), published beside the `service`-only total.
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { CAUSE_DIMENSION, DEAD_LETTER_CAUSES, type DeadLetterCauseName } from './dead-letter-causes';
import type { RecordOutcome } from './record-outcome';

/**
 * How many of a batch's records went, or go next, to the DLQ, by cause: those the relay
 * dead-lettered (their outcome says why), and those handed back on their last receive, which SQS
 * moves at the backstop when it is next received. Invocations that crash or time out hand nothing
 * back and are not counted: the DLQ's depth counts them.
 */
export function deadLettersByCause(
  records: readonly Pick<SQSRecord, 'attributes'>[],
  outcomes: readonly RecordOutcome[],
  maxReceiveCount: number,
): Map<DeadLetterCauseName, number> {
  const counts = new Map<DeadLetterCauseName, number>();
  const add = (cause: DeadLetterCauseName): void => void counts.set(cause, (counts.get(cause) ?? 0) + 1);
  outcomes.forEach((outcome, index) => {
    if (outcome.kind === 'dead-lettered') add(outcome.cause);
    else if (outcome.kind !== 'delivered' && Number(records[index]?.attributes?.ApproximateReceiveCount) >= maxReceiveCount)
      add(DEAD_LETTER_CAUSES.backstop);
  });
  return counts;
}

/**
 * Publishes `DeadLettered` with the dimensions `service` and `cause`, one metric line per cause
 * that occurred (none for a batch with no dead letter). The `service`-only `DeadLettered` of the
 * batch's own metric line stays as it is: the alarms and graphs that read it are unchanged.
 * @param metricName `METRIC_NAMES.deadLettered`
 */
export function publishDeadLettersByCause(metrics: Metrics, metricName: string, counts: ReadonlyMap<DeadLetterCauseName, number>): void {
  for (const [cause, count] of counts) {
    // A single-metric instance publishes at once, with the relay's `service` and this `cause`.
    const single = metrics.singleMetric();
    single.addDimension(CAUSE_DIMENSION, cause);
    single.addMetric(metricName, 'Count', count);
  }
}
