/**
 * Visibility updates (SPEC §3): each retried message's visibility timeout set to its delay
 * with `ChangeMessageVisibilityBatch`, at most 10 entries a call, all calls in parallel.
 */
import { MAX_BATCH_CALL_ENTRIES } from './aws-limits';
import type { SqsGateway } from './sqs-gateway';

/** One message whose visibility is to change. */
export interface VisibilityChange {
  /** The record's message id, used as the batch entry id and reported back on failure. */
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

// Batch entry ids allow only [A-Za-z0-9_-] up to 80 characters; SQS message ids are UUIDs, but
// a record from elsewhere must not make the whole call fail, so ids are positional.
const entryId = (index: number): string => `m${index}`;

/** Sends visibility changes for one queue. */
export class VisibilityUpdater {
  constructor(private readonly sqs: SqsGateway) {}

  /**
   * Applies `changes` to the queue at `queueUrl`. Resolves (never rejects) with the changes
   * that did not happen: failed entries and every entry of a call that failed as a whole.
   */
  async apply(queueUrl: string, changes: readonly VisibilityChange[]): Promise<FailedVisibilityChange[]> {
    const calls: Promise<FailedVisibilityChange[]>[] = [];
    for (let start = 0; start < changes.length; start += MAX_BATCH_CALL_ENTRIES) {
      calls.push(this.applyChunk(queueUrl, changes.slice(start, start + MAX_BATCH_CALL_ENTRIES)));
    }
    return (await Promise.all(calls)).flat();
  }

  private async applyChunk(queueUrl: string, chunk: readonly VisibilityChange[]): Promise<FailedVisibilityChange[]> {
    try {
      const { Failed } = await this.sqs.changeMessageVisibilityBatch({
        QueueUrl: queueUrl,
        Entries: chunk.map((change, index) => ({
          Id: entryId(index),
          ReceiptHandle: change.receiptHandle,
          VisibilityTimeout: change.visibilitySeconds,
        })),
      });
      return (Failed ?? []).map((failure) => ({
        messageId: chunk[Number(failure.Id?.slice(1))]?.messageId ?? String(failure.Id),
        reason: `${failure.Code ?? 'error'}: ${failure.Message ?? 'no message'}`,
      }));
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return chunk.map((change) => ({ messageId: change.messageId, reason }));
    }
  }
}
