/**
 * One pace (docs/pacing.md; in plain words, docs/webhook-owners.md, "Back-pressure"): requests per second and in flight toward the webhook, or toward one key of
 * it, adapted to its answers; lambda/pacer.ts keeps one for the endpoint and one per key, and queues the requests waiting on them.
 *
 * It paces to the webhook's capacity, not to the refusals of single messages. A refused share that falls when the pace slows
 * down is congestion: a token bucket refuses 1 − R/r of the requests sent at r above its rate R. A share that does not fall is
 * the webhook's business with those messages (one tenant over its quota, records it cannot take yet): it costs those messages
 * their time, never the pace. So a share of refusals above what the pace has learned persists at any rate puts it in doubt
 * (lambda/doubt.ts): it dips, and the share is measured in the dips and between them; if it did not fall, it is learned as
 * that floor and the pace put back as it was (on fewer answers for a pace that was unpaced: without evidence of congestion it
 * does not fall). Cuts are tried the same way (lambda/cut-series.ts): cuts begun unpaced (or lowered only in doubt) that halve
 * what is sent, or near, without the share falling, end as a floor; once the share has fallen, the cuts after are tried
 * again, deeper. Refusals after a clean start (the first requests all taken, as a token bucket takes its burst) are the
 * containers' flood when nearly half are refused: cut at once, not doubted (lambda/clean-start.ts).
 * The share judged is that of the messages received for the first time: those refused before, back from the queue, are mostly
 * refused again for their own sake, and fill more of a slower pace. Where first receives are too few to judge on (a tenant's
 * refused messages back every second ahead of the rest), the share those messages were refused at while the first receives
 * were taken explains theirs, until 10 s after the last first receive taken (lambda/refusal-floor.ts keeps both shares).
 * A refusal that names a long wait (a `Retry-After` over a quick hold's 5 s) is no sign of congestion at all: it says when
 * that message may come back. Its hold (nothing sent until a `Retry-After` has passed) needs the same kind of evidence
 * (lambda/refusal-run.ts), many different messages refused with few acceptances among them for 2 s (or 200 of them), and
 * lasts the shortest `Retry-After` among them; a long one is probed, by the clock, by the records it keeps back, and by the
 * first record received for the first time (lambda/endpoint-hold.ts keeps the hold and its probes). A message refused again is
 * its own business: only refusals of messages received for the first time are evidence for a long hold, so a tenant's backlog
 * coming back every `Retry-After` does not hold everyone else's; nor is a run of them a quick hold while the messages received
 * for the first time are taken.
 * A webhook that announces its limit in rate-limit headers is paced to it before it refuses anything. One that queues rather
 * than refuses is read from its latency: requests in flight stop being added once answers take twice as long as they did.
 */
import { AnswerMeter, type MeterReading } from './answer-meter';
import { CleanStart, FLOOD_SHARE } from './clean-start';
import { CUTS_TRIED_MS, CutSeries } from './cut-series';
import { DIP_DEPTH, Doubt, type Verdict } from './doubt';
import { EndpointHold, isLongWait } from './endpoint-hold';
import { LatencyWatch } from './latency-watch';
import type { Quota } from './rate-limit-headers';
import { RecentRefusals, RefusalRun } from './refusal-run';
import { RefusalFloor } from './refusal-floor';
import { MAX_FLOOR, MIN_ANSWERS, type RefusalCount, SIGNIFICANT } from './refusal-statistics';

/** What one answer says about the pace. */
export type PaceSignal = 'accepted' | 'slow-down' | 'neutral';

/** One answer as the pace reads it. */
export interface PacedAnswer {
  readonly signal: PaceSignal;
  readonly latencyMs: number;
  /** The answer's `Retry-After`, seconds, when it named one. */
  readonly retryAfterSeconds?: number;
  /** The message the request carried: the hold counts different messages. */
  readonly messageId?: string;
  /** What the answer's rate-limit headers said, when it had any. */
  readonly quota?: Quota;
  /** The message had been received before (`ApproximateReceiveCount` over 1): refused, or kept back by a hold, already. */
  readonly receivedBefore?: boolean;
  /**
   * No answer came within the request's timeout: `REQUEST_TIMEOUT_MS`, or all the invocation had (one its deadline cut below
   * that, in an invocation that had room for it, says less of the webhook than it says of when the request started).
   */
  readonly timedOut?: boolean;
}

/** How a pace may go. */
export interface PaceLimits {
  /** Adapt to the answers; when false only the ceilings apply. */
  readonly adaptive: boolean;
  /** Requests in flight at once, at most. */
  readonly maxInFlight: number;
  /** A ceiling on requests per second; `undefined`: none. */
  readonly maxRequestsPerSecond: number | undefined;
  /** How many containers share what the webhook's rate-limit headers announce (`CONCURRENT_INVOCATIONS`). */
  readonly sharedBy: number;
  /** How long a request may take (`REQUEST_TIMEOUT_MS`), ms. */
  readonly requestTimeoutMs: number;
  /** Start with {@link INITIAL_IN_FLIGHT} in flight (the endpoint's pace; a key's starts at `maxInFlight`). */
  readonly slowStart?: boolean;
}

/** The pace as of now, for metrics and logs. */
export interface PaceSnapshot {
  /** The requests-per-second limit; `undefined` while unpaced. */
  readonly requestsPerSecond: number | undefined;
  readonly inFlightLimit: number;
}

/** Multiplicative decrease: the least a cut keeps of the pace (as TCP CUBIC's β). */
export const DECREASE_FACTOR = 0.85;
/** Additive increase per second of accepted requests, as a share of the rate (at least 1 request/s per second). */
export const INCREASE_SHARE = 0.25;
/**
 * The refused share at which growth and cuts balance near the last cut: a cut takes 15 % at a refusal, so each acceptance
 * adds at most ln(1 / 0.85) × 0.5 % / 99.5 % of the rate there. Five containers climbing together overshoot a token bucket
 * by the sum of their growth before each sees a refusal: slow growth there keeps that overshoot small (BENCHMARKS.md, capacity).
 */
