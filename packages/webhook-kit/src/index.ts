/**
 * The webhook kit (the package `sqs-webhook-relay-webhook-kit`, also `sqs-webhook-relay/webhook`):
 * what a webhook behind sqs-webhook-relay needs.
 *
 * - {@link verifyDelivery}: check the Standard Webhooks signature of a delivery and get its signed
 *   id, the key to deduplicate on ({@link verifySignature}: the same, as a boolean);
 * - {@link exponential}, {@link cappedExponential}, {@link linear}, {@link fibonacci}: turn the
 *   relay's receive-count header into a `Retry-After`, with optional jitter ({@link retryAfter}).
 *
 * It verifies with the relay's own signing code and computes with the relay's own backoff
 * arithmetic (one implementation of each rule); bin/build.ts bundles those modules in and
 * refuses any other from outside this package, so the kit needs nothing but Node.js.
 */
import { timingSafeEqual } from 'node:crypto';
import { isAnyArrayBuffer } from 'node:util/types';
import { MAX_VISIBILITY_SECONDS } from '../../../lambda/aws-limits';
import { growingBackoffSeconds } from '../../../lambda/backoff-formula';
import { parseSigningKeys, signDelivery } from '../../../lambda/signing';

/** Headers as Node (`IncomingHttpHeaders`), a plain object, or the Fetch API gives them. */
export type HeaderSource = Readonly<Record<string, string | readonly string[] | undefined>> | { get(name: string): string | null };

/** A header's value, or `undefined` when it is absent or not text (the first of a repeated one). */
function header(headers: HeaderSource, name: string): string | undefined {
  let value: unknown;
  if (typeof (headers as { get?: unknown }).get === 'function') value = (headers as { get(name: string): unknown }).get(name);
  else {
    const record = headers as Readonly<Record<string, unknown>>;
    const lower = name.toLowerCase();
    // Own properties only: a plain object's prototype has no headers.
    value = Object.hasOwn(record, lower) ? record[lower] : Object.entries(record).find(([key]) => key.toLowerCase() === lower)?.[1];
  }
  if (Array.isArray(value)) value = value[0];
  return typeof value === 'string' ? value : undefined;
}

/**
 * A request's raw body, exactly as received: text, or its bytes as Node (`Buffer`) or the Fetch API
 * (`await request.arrayBuffer()`) gives them, or any other view of them (`Uint8Array`, `DataView`).
 */
export type RawBody = string | ArrayBuffer | ArrayBufferView;

/** The bytes of `body`; throws for anything else, the caller's bug (a parsed body, or none read), never echoing it. */
function bytesOf(body: unknown): Buffer {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (isAnyArrayBuffer(body)) return Buffer.from(body);
  // The kind of value only: a body is the sender's data, not the error's.
  const got = body === null ? 'null' : typeof body === 'object' ? Object.prototype.toString.call(body).slice(8, -1) : typeof body;
  throw new TypeError(
    `body (the third argument) must be the raw request body, a string or bytes (Buffer, Uint8Array, ArrayBuffer); got ${got}: verify before any parsing`,
  );
}

/** Options of {@link verifyDelivery} and {@link verifySignature}. */
export interface VerifyOptions {
  /**
   * How far the `webhook-timestamp` may be from now, in seconds (default 300, as the scheme
   * recommends). A finite number, 0 or more: anything else throws, never switching the check off.
   */
  readonly toleranceSeconds?: number;
  /** The time to check against (default now). A valid `Date`: anything else throws. */
  readonly now?: Date;
}

/** What a verified delivery says about itself, under its signature. */
export interface VerifiedDelivery {
  /**
   * `webhook-id`: the message's id, the same on every attempt (and for a dead letter redriven to
   * the queue), and signed: **the key to deduplicate on**. `X-Carrier-Message-Id` carries the
   * same value but is not signed, so a replayed request may change it.
   */
  readonly id: string;
  /** `webhook-timestamp`: when this attempt was signed, whole seconds since the epoch. */
  readonly timestampSeconds: number;
}

