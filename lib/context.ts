/**
 * Every knob of the stack as a CDK context key (`npx cdk deploy -c key=value`, or `context` in
 * cdk.json), parsed into typed props. Values from `-c` arrive as strings and values from cdk.json
 * as JSON, so both `"true"` and `true` are accepted; anything else fails synth with a message
 * naming the key, never silently falls back to a default.
 */
import { Duration } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import { BACKOFF_POLICIES, LOG_LEVELS, PERMANENT_FAILURE_MODES } from './webhook-relay';
import type { WebhookRelayStackProps } from './webhook-relay-stack';

type Kind = 'string' | 'boolean' | 'integer';

/** One context key: its type and the one-line description the docs and errors use. */
export interface ContextKey {
  readonly kind: Kind;
  readonly description: string;
  /** The allowed values, for keys that take one of a list. */
  readonly choices?: readonly string[];
}

/** Every context key the app reads, in the order the docs list them. */
export const CONTEXT_KEYS = {
  webhookUrl: { kind: 'string', description: 'where every message is POSTed (https://…); without it the template takes the CloudFormation parameter WebhookUrl' },
  stackName: { kind: 'string', description: 'the stack name, which also names the dashboard, the alarms and the metrics service (default SqsWebhookRelay)' },
  alarmEmail: { kind: 'string', description: 'e-mail address subscribed to the alarm topic' },
  fifo: { kind: 'boolean', description: 'create FIFO queues (default false)' },
  queueName: { kind: 'string', description: 'name of the queue (the DLQ is <name>-dlq; default generated)' },
  queueArn: { kind: 'string', description: 'relay from this existing queue instead of creating one (needs deadLetterQueueArn)' },
  deadLetterQueueArn: { kind: 'string', description: "the existing queue's dead-letter queue (its redrive policy's target)" },
  maxReceiveCount: { kind: 'integer', description: 'receives before a message moves to the DLQ (default 5)' },
  retentionPeriodDays: { kind: 'integer', description: 'how long the main queue keeps a message, days (default 4; the DLQ keeps 14)' },
  visibilityTimeoutSeconds: { kind: 'integer', description: 'queue visibility timeout (default 6 × timeout + batching window; no lower)' },
  timeoutSeconds: { kind: 'integer', description: 'function timeout (default 30)' },
  memorySize: { kind: 'integer', description: 'function memory, MB (default 256)' },
  logRetentionDays: { kind: 'integer', description: 'function log retention, days: one of CloudWatch\'s values (1, 3, 5, 7, 14, 30, 60, 90, …; default 30)' },
  batchSize: { kind: 'integer', description: 'records per invocation (default 10; standard queues up to 10,000 with a batching window, FIFO up to 10)' },
  maxBatchingWindowSeconds: { kind: 'integer', description: 'how long to gather a batch, 0 to 300 (default 0; at least 1 when batchSize > 10; not for FIFO)' },
  maxConcurrency: { kind: 'integer', description: 'most concurrent invocations, 2 to 1,000 (default 5)' },
  requestConcurrency: { kind: 'integer', description: 'webhook requests in flight per invocation, MAX_CONCURRENCY (default 10)' },
  requestTimeoutMs: { kind: 'integer', description: 'timeout of one webhook request, REQUEST_TIMEOUT_MS (default 10000)' },
  deadlineMarginMs: { kind: 'integer', description: 'time kept back before the function deadline, DEADLINE_MARGIN_MS (default 1000)' },
  backoff: { kind: 'string', description: 'retry delay policy, BACKOFF (default exponential)', choices: BACKOFF_POLICIES },
  backoffBaseSeconds: { kind: 'integer', description: 'BACKOFF_BASE_SECONDS (default 2)' },
  backoffMaxSeconds: { kind: 'integer', description: 'BACKOFF_MAX_SECONDS (default 300)' },
  backoffSchedule: { kind: 'string', description: 'BACKOFF_SCHEDULE for backoff=schedule: comma-separated seconds, e.g. 60,600,3600' },
  backoffJitter: { kind: 'boolean', description: 'BACKOFF_JITTER, up to 25 % random extra delay (default true)' },
  permanentFailure: { kind: 'string', description: 'what a permanent 4xx does, PERMANENT_FAILURE (default dead-letter)', choices: PERMANENT_FAILURE_MODES },
  allowInsecureHttp: { kind: 'boolean', description: 'allow an http:// webhook URL, ALLOW_INSECURE_HTTP (default false)' },
  headerPrefix: { kind: 'string', description: 'prefix of the Carrier headers, HEADER_PREFIX (default X-Carrier-)' },
  defaultContentType: { kind: 'string', description: 'Content-Type when a message has none, DEFAULT_CONTENT_TYPE (default application/json)' },
  logLevel: { kind: 'string', description: 'function log level, POWERTOOLS_LOG_LEVEL (default INFO)', choices: LOG_LEVELS },
  serviceName: { kind: 'string', description: 'POWERTOOLS_SERVICE_NAME, the metrics dimension (default the stack name)' },
  oldestMessageAgeAlarmMinutes: { kind: 'integer', description: 'alarm when the oldest message is older than this (default 30)' },
  signing: { kind: 'boolean', description: 'sign every request (Standard Webhooks) with a key the stack creates in Secrets Manager (default true)' },
  signingSecretArn: { kind: 'string', description: 'sign with the key(s) in this existing Secrets Manager secret instead' },
  authSecretArn: { kind: 'string', description: 'send the Authorization value held in this Secrets Manager secret' },
  secretsRefreshSeconds: { kind: 'integer', description: 'SECRETS_REFRESH_SECONDS, how long a secret value is used before it is read again (default 300)' },
  outageThreshold: { kind: 'integer', description: 'OUTAGE_THRESHOLD, outage failures in a row that open the circuit breaker; 0 = off (default 5)' },
  outageBackoffSeconds: { kind: 'integer', description: "OUTAGE_BACKOFF_SECONDS, the breaker's first open interval (default 30)" },
  outageBackoffMaxSeconds: { kind: 'integer', description: "OUTAGE_BACKOFF_MAX_SECONDS, the breaker's longest interval (default 900)" },
  outageToleranceHours: { kind: 'integer', description: 'survive a webhook outage this long without dead-lettering: derives maxReceiveCount (e.g. 24 → 101)' },
  breakerOpenAlarmMinutes: { kind: 'integer', description: 'alarm when the circuit breaker has been open this long (default 5)' },
} as const satisfies Record<string, ContextKey>;

