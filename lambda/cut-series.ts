/**
 * A series of cuts begun on an unpaced pace (docs/pacing.md, "Cuts as a test"): the test the dips would make, for a pace
 * cut again and again, which is never calm, so never doubts. Once the cuts have taken what the pace sends far enough down, a
 * refused share that did not fall with it is a floor, refusals that persist at any pace; one that fell was congestion, and the
 * cuts after are tried again from there. lambda/pace.ts begins a series at a cut, and acts on its trial.
 */
import { differenceError, type RefusalCount, SIGNIFICANT } from './refusal-statistics';

/**
 * Cuts that have taken what the pace sends to this share of what it sent at the first, or less, without the refused share
 * falling as a token bucket's would, are no congestion: the share is a floor, the pace unpaced again.
 */
const CUTS_TRIED_SHARE = 0.6;
/**
 * A share that fell with the cuts was congestion (a fresh container's flood, one container's part of a bucket), and what is
 * left of it may be a floor: the cuts that follow are tried again, once they have taken what it sends to this share of what
 * it sent when it fell. Deeper than a first try: at a bucket shared with other containers, whose refusals this one's cuts
 * barely move, a share that stays put through a halving is still likely congestion.
 */
const CUTS_TRIED_AGAIN_SHARE = 0.4;
/** … judged on the answers of the last this many ms, once that long has passed since the first cut. */
export const CUTS_TRIED_MS = 1_000;

/** What the pace sent, and what was refused, before the first cut of a series (or when the share last fell). */
export class CutSeries {
  /**
   * @param sentPerSecond requests per second sent before the series began
   * @param before the answers judged then
   * @param triedAt the share of `sentPerSecond` at which the series is tried: {@link CUTS_TRIED_SHARE}, or
   * {@link CUTS_TRIED_AGAIN_SHARE}
   */
  private constructor(
    private readonly startedAt: number,
    private readonly sentPerSecond: number,
    private readonly before: RefusalCount,
    private readonly triedAt: number,
  ) {}

  /** A series begun at a first cut. */
  static begin(now: number, sentPerSecond: number, before: RefusalCount): CutSeries {
    return new CutSeries(now, sentPerSecond, before, CUTS_TRIED_SHARE);
  }

  /** True once the series has gone on for {@link CUTS_TRIED_MS}: its latest answers are all to the pace it was cut to. */
  due(now: number): boolean {
    return now - this.startedAt >= CUTS_TRIED_MS;
  }

  /** True when what the pace sends now, requests per second, has come down to the share at which the series is tried. */
  cutFarEnough(sent: number): boolean {
    return sent <= this.triedAt * this.sentPerSecond;
  }

  /**
   * Tries the series on the latest answers (sent at `sent` requests per second): a share below the one before by two
   * standard errors fell with the pace; one not below it, and above what a token bucket would refuse at the lower pace
   * (1 − (1 − s)·r₀/r₁), persists.
   * @returns `fell`: the series to go on with, tried again (deeper) from here; `persists`: the share, a floor; undefined when
   * the answers show neither
   */
  trial(now: number, sent: number, latest: RefusalCount): { readonly fell: CutSeries } | { readonly persists: number } | undefined {
    const before = this.before.refused / this.before.answers;
    const after = latest.refused / latest.answers;
    const error = differenceError(this.before, latest);
    if (before - after > SIGNIFICANT * error) return { fell: new CutSeries(now, sent, latest, CUTS_TRIED_AGAIN_SHARE) };
    const bucket = Math.max(0, 1 - (1 - before) * (this.sentPerSecond / sent));
    if (after - bucket <= SIGNIFICANT * error) return undefined;
    return { persists: after };
  }
}