export const BALANCED_SHARE = 0.005;
const BALANCED_GROWTH = (Math.log(1 / DECREASE_FACTOR) * BALANCED_SHARE) / (1 - BALANCED_SHARE);
/** Growth slows to the balanced one from this share of the rate the last cut came from. */
const NEAR_LAST_CUT = 0.9;
/** After this long without a cut the pace doubles each second (as TCP's slow start), so one stray cut costs little. */
export const RECOVERY_MS = 10_000;
/** Requests in flight a fresh adaptive pace starts with. */
export const INITIAL_IN_FLIGHT = 2;
/** The slowest pace adaptation goes to, requests per second. */
export const MIN_REQUESTS_PER_SECOND = 0.5;
/** A pace is calm when it has not been cut nor held for this long: only then may it doubt (lambda/doubt.ts). */
const CALM_MS = 1_000;
/**
 * A run of refusals mostly of messages back from the queue (refused before: a tenant's, come back together) is no quick hold
 * while fewer than this share of the latest answers to messages received for the first time are refused (or no more than the
 * floor explains): the webhook takes new messages.
 */
const QUICK_HOLD_FIRST_TIME_SHARE = 0.5;
/** A hold lasts this long at most, however long the `Retry-After`: records kept back go back to the queue for no longer. */
export const LONG_HOLD_SECONDS = 6;
/** The pace keeps this share of what rate-limit headers allow it, for the clocks and the rounding of whole seconds. */
export const QUOTA_HEADROOM = 0.95;
/** A reset this long or longer is spread over (the remaining quota ÷ the time left); a shorter one, in whole seconds, is too coarse. */
const QUOTA_SPREAD_MIN_SECONDS = 10;
/** How long a quota from rate-limit headers binds after the last answer that carried them, at least, ms. */
const QUOTA_KEPT_MS = 10_000;
/** A rate limit above this many requests per second is no limit: the pace is unpaced again. */
const UNPACED_ABOVE = 10_000;
/** How far above the rate it really sends a pace's limit may be (cuts start from it; increases stop at it). */
const OFFERED_HEADROOM = 1.25;
/** The longest burst the token bucket allows, in seconds of its rate (at least one request): a tenth of a second of the adaptive pace, */
const BURST_SECONDS = 0.1;
/** … and a hundredth of a second of a ceiling, when that is what binds. */
const CEILING_BURST_SECONDS = 0.01;
/** The window, ms, over which shares and rates are measured (longer while fewer than {@link MIN_ANSWERS} answers are in it). */
const MEASURE_MS = 1_000;
/** The latest answers a share over any floor is judged on: the last this many ms, or {@link SURE_ANSWERS}. */
const SWAMPED_MS = 250;
/** … and this many before a share over any floor cuts a pace that could still doubt. */
const SURE_ANSWERS = 32;
/** … or this many over all the meter keeps (4 s), for a slow pace. */
const FEWEST_ANSWERS = 4;
/** The window over which what the webhook took is measured when a hold restarts the pace, ms. */
const TOOK_MS = 2_000;
/** A cut goes no lower than this share of the most the webhook took in a second of late: under it, so uneven arrivals fit. */
const TOOK_SHARE = 0.7;
/** … and over a floor, whose own refusals come and go: a share from fewer answers would be mostly noise. */
const MIN_ANSWERS_OVER_FLOOR = 64;
/** At most one cut per this many ms, or per two round trips if longer: the answers to one burst are one signal. */
const MIN_CUT_INTERVAL_MS = 100;

/** One pace: a token bucket and an in-flight limit, adapted to the answers. Lives for the warm container. */
export class Pace {
  /** Requests started and not yet answered. */
  inFlight = 0;
  /** The in-flight limit, fractional while it grows. */
  private limit: number;
  /** The adaptive requests-per-second limit; `Infinity` until congestion is seen. */
  private rate = Number.POSITIVE_INFINITY;
  /** What rate-limit headers allow, requests per second, and until when (ms). */
  private quotaRate = Number.POSITIVE_INFINITY;
  private quotaUntil = 0;
  /** What remains of the quota spread over the time to its reset, which binds until then only: the quota renews there. */
  private spreadRate = Number.POSITIVE_INFINITY;
  private spreadUntil = 0;
  /** The rate in a dip (Infinity outside one). */
  private dipRate = Number.POSITIVE_INFINITY;
  private tokens: number;
  private refilledAt: number;
  private readonly hold = new EndpointHold();
  private lastCutAt = Number.NEGATIVE_INFINITY;
  /**
   * Until the first cut the in-flight limit doubles each round trip: refusals the pace tolerates (a share some
   * floor could explain, a long `Retry-After`) say nothing of how many requests the webhook can take at once.
   */
  private slowStart: boolean;
  /**
   * Since a short hold (a token bucket far below what was sent), until the next cut: the pace doubles back up from what the
   * webhook took, and its next refusals say it went too far, with no doubt.
   */
  private climbingAfterQuickHold = false;
  /** The rate the last cut came from (Infinity before any): growth slows near it. */
  private cutFrom = Number.POSITIVE_INFINITY;
  private latencyMs = 0;
  /** Whether requests queue at the webhook, by its latency: the in-flight limit stops growing when they do. */
  private readonly latency: LatencyWatch;
  /** When a timeout last cut the in-flight limit. */
  private timeoutCutAt = Number.NEGATIVE_INFINITY;
  private readonly meter = new AnswerMeter();
  /** Whether the first refusals came after a clean start: then they are the containers' flood, cut rather than doubted. */
  private readonly cleanStart: CleanStart;
  /** The refused share that persists whatever the pace, as learned, and the share of messages back from the queue over it. */
  private readonly floor = new RefusalFloor();
  private doubt: Doubt | undefined;
  private series: CutSeries | undefined;
  private run: RefusalRun | undefined;
  /** Ids of the latest refusals with a `Retry-After`, created with the first (a pace per key: most never see one). */
  private recentRefusals: RecentRefusals | undefined;
  /** The rate is finite only because a doubt lowered it (no cut, no hold since it was unpaced): cuts are tried as if unpaced. */
  private loweredOnlyInDoubt = false;
  /** When a refusal last moved the next request ({@link shiftPhase}). */
  private phaseShiftedAt = Number.NEGATIVE_INFINITY;

