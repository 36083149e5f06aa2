/**
 * A webhook with a capacity, for the back-pressure bench scenarios and tests (issue 21): a responder
 * for `startWebhook` (webhook.ts) that takes `requestsPerSecond` through a token bucket and answers `429` +
 * `Retry-After: 1` above it, and optionally `503` (or another status) without `Retry-After` for its
 * first seconds (a restart, a bad deploy). It records each delivered message id, so a caller can
 * check that every message arrived exactly once, and counts what it refused.
 */
import type { ReceivedRequest, Responder, WebhookReply } from './webhook';

/** How the webhook answers. */
export interface RateLimitedWebhookOptions {
  /** Requests per second it accepts; unset: no limit. */
  readonly requestsPerSecond?: number;
  /**
   * Tokens the bucket holds (the burst it accepts after a quiet spell). Default: a tenth of a
   * second's worth (at least 1), so a relay cannot hide a flood inside the first second.
   */
  readonly burst?: number;
  /** Answer `unavailableStatus` without `Retry-After` to every request for this long after the first one, ms. */
  readonly unavailableForMs?: number;
  /** Default 503 (the circuit breaker counts it as an outage); 500 is a webhook that is up and failing. */
  readonly unavailableStatus?: number;
  /** The relay's header prefix: the message id is `<prefix>Message-Id` (else the body stands for it). */
  readonly headerPrefix?: string;
}

/** A {@link rateLimitedResponder}: give `respond` to `startWebhook`; the rest tells what it answered. */
export interface RateLimitedResponder {
  readonly respond: Responder;
  /** The bucket's size as used. */
  readonly burst: number;
  /** Accepted (2xx) requests by message id: 1 each when every message arrived exactly once. */
  readonly delivered: ReadonlyMap<string, number>;
  /** Requests answered `429` or `unavailableStatus`. */
  refused(): number;
  /** Accepted requests beyond each message's first. */
  duplicates(): number;
  /** When the last request was accepted (`Date.now()`), or undefined. */
  lastDeliveryAt(): number | undefined;
}

/** The bucket's default size: a tenth of a second's worth of requests, at least 1. */
export const defaultBurst = (requestsPerSecond: number): number => Math.max(1, requestsPerSecond / 10);

/** A responder with a capacity (see {@link RateLimitedWebhookOptions}); one per webhook, as it keeps the bucket and the counts. */
export function rateLimitedResponder(options: RateLimitedWebhookOptions = {}): RateLimitedResponder {
  const rate = options.requestsPerSecond;
  const burst = rate === undefined ? Number.POSITIVE_INFINITY : (options.burst ?? defaultBurst(rate));
  const idHeader = `${options.headerPrefix ?? 'X-Carrier-'}Message-Id`.toLowerCase();
  const delivered = new Map<string, number>();
  let tokens = burst;
  let filledAt = performance.now();
  let firstAt: number | undefined;
  let refused = 0;
  let duplicates = 0;
  let lastDeliveryAt: number | undefined;

  const take = (): boolean => {
    if (rate === undefined) return true;
    const now = performance.now();
    tokens = Math.min(burst, tokens + ((now - filledAt) / 1000) * rate);
    filledAt = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
  const respond = (request: ReceivedRequest): WebhookReply => {
    firstAt ??= Date.now();
    if (options.unavailableForMs !== undefined && Date.now() - firstAt < options.unavailableForMs) {
      refused += 1;
      return { status: options.unavailableStatus ?? 503 };
    }
    if (!take()) {
      refused += 1;
      return { status: 429, headers: { 'Retry-After': '1' } };
    }
    const header = request.headers[idHeader];
    const id = typeof header === 'string' ? header : request.body.toString();
    const count = (delivered.get(id) ?? 0) + 1;
    delivered.set(id, count);
    if (count > 1) duplicates += 1;
    lastDeliveryAt = Date.now();
    return { status: 200 };
  };
  return {
    respond,
    burst,
    delivered,
    refused: () => refused,
    duplicates: () => duplicates,
    lastDeliveryAt: () => lastDeliveryAt,
  };
}
