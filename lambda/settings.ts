/**
 * Every setting of the relay, declared once: its environment variable, construct prop, CDK
 * context key, type and unit, default, bounds and one line of doc. `loadConfig`, the construct's
 * defaults and environment, the context keys, local mode's settings and the tables of
 * docs/configuration.md are derived from it (`npx tsx bin/docs.ts` regenerates the tables).
 * Plain data, importing only AWS's limits: the function's bundle loads it at cold start, and
 * drops the local and stack settings, which hold no expressions (names, not arithmetic), unread.
 */
import {
  MAX_BATCHING_WINDOW_SECONDS,
  MAX_EVENT_SOURCE_BATCH_SIZE,
  MAX_FUNCTION_TIMEOUT_SECONDS,
  MAX_REDRIVE_RECEIVE_COUNT,
  MAX_RETENTION_DAYS,
  MAX_VISIBILITY_SECONDS,
} from './aws-limits';

/** The backoff policies (`BACKOFF`). */
export const BACKOFF_POLICIES = ['exponential', 'linear', 'fibonacci', 'fixed', 'schedule', 'none'] as const;
/** How the relay authenticates itself to the OAuth token endpoint (`OAUTH_CLIENT_AUTHENTICATION`, RFC 6749 §2.3.1). */
export const OAUTH_CLIENT_AUTHENTICATIONS = ['client_secret_basic', 'client_secret_post'] as const;
/** One of {@link OAUTH_CLIENT_AUTHENTICATIONS}. */
export type OAuthClientAuthentication = (typeof OAUTH_CLIENT_AUTHENTICATIONS)[number];
/** What to do with a permanent (non-retryable 3xx/4xx) response (`PERMANENT_FAILURE`). */
export const PERMANENT_FAILURE_MODES = ['dead-letter', 'retry'] as const;

/** One of {@link PERMANENT_FAILURE_MODES}. */
export type PermanentFailureMode = (typeof PERMANENT_FAILURE_MODES)[number];
/**
 * The log levels, Powertools Logger's own: one list for the function, the stack and local mode
 * (the stack once accepted only DEBUG to ERROR, though the function understands them all).
 */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** How a value is written: the parser the function, the context and the docs use for it. */
export type SettingKind = 'url' | 'string' | 'integer' | 'decimal' | 'boolean' | 'oneOf' | 'list' | 'secret' | 'arn';
/** The unit of a number: the variable and the context key share it; the prop is a `Duration` for the time units. */
export type SettingUnit = 'ms' | 'seconds' | 'minutes' | 'hours' | 'days' | 'MB';
/** Who reads the environment variable: the function (Lambda and local mode), local mode only, or nobody (stack only). */
export type SettingScope = 'function' | 'local' | 'stack';

/** One setting (its doc is in {@link SETTING_DOCS}). */
export interface Setting {
  readonly scope: SettingScope;
  /** The environment variable (none for stack-only settings). */
  readonly variable?: string;
  /** The `WebhookRelay` prop that sets it. */
  readonly prop?: string;
  /** The `-c key=value` context key that sets it. */
  readonly context?: string;
  readonly kind: SettingKind;
  readonly unit?: SettingUnit;
  /** The default, in `unit`; absent when there is none or it is derived (see `defaultText`). */
  readonly default?: string | number | boolean | readonly number[];
  /** The default as the docs state it, when it is not `default` as is. */
  readonly defaultText?: string;
  /** The construct prop's default, in words, where it differs from `default` (the construct derives it). */
  readonly propDefault?: string;
  /** Inclusive bounds of a number, in `unit`. */
  readonly min?: number;
  readonly max?: number;
  /** The prop's lower bound, seconds, where its `Duration` may be finer than `unit` (an hour of a setting in days). */
  readonly propMinSeconds?: number;
  /**
   * The least value but 0, in `unit`, where 0 switches the setting off: a value between is
   * refused as it was typed, never rounded to 0 (off) or up to this.
   */
  readonly minAboveZero?: number;
  readonly choices?: readonly string[];
}

/** The longest of the oldest-message alarm: SQS's longest retention. */
const MAX_RETENTION_MINUTES = MAX_RETENTION_DAYS * 1_440;
/** The oldest dead letter alarms a day short of the DLQ's retention at most: an alarm at 14 days would fire as SQS deletes it. */
const MAX_DEAD_LETTER_AGE_ALARM_DAYS = MAX_RETENTION_DAYS - 1;

/** A setting as its group declares it: its scope is the group's, its variable the key (a stack setting's context key). */
type Declared = Omit<Setting, 'scope' | 'variable'>;