  /**
   * @param random draws in [0, 1) for a ceiling's first moment and the phase a refusal moves it by ({@link shiftPhase}):
   * `Math.random`, or a simulation's seeded ones
   */
  constructor(
    private readonly limits: PaceLimits,
    now: number,
    private readonly random: () => number = Math.random,
  ) {
    // Adaptive, it starts with a few in flight and doubles them each round trip until a cut (TCP's slow start): a fresh
    // container does not send MAX_CONCURRENCY requests at once into a webhook whose capacity it does not know yet.
    this.slowStart = limits.adaptive && limits.slowStart !== false;
    this.limit = this.slowStart ? Math.min(limits.maxInFlight, INITIAL_IN_FLIGHT) : limits.maxInFlight;
    this.latency = new LatencyWatch(limits.requestTimeoutMs, this.limit, now);
    this.refilledAt = now;
    this.cleanStart = new CleanStart(now);
    // Containers given the same ceiling start together: each takes its first request at a random moment of its first
    // interval, so they do not start in step either (see shiftPhase).
    this.tokens = this.capacity() - (limits.maxRequestsPerSecond === undefined ? 0 : this.random());
  }

  /** The rate in force: the adaptive one under the ceiling, what rate-limit headers allow, and a dip's. */
  private effectiveRate(): number {
    return Math.min(this.rate, this.quotaInForce(), this.dipRate, this.limits.maxRequestsPerSecond ?? Number.POSITIVE_INFINITY);
  }

  /** The rate rate-limit headers allow this container now (Infinity: none binds). */
  private quotaInForce(): number {
    return Math.min(this.quotaRate, this.spreadRate);
  }

  private capacity(): number {
    const rate = this.effectiveRate();
    // A ceiling (the owner's or the webhook's) is kept to the request; the adaptive pace lets a batch's gap be made up.
    const burst = rate < this.rate ? CEILING_BURST_SECONDS : BURST_SECONDS;
    return Math.max(1, rate * burst);
  }

  /** True when the rate in force is one given from outside, the same in every container: the owner's ceiling, or a quota. */
  private givenRateBinds(): boolean {
    const given = Math.min(this.quotaInForce(), this.limits.maxRequestsPerSecond ?? Number.POSITIVE_INFINITY);
    return given !== Number.POSITIVE_INFINITY && given <= Math.min(this.rate, this.dipRate);
  }

  /**
   * Moves the next request by a random part of the interval between two. Containers paced to the same given rate that start
   * together send in step, forever: their requests arrive together, and a token bucket shallower than their number refuses
   * the rest each time (five containers sharing 18 of a bucket's 20 requests/s, 2 deep: three in five refused). Moved at
   * each refusal, they fall out of step within seconds (docs/pacing.md, "The ceiling"). At most once an interval: the
   * refusals of requests sent together (a slow webhook's, many in flight) are one collision, not many.
   */
  private shiftPhase(now: number): void {
    this.refill(now);
    if (now - this.phaseShiftedAt < 1000 / this.effectiveRate()) return;
    this.phaseShiftedAt = now;
    this.tokens -= this.random();
  }

  private refill(now: number): void {
    const rate = this.effectiveRate();
    if (rate === Number.POSITIVE_INFINITY) this.tokens = 1;
    else this.tokens = Math.min(this.capacity(), this.tokens + ((now - this.refilledAt) / 1000) * rate);
    this.refilledAt = now;
  }

  /** Ms until a request may start (0: now), ignoring the in-flight limit. */
  waitMs(now: number): number {
    if (this.quotaRate !== Number.POSITIVE_INFINITY && now >= this.quotaUntil) this.expireQuota(now);
    if (this.spreadRate !== Number.POSITIVE_INFINITY && now >= this.spreadUntil) this.expireSpread(now);
    if (this.doubt !== undefined || this.dipRate !== Number.POSITIVE_INFINITY) this.followDips(now);
    const heldMs = this.hold.waitMs(now);
    if (heldMs !== undefined) return heldMs;
    this.refill(now);
    if (this.tokens >= 1) return 0;
    return Math.ceil(((1 - this.tokens) / this.effectiveRate()) * 1000);
  }

  /** True when a request may start now. */
  free(now: number): boolean {
    return this.inFlight < Math.floor(this.limit) && this.waitMs(now) === 0;
  }

  /** True when the in-flight limit leaves room for one more. */
  hasRoom(): boolean {
    return this.inFlight < Math.floor(this.limit);
  }

  /** A request starts now (after {@link free}). */
  take(now: number): void {
    const held = this.hold.holds(now);
    if (held) this.hold.probeSent(now, this.latencyMs);
    this.inFlight += 1;
    // A probe is the hold's, not the pace's: taking tokens, a hold's probes left a slow pace owing seconds of them when it ended.
    if (!held && this.effectiveRate() !== Number.POSITIVE_INFINITY) this.tokens -= 1;
    this.meter.started(now);
  }

  /** A request that never went gives its slot back, without a verdict. */
  giveBack(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }

  /** True when a record received for the first time may start now as a long hold's probe ({@link EndpointHold.freshProbeDue}). */
  freshProbeDue(now: number): boolean {
    return this.hold.freshProbeDue(now) && this.hasRoom();
  }

  /** When the answer to a long hold's probe now out is due, if that is still to come ({@link EndpointHold.probeAnswerDueAt}). */
  probeAnswerDueAt(now: number): number | undefined {
    return this.hold.probeAnswerDueAt(now, this.latencyMs);
  }

  /** True in a long hold (one that is probed), a probe due or not. */
  inLongHold(now: number): boolean {
    return this.hold.isLong(now);
  }

  /** A record a long hold kept from starting ({@link EndpointHold.keptBackOne}). */
  keptBackInHold(now: number): void {
    this.hold.keptBackOne(now);
  }

  /** When the hold ends (ms), or 0. */
  get heldUntilMs(): number {
    return this.hold.endsAt;
  }

  /** True once this pace has been cut or held: it paces to its own refusals. */
  pacedAt(now: number): boolean {
    return this.rate !== Number.POSITIVE_INFINITY || this.hold.holds(now);
  }

  /** True in a long hold (one that is probed) when no probe is due: a request is not to wait for it. */
  heldLong(now: number): boolean {
    return this.hold.keepsBack(now);
  }

