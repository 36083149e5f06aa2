/**
 * Retry timing: when a message that was not delivered should be seen again. Three sources, in
 * order of authority: the webhook's `Retry-After`, the configured backoff policy, and SQS's own
 * limit on how long a received message may stay invisible.
 */
import type { BackoffSettings } from './config';

/** SQS's ceiling on a message's visibility timeout, counted from its receive: 12 hours. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/**
 * Seconds kept back from {@link MAX_VISIBILITY_SECONDS} for the time between SQS handing the
 * message to Lambda's poller and the handler starting: Lambda may hold a batch for up to its
 * 300 s maximum batching window before invoking. Without it a 12-hour `Retry-After` could
 * overshoot the limit, and SQS would reject the visibility change.
 */
export const RECEIVE_TO_INVOKE_SLACK_SECONDS = 300;

/** Fractional jitter added on top of a backoff delay, at most (SPEC §2: up to 25 %). */
export const MAX_JITTER_FRACTION = 0.25;

/**
 * Parses a `Retry-After` header: delta-seconds (`120`) or an HTTP-date. Returns whole seconds
 * from `nowMs` (a date in the past gives 0), capped at {@link MAX_VISIBILITY_SECONDS}, or
 * `undefined` when the value is absent or unusable (negative, fractional, garbage), so the
 * caller falls back to its backoff policy.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^[0-9]+$/.test(text)) {
    // Compare as a number only after the digit check: `Number` would accept " 1e3" or "0x10".
    return Math.min(Number(text), MAX_VISIBILITY_SECONDS);
  }
  // An HTTP-date has a weekday, day, month name and a time; anything without letters and a
  // colon (e.g. "-5", "1.5", "12 34") is not one, however Date.parse might read it.
  if (!/[A-Za-z]{3}/.test(text) || !text.includes(':')) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, Math.ceil((at - nowMs) / 1000)), MAX_VISIBILITY_SECONDS);
}

function fibonacci(n: number): number {
  let [previous, current] = [0, 1];
  for (let i = 1; i < n && current < Number.MAX_SAFE_INTEGER; i += 1) [previous, current] = [current, previous + current];
  return current;
}

/**
 * The backoff delay before receive number `receiveCount + 1`, in whole seconds, or `undefined`
 * for the `none` policy (leave the queue's own visibility timeout in place).
 *
 * `exponential` = base·2^(n−1), `linear` = n·base, `fibonacci` = base·F(n), `fixed` = base,
 * where n is the receive count (1 on the first failure). With jitter, up to 25 % is added; the
 * result never exceeds `maxSeconds`.
 * @param random a source of numbers in [0, 1), injectable for tests
 */
export function backoffDelay(settings: BackoffSettings, receiveCount: number, random: () => number = Math.random): number | undefined {
  const n = Math.max(1, Math.floor(receiveCount));
  const base = settings.baseSeconds;
  let raw: number;
  switch (settings.policy) {
    case 'none':
      return undefined;
    case 'fixed':
      raw = base;
      break;
    case 'linear':
      raw = n * base;
      break;
    case 'fibonacci':
      raw = base * fibonacci(n);
      break;
    case 'exponential':
      // 2^(n-1) overflows to Infinity for large n; min() below turns that into the cap.
      raw = base * 2 ** (n - 1);
      break;
  }
  const capped = Math.min(raw, settings.maxSeconds);
  const jittered = settings.jitter ? capped + capped * MAX_JITTER_FRACTION * random() : capped;
  return Math.min(Math.round(jittered), settings.maxSeconds);
}

/**
 * The visibility timeout SQS will accept for a message received about `elapsedSeconds` ago:
 * `requestedSeconds` clamped to 0 … (12 h − elapsed − {@link RECEIVE_TO_INVOKE_SLACK_SECONDS}).
 * Never throws and never returns a value SQS would reject.
 */
export function clampVisibility(requestedSeconds: number, elapsedSeconds: number): number {
  const ceiling = Math.max(0, MAX_VISIBILITY_SECONDS - RECEIVE_TO_INVOKE_SLACK_SECONDS - Math.ceil(Math.max(0, elapsedSeconds)));
  if (!Number.isFinite(requestedSeconds)) return requestedSeconds > 0 ? ceiling : 0;
  return Math.min(Math.max(0, Math.round(requestedSeconds)), ceiling);
}
