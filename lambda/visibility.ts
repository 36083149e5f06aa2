/**
 * Visibility updates (docs/contract.md, "The batch"): each retried message's visibility timeout set to its delay
 * with `ChangeMessageVisibilityBatch`, at most 10 entries a call, all calls in parallel.
 */
import type { SqsGateway } from './sqs-gateway';
import { batchEntryId, sendInBatches } from './sqs-util';

/** One message whose visibility is to change. */
export interface VisibilityChange {
  /** The record's message id, reported back on failure. */
  readonly messageId: string;
  readonly receiptHandle: string;
  /** Already clamped to what SQS accepts. */
  readonly visibilitySeconds: number;
}

/** A change SQS did not make, and why. */
export interface FailedVisibilityChange {
  readonly messageId: string;
  readonly reason: string;
}

/** Sends visibility changes for one queue. */
export class VisibilityUpdater {
  constructor(private readonly sqs: SqsGateway) {}

  /**
   * Applies `changes` to the queue at `queueUrl`. Resolves (never rejects) with the changes
   * that did not happen: failed entries and every entry of a call that failed as a whole.
   */
  async apply(queueUrl: string, changes: readonly VisibilityChange[]): Promise<FailedVisibilityChange[]> {
    const failed = await sendInBatches(changes, (chunk) =>
      this.sqs.changeMessageVisibilityBatch({
        QueueUrl: queueUrl,
        Entries: chunk.map((change, index) => ({
          Id: batchEntryId(index),
          ReceiptHandle: change.receiptHandle,
          VisibilityTimeout: change.visibilitySeconds,
        })),
      }),
    );
    return failed.map(({ item, reason }) => ({ messageId: item.messageId, reason }));
  }
}
