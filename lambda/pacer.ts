/**
 * Pacing (docs/webhook-owners.md, "Back-pressure"): each container's pace toward the webhook,
 * requests per second and requests in flight, adapted to what the webhook answers. Slower at once
 * (multiplicative decrease) on `429`, `503`, `504`, `408` and timeouts; faster little by little
 * (additive increase) on success; never above `MAX_CONCURRENCY` in flight nor above this
 * container's share of `MAX_REQUESTS_PER_SECOND`. When refusals with a `Retry-After` come several
 * in a row, the whole endpoint is held until it has passed. Like the circuit breaker, a pacer
 * lives for the warm container, across invocations.
 */
import type { WebhookResult } from './transmitter';

/** How a container paces its requests. */
export interface PacingSettings {
  /** `PACING`: adapt the pace to the webhook's answers; when false only the two ceilings apply. */
  readonly adaptive: boolean;
  /** `MAX_CONCURRENCY`: requests in flight at once, at most. */
  readonly maxInFlight: number;
  /** This container's share of `MAX_REQUESTS_PER_SECOND`; `undefined`: no ceiling. */
  readonly maxRequestsPerSecond: number | undefined;
}

/** What one answer says about the pace. */
export type PaceSignal = 'accepted' | 'slow-down' | 'neutral';

/** The pace as of now, for metrics and logs. */
export interface PaceSnapshot {
  /** The requests-per-second limit; `undefined` while unpaced. */
  readonly requestsPerSecond: number | undefined;
  readonly inFlightLimit: number;
}

/** Multiplicative decrease: the pace kept after a slow-down signal (as TCP CUBIC's β). */
export const DECREASE_FACTOR = 0.85;
/** Additive increase per second of accepted requests, as a share of the rate (at least 1 request/s per second). */
export const INCREASE_SHARE = 0.25;
/** After this long without a slow-down signal the pace doubles each second (as TCP's slow start), so one stray `429` costs little. */
export const RECOVERY_MS = 10_000;
/** A rate limit above this many requests per second is no limit: the container is unpaced again. */
const UNPACED_ABOVE = 10_000;
/** How far above the rate it really sends a container's limit may be (decreases start from it; increases stop at it). */
const OFFERED_HEADROOM = 1.25;
/** The slowest pace adaptation goes to, requests per second. */
export const MIN_REQUESTS_PER_SECOND = 0.5;
/** Refusals with a `Retry-After` in a row after which the whole endpoint is held for it. */
export const HOLD_AFTER_REFUSALS = 5;
/** The longest burst the token bucket allows, in seconds of its rate (at least one request): a tenth of a second of the adaptive pace, */
const BURST_SECONDS = 0.1;
/** … and a hundredth of a second of the owner's ceiling, when that is what binds. */
const CEILING_BURST_SECONDS = 0.01;
/** The window over which rates are measured, ms, in {@link METER_SLOTS} slots. */
const MEASURE_MS = 1_000;
const METER_SLOTS = 10;
/** At most one decrease per this many ms, or per two round trips if longer: the answers to one burst are one signal. */
const MIN_DECREASE_INTERVAL_MS = 100;

/** What an answer says about the pace: a slow-down signal, an acceptance, or nothing either way. */
export function paceSignalOf(result: WebhookResult): PaceSignal {
  if (result.kind === 'transport-error') return result.error === 'timeout' ? 'slow-down' : 'neutral';
  const { status } = result;
  if (status >= 200 && status <= 299) return 'accepted';
  return status === 429 || status === 503 || status === 504 || status === 408 ? 'slow-down' : 'neutral';
}

/** Events per second over the last {@link MEASURE_MS}: counts in fixed slots, so adding one costs no allocation. */
class RateMeter {
  private readonly counts = new Float64Array(METER_SLOTS);
  private slot = 0;
  private firstAt: number | undefined;

  private advance(now: number): void {
    const slot = Math.floor(now / (MEASURE_MS / METER_SLOTS));
    for (let s = Math.max(this.slot + 1, slot - METER_SLOTS + 1); s <= slot; s += 1) this.counts[s % METER_SLOTS] = 0;
    if (slot > this.slot) this.slot = slot;
  }