  /**
   * Ends a request started with {@link take} and adapts the pace to its answer.
   * @returns the end of a hold this answer began (ms), else undefined
   */
  answered(answer: PacedAnswer, now: number): number | undefined {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.latencyMs = this.latencyMs === 0 ? answer.latencyMs : this.latencyMs * 0.8 + answer.latencyMs * 0.2;
    if (this.latency.answered(answer.latencyMs, this.limit, this.slowStart, now)) this.slowStart = false;
    if (answer.timedOut === true) this.cutInFlightForTimeout(now);
    if (answer.signal === 'slow-down' && this.givenRateBinds()) this.shiftPhase(now);
    if (!this.limits.adaptive) return undefined;
    // A probe taken ends the hold, and the pace is what it was before it (the refusals were the refused messages' own business,
    // or are over).
    if (this.hold.probeAnswered(answer.signal === 'accepted', now)) {
      this.refill(now);
      this.rate = Math.max(this.rate, this.hold.paceBefore);
      this.cutFrom = Number.POSITIVE_INFINITY;
    }
    if (answer.quota !== undefined) this.applyQuota(answer.quota, now);
    const { signal } = answer;
    if (signal === 'neutral') {
      // The webhook answered something else than "slow down": not a webhook refusing everything.
      this.run = undefined;
      return undefined;
    }
    const refused = signal === 'slow-down';
    // A long wait named is that message's (a tenant over its hourly quota, a record the webhook cannot take yet), or the whole
    // webhook's for a while: the hold's business, never the pace's. The webhook answered it at once, so the slow start goes on.
    if (refused && answer.retryAfterSeconds !== undefined && isLongWait(answer.retryAfterSeconds)) {
      this.growInFlight();
      // Refused before, or kept back by a hold before: refused again, it says no more than it did then (a tenant's backlog
      // back from the queue every `Retry-After` would otherwise hold the endpoint, and the other tenants' records, for ever).
      if (answer.receivedBefore === true) return undefined;
      return this.noteRefusal(answer.retryAfterSeconds, answer.messageId, now, false);
    }
    const firstTime = answer.receivedBefore !== true;
    this.cleanStart.answered(refused, firstTime, now);
    if (refused) this.meter.refused(now, firstTime);
    else this.meter.accepted(now, firstTime);
    if (!firstTime) this.learnReturnedShare(refused, now);
    else if (!refused) this.floor.firstTaken(now);
    const doubt = this.doubt;
    const verdict = doubt?.count(refused, now - answer.latencyMs);
    // A verdict when the counts allow one: a share that fell in the dips, beyond the noise, is congestion; one that did not is
    // the floor (the pace goes back to where it was when the doubt began).
    if (doubt !== undefined && verdict !== undefined) this.conclude(doubt, verdict, now);
    if (refused) this.cutIfCongested(now);
    else {
      this.noteAcceptance();
      this.followFloorDown(now);
      this.speedUp(now);
    }
    if (!refused || answer.retryAfterSeconds === undefined) return undefined;
    return this.noteRefusal(answer.retryAfterSeconds, answer.messageId, now, !firstTime);
  }

  /**
   * A refusal with a `Retry-After` adds to the run of them (lambda/refusal-run.ts). A run of ten different messages with few
   * acceptances among them (a fifth at most) holds the pace for the shortest `Retry-After` among them: at once when that is
   * short (a quick hold, 5 s at most: a token bucket far below what is sent), and only once the run has lasted 2 s or counted
   * 200 messages when it is long (a backlog of one tenant's messages all refused for an hour mostly passes sooner than that; a
   * webhook that refuses everything for an hour does not; a longer backlog is held, and its probes soon reach the other
   * tenants' records).
   */
  private noteRefusal(retryAfterSeconds: number, messageId: string | undefined, now: number, receivedBefore: boolean): number | undefined {
    this.run ??= new RefusalRun(now, retryAfterSeconds);
    const run = this.run;
    this.recentRefusals ??= new RecentRefusals();
    run.refused(retryAfterSeconds, messageId === undefined || !this.recentRefusals.seen(messageId), receivedBefore);
    if (!run.enough(now)) return undefined;
    // No quick hold while the first receives are taken. A run mostly of messages back from the queue, refused again, is a
    // tenant's, come back together. Any other run, on SURE_ANSWERS first receives in the last second, is refusals at random
    // that bunched (a third refused at random makes such a run now and then, and the hold left that container crawling). A
    // pace answered fewer times in the last second (a young one, a slow one) is held: a token bucket's first flood looks so.
    const { mostlyBack } = run;
    if (!isLongWait(run.shortestRetryAfterSeconds) && this.firstReceivesTaken(now, mostlyBack ? FEWEST_ANSWERS : SURE_ANSWERS))
      return undefined;
    // Nor such a run while what those messages met before explains their refusals (see returnedExplains).
    if (
      mostlyBack &&
      !isLongWait(run.shortestRetryAfterSeconds) &&
      this.floor.returnedExplains(now, this.meter.read(now, MEASURE_MS, MIN_ANSWERS))
    )
      return undefined;
    this.run = undefined;
    // A long hold lasts no more than LONG_HOLD_SECONDS, and is probed: one tenant's backlog refused for an hour holds
    // nothing for long; a webhook refusing everything for an hour is asked again, slowly (the pace starts again from what it
    // took, nothing): a few times a second from all the containers.
    const seconds = Math.min(run.shortestRetryAfterSeconds, LONG_HOLD_SECONDS);
    this.climbingAfterQuickHold = !isLongWait(seconds);
    const until = now + seconds * 1000;
    if (until <= this.hold.endsAt) return undefined;
    // Whatever it was in doubt of, a hold is no time to compare dips: it ends without a verdict, and may begin again.
    if (this.doubt !== undefined) this.dropDoubt(now);
    this.refill(now);
    const before = this.effectiveRate();
    this.cleanStart.over();
    this.hold.begin(now, until, isLongWait(seconds), before);
    this.restartAfterHold(now, before);
    return until;
  }