/** The default of {@link VerifyOptions.toleranceSeconds}. */
const DEFAULT_TOLERANCE_SECONDS = 300;

/** The options' values, checked: a bad one is the caller's bug and throws, naming the option. */
function checkedOptions(options: VerifyOptions | undefined): { toleranceSeconds: number; nowMs: number } {
  if (options !== undefined && (typeof options !== 'object' || options === null))
    throw new TypeError(`options must be an object such as { toleranceSeconds: 300 }; got ${String(options)}`);
  const { toleranceSeconds = DEFAULT_TOLERANCE_SECONDS, now } = options ?? {};
  if (typeof toleranceSeconds !== 'number' || !Number.isFinite(toleranceSeconds) || toleranceSeconds < 0)
    throw new RangeError(`options.toleranceSeconds must be a finite number of seconds, 0 or more; got ${String(toleranceSeconds)}`);
  if (now !== undefined && !(now instanceof Date)) throw new TypeError(`options.now must be a Date; got ${typeof now}`);
  const nowMs = now === undefined ? Date.now() : now.getTime();
  if (!Number.isFinite(nowMs)) throw new RangeError('options.now must be a valid Date; got Invalid Date');
  return { toleranceSeconds, nowMs };
}

/** The signing keys of `secrets`; throws for a missing or malformed secret (the caller's bug), never echoing it. */
function keysOf(secrets: string | readonly string[]): Buffer[] {
  if (secrets === undefined || secrets === null)
    throw new TypeError(
      `secrets (the first argument) is ${String(secrets)}: pass the relay's signing secret, whsec_… (an environment variable that is not set?)`,
    );
  if (typeof secrets !== 'string' && !(Array.isArray(secrets) && secrets.every((secret) => typeof secret === 'string')))
    throw new TypeError('secrets (the first argument) must be a whsec_… string, or an array of them while rotating');
  return parseSigningKeys(typeof secrets === 'string' ? secrets : secrets.join(' '));
}

/**
 * Verifies a delivery's Standard Webhooks signature and hands back what it signs: the message's
 * `id` (deduplicate on it) and this attempt's timestamp. `undefined` when the request is not
 * signed by one of `secrets` (each `whsec_…`; pass several while rotating) over this `body`, or
 * its `webhook-timestamp` is further from now than the tolerance, or its headers are missing.
 *
 * The signature covers `webhook-id`, `webhook-timestamp` and the body, nothing else: not
 * `Content-Type`, not the `X-Carrier-*` headers. A request captured in transit can be replayed
 * within the tolerance with those changed, and still verify; its `id` is the same, so a webhook
 * that remembers the ids it has processed turns the replay away.
 *
 * Never throws for a bad request; throws a `TypeError` or `RangeError` for the caller's own mistakes: a missing or
 * malformed secret or option, or a `body` that is not a string or bytes (a parsed JSON object, `undefined`).
 * @param body the raw request body, exactly as received (verify before parsing JSON): a string, a `Buffer` or any other
 *   `ArrayBufferView` (`Uint8Array`, `DataView`), or the `ArrayBuffer` of a Fetch `Request` (`await request.arrayBuffer()`)
 */
export function verifyDelivery(
  secrets: string | readonly string[],
  headers: HeaderSource,
  body: RawBody,
  options?: VerifyOptions,
): VerifiedDelivery | undefined {
  const { toleranceSeconds, nowMs } = checkedOptions(options);
  const keys = keysOf(secrets);
  // Before the headers: a body of the wrong kind would otherwise fail every request in silence.
  const bytes = bytesOf(body);
  if (typeof headers !== 'object' || headers === null) return undefined;
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined || !/^[0-9]{1,15}$/.test(timestamp)) return undefined;
  const timestampSeconds = Number(timestamp);
  if (Math.abs(Math.floor(nowMs / 1000) - timestampSeconds) > toleranceSeconds) return undefined;
  const offered = signatures
    .split(' ')
    .filter((candidate) => candidate.startsWith('v1,'))
    .map((candidate) => Buffer.from(candidate));
  const signed = keys.some((key) => {
    const expected = Buffer.from(signDelivery([key], id, timestampSeconds, bytes)['webhook-signature']);
    return offered.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected));
  });
  return signed ? { id, timestampSeconds } : undefined;
}

