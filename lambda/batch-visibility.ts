/**
 * The visibility of a batch's records going back to the queue (docs/contract.md, "The batch"): each record's as
 * return-visibility.ts decides it, set with visibility.ts; the breaker's holds remembered (held-records.ts) and
 * released once it closes.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSRecord } from 'aws-lambda';
import { receiveCountOf } from './batch';
import type { CircuitBreaker } from './breaker';
import type { RelayConfig } from './config';
import { Deadline } from './deadline';
import { type HeldRecord, HeldRecords, RELEASE_MARGIN_MS } from './held-records';
import type { Pacer } from './pacer';
import type { QueueDirectory } from './queues';
import { isFailure, type RecordOutcome } from './record-outcome';
import { type RecordInWindow, returnVisibility } from './return-visibility';
import { windowStartOf } from './retry-window';
import type { SqsGateway } from './sqs-gateway';
import { errorText } from './sqs-util';
import { type FailedVisibilityChange, type VisibilityChange, VisibilityUpdater } from './visibility';

/** What the batch's visibility changes did: those not made, the records on their last attempt, and each record's visibility. */
export interface VisibilityGiven {
  readonly failures: readonly FailedVisibilityChange[];
  readonly lastInWindow: ReadonlySet<string>;
  /** The visibility timeout (seconds) each record was handed back with, by message id. */
  readonly secondsById: ReadonlyMap<string, number>;
}

/** The batch's decided returns, before any is applied. */
interface DecidedReturns {
  readonly lastInWindow: Set<string>;
  readonly byQueue: Map<string, VisibilityChange[]>;
  readonly secondsById: Map<string, number>;
  /** The records given the breaker's hold, to be released when it closes. */
  readonly breakerHolds: HeldRecord[];
}

/** What {@link BatchVisibility} works with. */
export interface BatchVisibilityParts {
  readonly sqs: SqsGateway;
  readonly queues: QueueDirectory;
  readonly breaker: CircuitBreaker;
  readonly pacer: Pacer;
  readonly logger: Logger;
}

/** Sets the visibility of the records a batch hands back, and releases those the breaker held once it closes. */
export class BatchVisibility {
  /** The records the breaker held back in earlier batches, released when it closes. */
  private readonly heldByBreaker = new HeldRecords();

  constructor(
    private readonly config: Pick<RelayConfig, 'retryWindowSeconds' | 'maxReceiveCount'>,
    private readonly parts: BatchVisibilityParts,
  ) {}

  /**
   * Sets the visibility of every record going back to the queue, as return-visibility.ts decides it, and remembers
   * the breaker's holds, to be released when it closes.
   * Calls (and the queue URL lookups they need) still in flight at `sqsEnd` are abandoned: their
   * records are returned all the same and come back after the queue's default visibility timeout.
   */
  async update(
    records: readonly SQSRecord[],
    outcomes: readonly RecordOutcome[],
    startedAt: number,
    sqsEnd: Deadline,
  ): Promise<VisibilityGiven> {
    const now = Date.now();
    const { lastInWindow, byQueue, secondsById, breakerHolds } = this.decide(records, outcomes, now, (now - startedAt) / 1000);
    if (byQueue.size === 0) return { failures: [], lastInWindow, secondsById };
    const failures = await this.apply(byQueue, sqsEnd);
    if (breakerHolds.length > 0) {
      const unchanged = new Set(failures.map((failure) => failure.messageId));
      const held = breakerHolds.filter((hold) => !unchanged.has(hold.messageId));
      this.heldByBreaker.remember(held, now);
    }
    return { failures, lastInWindow, secondsById };
  }