  /**
   * A hold began: when it ends the pace starts again from what the webhook took of late, or a quarter of the pace before
   * (at least the slowest pace), and doubles each second from there until refusals say where to stop (as TCP's slow start
   * after a timeout): what it sent before the hold was too much, and how much too much is not known.
   */
  private restartAfterHold(now: number, before: number): void {
    this.series = undefined;
    const reading = this.meter.read(now, TOOK_MS);
    // What the webhook took, or a quarter of the pace it had settled on before the run of holds.
    const paceBeforeHolds = this.hold.paceBefore;
    const settled = paceBeforeHolds === Number.POSITIVE_INFINITY ? 0 : paceBeforeHolds / 4;
    this.rate = Math.max(MIN_REQUESTS_PER_SECOND, Math.min(before, Math.max(reading.accepted / reading.seconds, settled)));
    this.loweredOnlyInDoubt = false;
    this.cutFrom = Number.POSITIVE_INFINITY;
    this.lastCutAt = now;
    this.tokens = Math.min(this.tokens, this.capacity());
  }

  /**
   * True when, over the last second (or back to {@link MIN_ANSWERS} of them, as far as the meter keeps), `fewest` messages
   * received for the first time, or more, were answered and fewer than {@link QUICK_HOLD_FIRST_TIME_SHARE} of them refused
   * (or no more than the floor explains): the webhook takes new messages. Batches mostly of a tenant's messages come back
   * hold few first receives: judged on the last second alone, a few seconds of them held everyone else's messages for that
   * tenant's refusals.
   */
  private firstReceivesTaken(now: number, fewest: number): boolean {
    const { refused, answers } = this.firstReceiveAnswers(now);
    return answers >= fewest && refused < Math.max(QUICK_HOLD_FIRST_TIME_SHARE, this.floor.explained()) * answers;
  }

  /**
   * Answers to messages received for the first time over the last `ms` (a second), or back to `minAnswers` of them
   * ({@link MIN_ANSWERS}; 4 s at most).
   */
  private firstReceiveAnswers(now: number, ms = MEASURE_MS, minAnswers = MIN_ANSWERS): RefusalCount {
    const firstTime = this.meter.read(now, ms, minAnswers, true);
    return { refused: firstTime.refused, answers: firstTime.accepted + firstTime.refused };
  }

  /**
   * Learns the refused share of messages back from the queue from one more answer to one, over a floor, outside a doubt
   * ({@link RefusalFloor.learnReturned}).
   */
  private learnReturnedShare(refused: boolean, now: number): void {
    if (this.floor.share === 0 || this.doubt !== undefined) return;
    this.floor.learnReturned(refused, this.firstReceiveAnswers(now, MEASURE_MS, 0));
  }

  /** An acceptance counts against the run of refusals; too many, and the run is over. */
  private noteAcceptance(): void {
    if (this.run?.countAcceptance() === false) this.run = undefined;
  }

  /**
   * A refusal: when the share of refusals over the last second is above the floor by more than the margin (and, over a floor,
   * the noise of so few answers), the pace is cut; but a share some floor could explain, with the floor not learned lately,
   * puts the pace in doubt instead, and the dips will tell.
   */
  private cutIfCongested(now: number): void {
    this.doubt?.refusedAt(now);
    if (now - this.lastCutAt < Math.max(MIN_CUT_INTERVAL_MS, 2 * this.latencyMs)) return;
    const floor = this.floor.share;
    const reading = this.meter.read(now, MEASURE_MS, floor === 0 ? MIN_ANSWERS : MIN_ANSWERS_OVER_FLOOR);
    const answers = reading.accepted + reading.refused;
    // No acceptance at all: a backlog of messages refused for their own sake, or the whole endpoint refusing (the hold's business).
    // A slow pace judges on fewer: all the meter keeps, if that is at least a few.
    if (answers < (reading.all ? FEWEST_ANSWERS : MIN_ANSWERS) || reading.accepted === 0) return;
    if (this.onlyTheReturnedRefused(now) || this.floor.returnedExplains(now, reading)) return;
    const judged = this.judgedAnswers(now, MEASURE_MS, floor === 0 ? MIN_ANSWERS : MIN_ANSWERS_OVER_FLOOR, reading);
    const share = judged.refused / judged.answers;
    // A calm pace: no cut nor hold in the last CALM_MS (the containers at one webhook are not coming down from a flood).
    const calm = now - Math.max(this.lastCutAt, this.hold.endsAt) >= CALM_MS;
    // Cut lately, with no floor, every refusal is congestion, as TCP takes every loss. Over a floor, on a calm pace, or paced
    // to what rate-limit headers allow (a window's edge refuses a few), only a share beyond the margin and its noise.
    const tolerant = floor > 0 || calm || this.quotaInForce() !== Number.POSITIVE_INFINITY;
    const expected = tolerant ? this.floor.explained() : 0;
    // A floor a doubt measured on a few dozen answers is that noisy itself: a tenth refused at random was now and then learned
    // as 5 %, and every bunch of refusals after it cut the pace, which then crawled back (docs/pacing.md, "Doubts and floors").
    const noise = tolerant ? SIGNIFICANT * Math.sqrt(expected * (1 - expected) * (1 / judged.answers + 1 / this.floor.answers)) : 0;
    if (share <= expected + noise) return;
    // A share some floor could explain, the floor not learned lately, and the pace calm: doubt rather than cut.
    const floorStale = this.floor.stale(now);
    // More than any floor: judged on the latest answers only (a backlog refused first, then taken, is no flood), and on a pace
    // that could still doubt, on enough of them (a fifth refused at random shows over half of 16 answers now and then, never of 32).
    if (share > MAX_FLOOR) {
      const latest = this.meter.read(now, SWAMPED_MS, SURE_ANSWERS);
      const latestAnswers = latest.accepted + latest.refused;
      if (latest.refused <= MAX_FLOOR * latestAnswers) return;
      if (floorStale && calm && latestAnswers < SURE_ANSWERS && !latest.all) return;
    }
    // A clean start's flood: the containers reached the webhook's rate together, and a doubt would wait for the next whole
    // second while they send at twice it. One begun and not yet dipping is dropped.
    const flood = this.inFlood(now);
    if (flood && this.doubt !== undefined && now < this.doubt.since) this.dropDoubt(now);
    if (share <= MAX_FLOOR && this.doubt === undefined && calm && floorStale && !this.climbingAfterQuickHold && !flood) {
      this.beginDoubt(now, reading);
      return;
    }
    const doubt = this.doubt;
    if (doubt !== undefined && share <= MAX_FLOOR) {
      this.cutInDoubt(doubt, now, reading);
      return;
    }
    // Swamped (over half refused of late): congestion, whatever a doubt begun before would say.
    if (doubt !== undefined) this.dropDoubt(now);
    if (this.persistsThroughCuts(now, reading.started / reading.seconds, judged, calm)) return;
    // A flood's cut is judged on the latest answers: over the last second, the ramp that led to it would take it far lower.
    this.cutTo(now, flood ? this.cutRate(now, this.meter.read(now, SWAMPED_MS), true) : this.cutRate(now, reading));
  }

