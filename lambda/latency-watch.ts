/**
 * What the webhook's latency says of the requests in flight (docs/pacing.md, "A container's pace and its slow start"): whether
 * they queue at it, so that more in flight would only wait longer. lambda/pace.ts ends its slow start and stops adding requests
 * in flight when they do; refusals and timeouts are its own business.
 */

/** A round's fastest answer this many times the last round's, and {@link SLACK_MS} more, ends the slow start (as TCP's HyStart). */
const SLOW_START_EXIT_FACTOR = 2;
/**
 * Requests queue while the mean latency of the latest {@link BLOCK_ANSWERS} answers is over this many times the lowest such mean
 * seen, and {@link SLACK_MS} more (as TCP Vegas). Not near the request timeout as such: a webhook answering in 5 s whatever its
 * load (a model's inference) takes more at once as well as fewer, and held to 9 in flight drained at half `PACING=false`'s speed.
 */
const QUEUEING_FACTOR = 2;
/** A fast webhook's few ms of jitter are no queue. */
const SLACK_MS = 20;
/** Answers a block's mean latency is taken over: the lowest of many means of a few would be mostly noise. */
const BLOCK_ANSWERS = 8;
/**
 * The lowest block mean is that of the last one to two of these windows, ms: a webhook slower for good (another region, a
 * heavier release) is its new self after a while, not a queue for ever (the in-flight limit cut once would never grow again).
 */
export const LOWEST_KEPT_MS = 60_000;
/** A slow start's round is the in-flight limit's answers (as its last round ended), and at least this many. */
const ROUND_ANSWERS = 4;
/** A round is judged from its second answer, not only at its end, once its fastest answer takes this share of the request timeout. */
const EARLY_EXIT_TIMEOUT_SHARE = 0.1;

/** The latency of one pace's answers, in the slow start's rounds and in blocks of {@link BLOCK_ANSWERS}. */
export class LatencyWatch {
  /** The slow start's current round (its fastest answer, its answers, its size) and the last round's fastest answer, ms. */
  private roundLowestMs = Number.POSITIVE_INFINITY;
  private roundAnswers = 0;
  private roundSize: number;
  private lastRoundLowestMs = 0;
  /** The current block of latencies (sum, count), the last block's mean and the lowest block mean seen, ms. */
  private blockSumMs = 0;
  private blockAnswers = 0;
  private blockMeanMs = 0;
  /** The lowest block mean of the current window and of the one before, and when the current one began, ms. */
  private lowestBlockMeanMs = Number.POSITIVE_INFINITY;
  private lowestBeforeMs = Number.POSITIVE_INFINITY;
  private windowStartedAt: number;

  /**
   * @param requestTimeoutMs how long a request may take (`REQUEST_TIMEOUT_MS`)
   * @param inFlightLimit the in-flight limit the slow start begins with
   */
  constructor(
    private readonly requestTimeoutMs: number,
    inFlightLimit: number,
    now: number,
  ) {
    this.roundSize = inFlightLimit;
    this.windowStartedAt = now;
  }

  /**
   * Adds an answer's latency.
   * @param inFlightLimit the pace's in-flight limit now
   * @param inSlowStart whether the pace is in its slow start (its rounds are watched only then)
   * @param now when it came, ms
   * @returns true when the slow start is to end: the in-flight limit doubled since the last round, and the round's fastest answer
   * took twice the last round's (a slow answer or two of a webhook whose latency only varies does not move the fastest; a queue
   * moves it with the rest)
   */
  answered(latencyMs: number, inFlightLimit: number, inSlowStart: boolean, now: number): boolean {
    this.blockSumMs += latencyMs;
    this.blockAnswers += 1;
    if (this.blockAnswers >= BLOCK_ANSWERS) {
      if (now - this.windowStartedAt >= LOWEST_KEPT_MS) {
        // After a quiet spell of two windows or more, the lowest before it is as old.
        this.lowestBeforeMs = now - this.windowStartedAt >= 2 * LOWEST_KEPT_MS ? Number.POSITIVE_INFINITY : this.lowestBlockMeanMs;
        this.lowestBlockMeanMs = Number.POSITIVE_INFINITY;
        this.windowStartedAt = now;
      }
      this.blockMeanMs = this.blockSumMs / this.blockAnswers;
      this.lowestBlockMeanMs = Math.min(this.lowestBlockMeanMs, this.blockMeanMs);
      this.blockSumMs = 0;
      this.blockAnswers = 0;
    }
    if (!inSlowStart) return false;
    this.roundLowestMs = Math.min(this.roundLowestMs, latencyMs);
    this.roundAnswers += 1;
    const roundEnds = this.roundAnswers >= Math.max(ROUND_ANSWERS, this.roundSize);
    // Judged at the round's end; from its second answer (as HyStart++) once answers take a tenth of the request timeout: by the
    // round's end the limit has doubled again, and a doubling or two more would time out.
    const early = this.roundAnswers >= 2 && this.roundLowestMs > EARLY_EXIT_TIMEOUT_SHARE * this.requestTimeoutMs;
    const queued =
      (roundEnds || early) && this.lastRoundLowestMs > 0 && this.roundLowestMs > SLOW_START_EXIT_FACTOR * this.lastRoundLowestMs + SLACK_MS;
    if (roundEnds) {
      this.lastRoundLowestMs = this.roundLowestMs;
      this.roundLowestMs = Number.POSITIVE_INFINITY;
      this.roundAnswers = 0;
      this.roundSize = inFlightLimit;
    }
    return queued;
  }

  /** True when the latest answers' latency says requests queue at the webhook: more in flight would only wait longer. */
  get queueing(): boolean {
    return this.blockMeanMs > QUEUEING_FACTOR * Math.min(this.lowestBlockMeanMs, this.lowestBeforeMs) + SLACK_MS;
  }
}
