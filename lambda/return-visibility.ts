/**
 * The visibility of a record going back to the queue (docs/contract.md, "The batch"): one decision per record, from
 * what happened to it, the circuit breaker, the endpoint's hold and its retry window. Pure: the relay gathers the
 * circumstances and applies the result (visibility.ts, held-records.ts).
 *
 * - A failure comes back after its delay: the webhook's `Retry-After` (honoured, 1 s at least), else the backoff policy's.
 * - While the breaker is open, a record it held unsent, or whose own failure looked like an outage, comes back after
 *   the breaker's hold, and is remembered so that it can be released when the breaker closes. A record held in a
 *   batch during which the breaker closed comes back at once.
 * - A record the pace kept from being sent comes back when the endpoint's hold or its key's wait ends (a hold is the
 *   webhook's own `Retry-After`, honoured as one); any other record not sent comes back at once.
 * - Within the retry window every return keeps the window's late spacing, and a delay that is not the webhook's is
 *   cut to the window's end; past the window nothing is cut (retry-window.ts).
 */
import type { RecordOutcome } from './record-outcome';
import { clampVisibility, MIN_RETRY_AFTER_SECONDS } from './retry-timing';
import { delayInWindow, spacingSeconds } from './retry-window';

/** Where a record stands in its retry window. */
export interface RecordInWindow {
  /** Seconds until the window ends; 0 or less once it has. */
  readonly timeLeftSeconds: number;
  /** `ApproximateReceiveCount`, this receive included. */
  readonly receiveCount: number;
  /** The redrive policy's `maxReceiveCount`, the window's backstop. */
  readonly maxReceiveCount: number;
}

/** What, besides its outcome, decides a record's return. */
export interface ReturnCircumstances {
  /** The breaker's hold for this record, seconds, while the breaker is open; `undefined` while it is closed. */
  readonly breakerHoldSeconds: number | undefined;
  /** Seconds left of the endpoint's hold (0: none). */
  readonly endpointHoldSeconds: number;
  /** The record's place in its retry window; `undefined` with the window off. */
  readonly window: RecordInWindow | undefined;
  /** Seconds since the batch started: SQS's 12-hour limit counts from the receive. */
  readonly elapsedSeconds: number;
}

/** How a record goes back to the queue. */
export interface ReturnVisibility {
  /** The visibility to set, seconds, as SQS accepts it; `undefined`: none to set (acknowledged, or the queue's default kept). */
  readonly visibilitySeconds: number | undefined;
  /** Held for the open breaker: to be released when it closes. */
  readonly breakerHold: boolean;
  /** The least visibility a release may give it, seconds from now: the window's late spacing (0 with receives to spare). */
  readonly releaseFloorSeconds: number;
  /** Its next attempt is at or past the window's end (not said of a record that was never sent). */
  readonly lastInWindow: boolean;
}

const ACKNOWLEDGED: ReturnVisibility = Object.freeze({
  visibilitySeconds: undefined,
  breakerHold: false,
  releaseFloorSeconds: 0,
  lastInWindow: false,
});

/** The delay a record asks for before any window, and whether it is the webhook's own. */
function requestedDelay(
  outcome: RecordOutcome,
  { breakerHoldSeconds, endpointHoldSeconds }: ReturnCircumstances,
): { delaySeconds: number | undefined; honoured: boolean; breakerHold: boolean } {
  const breakerOpen = breakerHoldSeconds !== undefined;
  switch (outcome.kind) {
    case 'retry': {
      const honoured = outcome.delaySource === 'retry-after';
      // A refusal asking for its message at once would get it back at once, again and again: a receive each time.
      const delaySeconds = honoured ? Math.max(outcome.delaySeconds ?? 0, MIN_RETRY_AFTER_SECONDS) : outcome.delaySeconds;
      // Coming back sooner than the held ones would only spend a receive on a webhook known to be down.
      if (breakerOpen && outcome.outage === true)
        return { delaySeconds: Math.max(delaySeconds ?? 0, breakerHoldSeconds), honoured, breakerHold: true };
      return { delaySeconds, honoured, breakerHold: false };
    }
    case 'held':
      return breakerOpen
        ? { delaySeconds: breakerHoldSeconds, honoured: false, breakerHold: true }
        : { delaySeconds: 0, honoured: false, breakerHold: false };
    case 'not-attempted': {
      // Kept from starting by the pace: away for what is left of the endpoint's hold or its key's wait, as the webhook asked.
      const pacedSeconds = outcome.reason === 'paced' ? Math.max(outcome.delaySeconds ?? 0, endpointHoldSeconds) : 0;
      return { delaySeconds: pacedSeconds, honoured: pacedSeconds > 0, breakerHold: false };
    }
    default:
      return { delaySeconds: undefined, honoured: false, breakerHold: false };
  }
}

/** How `outcome`'s record goes back to the queue (nothing to set for one delivered or dead-lettered). */
export function returnVisibility(outcome: RecordOutcome, circumstances: ReturnCircumstances): ReturnVisibility {
  if (outcome.kind === 'delivered' || outcome.kind === 'dead-lettered') return ACKNOWLEDGED;
  const requested = requestedDelay(outcome, circumstances);
  let delaySeconds = requested.delaySeconds;
  let lastInWindow = false;
  let releaseFloorSeconds = 0;
  const { window } = circumstances;
  if (window !== undefined) {
    const { timeLeftSeconds, receiveCount, maxReceiveCount } = window;
    const fitted = delayInWindow(delaySeconds, requested.honoured, timeLeftSeconds, receiveCount, maxReceiveCount);
    delaySeconds = fitted.delaySeconds;
    lastInWindow = fitted.lastInWindow && outcome.kind !== 'not-attempted';
    releaseFloorSeconds = spacingSeconds(timeLeftSeconds, receiveCount, maxReceiveCount);
  }
  return {
    visibilitySeconds: delaySeconds === undefined ? undefined : clampVisibility(delaySeconds, circumstances.elapsedSeconds),
    breakerHold: requested.breakerHold,
    releaseFloorSeconds,
    lastInWindow,
  };
}