  /**
   * True in a clean start's flood (lambda/clean-start.ts) while over {@link FLOOD_SHARE} of the latest answers are refused (the
   * last {@link SWAMPED_MS}, or back to {@link SURE_ANSWERS} of them: fewer, and a third refused at random shows it now and then).
   */
  private inFlood(now: number): boolean {
    if (!this.cleanStart.inFlood) return false;
    const latest = this.meter.read(now, SWAMPED_MS, SURE_ANSWERS);
    return latest.refused > FLOOD_SHARE * (latest.accepted + latest.refused);
  }

  /**
   * True when the messages received for the first time are too few to judge a share on ({@link MIN_ANSWERS}, over the last
   * second or as far back as the meter keeps) but at least {@link FEWEST_ANSWERS}, and refused no more than the floor explains:
   * the refusals are of messages back from the queue. One tenant's messages, refused every `Retry-After` for its quota, can fill
   * the batches while the others' come few and far between; judged on all answers, their refusals cut the pace, and a slower
   * pace receives the others' messages slower still (docs/pacing.md, "The share judged", has the figures). A token bucket
   * refuses first receives as often as the others; at the end of a backlog there are none.
   */
  private onlyTheReturnedRefused(now: number): boolean {
    const { refused, answers } = this.firstReceiveAnswers(now);
    return answers >= FEWEST_ANSWERS && answers < MIN_ANSWERS && refused <= this.floor.explained() * answers;
  }

  /**
   * The answers a share is judged on over the last `ms` (or more, until `minAnswers`): those to messages received for the first
   * time, when there are {@link MIN_ANSWERS} of them, else all of `reading`. A message refused before and back from the queue
   * is refused again for its own sake more often than not (a tenant over a quota of a few a second, its messages back every
   * `Retry-After`): counted, they would fill more of a slower pace and read as refusals that grow when it slows down. A token
   * bucket refuses first receives as often as the others.
   */
  private judgedAnswers(now: number, ms: number, minAnswers: number, reading: MeterReading): RefusalCount {
    const firstTime = this.firstReceiveAnswers(now, ms, minAnswers);
    if (firstTime.answers >= MIN_ANSWERS) return firstTime;
    return { refused: reading.refused, answers: reading.accepted + reading.refused };
  }

  /**
   * Cuts begun on an unpaced pace (or one lowered only in doubt) test what the dips would (a pace cut again and again is never
   * calm, so never doubts): once they have taken what it sends to 60 % of what it sent before the first or less, a refused
   * share over the last second that did not fall is a floor: the pace is unpaced again ({@link CutSeries.trial}). One that fell
   * is congestion: the cuts go on, tried again from there (to 40 %): once the congestion has passed, refusals a floor explains
   * would otherwise cut at every one, the pace never calm enough to doubt.
   * @returns true when the refusals persist (no cut)
   */
  private persistsThroughCuts(now: number, sentPerSecond: number, judged: RefusalCount, calm: boolean): boolean {
    if (this.series === undefined || calm) {
      // A series begins with the first cut on a calm pace; only one begun unpaced is tried (as for a doubt's end). A doubt's
      // own cuts do not count: a doubt that ended as congestion on the noise of its dips would leave the pace cut down and down.
      const unpaced = this.rate === Number.POSITIVE_INFINITY || this.loweredOnlyInDoubt;
      this.series = unpaced ? CutSeries.begin(now, sentPerSecond, judged) : undefined;
      return false;
    }
    const series = this.series;
    if (!series.due(now)) return false;
    const reading = this.meter.read(now, CUTS_TRIED_MS);
    const sent = reading.started / reading.seconds;
    if (!series.cutFarEnough(sent)) return false;
    const latest = this.judgedAnswers(now, CUTS_TRIED_MS, 0, reading);
    if (latest.answers < MIN_ANSWERS) return false;
    const trial = series.trial(now, sent, latest);
    if (trial === undefined) return false;
    if ('fell' in trial) {
      this.series = trial.fell;
      return false;
    }
    this.series = undefined;
    this.persists(Math.min(MAX_FLOOR, trial.persists), Number.POSITIVE_INFINITY, now);
    return true;
  }

  /** Puts the pace in doubt: from the next whole epoch of the clock it dips, and the dips will tell a floor from congestion. */
  private beginDoubt(now: number, reading: MeterReading): void {
    this.refill(now);
    const offered = Math.max(MIN_REQUESTS_PER_SECOND, reading.started / reading.seconds);
    this.doubt = new Doubt(now, this.rate, Math.min(this.effectiveRate(), OFFERED_HEADROOM * offered));
  }

  /**
   * In doubt, a share some floor could explain is no cut while the dips have time to tell (a fast pace's doubt ends within a
   * second or two); a slow pace's, longer, cuts after that, but only so far: at a congested webhook the dips will show it,
   * and refusals that persist must not take the pace down and down meanwhile.
   */
  private cutInDoubt(doubt: Doubt, now: number, reading: MeterReading): void {
    const offered = reading.started / reading.seconds;
    const lowest = doubt.cutsKeep(now, Math.min(this.effectiveRate(), OFFERED_HEADROOM * offered));
    if (lowest === undefined) return;
    const rate = Math.max(lowest, this.cutRate(now, reading));
    if (rate < this.rate) {
      this.refill(now);
      if (this.rate === Number.POSITIVE_INFINITY) this.loweredOnlyInDoubt = true;
      this.rate = rate;
      this.tokens = Math.min(this.tokens, this.capacity());
    }
  }

