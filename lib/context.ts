/**
 * Every knob of the stack as a CDK context key (`npx cdk deploy -c key=value`, or `context` in
 * cdk.json), parsed into typed props. Values from `-c` arrive as strings and values from cdk.json
 * as JSON, so both `"true"` and `true` are accepted; anything else fails synth with a message
 * naming the key, never silently falls back to a default.
 */
import { Duration } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import {
  MAX_BATCHING_WINDOW_SECONDS,
  MAX_EVENT_SOURCE_BATCH_SIZE,
  MAX_FIFO_EVENT_SOURCE_BATCH_SIZE,
  MAX_FUNCTION_TIMEOUT_SECONDS,
  MAX_VISIBILITY_SECONDS,
} from '../lambda/aws-limits';
import { BACKOFF_POLICIES, LOG_LEVELS, PERMANENT_FAILURE_MODES, WebhookRelayConfigError } from './webhook-relay';
import type { WebhookRelayStackProps } from './webhook-relay-stack';

type Kind = 'string' | 'boolean' | 'integer';

/** One context key: its type and the one-line description the docs and errors use. */
export interface ContextKey {
  readonly kind: Kind;
  readonly description: string;
  /** The allowed values, for keys that take one of a list. */
  readonly choices?: readonly string[];
  /** The smallest and largest whole number an integer key takes (the construct's or AWS's limits, in the key's unit). */
  readonly range?: readonly [number, number];
}

const DAY_MINUTES = 24 * 60;