/** The name of a context key the app reads. */
export type ContextKeyName = keyof typeof CONTEXT_KEYS;

/** A context value the app cannot use; the message names the key and what it expected. */
export class ContextError extends Error {
  constructor(key: string, message: string) {
    super(`Context ${key} (-c ${key}=…) ${message}`);
    this.name = 'ContextError';
  }
}

/** The stack name used when no `stackName` context is given. */
export const DEFAULT_STACK_NAME = 'SqsWebhookRelay';

/** What the app builds from context: the stack's id and props. */
export interface StackFromContext {
  readonly stackName: string;
  readonly props: WebhookRelayStackProps;
}

function parse(key: ContextKeyName, raw: unknown): string | number | boolean | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  const spec: ContextKey = CONTEXT_KEYS[key];
  switch (spec.kind) {
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === 'false') return raw === 'true';
      throw new ContextError(key, `must be true or false; got ${JSON.stringify(raw)}`);
    }
    case 'integer': {
      const value = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
      if (!Number.isSafeInteger(value) || value < 0) throw new ContextError(key, `must be a whole number; got ${JSON.stringify(raw)}`);
      return value;
    }
    case 'string': {
      if (typeof raw !== 'string') throw new ContextError(key, `must be a string; got ${JSON.stringify(raw)}`);
      const value = raw.trim();
      if (spec.choices !== undefined) {
        const choice = spec.choices.find((c) => c.toLowerCase() === value.toLowerCase());
        if (choice === undefined) throw new ContextError(key, `must be one of ${spec.choices.join(', ')}; got ${JSON.stringify(raw)}`);
        return choice;
      }
      return value;
    }
  }
}

function schedule(raw: string | undefined): Duration[] | undefined {
  if (raw === undefined) return undefined;
  const parts = raw.split(',').map((part) => part.trim());
  if (!parts.every((part) => /^\d+$/.test(part))) throw new ContextError('backoffSchedule', `must be comma-separated whole seconds, e.g. 60,600,3600; got ${JSON.stringify(raw)}`);
  return parts.map((part) => Duration.seconds(Number(part)));
}

/**
 * Reads every context key into the stack's props.
 * @param get the context lookup, usually `(key) => app.node.tryGetContext(key)`
 * @param allKeys every context key present, to catch near-misses such as `webhookURL`
 * @throws {ContextError} for a value of the wrong type or a misspelt key
 */