  /** Enters and leaves the dips with the clock while in doubt; ends a doubt that has gone quiet or on too long. */
  private followDips(now: number): void {
    const doubt = this.doubt;
    const over = doubt?.over(now);
    if (doubt !== undefined && over !== undefined) {
      if (over === 'quiet') {
        // The refusals stopped: no verdict, the floor stays as it was, judged again after FLOOR_KEPT_MS.
        this.endDoubt(now);
      } else {
        // Out of time. Unpaced when it began (no congestion seen, or none since persistence was learned), a share that did not
        // fall in the dips, on enough answers to have shown a fall, is persistence: without evidence the pace does not fall.
        // Paced (cut for congestion before), its dips too thin for a verdict (a slow pace's gather a few dozen answers in 5 s):
        // the floor stays, and stays stale, so the pace doubts again once calm. Counted as learned, every refusal above the old
        // floor cut for FLOOR_KEPT_MS, and a share refused at random took the pace down to where refusals come a second apart.
        // Unpaced, on fewer answers: no verdict, the floor judged again after FLOOR_KEPT_MS.
        if (doubt.verdict(true) === 'persists') this.conclude(doubt, 'persists', now);
        else if (!doubt.begunUnpaced) this.dropDoubt(now);
        else this.endDoubt(now);
      }
    }
    const dipping = this.doubt?.dipping(now) === true;
    if (dipping === (this.dipRate !== Number.POSITIVE_INFINITY)) return;
    this.refill(now);
    if (dipping) {
      const reading = this.meter.read(now, MEASURE_MS);
      const offered = Math.max(MIN_REQUESTS_PER_SECOND, reading.started / reading.seconds);
      this.dipRate = Math.max(MIN_REQUESTS_PER_SECOND, Math.min(this.effectiveRate(), OFFERED_HEADROOM * offered) * DIP_DEPTH);
      this.tokens = Math.min(this.tokens, this.capacity());
    } else this.dipRate = Number.POSITIVE_INFINITY;
  }

  /**
   * Ends a doubt with its verdict. Congestion: the floor is what is left in the dips, and the cuts go on as refusals come.
   * Persistence: the share is the floor, and the pace goes back to where it was when the doubt began.
   */
  private conclude(doubt: Doubt, verdict: Verdict, now: number): void {
    this.endDoubt(now);
    if (verdict === 'congestion') {
      this.floor.set(Math.min(this.floor.share, doubt.dipShare));
      return;
    }
    this.persists(doubt.share, doubt.rateBefore, now, doubt.answers);
  }

  /**
   * Refusals found to persist whatever the pace: their share is the floor, and the pace goes back to `rateBefore` (or above).
   * @param answers how many answers a doubt measured the share on ({@link RefusalFloor.answers}); none for a series of cuts,
   * whose share is one container's, weaker evidence at a token bucket shared with others
   */
  private persists(share: number, rateBefore: number, now: number, answers = Number.POSITIVE_INFINITY): void {
    this.floor.set(share, answers);
    this.floor.learned(now);
    this.refill(now);
    this.rate = Math.max(this.rate, rateBefore);
    this.lastCutAt = Number.NEGATIVE_INFINITY;
  }

  /** Leaves doubt (and its dip); the floor counts as learned now. */
  private endDoubt(now: number): void {
    this.dropDoubt(now);
    this.floor.learned(now);
  }

  /** Leaves doubt (and its dip), the floor left as it was. */
  private dropDoubt(now: number): void {
    this.doubt = undefined;
    if (this.dipRate !== Number.POSITIVE_INFINITY) {
      this.refill(now);
      this.dipRate = Number.POSITIVE_INFINITY;
    }
  }

  /**
   * The rate a cut goes to: {@link DECREASE_FACTOR} of the rate in force or of 1.25 × what was really sent, whichever is lower
   * (a limit far above what is sent would slow nothing down), and down to the rate the webhook took (less its floor's
   * refusals: at a token bucket, this container's part of its rate), but by half at most, so a run of refusals does not
   * collapse it.
   * @param latest `reading` is of the latest answers only (a flood's), and what they took counts as what the webhook took
   */
  private cutRate(now: number, reading: MeterReading, latest = false): number {
    this.refill(now);
    const current = this.effectiveRate();
    const offered = Math.max(MIN_REQUESTS_PER_SECOND, reading.started / reading.seconds);
    const base = Math.min(current, Math.max(OFFERED_HEADROOM * offered, current === Number.POSITIVE_INFINITY ? 0 : current / 2));
    // The most the webhook took in a second of late, less what it refuses at any rate: at a token bucket, this container's part
    // of its rate. A cut goes to it (as BBR's bandwidth estimate), by 15 % at least and half at most: refusals that do not fall
    // with the pace can cost their share at most, never send the pace down and down while the doubts tell what they are.
    const lastSecond = this.meter.read(now, 1000);
    const tookLately = latest ? reading.accepted / reading.seconds : 0;
    const took =
      (TOOK_SHARE * Math.max(this.meter.mostAcceptedInASecond(now), lastSecond.accepted / lastSecond.seconds, tookLately)) /
      (1 - this.floor.share);
    return Math.max(MIN_REQUESTS_PER_SECOND, Math.min(base * DECREASE_FACTOR, Math.max(took, base / 2)));
  }

  /** Cuts the adaptive rate to `rate`, and the in-flight limit. */
  private cutTo(now: number, rate: number): void {
    this.cleanStart.over();
    this.slowStart = false;
    this.climbingAfterQuickHold = false;
    this.limit = Math.max(1, this.limit * DECREASE_FACTOR);
    // At what the webhook took already: no lower, and the pace stays calm.
    if (rate >= this.rate * 0.999) return;
    this.refill(now);
    this.loweredOnlyInDoubt = false;
    this.cutFrom = Math.min(
      this.effectiveRate(),
      Math.max(rate / DECREASE_FACTOR, this.rate === Number.POSITIVE_INFINITY ? rate : this.rate),
    );
    this.rate = rate;
    this.lastCutAt = now;
    this.tokens = Math.min(this.tokens, this.capacity());
  }

