/**
 * A pace's floor (docs/pacing.md, "Doubts and floors"): the refused share learned to persist at any pace, which costs the
 * refused messages their time and never the pace; and, learned over it, the refused share of the messages back from the queue,
 * which explains their refusals where the messages received for the first time are too few to judge on. Doubts
 * (lambda/doubt.ts) and series of cuts (lambda/cut-series.ts) find a floor; lambda/pace.ts sets it here and judges refusals
 * against it.
 */
import type { MeterReading } from './answer-meter';
import { MIN_ANSWERS, type RefusalCount, SIGNIFICANT } from './refusal-statistics';

/** Refused share above the learned floor (or half the floor, if more) that counts as congestion, beyond the noise of the answers. */
export const CONGESTION_MARGIN = 0.05;
/** For this long after a verdict, refusals above its floor are congestion without another doubt. */
export const FLOOR_KEPT_MS = 30_000;
/** How fast a learned floor follows the share down when the refusals fade, per answer. */
const FLOOR_DECAY = 0.01;
/** How fast the refused share of messages back from the queue is learned, per answer (about the last 50 count). */
const RETURNED_SHARE_DECAY = 0.02;
/**
 * That share explains refusals no longer than this after a message received for the first time was last taken: then the messages
 * left are likely all refused ones (a drain's end, a tenant over its quota), asked for again no more than the pace allows.
 */
export const OTHERS_GONE_MS = 10_000;

/** The refused share that persists whatever the pace, as learned, and when. */
export class RefusalFloor {
  private value = 0;
  /**
   * The answers a doubt's verdict of persistence measured the floor on: a share judged against that floor carries the floor's
   * noise as well as its own. Infinity for any other floor, and once the floor has followed the share down (set again).
   */
  private measuredOn = Number.POSITIVE_INFINITY;
  private learnedAt = Number.NEGATIVE_INFINITY;
  /**
   * The refused share of the messages back from the queue, as learned over a floor while the first receives were refused no more
   * than it explains: where first receives are too few to judge on (the end of a drain, one tenant's refused messages filling
   * the batches), what it explains is no congestion.
   */
  private returnedShare = 0;
  private returnedAnswers = 0;
  /** When a message received for the first time was last taken. */
  private firstTakenAt = Number.NEGATIVE_INFINITY;

  /** The floor, a share of requests (0 to 1). */
  get share(): number {
    return this.value;
  }

  /** How many answers it was measured on ({@link measuredOn}). */
  get answers(): number {
    return this.measuredOn;
  }

  /**
   * The one place the floor is set. With none left, the refused share of messages back from the queue goes too: it was learned
   * over a floor, and explains refusals only over one.
   * @param answers how many answers a doubt measured it on ({@link measuredOn}); none for any other floor
   */
  set(share: number, answers = Number.POSITIVE_INFINITY): void {
    this.value = share;
    this.measuredOn = answers;
    if (share > 0) return;
    this.returnedShare = 0;
    this.returnedAnswers = 0;
  }

  /** The floor counts as learned now (a verdict, or a doubt that ended without one): judged again after {@link FLOOR_KEPT_MS}. */
  learned(now: number): void {
    this.learnedAt = now;
  }

  /** True when it was learned {@link FLOOR_KEPT_MS} ago or more: a share some floor could explain is worth a doubt again. */
  stale(now: number): boolean {
    return now - this.learnedAt >= FLOOR_KEPT_MS;
  }

  /** The refused share the floor explains: the floor and a margin for its noise. */
  explained(): number {
    return this.value + Math.max(CONGESTION_MARGIN, this.value / 2);
  }

  /** A message received for the first time was taken. */
  firstTaken(now: number): void {
    this.firstTakenAt = now;
  }

  /**
   * A floor learned from refusals that have since faded follows the share of `reading` down: when none was refused, or a share
   * below the floor beyond its noise (one that dips under it now and then is the same floor, and following those dips would
   * take it down to the low tail of its own noise, and the pace back into cuts).
   */
  followDown(reading: MeterReading): void {
    const answers = reading.accepted + reading.refused;
    if (answers === 0) return;
    const share = reading.refused / answers;
    const noise = SIGNIFICANT * Math.sqrt((this.value * (1 - this.value)) / answers);
    if (reading.refused === 0 || share < this.value - noise) {
      const floor = this.value + (share - this.value) * FLOOR_DECAY;
      this.set(floor < 0.001 ? 0 : floor);
    }
  }

  /**
   * Learns the refused share of messages back from the queue from one more answer to one, while `firstTime`, the first
   * receives, are enough to judge on and refused no more than the floor explains: the webhook is not congested at this pace,
   * paced or not, and what it refuses of those messages is their own business.
   */
  learnReturned(refused: boolean, firstTime: RefusalCount): void {
    if (firstTime.answers < MIN_ANSWERS || firstTime.refused > this.explained() * firstTime.answers) return;
    // The mean of the first answers, then a moving average: not from 0, which took a hundred answers to leave behind.
    this.returnedAnswers += 1;
    this.returnedShare += ((refused ? 1 : 0) - this.returnedShare) * Math.max(RETURNED_SHARE_DECAY, 1 / this.returnedAnswers);
  }

  /**
   * True when the first receives of `reading` are too few to judge a share on ({@link MIN_ANSWERS}) and refused no more than the
   * floor explains, and its refusals are what the floor and the learned refused share of messages back from the queue explain,
   * in their mix. At the end of a drain, or in one tenant's refused messages back every second ahead of the rest (a queue hands
   * out the oldest messages first), the batches hold few first receives: judged on all answers, those messages' refusals cut
   * the pace and held it, and the others' last messages waited behind them (docs/pacing.md, "The share judged", has the
   * figures).
   */
  returnedExplains(now: number, reading: MeterReading): boolean {
    if (this.returnedShare <= this.value || now - this.firstTakenAt > OTHERS_GONE_MS) return false;
    const answers = reading.accepted + reading.refused;
    const first = reading.firstAccepted + reading.firstRefused;
    if (first >= MIN_ANSWERS || answers === 0) return false;
    const explained = this.explained();
    if (first > 0 && reading.firstRefused > explained * first + SIGNIFICANT * Math.sqrt(first * explained)) return false;
    const expected = (first * this.value + (answers - first) * this.returnedShare) / answers;
    const noise = SIGNIFICANT * Math.sqrt((expected * (1 - expected)) / answers);
    return reading.refused <= (expected + CONGESTION_MARGIN + noise) * answers;
  }
}
