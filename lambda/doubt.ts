/**
 * A pace's doubt (docs/pacing.md, "Doubts and floors"): whether a refused share that some floor could explain falls when the
 * pace dips. While in doubt, the pace sends at {@link DIP_DEPTH} of its rate in the last of every {@link DIP_EVERY} slots of
 * {@link DIP_SLOT_MS} of the clock, and the doubt compares the refused share of the requests sent in the dips with that of the
 * slots before them: a share that fell is congestion, one that did not is refusals that persist at any pace. lambda/pace.ts
 * decides when a doubt begins, dips, cuts, and what its verdict does to the pace.
 *
 * Whole slots of the clock are the same moments in every container, so at a webhook they share they dip together: the dip
 * shows the share at the pace they all went down to, not at one container's alone (one container of five halving its pace
 * changes a token bucket's refusals by a tenth).
 */
import { differenceError, MAX_FLOOR, type RefusalCount, SIGNIFICANT } from './refusal-statistics';

/** The dips: the last of every {@link DIP_EVERY} slots of {@link DIP_SLOT_MS} of the clock, at {@link DIP_DEPTH} of the rate. */
export const DIP_SLOT_MS = 250;
export const DIP_EVERY = 2;
export const DIP_DEPTH = 0.5;
/** Answers in dips, and in the slots before them, for a verdict of persistence; congestion may show with fewer. */
export const VERDICT_ANSWERS = 40;
const MIN_VERDICT_ANSWERS = 8;
/**
 * … or this many, for a doubt begun unpaced whose dips refused some, and no smaller a share than the slots before them: no
 * fall at all is what refusals that persist look like (at 200 ms a doubt ran its whole 5 s, dipping, before it counted 40). Not
 * for a doubt begun paced, cut for congestion before: at a token bucket it may be one container's, whose dips barely move the
 * bucket's share.
 */
export const UNMOVED_VERDICT_ANSWERS = 16;
/**
 * The counts (the fewer of dips' and bases') at which a doubt looks for a verdict: a test of 2 standard errors repeated after
 * every answer would find a fall in the noise of refusals that persist one doubt in a few.
 */
const VERDICT_LOOKS: readonly number[] = [MIN_VERDICT_ANSWERS, UNMOVED_VERDICT_ANSWERS, 32, VERDICT_ANSWERS];
/**
 * In doubt, no cut for this long from its start (for a doubt begun unpaced); then cuts keep at least this share of the most the
 * pace sent since it began.
 */
const DOUBT_UNCUT_MS = 1_000;
const DOUBT_CUTS_KEEP = 0.7;
/** Doubts begin on whole multiples of this many ms of the clock. */
export const DOUBT_EPOCH_MS = 1_000;
/** A doubt ends after this long: as persistence when the pace was unpaced at its start and the dips show no fall, else without a verdict. */
const DOUBT_LONGEST_MS = 5_000;
/** A doubt ends when no refusal has come for this long. */
const DOUBT_QUIET_MS = 5_000;

/** What a doubt found: the refusals fell in the dips (congestion), or they did not (they persist at any pace). */
export type Verdict = 'congestion' | 'persists';

/** A doubt under way: the answers to the requests sent in its dips and in the slots before them. */
export class Doubt {
  /** When it begins (a whole epoch of the clock): until then the pace waits for it, neither cut nor dipping. */
  readonly since: number;
  /** The least cuts may take the pace to while in doubt: {@link DOUBT_CUTS_KEEP} of the most it sent since the doubt began. */
  private lowest: number;
  private lastRefusalAt: number;
  private dipRefused = 0;
  private dipAnswered = 0;
  private baseRefused = 0;
  private baseAnswered = 0;
  /** The count (the fewer of dips' and bases') at its last look for a verdict. */
  private looked = 0;

  /**
   * @param rateBefore the pace's rate when it began: where the pace goes back to if the refusals persist
   * @param sending what the pace sends now, requests per second
   */
  constructor(
    now: number,
    readonly rateBefore: number,
    sending: number,
  ) {
    // From the next whole epoch of the clock: the containers at one webhook doubt, and dip, together.
    this.since = Math.ceil(now / DOUBT_EPOCH_MS) * DOUBT_EPOCH_MS;
    this.lowest = DOUBT_CUTS_KEEP * sending;
    this.lastRefusalAt = now;
  }

  /** True for a doubt begun on an unpaced pace (no congestion seen, or none since persistence was learned). */
  get begunUnpaced(): boolean {
    return this.rateBefore === Number.POSITIVE_INFINITY;
  }

  /** True when the pace is to dip now. */
  dipping(now: number): boolean {
    return now >= this.since && Doubt.slotOf(now) === DIP_EVERY - 1;
  }