/**
 * A group of settings, each given the group's scope and the key it is declared under as its
 * variable (a stack setting, having none, as its context key).
 */
function group<const S extends SettingScope, const T extends Readonly<Record<string, Declared>>>(
  scope: S,
  declared: T,
): {
  readonly [K in keyof T & string]: T[K] & { readonly scope: S } & (S extends 'stack' ? { readonly context: K } : { readonly variable: K });
} {
  const named = (key: string) => (scope === 'stack' ? { context: key } : { variable: key });
  return Object.fromEntries(Object.entries(declared).map(([key, setting]) => [key, { scope, ...named(key), ...setting }])) as never;
}

/** The function's settings (Lambda and local mode), keyed by variable: all the function's bundle loads. */
export const FUNCTION_SETTINGS = group('function', {
  WEBHOOK_URL: {
    prop: 'webhookUrl',
    context: 'webhookUrl',
    kind: 'url',
    defaultText:
      '(required, or `WEBHOOK_URL_SECRET_ARN`; the stack: parameter `WebhookUrl`; local mode: required with `QUEUE_URL`, else the demo webhook)',
  },
  WEBHOOK_URL_SECRET_ARN: { prop: 'webhookUrlSecret', context: 'webhookUrlSecretArn', kind: 'arn' },
  ALLOW_INSECURE_HTTP: { prop: 'allowInsecureHttp', context: 'allowInsecureHttp', kind: 'boolean', default: false },
  HEADER_PREFIX: { prop: 'headerPrefix', context: 'headerPrefix', kind: 'string', default: 'X-Carrier-' },
  DEFAULT_CONTENT_TYPE: { prop: 'defaultContentType', context: 'defaultContentType', kind: 'string', default: 'application/json' },
  REQUEST_TIMEOUT_MS: {
    prop: 'requestTimeout',
    context: 'requestTimeoutMs',
    kind: 'integer',
    unit: 'ms',
    default: 10_000,
    min: 1,
    // No request outlives the longest invocation.
    max: MAX_FUNCTION_TIMEOUT_SECONDS * 1_000,
  },
  MAX_CONCURRENCY: { prop: 'requestConcurrency', context: 'requestConcurrency', kind: 'integer', default: 10, min: 1, max: 1_000 },
  MAX_REQUESTS_PER_SECOND: {
    prop: 'maxRequestsPerSecond',
    context: 'maxRequestsPerSecond',
    kind: 'integer',
    default: 0,
    min: 0,
    max: 1_000_000,
    defaultText: '`0` (no ceiling)',
  },
  CONCURRENT_INVOCATIONS: {
    kind: 'integer',
    default: 1,
    min: 1,
    max: 1_000,
    defaultText: 'the stack: `maxConcurrency`; local mode: `POLLERS`',
  },
  PACING: { prop: 'pacing', context: 'pacing', kind: 'boolean', default: true },
  PACE_KEY: { prop: 'paceKey', context: 'paceKey', kind: 'string', defaultText: '(none: one pace for the endpoint)' },
  DEADLINE_MARGIN_MS: {
    prop: 'deadlineMargin',
    context: 'deadlineMarginMs',
    kind: 'integer',
    unit: 'ms',
    default: 1_000,
    min: 0,
    max: 60_000,
  },
  BACKOFF: { prop: 'backoff', context: 'backoff', kind: 'oneOf', choices: BACKOFF_POLICIES, default: 'exponential' },
  BACKOFF_BASE_SECONDS: {
    prop: 'backoffBase',
    context: 'backoffBaseSeconds',
    kind: 'integer',
    unit: 'seconds',
    default: 2,
    min: 0,
    max: MAX_VISIBILITY_SECONDS,
  },
  BACKOFF_MAX_SECONDS: {
    prop: 'backoffMax',
    context: 'backoffMaxSeconds',
    kind: 'integer',
    unit: 'seconds',
    default: 300,
    min: 0,
    max: MAX_VISIBILITY_SECONDS,
  },
  BACKOFF_JITTER: { prop: 'backoffJitter', context: 'backoffJitter', kind: 'boolean', default: true },
  BACKOFF_SCHEDULE: {
    prop: 'backoffSchedule',
    context: 'backoffSchedule',
    kind: 'list',
    unit: 'seconds',
    default: [60, 600, 3_600, 36_000, 43_200],
    min: 0,
    max: MAX_VISIBILITY_SECONDS,
  },
  PERMANENT_FAILURE: {
    prop: 'permanentFailure',
    context: 'permanentFailure',
    kind: 'oneOf',
    choices: PERMANENT_FAILURE_MODES,
    default: 'dead-letter',
  },
  DLQ_URL: { kind: 'url', defaultText: 'from the redrive policy' },
  MAX_RECEIVE_COUNT: {
    prop: 'maxReceiveCount',
    context: 'maxReceiveCount',
    kind: 'integer',
    default: 5,
    min: 1,
    max: MAX_REDRIVE_RECEIVE_COUNT,
    defaultText:
      "the stack: derived from the retry window; `5` with the window off; local mode: derived from the retry window (`5` with the window off), with `QUEUE_URL` the queue's redrive policy",
  },
  RETRY_WINDOW_HOURS: {
    prop: 'retryWindow',
    context: 'retryWindowHours',
    kind: 'decimal',
    unit: 'hours',
    default: 24,
    min: 0,
    // 1 minute: a shorter window would give up before a first retry.
    minAboveZero: 1 / 60,
    // SQS's longest retention (14 days) less the window's margin at the default visibility timeout (12 hours + 180 s):
    // retry-window.ts's retryWindowMarginSeconds, as a literal (a test holds them together).
    max: 323.95,
  },
  SIGNING_SECRET_ARN: {
    prop: 'signingSecret',
    context: 'signingSecretArn',
    kind: 'arn',
    defaultText: 'the stack: a key it creates (see `signing`)',
  },
  SIGNING_SECRET: { kind: 'secret' },
  AUTH_SECRET_ARN: { prop: 'authSecret', context: 'authSecretArn', kind: 'arn' },
  AUTH_HEADER: { kind: 'secret' },
  OAUTH_TOKEN_URL: { prop: 'oauthTokenUrl', context: 'oauthTokenUrl', kind: 'url' },
  OAUTH_CLIENT_ID: { prop: 'oauthClientId', context: 'oauthClientId', kind: 'string' },
  OAUTH_CLIENT_SECRET_ARN: { prop: 'oauthClientSecret', context: 'oauthClientSecretArn', kind: 'arn' },
  OAUTH_CLIENT_SECRET: { kind: 'secret' },
  OAUTH_SCOPE: { prop: 'oauthScope', context: 'oauthScope', kind: 'string' },
  OAUTH_AUDIENCE: { prop: 'oauthAudience', context: 'oauthAudience', kind: 'string' },
  OAUTH_CLIENT_AUTHENTICATION: {
    prop: 'oauthClientAuthentication',
    context: 'oauthClientAuthentication',
    kind: 'oneOf',
    choices: OAUTH_CLIENT_AUTHENTICATIONS,
    default: 'client_secret_basic',
    // Not written into the function's environment unless given: it means nothing without OAUTH_TOKEN_URL.
    propDefault: "unset: the function's default",
  },
  CLIENT_CERTIFICATE_SECRET_ARN: { prop: 'clientCertificateSecret', context: 'clientCertificateSecretArn', kind: 'arn' },
  CLIENT_CERTIFICATE_FILE: { kind: 'string' },
  CLIENT_KEY_FILE: { kind: 'string' },
  CA_CERTIFICATE_FILE: { kind: 'string' },
  HTTPS_PROXY: { prop: 'httpsProxy', context: 'httpsProxy', kind: 'url' },
  HTTP_PROXY: { prop: 'httpProxy', context: 'httpProxy', kind: 'url' },
  NO_PROXY: { prop: 'noProxy', context: 'noProxy', kind: 'string' },
  https_proxy: { kind: 'url' },
  http_proxy: { kind: 'url' },
  no_proxy: { kind: 'string' },
  SECRETS_REFRESH_SECONDS: {
    prop: 'secretsRefresh',
    context: 'secretsRefreshSeconds',
    kind: 'integer',
    unit: 'seconds',
    default: 300,
    min: 0,
    max: 86_400,
  },
  OUTAGE_THRESHOLD: { prop: 'outageThreshold', context: 'outageThreshold', kind: 'integer', default: 5, min: 0, max: 1_000 },
  OUTAGE_BACKOFF_SECONDS: {
    prop: 'outageBackoff',
    context: 'outageBackoffSeconds',
    kind: 'integer',
    unit: 'seconds',
    default: 10,
    min: 1,
    max: MAX_VISIBILITY_SECONDS,
  },
  OUTAGE_BACKOFF_MAX_SECONDS: {
    prop: 'outageBackoffMax',
    context: 'outageBackoffMaxSeconds',
    kind: 'integer',
    unit: 'seconds',
    default: 900,
    min: 1,
    max: MAX_VISIBILITY_SECONDS,
  },
  POWERTOOLS_SERVICE_NAME: {
    prop: 'serviceName',
    context: 'serviceName',
    kind: 'string',
    default: 'sqs-webhook-relay',
    propDefault: 'the stack name',
  },
  POWERTOOLS_METRICS_NAMESPACE: { kind: 'string', default: 'SqsWebhookRelay' },
  POWERTOOLS_LOG_LEVEL: { prop: 'logLevel', context: 'logLevel', kind: 'oneOf', choices: LOG_LEVELS, default: 'INFO' },
  AWS_ENDPOINT_URL_SQS: { kind: 'url', defaultText: '(AWS)' },
});

