/**
 * The retry window (docs/webhook-owners.md, "Outages"): a message is given up on when its failures
 * go on past `RETRY_WINDOW_HOURS` from its first receive, not after a number of receives. The
 * redrive policy's `maxReceiveCount` stays as the backstop for invocations that crash or time out;
 * retries are spaced late in the window so that the relay's own returns never reach it first.
 */
import type { SQSRecord } from 'aws-lambda';
import { MAX_VISIBILITY_SECONDS } from './aws-limits';
import { RECEIVE_TO_INVOKE_SLACK_SECONDS } from './retry-timing';
import { FUNCTION_SETTINGS } from './settings';

/** Receives kept for invocations that crash or time out: the relay's own returns never use them. */
export const CRASH_RESERVE_RECEIVES = 3;
/** A minimum delay below this is none: not rounded up to a whole second. */
const NEGLIGIBLE_SECONDS = 0.001;
/** The smallest backstop the stack derives, whatever the window. */
export const MIN_BACKSTOP_RECEIVES = 10;
/** SQS's largest `maxReceiveCount` (the registry's bound of `MAX_RECEIVE_COUNT`). */
export const MAX_BACKSTOP_RECEIVES: number = FUNCTION_SETTINGS.MAX_RECEIVE_COUNT.max;
/**
 * The longest a returned message can be parked by one visibility change: a second short of what
 * clampVisibility allows, which rounds and shrinks by the seconds already elapsed.
 */
const LONGEST_PARK_SECONDS = MAX_VISIBILITY_SECONDS - RECEIVE_TO_INVOKE_SLACK_SECONDS - 1;

/**
 * The redrive policy's `maxReceiveCount` for a window: as many receives as crashes at one per
 * visibility timeout would take to span it, plus the reserve, within 10 … 1,000. A message that
 * crashes every invocation then reaches the DLQ at about the end of its window, unless SQS's cap
 * of 1,000 binds (a window longer than 997 visibility timeouts: about 50 hours at 180 s), when it
 * gets there after 1,000 visibility timeouts, before its window ends. The relay's own returns are
 * spaced to keep clear of the count either way ({@link minimumRetryDelaySeconds}).
 */
export function backstopReceiveCount(windowSeconds: number, visibilitySeconds: number): number {
  const spanning = Math.ceil(windowSeconds / Math.max(1, visibilitySeconds)) + CRASH_RESERVE_RECEIVES;
  return Math.min(MAX_BACKSTOP_RECEIVES, Math.max(MIN_BACKSTOP_RECEIVES, spanning));
}

/**
 * How long past its window a message can still be on the queue: its last return may park it for
 * up to SQS's 12 hours (a `Retry-After` is honoured even past the window's end), then one more
 * visibility timeout for the attempt that gives up on it. Retention must cover window + margin.
 */
export function retryWindowMarginSeconds(visibilitySeconds: number): number {
  return MAX_VISIBILITY_SECONDS + visibilitySeconds;
}

/** When the record was sent to the queue, ms (`SentTimestamp`); undefined when the attribute is missing or not a time. */
export function sentAtMs(record: Pick<SQSRecord, 'attributes'>): number | undefined {
  const sent = Number(record.attributes?.SentTimestamp);
  return Number.isFinite(sent) && sent > 0 ? sent : undefined;
}

/** When the record's window opened, ms: its first receive (else when it was sent, else `nowMs`). */
export function windowStartOf(record: Pick<SQSRecord, 'attributes'>, nowMs: number): number {
  const first = Number(record.attributes?.ApproximateFirstReceiveTimestamp);
  if (Number.isFinite(first) && first > 0) return first;
  return sentAtMs(record) ?? nowMs;
}

/**
 * The shortest delay before the next receive that keeps the backstop out of reach: with `n`
 * receives left to the relay (the reserve kept back) and `T` seconds left in the window,
 * max(T − (n − 1)·12 h, T / 2ⁿ⁻¹). Nothing while receives are plentiful; the last few are spread
 * over what is left of the window, the very last at its end.
 * @param receiveCount the receives the message has had, this one included
 */
export function minimumRetryDelaySeconds(timeLeftSeconds: number, receiveCount: number, maxReceiveCount: number): number {
  if (!(timeLeftSeconds > 0)) return 0;
  const receivesLeft = maxReceiveCount - CRASH_RESERVE_RECEIVES - receiveCount;
  if (receivesLeft <= 1) return timeLeftSeconds;
  const spread = timeLeftSeconds / 2 ** (receivesLeft - 1);
  return Math.max(timeLeftSeconds - (receivesLeft - 1) * LONGEST_PARK_SECONDS, spread);
}

/** Where a returned record's next attempt falls in its window. */
export interface WindowedDelay {
  /** Seconds until the record should come back; `undefined` keeps the queue's default. */
  readonly delaySeconds: number | undefined;
  /** The next attempt is at or past the window's end: if it fails too, the message is given up on. */
  readonly lastInWindow: boolean;
}

/**
 * The delay of a record going back to the queue, fitted to its window: at least the
 * {@link spacingSeconds}, and, within the window, a backoff delay or a breaker's hold (but never a
 * webhook's `Retry-After`) cut so that the last attempt falls at the window's end rather than
 * after it. Past the window's end nothing is cut.
 * @param honoured whether `requested` is the webhook's own `Retry-After` (kept even past the window)
 */
export function delayInWindow(
  requested: number | undefined,
  honoured: boolean,
  timeLeftSeconds: number,
  receiveCount: number,
  maxReceiveCount: number,
): WindowedDelay {
  const minimum = spacingSeconds(timeLeftSeconds, receiveCount, maxReceiveCount);
  let delay = requested === undefined ? (minimum > 0 ? minimum : undefined) : Math.max(requested, minimum);
  // Cut only within the window: past it the next attempt gives up on the message anyway, and a delay cut to
  // nothing would bring it straight back (a failed dead-letter copy, say) again and again.
  if (delay !== undefined && !honoured && timeLeftSeconds > 0 && delay > timeLeftSeconds) delay = Math.ceil(timeLeftSeconds);
  return { delaySeconds: delay, lastInWindow: delay !== undefined && delay >= timeLeftSeconds };
}

/**
 * {@link minimumRetryDelaySeconds} in whole seconds, rounded up (rounded down, the last return could land just short of
 * the window's end); the vanishing minimum of a message with receives to spare is nothing. The least visibility any
 * return of the record may have, a breaker's release included.
 */
export function spacingSeconds(timeLeftSeconds: number, receiveCount: number, maxReceiveCount: number): number {
  const exact = minimumRetryDelaySeconds(timeLeftSeconds, receiveCount, maxReceiveCount);
  return exact < NEGLIGIBLE_SECONDS && timeLeftSeconds > 1 ? 0 : Math.ceil(exact);
}