  /** A refusal came: the doubt is not quiet. */
  refusedAt(now: number): void {
    this.lastRefusalAt = now;
  }

  /**
   * The least a cut may take the pace to now, given what it sends (requests per second); `undefined` until
   * {@link DOUBT_UNCUT_MS} after its start, when a doubt begun unpaced is not to be cut at all.
   */
  cutsKeep(now: number, sending: number): number | undefined {
    this.lowest = Math.max(this.lowest, DOUBT_CUTS_KEEP * sending);
    // Begun on a pace cut for congestion before: containers that met the webhook's capacity meet it again together as they
    // grow, and a second or two without cuts (the wait for the whole second, then the first) kept them all over it
    // (docs/pacing.md, "Doubts and floors"). Cut at once, as far as the share kept: refusals that persist cost 30 % at most.
    if (!this.begunUnpaced) return this.lowest;
    return now - this.since < DOUBT_UNCUT_MS ? undefined : this.lowest;
  }

  /** Why the doubt is over now, if it is: no refusal for {@link DOUBT_QUIET_MS}, or it has run {@link DOUBT_LONGEST_MS}. */
  over(now: number): 'quiet' | 'out of time' | undefined {
    if (now <= this.since) return undefined;
    if (now - this.lastRefusalAt > DOUBT_QUIET_MS) return 'quiet';
    return now - this.since > DOUBT_LONGEST_MS ? 'out of time' : undefined;
  }

  /**
   * Counts an answer by the slot its request started in.
   * @returns the verdict, when the counts reach one of the points at which the doubt looks for one and allow it
   */
  count(refused: boolean, startedAt: number): Verdict | undefined {
    if (startedAt < this.since) return undefined;
    const slot = Doubt.slotOf(startedAt);
    if (slot === DIP_EVERY - 1) {
      this.dipAnswered += 1;
      if (refused) this.dipRefused += 1;
    } else if (slot === DIP_EVERY - 2) {
      this.baseAnswered += 1;
      if (refused) this.baseRefused += 1;
    } else return undefined;
    const count = Math.min(this.dipAnswered, this.baseAnswered);
    if (count === this.looked || !VERDICT_LOOKS.includes(count)) return undefined;
    this.looked = count;
    return this.verdict(false);
  }

  /**
   * The verdict from the counts, if they allow one: congestion when the share fell in the dips beyond the noise (or most
   * requests are refused); persistence when it did not, on {@link VERDICT_ANSWERS} each ({@link UNMOVED_VERDICT_ANSWERS} when
   * the dips did not lower it at all), or on as few as a fall needs once the doubt is `ending`; both only for a doubt begun
   * unpaced (a webhook answering in 200 ms gives a container's dips about five answers a second, too few for VERDICT_ANSWERS
   * in time).
   */
  verdict(ending: boolean): Verdict | undefined {
    const { dipAnswered, baseAnswered } = this;
    if (dipAnswered < MIN_VERDICT_ANSWERS || baseAnswered < MIN_VERDICT_ANSWERS) return undefined;
    const dip = this.dipRefused / dipAnswered;
    const base = this.baseRefused / baseAnswered;
    const dips: RefusalCount = { refused: this.dipRefused, answers: dipAnswered };
    const bases: RefusalCount = { refused: this.baseRefused, answers: baseAnswered };
    if (base - dip > SIGNIFICANT * differenceError(dips, bases)) return 'congestion';
    // Fewer answers only for a doubt begun unpaced: without evidence of congestion the pace does not fall.
    let enough = VERDICT_ANSWERS;
    if (this.begunUnpaced) {
      if (ending) enough = MIN_VERDICT_ANSWERS;
      else if (this.dipRefused > 0 && dip >= base) enough = UNMOVED_VERDICT_ANSWERS;
    }
    if (dipAnswered < enough || baseAnswered < enough) return undefined;
    return this.share > MAX_FLOOR ? 'congestion' : 'persists';
  }

  /** The refused share in the dips: what is left at the pace they went down to. */
  get dipShare(): number {
    return this.dipRefused / this.dipAnswered;
  }

  /** The refused share over the dips and the slots before them. */
  get share(): number {
    return (this.dipRefused + this.baseRefused) / this.answers;
  }

  /** The answers counted, in the dips and the slots before them. */
  get answers(): number {
    return this.dipAnswered + this.baseAnswered;
  }

  /** Which slot of the dips' cycle `at` falls in: `DIP_EVERY - 1` is a dip, `DIP_EVERY - 2` the slot before it. */
  private static slotOf(at: number): number {
    return Math.floor(at / DIP_SLOT_MS) % DIP_EVERY;
  }
}
