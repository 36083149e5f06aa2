/**
 * The endpoint hold of one pace (docs/pacing.md, "The endpoint hold"): until when nothing is sent and, in a long hold (begun
 * on a `Retry-After` longer than a quick hold's), the probes let through it, by the clock, by the records it keeps back, and by
 * the first record received for the first time. lambda/pace.ts decides when a hold begins, on the evidence of many different
 * messages refused, how long it lasts, and where the pace starts again after it.
 */

/**
 * A hold this short (seconds) is quick: it begins as soon as the refusals are evidence enough (lambda/refusal-run.ts), and is
 * not probed. A longer `Retry-After` is a long wait, a message's own or the whole webhook's for a while: a hold on it needs
 * longer evidence, and is probed.
 */
export const QUICK_HOLD_SECONDS = 5;
/** True for a wait longer than a quick hold: a message's own (a tenant over its quota) or the whole webhook's for a while. */
export const isLongWait = (seconds: number): boolean => seconds > QUICK_HOLD_SECONDS;

/**
 * In a long hold one request goes through at once and then every this many ms: if it is taken, the hold is over. The records
 * kept back meanwhile go back to the queue until the next probe.
 */
export const PROBE_EVERY_MS = 2_000;
/** The first probe of a long hold goes this long after it began: time for the batches under way to go back to the queue. */
export const FIRST_PROBE_MS = 250;
/**
 * In a long hold, a record received for the first time (never refused, never kept back) is a probe when none is out and none
 * went for this long: a hold begun on one tenant's backlog ends at the first other message the webhook takes, however few
 * they are among the records the hold keeps back, which the probes by the clock and by count draw from. In the first
 * {@link FAST_PROBES_MS} of a run of holds, sooner: {@link FRESH_PROBE_ANSWER_TIMES} of the webhook's answer times (at least
 * {@link FRESH_PROBE_MIN_MS}), so a fast webhook's boundary between such a backlog and the rest is found within a batch or
 * two, not a quarter of a second of batches kept back a second each; refusals that go on longer are more likely the whole
 * webhook's, and it is asked less (docs/pacing.md, "The endpoint hold", has the figures).
 */
export const FRESH_PROBE_EVERY_MS = 250;
export const FAST_PROBES_MS = 2_000;
export const FRESH_PROBE_ANSWER_TIMES = 2;
export const FRESH_PROBE_MIN_MS = 10;
/**
 * In a long hold, a record that comes while a probe is out waits for its answer, this many of the webhook's answer times from
 * when it went at most, rather than go back to the queue for a second: if the probe is taken, the hold is over and it goes.
 */
export const PROBE_ANSWER_WAIT_TIMES = 2;
/**
 * In a long hold, the record after this many kept back is a probe too, then after twice as many, and so on: records kept back
 * go through the queue far faster than the clock's probes, and a hold begun on one tenant's backlog ends at the first record
 * of another tenant that the webhook takes, not after the whole backlog has been probed a record every two seconds.
 */
export const PROBE_AFTER_KEPT_BACK = 10;
/**
 * Records a long hold keeps back go back to the queue for this long (SQS's shortest wait short of none, which would bring them
 * straight back): by then a probe has likely gone, and they come back to a webhook taking requests again or to the same hold.
 * A record kept back again and again goes back for longer each time (lambda/pacer.ts, `retryInSeconds`).
 */
export const KEPT_BACK_MS = 1_000;
/** Holds less than this apart are one run of holds: each restarts from the pace before the first. */
const HOLDS_APART_MS = 5_000;

/** One pace's hold: its end, its probes, and the run of holds it belongs to. */
export class EndpointHold {
  /** When the hold ends (ms), or 0. */
  private until = 0;
  /** When the hold before this one ended. */
  private previousEnd = Number.NEGATIVE_INFINITY;
  /** When the next probe may go (Infinity: the hold is not probed), whether one is out, and when the last went. */
  private probeAt = Number.POSITIVE_INFINITY;
  private probing = false;
  private probeSentAt = Number.NEGATIVE_INFINITY;
  /** When a record received for the first time may next go as a probe. */
  private freshProbeAt = Number.POSITIVE_INFINITY;
  /** Records kept back since the hold began, and the count at which the next is a probe. */
  private keptBack = 0;
  private probeAfterKeptBack = PROBE_AFTER_KEPT_BACK;
  /** When the run of holds (less than {@link HOLDS_APART_MS} apart) that the latest belongs to began, and the pace before it. */
  private runBeganAt = Number.NEGATIVE_INFINITY;
  private paceBeforeRun = Number.POSITIVE_INFINITY;

  /** When the hold ends (ms), or 0. */
  get endsAt(): number {
    return this.until;
  }

