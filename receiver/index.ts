/**
 * The webhook owner's kit: what a webhook behind sqs-webhook-relay needs.
 *
 * - {@link verifySignature}: check the Standard Webhooks signature of a delivery;
 * - {@link exponential}, {@link cappedExponential}, {@link linear}, {@link fibonacci}: turn the
 *   relay's receive-count header into a `Retry-After`, with optional jitter ({@link retryAfter}).
 *
 * It shares its arithmetic with the relay itself (one implementation of each formula).
 */
import { timingSafeEqual } from 'node:crypto';
import { backoffDelay, MAX_VISIBILITY_SECONDS } from '../lambda/retry-timing';
import { parseSigningKeys, signDelivery } from '../lambda/signing';

/** Headers as Node (`IncomingHttpHeaders`), a plain object, or the Fetch API gives them. */
export type HeaderSource = Readonly<Record<string, string | readonly string[] | undefined>> | { get(name: string): string | null };

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function')
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const value = record[name.toLowerCase()] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];
  return Array.isArray(value) ? value[0] : (value as string | undefined);
}

/** Options of {@link verifySignature}. */
export interface VerifyOptions {
  /** How far the `webhook-timestamp` may be from now, in seconds (default 300, as the scheme recommends). */
  readonly toleranceSeconds?: number;
  /** The time to check against (default now). */
  readonly now?: Date;
}

/**
 * True when the request carries a valid `webhook-signature` for `body` under one of the
 * `secrets` (each `whsec_…`; pass several while rotating) and a `webhook-timestamp` within
 * the tolerance. Never throws for a bad request; throws only for a malformed secret.
 * @param body the raw request body, exactly as received (verify before parsing JSON)
 */
export function verifySignature(
  secrets: string | readonly string[],
  headers: HeaderSource,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): boolean {
  const keys = parseSigningKeys(typeof secrets === 'string' ? secrets : secrets.join(' '));
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined || !/^[0-9]+$/.test(timestamp)) return false;
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? 300)) return false;
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
  const offered = signatures
    .split(' ')
    .filter((candidate) => candidate.startsWith('v1,'))
    .map((candidate) => Buffer.from(candidate));
  return keys.some((key) => {
    const expected = Buffer.from(signDelivery([key], id, Number(timestamp), bytes)['webhook-signature']);
    return offered.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected));
  });
}

/** Seconds to wait before the next attempt, given the receive count (1 on the first attempt). */
export type RetryStrategy = (receiveCount: number) => number;

/** Strategy options. */
export interface StrategyOptions {
  /** Add up to 25 % random jitter, so a burst of failures does not come back at once. */
  readonly jitter?: boolean;
}

function strategy(
  policy: 'exponential' | 'linear' | 'fibonacci',
  baseSeconds: number,
  maxSeconds: number,
  options: StrategyOptions,
): RetryStrategy {
  return (receiveCount) => backoffDelay({ policy, baseSeconds, maxSeconds, jitter: options.jitter ?? false }, receiveCount) ?? 0;
}

/** base·2^(n−1): 2, 4, 8, 16 … with base 2. Bounded only by SQS's 12 hours. */
export const exponential = (baseSeconds = 2, options: StrategyOptions = {}): RetryStrategy =>
  strategy('exponential', baseSeconds, MAX_VISIBILITY_SECONDS, options);
/** base·2^(n−1), never above `maxSeconds`. */
export const cappedExponential = (baseSeconds = 2, maxSeconds = 300, options: StrategyOptions = {}): RetryStrategy =>
  strategy('exponential', baseSeconds, maxSeconds, options);
/** n·step: 10, 20, 30 … with step 10. */
export const linear = (stepSeconds = 10, options: StrategyOptions = {}): RetryStrategy =>
  strategy('linear', stepSeconds, MAX_VISIBILITY_SECONDS, options);
/** base·F(n): 1, 1, 2, 3, 5, 8 … with base 1. */
export const fibonacci = (baseSeconds = 1, options: StrategyOptions = {}): RetryStrategy =>
  strategy('fibonacci', baseSeconds, MAX_VISIBILITY_SECONDS, options);

/** The receive count the relay sent (`<prefix>Receive-Count`); 1 when absent or malformed. */
export function receiveCountOf(headers: HeaderSource, prefix = 'X-Carrier-'): number {
  const value = header(headers, `${prefix}Receive-Count`);
  return value !== undefined && /^[0-9]+$/.test(value) ? Math.max(1, Number(value)) : 1;
}

/** The `Retry-After` value (delta-seconds) to answer with, from the request's receive count. */
export function retryAfter(headers: HeaderSource, retryStrategy: RetryStrategy, prefix = 'X-Carrier-'): string {
  return String(Math.max(0, Math.round(retryStrategy(receiveCountOf(headers, prefix)))));
}
