/**
 * The circuit breaker (docs/contract.md, "Outages"): once the webhook is clearly down, stop sending, hand
 * records back for a while, and let one probe through per interval.
 *
 *   closed ──(the webhook failing every request: see below)──▶ open
 *   open ──(probe interval elapsed: one probe)──▶ half-open
 *   half-open ──probe answered normally──▶ closed
 *   half-open ──probe failed──▶ open, the next probe one interval later
 *
 * While the probe is in flight, other requests wait for its verdict rather than being held at
 * once: if the webhook is back they go out in the same invocation instead of spending a receive.
 *
 * What opens it: `OUTAGE_THRESHOLD` outage signs in a row (connection errors, DNS, timeouts,
 * garbage instead of HTTP, 502/503/504 without `Retry-After`); or as many server errors in a row
 * (a `500` too) that go on for {@link FAILING_SPAN_MS} with nothing else answered in between, from
 * two different messages at least. A `500` alone may be one message's fault, so it takes the time
 * and another message as well as the count: a burst of one tenant's failing messages is over long
 * before, one message back every second with its `500` is that message's alone, while a webhook
 * failing everything fails every message. A webhook that answers otherwise (2xx, 3xx, 4xx, 429 or
 * 503 with `Retry-After`) is up, whatever it thinks of the message, and closes it.
 *
 * The probe interval is fixed (`OUTAGE_BACKOFF_SECONDS`), so the webhook's return is noticed within
 * one; the records held back stay away longer as the outage goes on (a quarter of its length so
 * far, within the interval … `OUTAGE_BACKOFF_MAX_SECONDS`), so that a long outage does not spend
 * their receives. State lives for the warm container, across invocations.
 */
import type { WebhookResult } from './transmitter';

/** How the breaker behaves (`OUTAGE_*`). */
export interface BreakerSettings {
  /** Failures in a row that open the breaker; 0 switches the breaker off. */
  readonly threshold: number;
  /** `OUTAGE_BACKOFF_SECONDS`: one probe per this many seconds while open, and the shortest hold. */
  readonly probeIntervalSeconds: number;
  /** `OUTAGE_BACKOFF_MAX_SECONDS`: the longest hold, seconds. */
  readonly maxHoldSeconds: number;
}

/** What the breaker allows for the next request: `wait` means ask again once {@link CircuitBreaker.probeSettled} resolves. */
export type Permit = 'send' | 'probe' | 'hold' | 'wait';

/** A change of state worth telling the operator about. */
export type BreakerTransition =
  | { readonly kind: 'opened'; readonly holdSeconds: number; readonly probeIntervalSeconds: number; readonly failures: number }
  | { readonly kind: 'reopened'; readonly holdSeconds: number; readonly openSeconds: number }
  | { readonly kind: 'closed'; readonly openSeconds: number };

/**
 * How long server errors (a `500` among them) must go on, with nothing else answered, before they open the breaker:
 * longer than a burst of one tenant's failing messages takes at any pace worth pacing.
 */
export const FAILING_SPAN_MS = 5_000;
/** A held record stays away this share of how long the breaker has been open (within the probe interval … the longest hold). */
export const HOLD_SHARE_OF_OUTAGE = 0.25;

/** True when `result` says the webhook is unreachable rather than answering. */
export function isOutage(result: WebhookResult): boolean {
  if (result.kind === 'transport-error') return result.error !== 'invalid-request';
  return (result.status === 502 || result.status === 503 || result.status === 504) && result.retryAfter === undefined;
}

/** True when `result` is an outage sign or a server error (5xx) that names no time to come back: a webhook down or failing. */
export function isServerFailure(result: WebhookResult): boolean {
  if (result.kind === 'transport-error') return isOutage(result);
  const { status } = result;
  return status >= 500 && status <= 599 && !(status === 503 && result.retryAfter !== undefined);
}

/** Under SQS's count semantics, each receive's hold is this many times the last one's. */
export const COUNTED_HOLD_GROWTH = 3;

/**
 * The hold of a record on its `receiveCount`-th receive under SQS's count semantics (the retry window off), where
 * every hold spends one of its receives: the probe interval tripled per receive (10, 30, 90, 270, 810 s), up to the
 * longest hold. So that SQS's common count of 5 rides out about 20 minutes of outage (1,210 s), while the first
 * holds, short, bring a short outage's backlog back soon.
 */
export function countedHoldSeconds(settings: BreakerSettings, receiveCount: number): number {
  const steps = Math.max(0, Math.min(30, Math.floor(receiveCount) - 1)); // 3³⁰ intervals is past any cap
  return Math.min(settings.maxHoldSeconds, settings.probeIntervalSeconds * COUNTED_HOLD_GROWTH ** steps);
}

