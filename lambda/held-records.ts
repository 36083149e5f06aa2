/**
 * What this container's circuit breaker holds back (docs/contract.md, "Outages"): the receipt handles of the records
 * given a breaker-hold visibility, so that when the breaker closes they come back at once (or as soon as their retry
 * window's spacing allows) instead of staying invisible until their hold runs out.
 *
 * A handle is released only while its hold is certainly still in force: the message is then invisible, so no one
 * else can have received it, and making it visible again shortens a wait and nothing more. A hold about to run
 * out is left to do so ({@link RELEASE_MARGIN_MS}).
 */
import type { VisibilityChange } from './visibility';

/** The most handles remembered; past it the oldest are forgotten (their records come back when their hold ends). */
export const HELD_RECORDS_CAP = 10_000;

/**
 * A hold with less than this left is not released, and a release still in flight this long after it started is
 * abandoned: so that no release is still on its way once a hold it names has run out and the message may have gone
 * to someone else.
 */
export const RELEASE_MARGIN_MS = 1_000;

/** One record given a breaker-hold visibility. */
export interface HeldRecord {
  /** The source queue's ARN (the record's `eventSourceARN`). */
  readonly queueArn: string;
  readonly messageId: string;
  readonly receiptHandle: string;
  /** When the hold runs out at the earliest, ms since the epoch: measured from before the visibility call. */
  readonly untilMs: number;
  /**
   * The earliest a release may bring it back, ms since the epoch: the retry window's late spacing, which a release
   * must keep as any return does (or each open and close of the breaker would spend one of the receives kept for
   * crashes). At or before the hold itself for most records; `untilMs` or later for those the spacing holds anyway.
   */
  readonly earliestMs: number;
}

/** The records a container holds back, most recent last, at most {@link HELD_RECORDS_CAP}. */
export class HeldRecords {
  /** By message id: a record held again replaces its older handle. Insertion order is the age. */
  private readonly byMessageId = new Map<string, HeldRecord>();

  constructor(private readonly cap: number = HELD_RECORDS_CAP) {}

  /** How many records are remembered. */
  get size(): number {
    return this.byMessageId.size;
  }

  /** Remembers a batch's holds; forgets the holds that have run out, then the oldest beyond the cap. */
  remember(holds: Iterable<HeldRecord>, nowMs: number): void {
    for (const [messageId, held] of this.byMessageId) if (held.untilMs <= nowMs) this.byMessageId.delete(messageId);
    for (const held of holds) {
      // Deleted first even when this hold is already over: the message's older handle is stale now.
      this.byMessageId.delete(held.messageId);
      if (held.untilMs > nowMs) this.byMessageId.set(held.messageId, held);
    }
    for (const messageId of this.byMessageId.keys()) {
      if (this.byMessageId.size <= this.cap) break;
      this.byMessageId.delete(messageId);
    }
  }

  /**
   * Forgets every record and returns, per queue ARN, the visibility changes that release those whose hold has more
   * than {@link RELEASE_MARGIN_MS} left: to 0, or to what is left of their window's spacing, when that still ends
   * sooner than the hold.
   * @param current the message ids of the batch being handled: never released (this invocation decides their fate)
   */
  takeReleasable(nowMs: number, current: ReadonlySet<string>): Map<string, VisibilityChange[]> {
    const byQueue = new Map<string, VisibilityChange[]>();
    for (const held of this.byMessageId.values()) {
      const left = held.untilMs - nowMs;
      if (left <= RELEASE_MARGIN_MS || current.has(held.messageId)) continue;
      const visibilitySeconds = Math.max(0, Math.ceil((held.earliestMs - nowMs) / 1000));
      if (visibilitySeconds * 1000 >= left - RELEASE_MARGIN_MS) continue; // the spacing ends no sooner than the hold
      const changes = byQueue.get(held.queueArn) ?? [];
      changes.push({ messageId: held.messageId, receiptHandle: held.receiptHandle, visibilitySeconds });
      byQueue.set(held.queueArn, changes);
    }
    this.byMessageId.clear();
    return byQueue;
  }
}