/** Settings local mode and the daemon read besides the function's, keyed by variable. */
export const LOCAL_SETTINGS = /* @__PURE__ */ group('local', {
  QUEUE_URL: { kind: 'url' },
  SQS_PORT: { kind: 'integer', default: 4566, min: 0, max: 65_535 },
  QUEUE_NAME: { kind: 'string', default: 'webhook-relay' },
  BATCH_SIZE: { prop: 'batchSize', context: 'batchSize', kind: 'integer', default: 10, min: 1, max: MAX_EVENT_SOURCE_BATCH_SIZE },
  MAX_BATCHING_WINDOW_SECONDS: {
    prop: 'maxBatchingWindow',
    context: 'maxBatchingWindowSeconds',
    kind: 'integer',
    unit: 'seconds',
    default: 0,
    min: 0,
    max: MAX_BATCHING_WINDOW_SECONDS,
  },
  FUNCTION_TIMEOUT_SECONDS: {
    prop: 'timeout',
    context: 'timeoutSeconds',
    kind: 'integer',
    unit: 'seconds',
    default: 30,
    min: 1,
    max: MAX_FUNCTION_TIMEOUT_SECONDS,
  },
  POLLERS: { kind: 'integer', default: 1, min: 1, max: 100 },
  DEMO_WEBHOOK_PORT: { kind: 'integer', default: 0, min: 0, max: 65_535, defaultText: '`0` (any free port)' },
  WEBHOOK_HEALTH_CHECK_URL: { kind: 'url' },
  HEALTH_CHECK_INTERVAL_SECONDS: { kind: 'integer', unit: 'seconds', default: 5, min: 1, max: 3_600 },
  LOG_FORMAT: { kind: 'oneOf', choices: ['pretty', 'json'], defaultText: '`pretty` on a terminal, else `json`' },
  LOG_LEVEL: { kind: 'oneOf', choices: LOG_LEVELS, default: 'INFO' },
  NO_COLOR: { kind: 'string' },
  POWERTOOLS_METRICS_DISABLED: { kind: 'boolean', defaultText: '`true` here' },
});