  add(now: number): void {
    this.advance(now);
    this.counts[this.slot % METER_SLOTS] = (this.counts[this.slot % METER_SLOTS] ?? 0) + 1;
    this.firstAt ??= now;
  }

  /** Per second, over the last second or, for a younger meter, since its first event (at least one slot). */
  perSecond(now: number): number {
    this.advance(now);
    let total = 0;
    for (const count of this.counts) total += count;
    const over = Math.max(MEASURE_MS / METER_SLOTS, Math.min(MEASURE_MS, now - (this.firstAt ?? now)));
    return (total * 1000) / over;
  }
}

interface Waiter {
  readonly resolve: (started: boolean) => void;
  readonly deadlineMs: number;
}

/** One container's pace toward one webhook. */
export class Pacer {
  private inFlight = 0;
  /** The in-flight limit, fractional while it grows. */
  private limit: number;
  /** The adaptive requests-per-second limit; `Infinity` until the webhook first asks to slow down. */
  private rate = Number.POSITIVE_INFINITY;
  private tokens = 1;
  private refilledAt: number;
  private heldUntil = 0;
  private refusedInARow = 0;
  private lastDecreaseAt = Number.NEGATIVE_INFINITY;
  private latencyMs = 0;
  private readonly started = new RateMeter();
  private readonly waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private refused = 0;

  constructor(
    private readonly settings: PacingSettings,
    private readonly clock: () => number = Date.now,
  ) {
    this.limit = settings.maxInFlight;
    this.refilledAt = clock();
    this.tokens = this.capacity();
  }

  /** The rate in force: the adaptive one under this container's ceiling. */
  private effectiveRate(): number {
    return Math.min(this.rate, this.settings.maxRequestsPerSecond ?? Number.POSITIVE_INFINITY);
  }

  private capacity(): number {
    const ceiling = this.settings.maxRequestsPerSecond;
    // The owner's ceiling is kept to the request; the adaptive pace lets a batch's gap be made up.
    const burst = ceiling !== undefined && ceiling <= this.rate ? CEILING_BURST_SECONDS : BURST_SECONDS;
    return Math.max(1, this.effectiveRate() * burst);
  }

  private refill(now: number): void {
    const rate = this.effectiveRate();
    if (rate === Number.POSITIVE_INFINITY) {
      this.tokens = 1;
    } else {
      this.tokens = Math.min(this.capacity(), this.tokens + ((now - this.refilledAt) / 1000) * rate);
    }
    this.refilledAt = now;
  }

  /** Ms until a request may start (0: now), ignoring the in-flight limit. */
  private waitMs(now: number): number {
    if (now < this.heldUntil) return this.heldUntil - now;
    this.refill(now);
    if (this.tokens >= 1) return 0;
    return Math.ceil(((1 - this.tokens) / this.effectiveRate()) * 1000);
  }

  private take(now: number): void {
    this.inFlight += 1;
    if (this.effectiveRate() !== Number.POSITIVE_INFINITY) this.tokens -= 1;
    this.started.add(now);
  }