export function stackFromContext(get: (key: string) => unknown, allKeys: readonly string[] = []): StackFromContext {
  // A key that differs from a known one only in case is a typo that would otherwise be ignored.
  const known = new Map(Object.keys(CONTEXT_KEYS).map((key) => [key.toLowerCase(), key]));
  for (const key of allKeys) {
    const meant = known.get(key.toLowerCase());
    if (meant !== undefined && meant !== key) throw new ContextError(key, `is not a key the app reads; did you mean ${meant}?`);
  }
  const values: Partial<Record<ContextKeyName, string | number | boolean>> = {};
  for (const key of Object.keys(CONTEXT_KEYS) as ContextKeyName[]) {
    const value = parse(key, get(key));
    if (value !== undefined) values[key] = value;
  }
  const str = (key: ContextKeyName): string | undefined => values[key] as string | undefined;
  const int = (key: ContextKeyName): number | undefined => values[key] as number | undefined;
  const bool = (key: ContextKeyName): boolean | undefined => values[key] as boolean | undefined;
  const duration = (key: ContextKeyName, unit: (amount: number) => Duration): Duration | undefined => {
    const value = int(key);
    return value === undefined ? undefined : unit(value);
  };

  const logRetentionDays = int('logRetentionDays');
  if (logRetentionDays !== undefined && !Object.values(logs.RetentionDays).includes(logRetentionDays)) {
    const allowed = Object.values(logs.RetentionDays).filter((v): v is number => typeof v === 'number' && v !== logs.RetentionDays.INFINITE);
    throw new ContextError('logRetentionDays', `must be one of CloudWatch Logs' retention periods (${allowed.join(', ')}); got ${logRetentionDays}`);
  }
  const queueArn = str('queueArn');
  const deadLetterQueueArn = str('deadLetterQueueArn');
  if (deadLetterQueueArn !== undefined && queueArn === undefined) {
    throw new ContextError('deadLetterQueueArn', 'is only for an existing queue: give queueArn too');
  }

  const signingSecretArn = str('signingSecretArn');
  if (signingSecretArn !== undefined && bool('signing') === false) throw new ContextError('signingSecretArn', 'is given, but signing is false');

  const stackName = str('stackName') ?? DEFAULT_STACK_NAME;
  return {
    stackName,
    props: {
      queueArn,
      deadLetterQueueArn,
      signingSecretArn,
      authSecretArn: str('authSecretArn'),
      relay: {
        webhookUrl: str('webhookUrl'),
        name: stackName,
        serviceName: str('serviceName'),
        alarmEmail: str('alarmEmail'),
        fifo: bool('fifo'),
        queueName: str('queueName'),
        maxReceiveCount: int('maxReceiveCount'),
        retentionPeriod: duration('retentionPeriodDays', Duration.days),
        visibilityTimeout: duration('visibilityTimeoutSeconds', Duration.seconds),
        timeout: duration('timeoutSeconds', Duration.seconds),
        memorySize: int('memorySize'),
        logRetention: logRetentionDays as logs.RetentionDays | undefined,
        batchSize: int('batchSize'),
        maxBatchingWindow: duration('maxBatchingWindowSeconds', Duration.seconds),
        maxConcurrency: int('maxConcurrency'),
        requestConcurrency: int('requestConcurrency'),
        requestTimeout: duration('requestTimeoutMs', Duration.millis),
        deadlineMargin: duration('deadlineMarginMs', Duration.millis),
        backoff: str('backoff') as WebhookRelayStackProps['relay']['backoff'],
        backoffBase: duration('backoffBaseSeconds', Duration.seconds),
        backoffMax: duration('backoffMaxSeconds', Duration.seconds),
        backoffSchedule: schedule(str('backoffSchedule')),
        backoffJitter: bool('backoffJitter'),
        permanentFailure: str('permanentFailure') as WebhookRelayStackProps['relay']['permanentFailure'],
        allowInsecureHttp: bool('allowInsecureHttp'),
        headerPrefix: str('headerPrefix'),
        defaultContentType: str('defaultContentType'),
        logLevel: str('logLevel') as WebhookRelayStackProps['relay']['logLevel'],
        oldestMessageAgeThreshold: duration('oldestMessageAgeAlarmMinutes', Duration.minutes),
        signing: bool('signing'),
        secretsRefresh: duration('secretsRefreshSeconds', Duration.seconds),
        outageThreshold: int('outageThreshold'),
        outageBackoff: duration('outageBackoffSeconds', Duration.seconds),
        outageBackoffMax: duration('outageBackoffMaxSeconds', Duration.seconds),
        outageTolerance: duration('outageToleranceHours', Duration.hours),
        breakerOpenAlarmThreshold: duration('breakerOpenAlarmMinutes', Duration.minutes),
      },
    },
  };
}