/** Every context key the app reads, in the order the docs list them. */
export const CONTEXT_KEYS = {
  webhookUrl: { kind: 'string', description: 'where every message is POSTed (https://…); without it the template takes the CloudFormation parameter WebhookUrl' },
  stackName: { kind: 'string', description: 'the stack name, which also names the dashboard, the alarms and the metrics service (default SqsWebhookRelay)' },
  alarmEmail: { kind: 'string', description: 'e-mail address subscribed to the alarm topic' },
  fifo: { kind: 'boolean', description: 'create FIFO queues (default false)' },
  queueName: { kind: 'string', description: 'name of the queue (the DLQ is <name>-dlq; default generated)' },
  queueArn: { kind: 'string', description: 'relay from this existing queue instead of creating one (needs deadLetterQueueArn)' },
  deadLetterQueueArn: { kind: 'string', description: "the existing queue's dead-letter queue (its redrive policy's target)" },
  maxReceiveCount: { kind: 'integer', description: 'receives before a message moves to the DLQ (default 5)', range: [1, 1_000] },
  retentionPeriodDays: { kind: 'integer', description: 'how long the main queue keeps a message, days (default 4; the DLQ keeps 14)', range: [1, 14] },
  visibilityTimeoutSeconds: { kind: 'integer', description: 'queue visibility timeout (default 6 × timeout + batching window; no lower)', range: [0, MAX_VISIBILITY_SECONDS] },
  timeoutSeconds: { kind: 'integer', description: 'function timeout (default 30)', range: [1, MAX_FUNCTION_TIMEOUT_SECONDS] },
  memorySize: { kind: 'integer', description: 'function memory, MB (default 256)', range: [128, 10_240] },
  logRetentionDays: { kind: 'integer', description: 'function log retention, days: one of CloudWatch\'s values (1, 3, 5, 7, 14, 30, 60, 90, …; default 30)' },
  batchSize: { kind: 'integer', description: 'records per invocation (default 10; standard queues up to 10,000 with a batching window, FIFO up to 10)', range: [1, MAX_EVENT_SOURCE_BATCH_SIZE] },
  maxBatchingWindowSeconds: { kind: 'integer', description: 'how long to gather a batch, 0 to 300 (default 0; at least 1 when batchSize > 10; not for FIFO)', range: [0, MAX_BATCHING_WINDOW_SECONDS] },
  maxConcurrency: { kind: 'integer', description: 'most concurrent invocations, 2 to 1,000 (default 5)', range: [2, 1_000] },
  requestConcurrency: { kind: 'integer', description: 'webhook requests in flight per invocation, MAX_CONCURRENCY (default 10)', range: [1, 1_000] },
  requestTimeoutMs: { kind: 'integer', description: 'timeout of one webhook request, REQUEST_TIMEOUT_MS (default 10000)', range: [1, 900_000] },
  deadlineMarginMs: { kind: 'integer', description: 'time kept back before the function deadline, DEADLINE_MARGIN_MS (default 1000)', range: [0, 60_000] },
  backoff: { kind: 'string', description: 'retry delay policy, BACKOFF (default exponential)', choices: BACKOFF_POLICIES },
  backoffBaseSeconds: { kind: 'integer', description: 'BACKOFF_BASE_SECONDS (default 2)', range: [0, MAX_VISIBILITY_SECONDS] },
  backoffMaxSeconds: { kind: 'integer', description: 'BACKOFF_MAX_SECONDS (default 300)', range: [0, MAX_VISIBILITY_SECONDS] },
  backoffSchedule: { kind: 'string', description: 'BACKOFF_SCHEDULE for backoff=schedule: comma-separated seconds, e.g. 60,600,3600' },
  backoffJitter: { kind: 'boolean', description: 'BACKOFF_JITTER, up to 25 % random extra delay (default true)' },
  permanentFailure: { kind: 'string', description: 'what a permanent 4xx does, PERMANENT_FAILURE (default dead-letter)', choices: PERMANENT_FAILURE_MODES },
  allowInsecureHttp: { kind: 'boolean', description: 'allow an http:// webhook URL, ALLOW_INSECURE_HTTP (default false)' },
  headerPrefix: { kind: 'string', description: 'prefix of the Carrier headers, HEADER_PREFIX (default X-Carrier-)' },
  defaultContentType: { kind: 'string', description: 'Content-Type when a message has none, DEFAULT_CONTENT_TYPE (default application/json)' },
  logLevel: { kind: 'string', description: 'function log level, POWERTOOLS_LOG_LEVEL (default INFO)', choices: LOG_LEVELS },
  serviceName: { kind: 'string', description: 'POWERTOOLS_SERVICE_NAME, the metrics dimension (default the stack name)' },
  oldestMessageAgeAlarmMinutes: { kind: 'integer', description: 'alarm when the oldest message is older than this (default 30)', range: [1, 14 * DAY_MINUTES] },
  signing: { kind: 'boolean', description: 'sign every request (Standard Webhooks) with a key the stack creates in Secrets Manager (default true)' },
  signingSecretArn: { kind: 'string', description: 'sign with the key(s) in this existing Secrets Manager secret instead' },
  authSecretArn: { kind: 'string', description: 'send the Authorization value held in this Secrets Manager secret' },
  secretsRefreshSeconds: { kind: 'integer', description: 'SECRETS_REFRESH_SECONDS, how long a secret value is used before it is read again (default 300)', range: [0, MAX_VISIBILITY_SECONDS] },
  outageThreshold: { kind: 'integer', description: 'OUTAGE_THRESHOLD, outage failures in a row that open the circuit breaker; 0 = off (default 5)', range: [0, 1_000] },
  outageBackoffSeconds: { kind: 'integer', description: "OUTAGE_BACKOFF_SECONDS, the breaker's first open interval (default 30)", range: [1, MAX_VISIBILITY_SECONDS] },
  outageBackoffMaxSeconds: { kind: 'integer', description: "OUTAGE_BACKOFF_MAX_SECONDS, the breaker's longest interval (default 900)", range: [1, MAX_VISIBILITY_SECONDS] },
  outageToleranceHours: { kind: 'integer', description: 'survive a webhook outage this long without dead-lettering: derives maxReceiveCount (e.g. 24 → 101)', range: [1, 14 * 24] },
  breakerOpenAlarmMinutes: { kind: 'integer', description: 'alarm when the circuit breaker has been open this long (default 5)', range: [1, DAY_MINUTES] },
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
      const [min, max] = spec.range ?? [0, Number.MAX_SAFE_INTEGER];
      if (!Number.isSafeInteger(value) || value < min || value > max) {
        throw new ContextError(key, spec.range === undefined ? `must be a whole number; got ${JSON.stringify(raw)}` : `must be a whole number from ${min} to ${max}; got ${JSON.stringify(raw)}`);
      }
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

// CloudFormation's rule for stack names (CDK throws a stack trace for anything else).
const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,127}$/;
const SQS_ARN = /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$/;
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$/;

function arn(key: ContextKeyName, value: string | undefined, pattern: RegExp, example: string): string | undefined {
  if (value !== undefined && !pattern.test(value)) throw new ContextError(key, `must be an ARN such as ${example}; got ${JSON.stringify(value)}`);
  return value;
}