/**
 * True when the request carries a valid signature: {@link verifyDelivery} without what it
 * hands back. Deduplicate on the signed `webhook-id` (`verifyDelivery(…).id`), never on an
 * unsigned header.
 * @param body the raw request body, exactly as received (verify before parsing JSON): a string or bytes, as for
 *   {@link verifyDelivery}
 */
export function verifySignature(
  secrets: string | readonly string[],
  headers: HeaderSource,
  body: RawBody,
  options?: VerifyOptions,
): boolean {
  return verifyDelivery(secrets, headers, body, options) !== undefined;
}

/** Seconds to wait before the next attempt, given the receive count (1 on the first attempt). */
export type RetryStrategy = (receiveCount: number) => number;

/** Strategy options. */
export interface StrategyOptions {
  /** Add up to 25 % random jitter, so a burst of failures does not come back at once. */
  readonly jitter?: boolean;
}

/** A strategy's number, checked when the strategy is made: a bad one would answer `Retry-After: NaN` or `0` on every request. */
function checkedSeconds(name: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new RangeError(
      `${name} must be a finite number of seconds, 0 or more; got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`,
    );
}

function strategy(
  policy: 'exponential' | 'linear' | 'fibonacci',
  baseSeconds: number,
  maxSeconds: number,
  options: StrategyOptions,
  baseName: string,
): RetryStrategy {
  checkedSeconds(baseName, baseSeconds);
  checkedSeconds('maxSeconds', maxSeconds);
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`options must be an object such as { jitter: true }; got ${String(options)}`);
  return (receiveCount) => growingBackoffSeconds(policy, baseSeconds, maxSeconds, options.jitter ?? false, receiveCount);
}

/** base·2^(n−1): 2, 4, 8, 16 … with base 2. Bounded only by SQS's 12 hours. */
export const exponential = (baseSeconds = 2, options: StrategyOptions = {}): RetryStrategy =>
  strategy('exponential', baseSeconds, MAX_VISIBILITY_SECONDS, options, 'baseSeconds');
/** base·2^(n−1), never above `maxSeconds`. */
export const cappedExponential = (baseSeconds = 2, maxSeconds = 300, options: StrategyOptions = {}): RetryStrategy =>
  strategy('exponential', baseSeconds, maxSeconds, options, 'baseSeconds');
/** n·step: 10, 20, 30 … with step 10. */
export const linear = (stepSeconds = 10, options: StrategyOptions = {}): RetryStrategy =>
  strategy('linear', stepSeconds, MAX_VISIBILITY_SECONDS, options, 'stepSeconds');
/** base·F(n): 1, 1, 2, 3, 5, 8 … with base 1. */
export const fibonacci = (baseSeconds = 1, options: StrategyOptions = {}): RetryStrategy =>
  strategy('fibonacci', baseSeconds, MAX_VISIBILITY_SECONDS, options, 'baseSeconds');

/** The receive count the relay sent (`<prefix>Receive-Count`); 1 when absent or malformed. */
export function receiveCountOf(headers: HeaderSource, prefix = 'X-Carrier-'): number {
  const value = header(headers, `${prefix}Receive-Count`);
  return value !== undefined && /^[0-9]+$/.test(value) ? Math.max(1, Number(value)) : 1;
}

/** The `Retry-After` value (delta-seconds) to answer with, from the request's receive count. */
export function retryAfter(headers: HeaderSource, retryStrategy: RetryStrategy, prefix = 'X-Carrier-'): string {
  return String(Math.max(0, Math.round(retryStrategy(receiveCountOf(headers, prefix)))));
}
