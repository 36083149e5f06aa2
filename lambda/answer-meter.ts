/**
 * Counts of a pace's recent requests (started) and answers (accepted, refused), in fixed slots of time, so that a rate or a share
 * over the last second or two costs no allocation per request. One per pace (lambda/pace.ts).
 */

/** What the meter counts, by its offset in a slot: requests, answers, and the answers to messages received for the first time. */
const STARTED = 0;
const ACCEPTED = 1;
const REFUSED = 2;
const ACCEPTED_FIRST = 3;
const REFUSED_FIRST = 4;
const COUNTS = 5;

/** A slot's length, ms, and how many are kept: the meter sees {@link SLOTS} × {@link SLOT_MS} into the past. */
const SLOT_MS = 100;
const SLOTS = 40;
/** Whole seconds over which the most acceptances in one are kept. */
const SECONDS = 10;

/** Counts over the time the meter looked back. */
export interface MeterReading {
  readonly started: number;
  readonly accepted: number;
  readonly refused: number;
  /** Of the answers, those to messages received for the first time (all of them when the reading is of those only). */
  readonly firstAccepted: number;
  readonly firstRefused: number;
  /** The time the counts cover, s (less than asked while the meter is young). */
  readonly seconds: number;
  /** True when they are all the meter keeps, and it has been counting that long: it could look back no further. */
  readonly all: boolean;
}

/** Requests and answers per slot of {@link SLOT_MS}. */
export class AnswerMeter {
  /** Acceptances per whole second of the clock, the last {@link SECONDS} (a ring), and the second last counted in. */
  private readonly acceptedBySecond = new Uint32Array(SECONDS);
  private second = Number.NEGATIVE_INFINITY;
  /** `[started, accepted, refused, accepted first, refused first]` per slot. */
  private readonly counts = new Uint32Array(SLOTS * COUNTS);
  private slot = Number.NEGATIVE_INFINITY;
  private firstAt: number | undefined;

  /** Moves to `now`'s slot, emptying the slots it passes. */
  private advance(now: number): number {
    const slot = Math.floor(now / SLOT_MS);
    if (slot > this.slot) {
      for (let s = Math.max(this.slot + 1, slot - SLOTS + 1); s <= slot; s += 1)
        this.counts.fill(0, (s % SLOTS) * COUNTS, ((s % SLOTS) + 1) * COUNTS);
      this.slot = slot;
    }
    return slot;
  }

  /** Counts one at `offset` of `now`'s slot, and at `alsoAt` when given (an answer's first-time count). */
  private add(offset: number, now: number, alsoAt?: number): void {
    const slot = this.advance(now);
    this.firstAt ??= now;
    const at = (slot % SLOTS) * COUNTS;
    this.counts[at + offset] = (this.counts[at + offset] as number) + 1;
    if (alsoAt !== undefined) this.counts[at + alsoAt] = (this.counts[at + alsoAt] as number) + 1;
  }

  /** A request started at `now`. */
  started(now: number): void {
    this.add(STARTED, now);
  }

  /** An answer that took the request, at `now`; `firstTime`: its message had not been received before. */
  accepted(now: number, firstTime = false): void {
    this.add(ACCEPTED, now, firstTime ? ACCEPTED_FIRST : undefined);
    const second = this.advanceSeconds(now);
    const at = second % SECONDS;
    this.acceptedBySecond[at] = (this.acceptedBySecond[at] as number) + 1;
  }

  private advanceSeconds(now: number): number {
    const second = Math.floor(now / 1000);
    if (second > this.second) {
      for (let s = Math.max(this.second + 1, second - SECONDS + 1); s <= second; s += 1) this.acceptedBySecond[s % SECONDS] = 0;
      this.second = second;
    }
    return second;
  }

  /** The most acceptances in one whole second of the last {@link SECONDS} (the current one, not over yet, left out). */
  mostAcceptedInASecond(now: number): number {
    const second = this.advanceSeconds(now);
    let most = 0;
    for (let s = second - SECONDS + 1; s < second; s += 1) most = Math.max(most, this.acceptedBySecond[s % SECONDS] as number);
    return most;
  }

  /** An answer asking to slow down, at `now`; `firstTime`: its message had not been received before. */
  refused(now: number, firstTime = false): void {
    this.add(REFUSED, now, firstTime ? REFUSED_FIRST : undefined);
  }

  /**
   * The counts over the last `ms` (at most {@link SLOTS} × {@link SLOT_MS}), or over more, up to all the meter keeps, until
   * at least `minAnswers` answers are in. `firstTime`: only the answers to messages received for the first time (requests
   * still all of them).
   */
  read(now: number, ms: number, minAnswers = 0, firstTime = false): MeterReading {
    const acceptedAt = firstTime ? ACCEPTED_FIRST : ACCEPTED;
    const refusedAt = firstTime ? REFUSED_FIRST : REFUSED;
    const slot = this.advance(now);
    let started = 0;
    let accepted = 0;
    let refused = 0;
    let firstAccepted = 0;
    let firstRefused = 0;
    let slots = 0;
    const wanted = Math.min(SLOTS, Math.ceil(ms / SLOT_MS));
    for (; slots < SLOTS && (slots < wanted || accepted + refused < minAnswers); slots += 1) {
      const at = ((slot - slots) % SLOTS) * COUNTS;
      started += this.counts[at + STARTED] as number;
      accepted += this.counts[at + acceptedAt] as number;
      refused += this.counts[at + refusedAt] as number;
      firstAccepted += this.counts[at + ACCEPTED_FIRST] as number;
      firstRefused += this.counts[at + REFUSED_FIRST] as number;
    }
    // The current slot counts in part; a young meter covers only the time since its first count.
    const covered = Math.min((slots - 1) * SLOT_MS + (now % SLOT_MS) + 1, now - (this.firstAt ?? now) + 1);
    // `all` only for a meter old enough to have seen all it keeps: a young one has simply not seen much yet.
    const all = slots === SLOTS && now - (this.firstAt ?? now) >= SLOTS * SLOT_MS;
    return { started, accepted, refused, firstAccepted, firstRefused, seconds: Math.max(SLOT_MS, covered) / 1000, all };
  }
}