  /** A floor learned from refusals that have since faded follows the share down ({@link RefusalFloor.followDown}). */
  private followFloorDown(now: number): void {
    if (this.floor.share === 0) return;
    this.floor.followDown(this.meter.read(now, MEASURE_MS, MIN_ANSWERS_OVER_FLOOR));
  }

  /**
   * A request timed out: the webhook takes fewer at once than are sent, and goes on with those the relay gave up on. The
   * in-flight limit halves, once per round trip, and the slow start ends.
   */
  private cutInFlightForTimeout(now: number): void {
    if (!this.limits.adaptive || now - this.timeoutCutAt < this.latencyMs) return;
    this.timeoutCutAt = now;
    this.slowStart = false;
    this.limit = Math.max(1, this.limit / 2);
  }

  /**
   * One more in flight per answer in the slow start, one more per round trip's worth of answers after it; none while requests
   * queue at the webhook, which ends the slow start.
   */
  private growInFlight(): void {
    if (this.latency.queueing) {
      this.slowStart = false;
      return;
    }
    this.limit = Math.min(this.limits.maxInFlight, this.limit + (this.slowStart ? 1 : 1 / this.limit));
  }

  private speedUp(now: number): void {
    this.growInFlight();
    // In doubt, the pace stays where it was: growing, it would add the congestion the dips are to tell from a floor.
    if (this.rate === Number.POSITIVE_INFINITY || this.doubt !== undefined) return;
    const sent = this.meter.read(now, MEASURE_MS);
    // Grown only while the limit is what holds the pace back, not its batches.
    if (this.rate >= (OFFERED_HEADROOM * sent.started) / sent.seconds) return;
    this.refill(now);
    // About `rate` acceptances a second, so the rate grows by max(1, share·rate) requests/s each second. Near the rate it was cut from (as TCP CUBIC, slowly around the last maximum), by no more per acceptance than a cut
    // takes per refusal at BALANCED_SHARE refused: a slow pace (a few requests a second) settles near that share there, not
    // where a second's growth outweighs a second's refusals.
    if (now - this.lastCutAt >= RECOVERY_MS || this.cutFrom === Number.POSITIVE_INFINITY) this.rate += Math.max(1 / this.rate, 1);
    // Rate-limit headers that allow more say where the webhook's capacity is: grown at the full pace up to it.
    else if (this.rate < NEAR_LAST_CUT * Math.max(this.cutFrom, this.quotaRate === Number.POSITIVE_INFINITY ? 0 : this.quotaRate))
      this.rate += Math.max(1 / this.rate, INCREASE_SHARE);
    else this.rate += Math.min(Math.max(1 / this.rate, INCREASE_SHARE), BALANCED_GROWTH * this.rate);
    if (this.rate > UNPACED_ABOVE) this.rate = Number.POSITIVE_INFINITY;
    const ceiling = this.limits.maxRequestsPerSecond;
    if (ceiling !== undefined) this.rate = Math.min(this.rate, ceiling);
  }

  /**
   * Paces to what rate-limit headers allow this container: its part ({@link PaceLimits.sharedBy}) of the quota per window and,
   * over a long reset, of what remains of it until the reset; none of it left, nothing until the reset, then the quota per
   * window again (what remained was of the window that ended: spread past it, a spent quota kept the pace at a request an hour).
   */
  private applyQuota(quota: Quota, now: number): void {
    const shares = this.limits.sharedBy;
    const { remaining, resetSeconds, limit, windowSeconds } = quota;
    let rate = Number.POSITIVE_INFINITY;
    if (limit !== undefined && windowSeconds !== undefined && windowSeconds > 0) rate = limit / windowSeconds;
    else if (limit !== undefined && resetSeconds !== undefined && resetSeconds >= QUOTA_SPREAD_MIN_SECONDS) rate = limit / resetSeconds;
    // This container's part of what is left is under one request: nothing more until the reset (less the second a whole
    // number of seconds may round up: the window may end sooner than it says, never later).
    const spent = remaining !== undefined && resetSeconds !== undefined && remaining < shares;
    const spread =
      !spent && remaining !== undefined && resetSeconds !== undefined && resetSeconds >= QUOTA_SPREAD_MIN_SECONDS
        ? remaining / resetSeconds
        : Number.POSITIVE_INFINITY;
    this.refill(now);
    // Kept to even below the adaptive pace's slowest: an hourly quota nearly spent may allow a request a minute.
    if (rate !== Number.POSITIVE_INFINITY) {
      this.quotaRate = Math.max(1 / 3600, (QUOTA_HEADROOM * rate) / shares);
      this.quotaUntil = now + Math.max(QUOTA_KEPT_MS, 2000 * (windowSeconds ?? resetSeconds ?? 0));
    }
    this.spreadRate = spread === Number.POSITIVE_INFINITY ? spread : Math.max(1 / 3600, (QUOTA_HEADROOM * spread) / shares);
    this.spreadUntil = resetSeconds === undefined ? 0 : now + resetSeconds * 1000;
    this.tokens = Math.min(this.tokens, this.capacity());
    if (spent && resetSeconds > 1) this.hold.extendTo(now + (resetSeconds - 1) * 1000);
  }

  /** The reset that what remained was spread to has come: the quota per window, if any, binds alone. */
  private expireSpread(now: number): void {
    this.refill(now);
    this.spreadRate = Number.POSITIVE_INFINITY;
  }

  /** The answers stopped carrying rate-limit headers long enough ago: what they said no longer binds. */
  private expireQuota(now: number): void {
    this.refill(now);
    this.quotaRate = Number.POSITIVE_INFINITY;
  }

  /** The pace now. */
  snapshot(): PaceSnapshot {
    const rate = this.effectiveRate();
    return { requestsPerSecond: rate === Number.POSITIVE_INFINITY ? undefined : rate, inFlightLimit: Math.floor(this.limit) };
  }

  /** What the answers take of late, ms (a moving average of the latest; 0 before the first). */
  get typicalLatencyMs(): number {
    return this.latencyMs;
  }

  /** The refused share learned to persist whatever the pace (0 to 1). */
  get refusalFloor(): number {
    return this.floor.share;
  }
}
