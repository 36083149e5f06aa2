/**
 * The relay's configuration: every environment variable the function reads, parsed and
 * validated once at cold start. A bad value fails fast with a {@link ConfigError} that names
 * the variable and says what was expected, instead of failing record by record later.
 */
import { isIP } from 'node:net';
import { version } from '../package.json';
import type { BreakerSettings } from './breaker';
import { HEADER_TOKEN, isLegalHeaderValue } from './header-rules';
import { type BackoffPolicyName, type BackoffSettings, DEFAULT_BACKOFF_SCHEDULE } from './retry-timing';
import { parseSigningKeys } from './signing';
import { boolean, ConfigError, decimal, type Env, integerSetting, oneOf, read } from './env';
import type { PacingSettings } from './pacer';
import { MAX_BACKSTOP_RECEIVES } from './retry-window';
import { BACKOFF_POLICIES, PERMANENT_FAILURE_MODES, FUNCTION_SETTINGS, type PermanentFailureMode, type Setting } from './settings';

export { BACKOFF_POLICIES, ConfigError, PERMANENT_FAILURE_MODES };
// The backoff's types live with the policy (retry-timing.ts), as BreakerSettings does in breaker.ts.
export type { BackoffPolicyName, BackoffSettings } from './retry-timing';

/**
 * Where a secret comes from. Declared here, with the settings that choose it, rather than in
 * secrets.ts: the construct's declarations reach this module, and must not reach the Powertools
 * and `aws-lambda` types the reader in secrets.ts imports.
 */
export type SecretSource =
  | { readonly kind: 'literal'; readonly value: string }
  | { readonly kind: 'secrets-manager'; readonly secretId: string };

/** The validated configuration the handler runs with. */
export interface RelayConfig {
  /** `WEBHOOK_URL`: where every record is POSTed. */
  readonly webhookUrl: URL;
  /** `HEADER_PREFIX`: prefix of the Carrier-compatible headers. */
  readonly headerPrefix: string;
  /** `DEFAULT_CONTENT_TYPE`: used when a message has no `Body.ContentType` attribute. */
  readonly defaultContentType: string;
  /** `REQUEST_TIMEOUT_MS`: upper bound of one webhook request, response body included. */
  readonly requestTimeoutMs: number;
  /** `MAX_CONCURRENCY`: webhook requests in flight at once per invocation. */
  readonly maxConcurrency: number;
  /** `DEADLINE_MARGIN_MS`: time kept back from the function's deadline for the SQS calls after the last request. */
  readonly deadlineMarginMs: number;
  readonly backoff: BackoffSettings;
  /** `PERMANENT_FAILURE`: dead-letter permanent failures at once, or retry them. */
  readonly permanentFailure: PermanentFailureMode;
  /** `DLQ_URL`: the dead-letter queue; when absent it is found from the source queue's redrive policy. */
  readonly deadLetterQueueUrl: string | undefined;
  /**
   * `MAX_RECEIVE_COUNT`: the redrive policy's count. With the retry window on, the backstop the
   * relay spaces retries to stay clear of (unset: SQS's 1,000); with it off, the count that dead-letters.
   */
  readonly maxReceiveCount: number;
  /** `RETRY_WINDOW_HOURS`, in seconds: how long a message's failures may go on before the relay dead-letters it; 0 = off. */
  readonly retryWindowSeconds: number;
  /** `PACING`, `MAX_REQUESTS_PER_SECOND` ÷ `CONCURRENT_INVOCATIONS`, `MAX_CONCURRENCY`: this container's pace. */
  readonly pacing: PacingSettings;
  /** `User-Agent` of every delivery request. */
  readonly userAgent: string;
  /** `OUTAGE_*`: the circuit breaker. */
  readonly breaker: BreakerSettings;
  /** `SIGNING_SECRET_ARN` or `SIGNING_SECRET`: sign every request (Standard Webhooks) when set. */
  readonly signingSecret: SecretSource | undefined;
  /** `AUTH_SECRET_ARN` or `AUTH_HEADER`: the `Authorization` value of every request when set. */
  readonly authorization: SecretSource | undefined;
  /** `SECRETS_REFRESH_SECONDS`: how long a value read from Secrets Manager is used before it is read again. */
  readonly secretsRefreshSeconds: number;
}

/**
 * True for hosts that can only be this machine: `localhost`, 127.0.0.0/8 and `::1`. Not every
 * `*.localhost` name: many resolvers (glibc, most corporate DNS) send those to DNS like any name,
 * so plain http to one may leave the machine.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1';
  return false;
}

/**
 * A URL as it may be printed: user:password and everything after `?` or `#` replaced by `…`
 * (tokens travel there). Works on text that is not a valid URL too, as error messages need.
 */