  /** Each failed record's return, decided as of `now`, grouped by source queue. */
  private decide(records: readonly SQSRecord[], outcomes: readonly RecordOutcome[], now: number, elapsedSeconds: number): DecidedReturns {
    const { breaker } = this.parts;
    const breakerOpen = breaker.openSeconds(now) !== undefined;
    const countsReceives = this.config.retryWindowSeconds <= 0;
    const endpointHoldSeconds = this.parts.pacer.retryInSeconds();
    const decided: DecidedReturns = { lastInWindow: new Set(), byQueue: new Map(), secondsById: new Map(), breakerHolds: [] };
    records.forEach((record, index) => {
      const outcome = outcomes[index] as RecordOutcome;
      if (!isFailure(outcome)) return;
      const window = this.windowOf(record, now);
      const breakerHoldSeconds = breakerOpen ? breaker.recordHoldSeconds(now, receiveCountOf(record), countsReceives) : undefined;
      const given = returnVisibility(outcome, { breakerHoldSeconds, endpointHoldSeconds, window, elapsedSeconds });
      if (given.lastInWindow) decided.lastInWindow.add(record.messageId);
      const { visibilitySeconds } = given;
      if (visibilitySeconds === undefined) return;
      const { messageId, receiptHandle, eventSourceARN: queueArn } = record;
      const changes = decided.byQueue.get(queueArn) ?? [];
      changes.push({ messageId, receiptHandle, visibilitySeconds });
      decided.byQueue.set(queueArn, changes);
      decided.secondsById.set(messageId, visibilitySeconds);
      if (given.breakerHold) {
        decided.breakerHolds.push({
          queueArn,
          messageId,
          receiptHandle,
          untilMs: now + visibilitySeconds * 1000,
          earliestMs: now + given.releaseFloorSeconds * 1000,
        });
      }
    });
    return decided;
  }

  /** Where `record` stands in its retry window as of `now`; `undefined` with the window off. */
  private windowOf(record: SQSRecord, now: number): RecordInWindow | undefined {
    const windowSeconds = this.config.retryWindowSeconds;
    if (!(windowSeconds > 0)) return undefined;
    return {
      timeLeftSeconds: (windowStartOf(record, now) + windowSeconds * 1000 - now) / 1000,
      receiveCount: receiveCountOf(record),
      maxReceiveCount: this.config.maxReceiveCount,
    };
  }

  /**
   * Once the breaker is closed again, releases the records it held back in earlier batches (see held-records.ts), but
   * for `records`, the batch's own: their visibility set to 0 (or to what is left of their window's spacing), the
   * calls abandoned at `sqsEnd` or {@link RELEASE_MARGIN_MS} after they start. A handle SQS no longer takes (the
   * message deleted, or received again) is dropped: not the batch's error.
   */
  async releaseHeldOnceClosed(records: readonly SQSRecord[], sqsEnd: Deadline): Promise<void> {
    if (this.heldByBreaker.size === 0 || this.parts.breaker.openSeconds(Date.now()) !== undefined) return;
    const now = Date.now();
    const byQueue = this.heldByBreaker.takeReleasable(now, new Set(records.map((record) => record.messageId)));
    if (byQueue.size === 0) return;
    const failures = await this.apply(byQueue, new Deadline(Math.min(sqsEnd.at, now + RELEASE_MARGIN_MS)));
    for (const failure of failures) {
      this.parts.logger.debug('Held record not released; it comes back when its hold ends', {
        messageId: failure.messageId,
        error: failure.reason,
      });
    }
    const released = [...byQueue.values()].reduce((count, changes) => count + changes.length, 0) - failures.length;
    this.parts.logger.info('Records held by the circuit breaker released', { released, notReleased: failures.length });
  }

  /**
   * Applies visibility changes, per source queue ARN, and resolves (never rejects) with those not made. Calls and
   * queue URL lookups still in flight at `deadline` are abandoned.
   */
  private async apply(byQueue: ReadonlyMap<string, readonly VisibilityChange[]>, deadline: Deadline): Promise<FailedVisibilityChange[]> {
    const queues = this.parts.queues.until(deadline.signal);
    const visibility = new VisibilityUpdater(this.parts.sqs.until(deadline.signal));
    const results = await Promise.all(
      [...byQueue].map(async ([queueArn, changes]) => {
        try {
          return await visibility.apply(await queues.urlOf(queueArn), changes);
        } catch (error) {
          const reason = `queue URL lookup failed: ${errorText(error)}`;
          return changes.map((change) => ({ messageId: change.messageId, reason }));
        }
      }),
    );
    return results.flat();
  }
}