/** Settings only the stack has (no variable), keyed by context key. */
export const STACK_SETTINGS = /* @__PURE__ */ group('stack', {
  stackName: { prop: 'name', kind: 'string', default: 'SqsWebhookRelay', propDefault: '<stack name>-<construct id>' },
  alarmEmail: { prop: 'alarmEmail', kind: 'string' },
  fifo: { prop: 'fifo', kind: 'boolean', default: false },
  queueName: { prop: 'queueName', kind: 'string', defaultText: 'generated' },
  queueArn: { prop: 'queue', kind: 'arn' },
  deadLetterQueueArn: { prop: 'deadLetterQueue', kind: 'arn' },
  retentionPeriodDays: {
    prop: 'retentionPeriod',
    kind: 'integer',
    unit: 'days',
    default: 4,
    min: 1,
    propMinSeconds: 60,
    max: MAX_RETENTION_DAYS,
  },
  visibilityTimeoutSeconds: {
    prop: 'visibilityTimeout',
    kind: 'integer',
    unit: 'seconds',
    min: 0,
    max: MAX_VISIBILITY_SECONDS,
    defaultText: '6 × timeout + window',
  },
  memorySize: { prop: 'memorySize', kind: 'integer', unit: 'MB', default: 256, min: 128, max: 10_240 },
  logRetentionDays: { prop: 'logRetention', kind: 'integer', unit: 'days', default: 30 },
  signing: { prop: 'signing', kind: 'boolean', default: true },
  maxConcurrency: { prop: 'maxConcurrency', kind: 'integer', default: 5, min: 2, max: 1_000 },
  vpcId: { prop: 'vpc', kind: 'string', defaultText: "none: Lambda's own network" },
  subnetIds: { prop: 'vpcSubnets', kind: 'string', defaultText: '(required with `vpcId`)' },
  securityGroupIds: { prop: 'securityGroups', kind: 'string', defaultText: 'one created, all outbound allowed' },
  oldestMessageAgeAlarmMinutes: {
    prop: 'oldestMessageAgeThreshold',
    kind: 'integer',
    unit: 'minutes',
    default: 30,
    min: 1,
    max: MAX_RETENTION_MINUTES,
  },
  breakerOpenAlarmMinutes: {
    prop: 'breakerOpenAlarmThreshold',
    kind: 'integer',
    unit: 'minutes',
    default: 5,
    min: 1,
    max: 1_440, // 1 day
  },
  deadLetterAgeAlarmDays: {
    prop: 'deadLetterAgeAlarmThreshold',
    kind: 'integer',
    unit: 'days',
    default: 10,
    min: 1,
    propMinSeconds: 3_600,
    max: MAX_DEAD_LETTER_AGE_ALARM_DAYS,
  },
});

