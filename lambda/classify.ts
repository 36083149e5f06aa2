/**
 * Response classification (docs/contract.md, "What the response means"): what a webhook's answer, or the lack of one, means for
 * the message.
 */
import type { RelayConfig } from './config';
import { backoffDelay, parseRetryAfter } from './retry-timing';
import type { WebhookResult } from './transmitter';

/** The webhook took the message: acknowledge it. */
export interface Delivered {
  readonly kind: 'delivered';
}

/** Try again later: after `delaySeconds`, or after the queue's own visibility timeout when `undefined`. */
export interface Retry {
  readonly kind: 'retry';
  readonly delaySeconds: number | undefined;
  /** Where the delay came from. */
  readonly delaySource: 'retry-after' | 'backoff';
}

/** The webhook will never take this message as it is: dead-letter it at once. */
export interface Permanent {
  readonly kind: 'permanent';
}

/** What the relay does next with a message after one attempt. */
export type Verdict = Delivered | Retry | Permanent;

/** One value for every delivery: most results are 2xx, and a verdict is never changed. */
const DELIVERED: Delivered = Object.freeze({ kind: 'delivered' });

/** True for the statuses whose `Retry-After` is honoured. */
function namesItsRetryTime(status: number): boolean {
  return status === 429 || status === 503;
}

/** True for answers that say "not now" rather than "never": 408, 429, and every 5xx. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * Classifies one attempt's result.
 * @param receiveCount the record's `ApproximateReceiveCount`, which drives the backoff policy
 * @param nowMs the time an HTTP-date `Retry-After` is measured from
 * @param random jitter source, injectable for tests
 */
export function classify(
  result: WebhookResult,
  config: Pick<RelayConfig, 'backoff' | 'permanentFailure'>,
  receiveCount: number,
  nowMs: number,
  random: () => number = Math.random,
): Verdict {
  if (result.kind === 'response' && result.status >= 200 && result.status <= 299) return DELIVERED;
  const backoff = (): Retry => ({
    kind: 'retry',
    delaySeconds: backoffDelay(config.backoff, receiveCount, random),
    delaySource: 'backoff',
  });
  if (result.kind === 'transport-error') return backoff();
  const { status } = result;
  if (namesItsRetryTime(status)) {
    const delaySeconds = parseRetryAfter(result.retryAfter, nowMs);
    if (delaySeconds !== undefined) return { kind: 'retry', delaySeconds, delaySource: 'retry-after' };
  }
  // 1xx never reaches here (Node handles informational responses); anything outside 100-599 is garbage: transient.
  if (isTransientStatus(status) || status < 200 || status > 599) return backoff();
  return config.permanentFailure === 'retry' ? backoff() : { kind: 'permanent' };
}