export function redactUrl(raw: string): string {
  return raw.replace(/^([^/?#]*\/\/)?[^/?#]*@/, '$1…@').replace(/([?#]).*$/s, '$1…');
}

function webhookUrl(env: Env): URL {
  const name = 'WEBHOOK_URL';
  const raw = read(env, name);
  const expected = 'an absolute https:// URL (http:// only for loopback hosts or with ALLOW_INSECURE_HTTP=true)';
  if (raw === undefined) throw new ConfigError(name, expected, raw);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, expected, redactUrl(raw));
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(name, expected, redactUrl(raw));
  if (url.username !== '' || url.password !== '') {
    // Credentials in a URL end up in the template, the environment and logs; they belong in AUTH_SECRET_ARN.
    throw new ConfigError(name, 'a URL without user:password (put credentials in a secret instead)', url.origin);
  }
  // Read (and so validated) whatever the URL: a typo must not pass silently beside an https URL.
  const allowInsecure = bool(env, 'ALLOW_INSECURE_HTTP');
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !allowInsecure) {
    throw new ConfigError(name, `${expected}; set ALLOW_INSECURE_HTTP=true to allow plain http on a private network`, redactUrl(raw));
  }
  return url;
}

/**
 * A secret given either as a Secrets Manager id (`<name>_ARN`, what the stack sets) or as the
 * value itself (for `npm start` and daemons, whose environment is already private).
 */
function secretSource(env: Env, literalName: string, arnName: string): SecretSource | undefined {
  const literal = read(env, literalName);
  const secretId = read(env, arnName);
  if (literal !== undefined && secretId !== undefined) {
    throw new ConfigError(arnName, `unset when ${literalName} is set (give the secret one way)`, secretId);
  }
  if (secretId !== undefined) return { kind: 'secrets-manager', secretId };
  return literal === undefined ? undefined : { kind: 'literal', value: literal };
}

/** Checks a secret given as a value now, at start; the message never repeats the value. */
function checkLiteral(
  source: SecretSource | undefined,
  name: string,
  check: (value: string) => void,
  expected: string,
): SecretSource | undefined {
  if (source?.kind !== 'literal') return source;
  try {
    check(source.value);
  } catch {
    throw new ConfigError(name, expected, '(value not shown)');
  }
  return source;
}

/** Throws unless `value` can be sent as an `Authorization` header; the message never contains it. */
export function checkAuthorizationValue(value: string): string {
  if (value === '' || !isLegalHeaderValue(value, Infinity))
    throw new Error('the Authorization value has characters not allowed in a header');
  return value;
}

function schedule(env: Env): readonly number[] {
  const raw = read(env, 'BACKOFF_SCHEDULE');
  if (raw === undefined) return DEFAULT_BACKOFF_SCHEDULE;
  const { min, max } = FUNCTION_SETTINGS.BACKOFF_SCHEDULE;
  const delays = raw.split(',').map((part) => part.trim());
  if (!delays.every((delay) => /^[0-9]+$/.test(delay) && Number(delay) <= max)) {
    throw new ConfigError('BACKOFF_SCHEDULE', `comma-separated whole seconds from ${min} to ${max}, e.g. "60,600,3600"`, raw);
  }
  return delays.map(Number);
}

/** A whole-number setting, with the registry's variable, default and bounds. */
function int(env: Env, name: keyof typeof FUNCTION_SETTINGS): number {
  return integerSetting(env, name, FUNCTION_SETTINGS[name]);
}

/** A true/false setting, with the registry's default. */
function bool(env: Env, name: 'ALLOW_INSECURE_HTTP' | 'BACKOFF_JITTER' | 'PACING'): boolean {
  return boolean(env, name, FUNCTION_SETTINGS[name].default);
}

/** A one-of setting, with the registry's choices and default. */
function choice<T extends string>(env: Env, name: 'BACKOFF' | 'PERMANENT_FAILURE'): T {
  const setting: Setting = FUNCTION_SETTINGS[name];
  return oneOf(env, name, setting.choices as readonly T[], setting.default as T);
}

/** A string setting, or its default. */
function text(env: Env, name: 'HEADER_PREFIX' | 'DEFAULT_CONTENT_TYPE'): string {
  return read(env, name) ?? FUNCTION_SETTINGS[name].default;
}

function breakerSettings(env: Env): BreakerSettings {
  const probeIntervalSeconds = int(env, 'OUTAGE_BACKOFF_SECONDS');
  const maxHoldSeconds = int(env, 'OUTAGE_BACKOFF_MAX_SECONDS');
  if (maxHoldSeconds < probeIntervalSeconds) {
    throw new ConfigError(
      'OUTAGE_BACKOFF_MAX_SECONDS',
      `at least OUTAGE_BACKOFF_SECONDS (${probeIntervalSeconds})`,
      String(maxHoldSeconds),
    );
  }
  return { threshold: int(env, 'OUTAGE_THRESHOLD'), probeIntervalSeconds, maxHoldSeconds };
}

/** `RETRY_WINDOW_HOURS` in whole seconds (0: off). */
function retryWindowSeconds(env: Env): number {
  const { default: fallback, min, max } = FUNCTION_SETTINGS.RETRY_WINDOW_HOURS;
  return Math.round(decimal(env, 'RETRY_WINDOW_HOURS', fallback, min, max) * 3600);
}

/** This container's pace: the whole relay's ceiling split evenly over the invocations that share it. */
function pacingSettings(env: Env): PacingSettings {
  const ceiling = int(env, 'MAX_REQUESTS_PER_SECOND');
  const shares = int(env, 'CONCURRENT_INVOCATIONS');
  return {
    adaptive: bool(env, 'PACING'),
    maxInFlight: int(env, 'MAX_CONCURRENCY'),
    maxRequestsPerSecond: ceiling === 0 ? undefined : ceiling / shares,
  };
}

/**
 * Parses and validates the relay's configuration from environment variables.
 * @throws {ConfigError} naming the first variable that is missing or malformed.
 */
export function loadConfig(env: Env = process.env): RelayConfig {
  const headerPrefix = text(env, 'HEADER_PREFIX');
  if (!HEADER_TOKEN.test(headerPrefix)) {
    throw new ConfigError('HEADER_PREFIX', 'characters legal in a header name (letters, digits, "-")', headerPrefix);
  }
  const defaultContentType = text(env, 'DEFAULT_CONTENT_TYPE');
  if (!isLegalHeaderValue(defaultContentType, Infinity)) {
    throw new ConfigError('DEFAULT_CONTENT_TYPE', 'a printable ASCII media type', defaultContentType);
  }
  const baseSeconds = int(env, 'BACKOFF_BASE_SECONDS');
  const maxSeconds = int(env, 'BACKOFF_MAX_SECONDS');
  if (maxSeconds < baseSeconds) {
    throw new ConfigError('BACKOFF_MAX_SECONDS', `at least BACKOFF_BASE_SECONDS (${baseSeconds})`, String(maxSeconds));
  }
  const windowSeconds = retryWindowSeconds(env);
  return {
    webhookUrl: webhookUrl(env),
    headerPrefix,
    defaultContentType,
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS'),
    maxConcurrency: int(env, 'MAX_CONCURRENCY'),
    deadlineMarginMs: int(env, 'DEADLINE_MARGIN_MS'),
    backoff: {
      policy: choice<BackoffPolicyName>(env, 'BACKOFF'),
      baseSeconds,
      maxSeconds,
      jitter: bool(env, 'BACKOFF_JITTER'),
      schedule: schedule(env),
    },
    permanentFailure: choice<PermanentFailureMode>(env, 'PERMANENT_FAILURE'),
    deadLetterQueueUrl: read(env, 'DLQ_URL'),
    // Not told the queue's count, with the retry window on: SQS's largest, a backstop only.
    maxReceiveCount:
      read(env, 'MAX_RECEIVE_COUNT') === undefined && windowSeconds > 0 ? MAX_BACKSTOP_RECEIVES : int(env, 'MAX_RECEIVE_COUNT'),
    retryWindowSeconds: windowSeconds,
    pacing: pacingSettings(env),
    userAgent: `sqs-webhook-relay/${version}`,
    breaker: breakerSettings(env),
    signingSecret: checkLiteral(
      secretSource(env, 'SIGNING_SECRET', 'SIGNING_SECRET_ARN'),
      'SIGNING_SECRET',
      parseSigningKeys,
      'one or more whsec_<base64> secrets separated by spaces (the whsec_ prefix may be left out)',
    ),
    authorization: checkLiteral(
      secretSource(env, 'AUTH_HEADER', 'AUTH_SECRET_ARN'),
      'AUTH_HEADER',
      checkAuthorizationValue,
      'a legal header value (printable ASCII, e.g. "Bearer <token>")',
    ),
    secretsRefreshSeconds: int(env, 'SECRETS_REFRESH_SECONDS'),
  };
}