/** The three groups as one registry (a function, so the bundler can drop it where it is unused). */
function merge<A, B, C>(a: A, b: B, c: C): A & B & C {
  return { ...a, ...b, ...c };
}

/** Every setting, in the order the docs list them. Keyed by the variable, or the context key when there is none. */
export const SETTINGS = /* @__PURE__ */ merge(FUNCTION_SETTINGS, LOCAL_SETTINGS, STACK_SETTINGS);

/** The registry's key of a setting. */
export type SettingName = keyof typeof SETTINGS;

/** Every setting as a list, in declaration order. */
export const SETTING_LIST: readonly Setting[] = /* @__PURE__ */ Object.values(SETTINGS);

/**
 * One line of doc per setting (Markdown), for docs/configuration.md and the context keys. Kept
 * beside the entries rather than in them so the function's bundle, which never reads them,
 * leaves them out (the compiler still demands one for every setting).
 */
export const SETTING_DOCS: Readonly<Record<SettingName, string>> = {
  WEBHOOK_URL:
    "where each message is POSTed. Must be `https://`, except for loopback hosts (`localhost`, `127.0.0.0/8`, `[::1]`); credentials in the URL are refused. The context key takes `https://` only, no `user:password`, not a loopback host. The URL is written into the template and the function's environment as given: a URL that carries a token (in its query or path) belongs in `WEBHOOK_URL_SECRET_ARN` (synth warns about a query string). Local mode: the demo webhook when unset, in the sandbox only; with `QUEUE_URL` it is required",
  WEBHOOK_URL_SECRET_ARN:
    "a Secrets Manager secret holding the webhook's URL, instead of `WEBHOOK_URL`: for a URL that embeds a token, which then never appears in the template, the environment or a log. The same rules as `WEBHOOK_URL`; re-read every `SECRETS_REFRESH_SECONDS`, the last good URL kept. Lambda only: local runs and the daemon take `WEBHOOK_URL`",
  ALLOW_INSECURE_HTTP:
    "`true` allows a plain `http://` URL to a non-loopback host (a private network, a compose stack): the webhook, and in the daemon the health check and the SQS endpoint (the `send` and `dead-letters` commands' too)",
  HEADER_PREFIX: "prefix of the relay's own headers",
  DEFAULT_CONTENT_TYPE: '`Content-Type` when a message has no `Body.ContentType` attribute',
  REQUEST_TIMEOUT_MS:
    'bound on one webhook request, response included; also cut to the time the function has left. A request never answered holds its batch this long: keep it near your slowest answers',
  MAX_CONCURRENCY: 'webhook requests in flight at once per invocation (not `maxConcurrency`, the concurrent invocations)',
  MAX_REQUESTS_PER_SECOND:
    "the webhook's known capacity: a ceiling on the whole relay's requests per second, shared evenly by the concurrent invocations (a token bucket in each); at a webhook of a few dozen requests a second, about 95 % of its rate (see [Back-pressure](webhook-owners.md#back-pressure)); `0` leaves the pace to `PACING` alone",
  CONCURRENT_INVOCATIONS:
    "how many invocations share `MAX_REQUESTS_PER_SECOND` and a webhook's rate-limit quota, each taking its share; set for you by the stack (`maxConcurrency`). Local mode takes `POLLERS` unless given: daemons that share one webhook set it to the pollers of all of them (at least `POLLERS`)",
  PACING:
    "adapt each container's pace (requests per second and in flight) to the webhook's capacity: slower when refusals (`429`, `503`, `504`, `408`, timeouts) grow with the pace, not for refusals of single messages that persist at any pace; paced before it refuses when its answers carry rate-limit headers (`RateLimit`, `X-RateLimit-*`); held, nothing sent, for the shortest `Retry-After` (6 s at most, probed) when many different messages are refused with few taken. `false`: only `MAX_CONCURRENCY` and `MAX_REQUESTS_PER_SECOND` apply (see [Back-pressure](webhook-owners.md#back-pressure))",
  PACE_KEY:
    "also pace each key on its own, beside the endpoint: the name of a message attribute whose value is the key (a tenant id, say; a name SQS allows, so not `AWS.…` or `Amazon.…`), or `MessageGroupId` for the message group (FIFO, or a fair queue's tenant). A key refused for its own sake is slowed alone; the least recently used of more than 4,096 keys is forgotten. Messages without the key are paced by the endpoint only",
  DEADLINE_MARGIN_MS: "time kept back from the function's deadline for the SQS calls after the last request",
  BACKOFF:
    "delay policy when the webhook names none: `exponential` (base·2ⁿ⁻¹), `linear` (n·base), `fibonacci` (base·F(n)), `fixed` (base), `schedule` (the n-th entry of `BACKOFF_SCHEDULE`), `none` (keep the queue's visibility timeout); n = receive count",
  BACKOFF_BASE_SECONDS: "the policy's unit",
  BACKOFF_MAX_SECONDS: 'no computed delay exceeds this, jitter included; at least `BACKOFF_BASE_SECONDS`',
  BACKOFF_JITTER: 'add up to 25 % random jitter so a burst of failures does not come back at once',
  BACKOFF_SCHEDULE:
    "the `schedule` policy's delay after each receive, comma-separated whole seconds (the last repeats): with `maxReceiveCount` 5, about a day",
  PERMANENT_FAILURE: 'what a non-retryable 3xx/4xx does: `dead-letter` (copy to the DLQ, then acknowledge) or `retry`',
  DLQ_URL: "the dead-letter queue for permanent failures; when unset, the source queue's `RedrivePolicy` names it. The stack sets it",
  MAX_RECEIVE_COUNT:
    "the redrive policy's receive count. With the retry window on, only a backstop for invocations that crash or time out: the stack derives it from the window (the window over the queue's visibility timeout, plus 3 kept for crashes, from 10 to SQS's 1,000: 483 with the defaults), and the function spaces retries so that it is not reached first. With `RETRY_WINDOW_HOURS=0`, SQS's count semantics: the receive that moves a message to the DLQ (default 5). The function reads it to pace retries and to WARN before the last one. Local mode: the emulated queue's redrive policy (with `QUEUE_URL`: read from the queue's)",
  RETRY_WINDOW_HOURS:
    "how long a message's failures may go on before the relay gives up and dead-letters it (reason `retry window exhausted`), counted from its first receive; decimals allowed (`0.5` = 30 minutes), from 1 minute (`0.0167`). At most 323.95 (13 days 11 hours 57 minutes): SQS keeps a message 14 days at most, and the window needs a margin of 12 hours and one visibility timeout after it, so a visibility timeout longer than 180 s lowers the bound (synth names it). `429`/`503` with `Retry-After` and circuit-breaker holds cost it only the time they take. `0` switches the window off: `MAX_RECEIVE_COUNT` alone decides (the stack does this when `maxReceiveCount` is set for a queue it creates; for an existing queue, give `0`). Permanent failures are dead-lettered at once either way",
  SIGNING_SECRET_ARN:
    'a Secrets Manager secret holding `whsec_…` (several, space-separated, while rotating): every request is signed ([Standard Webhooks](https://www.standardwebhooks.com))',
  SIGNING_SECRET: 'the same, given as the value itself: for `npm start` and daemons; the stack never sets it',
  AUTH_SECRET_ARN: 'a Secrets Manager secret holding the whole `Authorization` value (e.g. `Bearer …`)',
  AUTH_HEADER: 'the same, given as the value itself (local runs and daemons)',
  OAUTH_TOKEN_URL:
    'OAuth 2.0 client credentials: the token endpoint. Every request then carries `Authorization: Bearer <token>`, one token per container, renewed before `expires_in` runs out and once on a `401` (the record is then resent once). `https://` only, except loopback hosts or with `ALLOW_INSECURE_HTTP`. Not with `AUTH_SECRET_ARN`/`AUTH_HEADER`',
  OAUTH_CLIENT_ID: 'the OAuth client id (required with `OAUTH_TOKEN_URL`)',
  OAUTH_CLIENT_SECRET_ARN:
    'a Secrets Manager secret holding the OAuth client secret (plain text; whitespace around it, such as the newline of a file it was saved from, is not part of it); re-read every `SECRETS_REFRESH_SECONDS`',
  OAUTH_CLIENT_SECRET: 'the same, given as the value itself (local runs and daemons)',
  OAUTH_SCOPE: "the `scope` asked for, space-separated (unset: none, the endpoint's default)",
  OAUTH_AUDIENCE: 'the `audience` asked for (Auth0 and others mint a token per API); unset: none',
  OAUTH_CLIENT_AUTHENTICATION:
    'how the relay authenticates to the token endpoint: `client_secret_basic` (HTTP Basic) or `client_secret_post` (in the form)',
  CLIENT_CERTIFICATE_SECRET_ARN:
    'mutual TLS: a Secrets Manager secret holding JSON `{"certificate": "<PEM>", "privateKey": "<PEM>"}` (and optionally `"caCertificate"`, a private CA to trust beside the public ones, for the webhook and the OAuth token endpoint), presented to the webhook (never to the token endpoint); re-read every `SECRETS_REFRESH_SECONDS`, the last good value kept',
  CLIENT_CERTIFICATE_FILE:
    'mutual TLS for local runs and daemons: a PEM certificate file (with `CLIENT_KEY_FILE`), re-read every `SECRETS_REFRESH_SECONDS`',
  CLIENT_KEY_FILE: "the certificate's PEM private key file (unencrypted)",
  CA_CERTIFICATE_FILE:
    "a PEM bundle of private CAs trusted for the webhook's and the OAuth token endpoint's certificates, beside the public ones (also `NODE_EXTRA_CA_CERTS`, which Node.js reads at start)",
  HTTPS_PROXY:
    'a forward proxy for `https://` webhook and token requests (`http://[user:password@]host:port`, the user and password percent-encoded: `%25` for a `%`): an HTTP CONNECT tunnel, TLS end to end. AWS calls do not use it. The construct refuses a `user:password` (it would sit in the template)',
  HTTP_PROXY: 'the same for `http://` webhooks (a CONNECT tunnel too)',
  NO_PROXY:
    'hosts reached without the proxy, comma-separated: names (`example.com` also covers its subdomains; a trailing dot, `example.com.`, on either side changes nothing), IP addresses, CIDR ranges (`10.0.0.0/8`; a malformed one is refused at start), with an optional `:port`; `*` for all',
  https_proxy: '`HTTPS_PROXY` in lower case, read when the upper-case one is unset',
  http_proxy: '`HTTP_PROXY` in lower case, read when the upper-case one is unset',
  no_proxy: '`NO_PROXY` in lower case, read when the upper-case one is unset',
  SECRETS_REFRESH_SECONDS: 'how long a value read from Secrets Manager is used before it is read again (so rotation needs no deploy)',
  OUTAGE_THRESHOLD:
    'failures in a row that open the circuit breaker: outage signs (no answer, 502/503/504 without `Retry-After`), or server errors such as `500` that go on for 5 s; `0` switches it off (see [Outages](operations.md#outages))',
  OUTAGE_BACKOFF_SECONDS:
    "while the breaker is open, one probe per this many seconds, so the webhook's return is noticed within it; also the shortest hold of the records held back",
  OUTAGE_BACKOFF_MAX_SECONDS:
    'the longest hold: a record held back by the open breaker stays away a quarter of the time it has been open, from `OUTAGE_BACKOFF_SECONDS` up to this (with `RETRY_WINDOW_HOURS=0`, tripling with each receive instead: 10, 30, 90 … s)',
  POWERTOOLS_SERVICE_NAME: "`service` of every log line and the metrics' dimension",
  POWERTOOLS_METRICS_NAMESPACE: 'CloudWatch namespace of the metrics',
  POWERTOOLS_LOG_LEVEL: "the log level, any of Powertools Logger's (case-insensitive); local mode also reads `LOG_LEVEL`",
  AWS_ENDPOINT_URL_SQS: "the SDK's own variable: points the SQS calls at an emulator or a VPC endpoint",
  QUEUE_URL:
    "relay from this existing queue instead of the emulator; its DLQ is read from the queue's redrive policy (the stack's counterpart is `queueArn`). Where the signed SQS calls go (`AWS_ENDPOINT_URL_SQS`, else a queue URL not on AWS) must be `https://`, a loopback host, or allowed by `ALLOW_INSECURE_HTTP`",
  SQS_PORT:
    "the emulator's port on 127.0.0.1 (`0`: any free port); it answers only requests addressed to `localhost`, `*.localhost`, `127.0.0.1` or `[::1]`",
  QUEUE_NAME:
    "the emulated queue's name, up to 76 characters (`.fifo` included), so that the DLQ's, `<name>-dlq` (`.fifo` kept last), fits SQS's 80. A name ending in `.fifo` makes both emulated queues FIFO",
  BATCH_SIZE: 'records per invocation; in the stack FIFO up to 10, and above 10 needs a batching window',
  MAX_BATCHING_WINDOW_SECONDS: 'how long to gather a batch (the stack: not for FIFO)',
  FUNCTION_TIMEOUT_SECONDS:
    "each invocation's deadline (the function timeout). The queue's visibility timeout is derived from it: 6 × timeout + batching window, locally as in the stack",
  POLLERS: "concurrent poll-and-invoke loops (the stack's counterpart is `maxConcurrency`)",
  DEMO_WEBHOOK_PORT: "the demo webhook's port on 127.0.0.1",
  WEBHOOK_HEALTH_CHECK_URL:
    "Carrier's health check: polling waits until this URL answers 2xx, and pauses while it does not. `https://`, or `http://` to a loopback host or with `ALLOW_INSECURE_HTTP`. Reached as the webhook is: through `HTTPS_PROXY`/`HTTP_PROXY` (unless `NO_PROXY`), trusting `CA_CERTIFICATE_FILE`, presenting the client certificate",
  HEALTH_CHECK_INTERVAL_SECONDS: 'how often the health check URL is checked',
  LOG_FORMAT: 'how log lines are written',
  LOG_LEVEL: 'wins over `POWERTOOLS_LOG_LEVEL`; `DEBUG` adds per-batch and per-message detail',
  NO_COLOR: 'set: no colours on a terminal',
  POWERTOOLS_METRICS_DISABLED: '`false` prints the EMF metric lines Lambda would send to CloudWatch',
  stackName:
    "the stack, dashboard and alarm names (`<stackName>-dlq-not-empty`, …), and the metrics `service`, so relays never mix in each other's graphs",
  alarmEmail: 'an e-mail subscription to the alarm topic (confirm it in the e-mail AWS sends)',
  fifo: 'FIFO main queue and DLQ (`.fifo`)',
  queueName: 'name of the queue to create; the DLQ is `<name>-dlq` (`.fifo` appended for FIFO; a name ending in `.fifo` needs `fifo`)',
  queueArn: 'relay from this existing queue instead of creating one (needs `deadLetterQueueArn`)',
  deadLetterQueueArn: "the existing queue's DLQ, its redrive policy's target (required with `queueArn`)",
  retentionPeriodDays:
    "how long the main queue keeps a message (the DLQ keeps 14 days); refused when shorter than the retry window plus its margin (SQS's 12 hours + the visibility timeout), or, with `maxReceiveCount` set, than the longest its receives can take",
  visibilityTimeoutSeconds: "the queue's visibility timeout; never lower than 6 × timeout + batching window",
  memorySize: "the function's memory",
  logRetentionDays: "the function's log retention, one of CloudWatch's values: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, …",
  signing:
    'sign every request with a key the stack creates in Secrets Manager; `false` sends no signatures; `signingSecretArn` signs with an existing secret instead',
  maxConcurrency: 'most concurrent invocations: with `requestConcurrency`, the most requests the webhook sees at once',
  vpcId:
    "put the function in this VPC (with `subnetIds`), e.g. so that its requests leave by a NAT gateway's Elastic IP, the one address a webhook owner allow-lists; no lookup: the stack stays offline (see [A fixed egress address](operations.md#a-fixed-egress-address))",
  subnetIds:
    "the function's subnets, comma-separated ids (in cdk.json a JSON array of them too; each once): private ones whose route leaves by the NAT gateway",
  securityGroupIds:
    "the function's security groups, comma-separated ids (in cdk.json a JSON array of them too; each once; with `vpcId`); unset: one the stack creates, all outbound allowed",
  oldestMessageAgeAlarmMinutes:
    "the threshold of the two message-age alarms: SQS's count (`oldest-message-age`) and the relay's, of the messages it handed back (`returned-message-age`)",
  breakerOpenAlarmMinutes: 'alarm when the circuit breaker has been open this long',
  deadLetterAgeAlarmDays:
    'alarm when the oldest dead letter is this old: the DLQ keeps a message 14 days, so the rest is the time left to read and replay it (`sqs-webhook-relay dead-letters`) before SQS deletes it',
};
