/**
 * The circuit breaker (docs/contract.md, "Outages"): once the webhook is clearly down, stop sending, hand
 * records back with a growing visibility, and let one probe through per interval.
 *
 *   closed ──(OUTAGE_THRESHOLD outage failures in a row)──▶ open
 *   open ──(interval elapsed: one probe)──▶ half-open
 *   half-open ──probe answered normally──▶ closed
 *   half-open ──probe failed like an outage──▶ open, interval doubled (up to the maximum)
 *
 * While the probe is in flight, other requests wait for its verdict rather than being held at
 * once: if the webhook is back they go out in the same invocation instead of spending a receive.
 *
 * Only outage-type failures count: connection errors, DNS, timeouts, garbage instead of HTTP,
 * and 502/503/504 without `Retry-After`. A webhook that answers (2xx, 4xx, 500, 429 with
 * `Retry-After`) is up, whatever it thinks of the message, and never trips it.
 * State lives for the warm container, across invocations.
 */
import type { WebhookResult } from './transmitter';

/** How the breaker behaves (`OUTAGE_*`). */
export interface BreakerSettings {
  /** Outage failures in a row that open the breaker; 0 switches the breaker off. */
  readonly threshold: number;
  /** The first open interval, seconds. */
  readonly initialIntervalSeconds: number;
  /** The longest open interval, seconds. */
  readonly maxIntervalSeconds: number;
}

/** What the breaker allows for the next request: `wait` means ask again once {@link CircuitBreaker.probeSettled} resolves. */
export type Permit = 'send' | 'probe' | 'hold' | 'wait';

/** A change of state worth telling the operator about. */
export type BreakerTransition =
  | { readonly kind: 'opened'; readonly intervalSeconds: number; readonly failures: number }
  | { readonly kind: 'reopened'; readonly intervalSeconds: number; readonly openSeconds: number }
  | { readonly kind: 'closed'; readonly openSeconds: number };

/** True when `result` says the webhook is unreachable rather than answering. */
export function isOutage(result: WebhookResult): boolean {
  if (result.kind === 'transport-error') return result.error !== 'invalid-request';
  return (result.status === 502 || result.status === 503 || result.status === 504) && result.retryAfter === undefined;
}

/** One webhook's breaker. */
export class CircuitBreaker {
  private state: 'closed' | 'open' | 'half-open' = 'closed';
  private failuresInARow = 0;
  private intervalSeconds: number;
  private openedAt = 0;
  private nextProbeAt = 0;
  private probe: { readonly settled: Promise<void>; readonly settle: () => void } | undefined;

  constructor(private readonly settings: BreakerSettings) {
    this.intervalSeconds = settings.initialIntervalSeconds;
  }

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

  /** The probe never reached the webhook (no time, no secret): open again, same interval, probe again soon. */
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

  /** The visibility, seconds, for a record held back while open: the current interval. */
  get holdSeconds(): number {
    return this.intervalSeconds;
  }

  /** Seconds the breaker has been open, or `undefined` while closed. */
  openSeconds(nowMs: number): number | undefined {
    return this.state === 'closed' ? undefined : Math.round((nowMs - this.openedAt) / 1000);
  }

  /**
   * Records a request's result; returns the transition it caused, if any.
   * @param wasProbe whether the request was the half-open probe
   */
  record(result: WebhookResult, wasProbe: boolean, nowMs: number): BreakerTransition | undefined {
    if (this.settings.threshold === 0) return undefined;
    if (!isOutage(result)) {
      this.failuresInARow = 0;
      if (this.state === 'closed') return undefined;
      // Any normal answer, the probe's or a request started before the breaker opened, shows the webhook is back.
      const openSeconds = Math.round((nowMs - this.openedAt) / 1000);
      this.state = 'closed';
      this.intervalSeconds = this.settings.initialIntervalSeconds;
      this.settleProbe();
      return { kind: 'closed', openSeconds };
    }
    this.failuresInARow += 1;
    if (this.state === 'closed') {
      if (this.failuresInARow < this.settings.threshold) return undefined;
      this.state = 'open';
      this.openedAt = nowMs;
      this.intervalSeconds = this.settings.initialIntervalSeconds;
      this.nextProbeAt = nowMs + this.intervalSeconds * 1000;
      return { kind: 'opened', intervalSeconds: this.intervalSeconds, failures: this.failuresInARow };
    }
    if (wasProbe && this.state === 'half-open') {
      this.state = 'open';
      this.intervalSeconds = Math.min(this.intervalSeconds * 2, this.settings.maxIntervalSeconds);
      this.nextProbeAt = nowMs + this.intervalSeconds * 1000;
      this.settleProbe();
      return { kind: 'reopened', intervalSeconds: this.intervalSeconds, openSeconds: Math.round((nowMs - this.openedAt) / 1000) };
    }
    return undefined; // a request that was already in flight when the breaker opened
  }
}