/** One webhook's breaker. */
export class CircuitBreaker {
  private state: 'closed' | 'open' | 'half-open' = 'closed';
  /** Outage signs in a row. */
  private outagesInARow = 0;
  /** Server failures (outage signs included) in a row, and when the first of them was answered. */
  private failuresInARow = 0;
  private failingSince = 0;
  /** Of the messages those failures were answered for, the first two different ones (two are enough to tell). */
  private readonly failingMessages = new Set<string>();
  private openedAt = 0;
  private nextProbeAt = 0;
  private probe: { readonly settled: Promise<void>; readonly settle: () => void } | undefined;

  constructor(private readonly settings: BreakerSettings) {}

  /** Whether the next request may go: always while closed; one probe per interval while open. */
  permit(nowMs: number): Permit {
    if (this.settings.threshold === 0 || this.state === 'closed') return 'send';
    if (this.state === 'half-open') return 'wait';
    if (nowMs >= this.nextProbeAt) {
      this.state = 'half-open';
      let settle = (): void => undefined;
      const settled = new Promise<void>((resolve) => {
        settle = resolve;
      });
      this.probe = { settled, settle };
      return 'probe';
    }
    return 'hold';
  }

  /** Resolves once the probe in flight has its verdict (at once when there is none). */
  probeSettled(): Promise<void> {
    return this.probe?.settled ?? Promise.resolve();
  }

  /** The probe never reached the webhook (no time, no secret): open again, probe again soon. */
  abandonProbe(nowMs: number): void {
    if (this.state !== 'half-open') return;
    this.state = 'open';
    this.nextProbeAt = nowMs;
    this.settleProbe();
  }

  private settleProbe(): void {
    this.probe?.settle();
    this.probe = undefined;
  }

  /**
   * The visibility, seconds, for a record held back while open: a quarter of how long the breaker has been open,
   * at least the probe interval and at most the longest hold. Short at first, so that the records are back soon
   * after a short outage; longer as it goes on, so that a long one does not spend their receives.
   */
  holdSeconds(nowMs: number): number {
    const { probeIntervalSeconds, maxHoldSeconds } = this.settings;
    const share = Math.round(((nowMs - this.openedAt) / 1000) * HOLD_SHARE_OF_OUTAGE);
    return Math.min(maxHoldSeconds, Math.max(probeIntervalSeconds, share));
  }

  /**
   * The breaker's hold for one record, seconds: {@link holdSeconds} or, under SQS's count semantics (`countsReceives`: the
   * retry window off, so that every hold spends one of the record's receives), at least the hold its receive count calls for.
   */
  recordHoldSeconds(nowMs: number, receiveCount: number, countsReceives: boolean): number {
    const hold = this.holdSeconds(nowMs);
    if (!countsReceives) return hold;
    return Math.max(hold, countedHoldSeconds(this.settings, receiveCount));
  }

  /** Seconds the breaker has been open, or `undefined` while closed. */
  openSeconds(nowMs: number): number | undefined {
    return this.state === 'closed' ? undefined : Math.round((nowMs - this.openedAt) / 1000);
  }

  /**
   * Records a request's result; returns the transition it caused, if any.
   * @param wasProbe whether the request was the half-open probe
   * @param messageId the message it was for (each request counts as a different message when not given)
   */
  record(result: WebhookResult, wasProbe: boolean, nowMs: number, messageId?: string): BreakerTransition | undefined {
    if (this.settings.threshold === 0) return undefined;
    if (!isServerFailure(result)) {
      this.outagesInARow = 0;
      this.failuresInARow = 0;
      if (this.state === 'closed') return undefined;
      // Any normal answer, the probe's or a request started before the breaker opened, shows the webhook is back.
      const openSeconds = Math.round((nowMs - this.openedAt) / 1000);
      this.state = 'closed';
      this.settleProbe();
      return { kind: 'closed', openSeconds };
    }
    this.outagesInARow = isOutage(result) ? this.outagesInARow + 1 : 0;
    if (this.failuresInARow === 0) {
      this.failingSince = nowMs;
      this.failingMessages.clear();
    }
    this.failuresInARow += 1;
    if (this.failingMessages.size < 2) this.failingMessages.add(messageId ?? `request ${this.failuresInARow}`);
    if (this.state === 'closed') {
      const { threshold } = this.settings;
      const failing = this.failuresInARow >= threshold && nowMs - this.failingSince >= FAILING_SPAN_MS && this.failingMessages.size >= 2;
      if (this.outagesInARow < threshold && !failing) return undefined;
      this.state = 'open';
      this.openedAt = nowMs;
      this.nextProbeAt = nowMs + this.settings.probeIntervalSeconds * 1000;
      return {
        kind: 'opened',
        holdSeconds: this.holdSeconds(nowMs),
        probeIntervalSeconds: this.settings.probeIntervalSeconds,
        failures: this.failuresInARow,
      };
    }
    if (wasProbe && this.state === 'half-open') {
      this.state = 'open';
      this.nextProbeAt = nowMs + this.settings.probeIntervalSeconds * 1000;
      this.settleProbe();
      return { kind: 'reopened', holdSeconds: this.holdSeconds(nowMs), openSeconds: Math.round((nowMs - this.openedAt) / 1000) };
    }
    return undefined; // a request that was already in flight when the breaker opened
  }
}
