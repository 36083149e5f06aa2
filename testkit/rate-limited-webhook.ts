/**
 * A webhook with a capacity, for the back-pressure bench scenarios and tests: a responder for `startWebhook` (webhook.ts)
 * that takes `requestsPerSecond` through a token bucket and answers `429` + `Retry-After: 1` above it (or, with `announce`,
 * through a fixed window of a second that says so in `RateLimit` / `RateLimit-Policy` headers), optionally `503` (or another
 * status) without `Retry-After` for its first seconds (a restart, a bad deploy), refuses some messages for their own sake
 * (`refuse`), and limits tenants of its own (`tenantLimits`, by the message attribute `tenant`). It records when each message
 * id was first delivered and which were ever refused, so a caller can check that every message arrived exactly once and
 * time the ones never refused, and counts what it refused.
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
  /**
   * Refuses a message for its own sake, before any limit: the `Retry-After` seconds to answer `429` with, or `undefined` to
   * take it. Told the message id, its tenant (the attribute `tenant`, when sent) and the request's index.
   */
  readonly refuse?: (message: { readonly id: string; readonly tenant: string | undefined; readonly index: number }) => number | undefined;
  /** Requests per second each of these tenants is allowed (a token bucket of one second's worth), `429` + `Retry-After: 1` above. */
  readonly tenantLimits?: Readonly<Record<string, number>>;
  /**
   * Limit by a fixed window of `requestsPerSecond` per second of the clock instead of a token bucket, and say so on every
   * answer: `RateLimit-Policy: "default";q=R;w=1` and `RateLimit: "default";r=<left>;t=<seconds to the window's end>`.
   */
  readonly announce?: boolean;
  /** Answers this long after each request arrives, ms, as a production webhook does (50–200 ms); default at once. */
  readonly answerAfterMs?: number;
  /**
   * … and this much longer for each request already in flight at it, ms: a webhook that queues rather than refuses. It takes
   * (and counts) a request the relay has stopped waiting for all the same.
   */
  readonly answerAfterPerInFlightMs?: number;
}

/** A {@link rateLimitedResponder}: give `respond` to `startWebhook`; the rest tells what it answered. */
export interface RateLimitedResponder {
  readonly respond: Responder;
  /** The bucket's size as used. */
  readonly burst: number;
  /** Accepted (2xx) requests by message id: 1 each when every message arrived exactly once. */
  readonly delivered: ReadonlyMap<string, number>;
  /** When each message was first accepted (`Date.now()`), by id. */
  readonly deliveredAt: ReadonlyMap<string, number>;
  /** The ids of the messages refused at least once (by any rule). */
  readonly refusedIds: ReadonlySet<string>;
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
  const prefix = (options.headerPrefix ?? 'X-Carrier-').toLowerCase();
  const idHeader = `${prefix}message-id`;
  const tenantHeader = `${prefix}attr-tenant`;
  const delivered = new Map<string, number>();
  const deliveredAt = new Map<string, number>();
  const refusedIds = new Set<string>();
  let tokens = burst;
  let filledAt = performance.now();
  let firstAt: number | undefined;
  let refused = 0;
  let duplicates = 0;
  let lastDeliveryAt: number | undefined;
  const tenantBuckets = new Map<string, { tokens: number; filledAt: number }>();
  let windowStart = Number.NEGATIVE_INFINITY;
  let windowUsed = 0;

  const take = (): boolean => {
    if (rate === undefined) return true;
    const now = performance.now();
    tokens = Math.min(burst, tokens + ((now - filledAt) / 1000) * rate);
    filledAt = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
  const takeForTenant = (tenant: string | undefined): boolean => {
    const limit = tenant === undefined ? undefined : options.tenantLimits?.[tenant];
    if (tenant === undefined || limit === undefined) return true;
    const now = performance.now();
    const bucket = tenantBuckets.get(tenant) ?? { tokens: limit, filledAt: now };
    bucket.tokens = Math.min(limit, bucket.tokens + ((now - bucket.filledAt) / 1000) * limit);
    bucket.filledAt = now;
    tenantBuckets.set(tenant, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  };
  /** The announced window: whether this request fits, and the headers that say how much is left. */
  const takeInWindow = (): { ok: boolean; resetSeconds: number; headers: Record<string, string> } => {
    const limit = rate ?? Number.POSITIVE_INFINITY;
    const now = Date.now();
    const start = Math.floor(now / 1000) * 1000;
    if (start !== windowStart) {
      windowStart = start;
      windowUsed = 0;
    }
    const ok = windowUsed < limit;
    if (ok) windowUsed += 1;
    const resetSeconds = Math.max(1, Math.ceil((start + 1000 - now) / 1000));
    return {
      ok,
      resetSeconds,
      headers: { 'RateLimit-Policy': `"default";q=${limit};w=1`, RateLimit: `"default";r=${limit - windowUsed};t=${resetSeconds}` },
    };
  };
  const refuse = (id: string, status: number, headers?: Record<string, string>): WebhookReply => {
    refused += 1;
    refusedIds.add(id);
    return headers === undefined ? { status } : { status, headers };
  };
  const answer = (request: ReceivedRequest, index: number): WebhookReply => {
    firstAt ??= Date.now();
    const header = request.headers[idHeader];
    const id = typeof header === 'string' ? header : request.body.toString();
    if (options.unavailableForMs !== undefined && Date.now() - firstAt < options.unavailableForMs) {
      return refuse(id, options.unavailableStatus ?? 503);
    }
    const tenantValue = request.headers[tenantHeader];
    const tenant = typeof tenantValue === 'string' ? tenantValue : undefined;
    const ownRetryAfter = options.refuse?.({ id, tenant, index });
    if (ownRetryAfter !== undefined) return refuse(id, 429, { 'Retry-After': String(ownRetryAfter) });
    if (!takeForTenant(tenant)) return refuse(id, 429, { 'Retry-After': '1' });
    let announced: Record<string, string> | undefined;
    if (options.announce === true) {
      const window = takeInWindow();
      announced = window.headers;
      if (!window.ok) return refuse(id, 429, { ...announced, 'Retry-After': String(window.resetSeconds) });
    } else if (!take()) return refuse(id, 429, { 'Retry-After': '1' });
    const count = (delivered.get(id) ?? 0) + 1;
    delivered.set(id, count);
    if (count > 1) duplicates += 1;
    else deliveredAt.set(id, Date.now());
    lastDeliveryAt = Date.now();
    return announced === undefined ? { status: 200 } : { status: 200, headers: announced };
  };
  const delayMs = options.answerAfterMs ?? 0;
  const perInFlightMs = options.answerAfterPerInFlightMs ?? 0;
  let inFlight = 0;
  const respond: Responder =
    delayMs === 0 && perInFlightMs === 0
      ? answer
      : (request, index) => {
          const afterMs = delayMs + perInFlightMs * inFlight;
          inFlight += 1;
          return new Promise((resolve) =>
            setTimeout(() => {
              inFlight -= 1;
              resolve(answer(request, index));
            }, afterMs),
          );
        };
  return {
    respond,
    burst,
    delivered,
    deliveredAt,
    refusedIds,
    refused: () => refused,
    duplicates: () => duplicates,
    lastDeliveryAt: () => lastDeliveryAt,
  };
}