/** Each construct prop the context sets, and the key that sets it (where the names differ). */
const KEY_OF_PROP: Readonly<Record<string, ContextKeyName>> = {
  name: 'stackName',
  queue: 'queueArn',
  deadLetterQueue: 'deadLetterQueueArn',
  signingSecret: 'signingSecretArn',
  authSecret: 'authSecretArn',
  retentionPeriod: 'retentionPeriodDays',
  visibilityTimeout: 'visibilityTimeoutSeconds',
  timeout: 'timeoutSeconds',
  logRetention: 'logRetentionDays',
  maxBatchingWindow: 'maxBatchingWindowSeconds',
  requestTimeout: 'requestTimeoutMs',
  deadlineMargin: 'deadlineMarginMs',
  backoffBase: 'backoffBaseSeconds',
  backoffMax: 'backoffMaxSeconds',
  oldestMessageAgeThreshold: 'oldestMessageAgeAlarmMinutes',
  secretsRefresh: 'secretsRefreshSeconds',
  outageBackoff: 'outageBackoffSeconds',
  outageBackoffMax: 'outageBackoffMaxSeconds',
  outageTolerance: 'outageToleranceHours',
  breakerOpenAlarmThreshold: 'breakerOpenAlarmMinutes',
};

/**
 * The construct's rejection of a value that came from context, as a {@link ContextError} naming
 * the key the operator typed (`timeoutSeconds`, not the prop `timeout`), in the message too.
 */
export function contextErrorFor(error: WebhookRelayConfigError): ContextError {
  const key = KEY_OF_PROP[error.prop] ?? error.prop;
  let text = error.message.slice(`WebhookRelay: ${error.prop} `.length);
  for (const [prop, propKey] of Object.entries(KEY_OF_PROP)) {
    // Props named in the text as identifiers only: "6 × timeout + …", "shorter than timeout (30 s)",
    // never the words of a sentence ("the function timeout", "a visibility timeout").
    if (prop === 'name' || prop === 'queue') continue; // plain words in messages
    const pattern = prop === 'timeout' ? /(?<!(function|visibility) )\btimeout\b(?= \(| \+)/g : new RegExp(`\\b${prop}\\b`, 'g');
    text = text.replace(pattern, propKey);
  }
  return new ContextError(key, text);
}

function schedule(raw: string | undefined): Duration[] | undefined {
  if (raw === undefined) return undefined;
  const parts = raw.split(',').map((part) => part.trim());
  if (!parts.every((part) => /^\d+$/.test(part) && Number(part) <= MAX_VISIBILITY_SECONDS)) {
    throw new ContextError('backoffSchedule', `must be comma-separated whole seconds from 0 to ${MAX_VISIBILITY_SECONDS}, e.g. 60,600,3600; got ${JSON.stringify(raw)}`);
  }
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
  arn('queueArn', queueArn, SQS_ARN, 'arn:aws:sqs:eu-west-1:123456789012:orders');
  if (queueArn !== undefined && deadLetterQueueArn === undefined) {
    throw new ContextError('queueArn', "needs deadLetterQueueArn too: the dead-letter queue of the queue's redrive policy (and maxReceiveCount, if it is not 5)");
  }
  arn('deadLetterQueueArn', deadLetterQueueArn, SQS_ARN, 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq');

  // Lambda takes at most 10 records per batch from a FIFO queue; say so rather than "1 to 10".
  const fifo = bool('fifo') ?? queueArn?.endsWith('.fifo') ?? false;
  const batchSize = int('batchSize');
  if (fifo && batchSize !== undefined && batchSize > MAX_FIFO_EVENT_SOURCE_BATCH_SIZE) {
    throw new ContextError('batchSize', `must be at most ${MAX_FIFO_EVENT_SOURCE_BATCH_SIZE} for a FIFO queue (Lambda's limit for FIFO event sources); got ${batchSize}`);
  }

  const signingSecretArn = arn('signingSecretArn', str('signingSecretArn'), SECRET_ARN, 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-signing-AbCdEf');
  if (signingSecretArn !== undefined && bool('signing') === false) throw new ContextError('signingSecretArn', 'is given, but signing is false');
  const authSecretArn = arn('authSecretArn', str('authSecretArn'), SECRET_ARN, 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-auth-AbCdEf');

  const stackName = str('stackName') ?? DEFAULT_STACK_NAME;
  if (!STACK_NAME.test(stackName)) {
    throw new ContextError('stackName', `must start with a letter and have only letters, digits and "-", at most 128 characters (CloudFormation's rule); got ${JSON.stringify(stackName)}`);
  }
  return {
    stackName,
    props: {
      queueArn,
      deadLetterQueueArn,
      signingSecretArn,
      authSecretArn,
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
