/**
 * A container's clean start (docs/pacing.md, "A flood after a clean start"): many first requests all taken, then refusals in its
 * first seconds. Containers started together (a deploy, a backlog arriving) reach a token bucket's rate together, and each sees a
 * share of its requests refused that a floor could explain; doubting, they would wait for the next whole second to dip together
 * and meanwhile send at about twice the webhook's rate (at 1,000 requests/s, most of a run's refusals). A webhook refusing a
 * share of requests for their own sake refuses from the first ones, so its containers start unclean and doubt as before.
 * lambda/pace.ts cuts, rather than doubts, while this flood lasts and more than {@link FLOOD_SHARE} of the latest answers are
 * refused.
 */

/** First receives taken, none refused, before the first refusal that make a start clean: a share refused at random shows sooner. */
export const CLEAN_START_ANSWERS = 64;
/** … within this long of the pace's creation: later refusals are no start's flood. */
export const CLEAN_START_MS = 10_000;
/**
 * The refused share of the latest answers above which refusals after a clean start are its flood, not a floor: near the highest
 * floor (a half). Lower, a tenant with a third of the messages that runs out of its quota's burst read as a flood, and its cuts
 * slowed the others (0.63 × the speed without pacing instead of 0.96, a simulation).
 */
export const FLOOD_SHARE = 0.45;

/** Whether a pace's first refusals came after a clean start, and until when they count as its flood. */
export class CleanStart {
  private taken = 0;
  private refusedOnce = false;
  private flooding = false;

  constructor(private readonly startedAt: number) {}

  /**
   * Counts one answer that can slow the pace (a refusal naming a long wait is none).
   * @param firstReceive the record was received for the first time (a message refused before says nothing of the start)
   */
  answered(refused: boolean, firstReceive: boolean, now: number): void {
    if (this.refusedOnce) return;
    if (!refused) {
      if (firstReceive) this.taken += 1;
      return;
    }
    this.refusedOnce = true;
    this.flooding = this.taken >= CLEAN_START_ANSWERS && now - this.startedAt <= CLEAN_START_MS;
  }

  /** True from the first refusal after a clean start until {@link over}. */
  get inFlood(): boolean {
    return this.flooding;
  }

  /** The pace was cut or held: what follows is the pace's own business, no longer the start's flood. */
  over(): void {
    this.flooding = false;
  }
}