  /** The pace before the run of holds the latest belongs to (requests per second; Infinity: unpaced). */
  get paceBefore(): number {
    return this.paceBeforeRun;
  }

  /** True while held. */
  holds(now: number): boolean {
    return now < this.until;
  }

  /**
   * Begins a hold until `until` (never shortening the one under way); `probed` for a long one. `pace` is the pace in force: a
   * hold that begins a run of holds keeps it as the pace before them (a deploy refusing everything for a while: the pace before
   * the first of them is the one the webhook took, not what each restart had grown back to).
   */
  begin(now: number, until: number, probed: boolean, pace: number): void {
    if (until <= this.until) return;
    this.until = until;
    this.probing = false;
    // A long hold is probed soon, with a later batch's first request (the refused batch's go back to the queue meanwhile, see
    // Pacer: they are likely more of what was refused), then every PROBE_EVERY_MS; a short one is waited out.
    this.probeAt = probed ? now + FIRST_PROBE_MS : Number.POSITIVE_INFINITY;
    this.freshProbeAt = this.probeAt;
    this.keptBack = 0;
    this.probeAfterKeptBack = PROBE_AFTER_KEPT_BACK;
    if (now - this.previousEnd > HOLDS_APART_MS) {
      this.paceBeforeRun = pace;
      this.runBeganAt = now;
    }
    this.previousEnd = until;
  }

  /** Holds until `until` at least, its probes as they were (what rate-limit headers say is left of a quota: none). */
  extendTo(until: number): void {
    this.until = Math.max(this.until, until);
  }

  /** Ms until a request may go through the hold (0: now, as its probe), or undefined when there is none. */
  waitMs(now: number): number | undefined {
    if (now >= this.until) return undefined;
    // A long hold lets one request through now and then, no sooner than the last one's answer: the probe.
    if (this.probeAt <= now && !this.probing) return 0;
    return Math.min(this.until, this.probing ? this.until : this.probeAt) - now;
  }

  /** A request goes through the hold now: the probe. `latencyMs`: the webhook's answer time of late. */
  probeSent(now: number, latencyMs: number): void {
    this.probing = true;
    this.probeSentAt = now;
    this.probeAt = Math.max(this.probeAt, now + PROBE_EVERY_MS);
    this.freshProbeAt = now + this.freshProbeSpacingMs(now, latencyMs);
  }

  /** How long after a probe the next record received for the first time may be one (see {@link FRESH_PROBE_EVERY_MS}). */
  private freshProbeSpacingMs(now: number, latencyMs: number): number {
    if (now - this.runBeganAt >= FAST_PROBES_MS) return FRESH_PROBE_EVERY_MS;
    return Math.min(FRESH_PROBE_EVERY_MS, Math.max(FRESH_PROBE_MIN_MS, FRESH_PROBE_ANSWER_TIMES * latencyMs));
  }

  /**
   * The probe's answer came, if one was out: `taken`, the webhook takes requests again, whatever was refused, and the hold is over.
   * @returns true when it ended the hold
   */
  probeAnswered(taken: boolean, now: number): boolean {
    if (!this.probing) return false;
    this.probing = false;
    if (!taken || now >= this.until) return false;
    this.until = now;
    return true;
  }

  /** True in a long hold (one that is probed), a probe due or not. */
  isLong(now: number): boolean {
    return now < this.until && this.probeAt !== Number.POSITIVE_INFINITY;
  }

  /** True in a long hold when no probe is due: a request is not to wait for it. */
  keepsBack(now: number): boolean {
    return this.isLong(now) && (this.probing || now < this.probeAt);
  }

  /** True when a record received for the first time may go now as a long hold's probe (see {@link FRESH_PROBE_EVERY_MS}). */
  freshProbeDue(now: number): boolean {
    return this.isLong(now) && !this.probing && now >= this.freshProbeAt;
  }

  /**
   * When the answer to a long hold's probe now out is due ({@link PROBE_ANSWER_WAIT_TIMES} of the webhook's answer times,
   * `latencyMs`, from when it went), if that is still to come: until then a record may wait for it rather than go back to the queue.
   */
  probeAnswerDueAt(now: number, latencyMs: number): number | undefined {
    if (!this.probing || !this.isLong(now)) return undefined;
    const due = this.probeSentAt + PROBE_ANSWER_WAIT_TIMES * Math.max(1, latencyMs);
    return due > now ? due : undefined;
  }

  /** A record a long hold kept from starting: after {@link PROBE_AFTER_KEPT_BACK} of them, and twice as many each time, the next is a probe. */
  keptBackOne(now: number): void {
    if (!this.isLong(now)) return;
    this.keptBack += 1;
    if (this.keptBack < this.probeAfterKeptBack) return;
    this.probeAfterKeptBack *= 2;
    this.probeAt = Math.min(this.probeAt, now);
  }
}