  /**
   * A slot for one request: `true` at once when one is free (no await), otherwise a promise of
   * `true` once one is, or `false` if none is before `deadlineMs`. Waiters start in arrival order.
   */
  acquire(deadlineMs: number): true | Promise<boolean> {
    const now = this.clock();
    if (this.waiters.length === 0 && this.inFlight < Math.floor(this.limit) && this.waitMs(now) === 0) {
      this.take(now);
      return true;
    }
    // A hold that outlasts the deadline: the record goes back to the queue for the hold (see holdRemainingSeconds).
    if (now >= deadlineMs || this.heldUntil > deadlineMs) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      this.waiters.push({ resolve, deadlineMs });
      this.pump();
    });
  }

  /** Starts whichever waiters may start now, gives up on those past their deadline, and sets a timer for the rest. */
  private pump(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const now = this.clock();
    for (let i = this.waiters.length - 1; i >= 0; i -= 1) {
      const waiter = this.waiters[i] as Waiter;
      if (now >= waiter.deadlineMs) {
        this.waiters.splice(i, 1);
        waiter.resolve(false);
      }
    }
    while (this.waiters.length > 0 && this.inFlight < Math.floor(this.limit)) {
      const wait = this.waitMs(now);
      if (wait > 0) {
        const earliestDeadline = Math.min(...this.waiters.map((w) => w.deadlineMs));
        this.timer = setTimeout(() => this.pump(), Math.max(1, Math.min(wait, earliestDeadline - now)));
        return;
      }
      this.take(now);
      (this.waiters.shift() as Waiter).resolve(true);
    }
    if (this.waiters.length > 0) {
      // Waiting on a free slot, which release() signals; the timer only enforces the deadlines.
      const earliestDeadline = Math.min(...this.waiters.map((w) => w.deadlineMs));
      this.timer = setTimeout(() => this.pump(), Math.max(1, earliestDeadline - now));
    }
  }

  /**
   * Ends a request started with {@link acquire} and adapts the pace to its answer.
   * @param retryAfterSeconds the answer's `Retry-After`, when it named one
   * @param now when it was answered, if the caller has read the clock already
   */
  release(signal: PaceSignal, latencyMs: number, retryAfterSeconds?: number, now: number = this.clock()): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.latencyMs = this.latencyMs === 0 ? latencyMs : this.latencyMs * 0.8 + latencyMs * 0.2;
    if (signal === 'slow-down') this.refused += 1;
    if (this.settings.adaptive) {
      if (signal === 'accepted') this.speedUp(now);
      else if (signal === 'slow-down') this.slowDown(now, retryAfterSeconds);
    }
    if (this.waiters.length > 0) this.pump();
  }

  private speedUp(now: number): void {
    this.refusedInARow = 0;
    this.limit = Math.min(this.settings.maxInFlight, this.limit + 1 / this.limit);
    // Grown only while the limit is what holds the container back, not its batches.
    if (this.rate !== Number.POSITIVE_INFINITY && this.rate < OFFERED_HEADROOM * this.started.perSecond(now)) {
      this.refill(now);
      // About `rate` acceptances a second, so the rate grows by max(1, share·rate) requests/s each second.
      const share = now - this.lastDecreaseAt >= RECOVERY_MS ? 1 : INCREASE_SHARE;
      this.rate += Math.max(1 / this.rate, share);
      if (this.rate > UNPACED_ABOVE) this.rate = Number.POSITIVE_INFINITY;
      const ceiling = this.settings.maxRequestsPerSecond;
      if (ceiling !== undefined) this.rate = Math.min(this.rate, ceiling);
    }
  }

  private slowDown(now: number, retryAfterSeconds: number | undefined): void {
    this.refusedInARow += 1;
    if (retryAfterSeconds !== undefined && this.refusedInARow >= HOLD_AFTER_REFUSALS) {
      this.heldUntil = Math.max(this.heldUntil, now + retryAfterSeconds * 1000);
    }
    if (now - this.lastDecreaseAt < Math.max(MIN_DECREASE_INTERVAL_MS, 2 * this.latencyMs)) return;
    this.lastDecreaseAt = now;
    this.refill(now);
    // Decrease from what was really sent: a limit far above it (the batches, not the pace, were
    // what held the container back) would not slow anything down.
    const offered = Math.max(MIN_REQUESTS_PER_SECOND, this.started.perSecond(now));
    const current = this.effectiveRate();
    const base = Math.min(current, Math.max(OFFERED_HEADROOM * offered, current === Number.POSITIVE_INFINITY ? 0 : current / 2));
    this.rate = Math.max(MIN_REQUESTS_PER_SECOND, base * DECREASE_FACTOR);
    this.limit = Math.max(1, this.limit * DECREASE_FACTOR);
    this.tokens = Math.min(this.tokens, this.capacity());
  }

  /** Seconds left of the endpoint's hold (0: none): how long a record the hold kept from starting should stay away. */
  holdRemainingSeconds(): number {
    return Math.max(0, Math.ceil((this.heldUntil - this.clock()) / 1000));
  }

  /** The pace now. */
  snapshot(): PaceSnapshot {
    const rate = this.effectiveRate();
    return { requestsPerSecond: rate === Number.POSITIVE_INFINITY ? undefined : rate, inFlightLimit: Math.floor(this.limit) };
  }

  /** Slow-down answers since the last call (for the per-batch metric). */
  takeRefusedCount(): number {
    const refused = this.refused;
    this.refused = 0;
    return refused;
  }
}
