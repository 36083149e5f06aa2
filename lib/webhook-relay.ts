/**
 * The `WebhookRelay` construct: an SQS queue (and its dead-letter queue), the Lambda function
 * that POSTs every message to a webhook, the event source mapping between them, alarms and a
 * dashboard. Every knob is a prop with a default an operator can defend; every value the queue
 * service, Lambda or the function itself would reject is rejected here, at synth time, with a
 * message naming the prop, instead of half-way through a CloudFormation deployment.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotations, Duration, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  BACKOFF_POLICIES,
  type BackoffPolicyName,
  ConfigError,
  isLoopbackHost,
  loadConfig,
  PERMANENT_FAILURE_MODES,
  type PermanentFailureMode,
  redactUrl,
} from '../lambda/config';
import { type BreakerSettings, receivesToSurvive } from '../lambda/breaker';
import { DEFAULT_METRICS_NAMESPACE, METRIC_NAMES } from '../lambda/metric-names';
import {
  MAX_BATCHING_WINDOW_SECONDS,
  MAX_EVENT_SOURCE_BATCH_SIZE,
  MAX_FIFO_EVENT_SOURCE_BATCH_SIZE,
  MAX_FUNCTION_TIMEOUT_SECONDS,
  MAX_MESSAGE_BYTES,
  MAX_VISIBILITY_SECONDS,
  VISIBILITY_TIMEOUT_FACTOR,
  visibilityTimeoutSecondsFor,
} from '../lambda/aws-limits';
import { backoffDelay } from '../lambda/retry-timing';
import { functionCode, HANDLER_MODULE } from './bundle';

/** The CloudWatch namespace the function publishes its metrics to (`POWERTOOLS_METRICS_NAMESPACE`). */
export const METRICS_NAMESPACE = DEFAULT_METRICS_NAMESPACE;

/** Metric names the function emits (embedded metric format, dimension `service`): the function's own list. */
export const RELAY_METRICS = METRIC_NAMES;

/** Log levels the function's logger understands (`POWERTOOLS_LOG_LEVEL`). */
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Re-exported so callers of the construct need not reach into `lambda/`. */
export { BACKOFF_POLICIES, PERMANENT_FAILURE_MODES, type BackoffPolicyName, type PermanentFailureMode };

/**
 * Defaults of every optional prop. Exported so the stack, the docs and the tests quote one
 * source; the function-side ones equal the handler's own defaults (a test holds them together).
 */
export const RELAY_DEFAULTS = {
  allowInsecureHttp: false,
  headerPrefix: 'X-Carrier-',
  defaultContentType: 'application/json',
  requestTimeout: Duration.seconds(10),
  requestConcurrency: 10,
  deadlineMargin: Duration.seconds(1),
  backoff: 'exponential' as BackoffPolicyName,
  backoffBase: Duration.seconds(2),
  backoffMax: Duration.seconds(300),
  backoffJitter: true,
  permanentFailure: 'dead-letter' as PermanentFailureMode,
  logLevel: 'INFO' as LogLevel,
  fifo: false,
  maxReceiveCount: 5,
  retentionPeriod: Duration.days(4),
  timeout: Duration.seconds(30),
  memorySize: 256,
  batchSize: 10,
  maxConcurrency: 5,
  logRetention: logs.RetentionDays.ONE_MONTH,
  oldestMessageAgeThreshold: Duration.minutes(30),
  signing: true,
  secretsRefresh: Duration.minutes(5),
  outageThreshold: 5,
  outageBackoff: Duration.seconds(30),
  outageBackoffMax: Duration.minutes(15),
  breakerOpenAlarmThreshold: Duration.minutes(5),
} as const;

/** The dead-letter queue's retention: the SQS maximum, so a message outlives any main-queue retention. */
export const DLQ_RETENTION = Duration.days(14);

export { VISIBILITY_TIMEOUT_FACTOR };

/** Properties of {@link WebhookRelay}. Only `webhookUrl` is required. */
export interface WebhookRelayProps {
  // ---- where messages go (function environment) ----

  /**
   * `WEBHOOK_URL`: where every message is POSTed. `https://`, unless `allowInsecureHttp`.
   * May be a token (e.g. a CloudFormation parameter); it is then validated at deploy time only.
   */
  readonly webhookUrl: string;
  /** `ALLOW_INSECURE_HTTP`: allow a plain `http://` webhook (a private network). @default false */
  readonly allowInsecureHttp?: boolean;
  /** `HEADER_PREFIX`: prefix of the Carrier-compatible headers. @default 'X-Carrier-' */
  readonly headerPrefix?: string;
  /** `DEFAULT_CONTENT_TYPE`: for messages without a `Body.ContentType` attribute. @default 'application/json' */
  readonly defaultContentType?: string;
  /** `REQUEST_TIMEOUT_MS`: upper bound of one webhook request. @default 10 seconds */
  readonly requestTimeout?: Duration;
  /**
   * `MAX_CONCURRENCY`: webhook requests in flight at once within one invocation. Not to be
   * confused with {@link maxConcurrency}, the number of concurrent invocations.
   * @default 10
   */
  readonly requestConcurrency?: number;
  /** `DEADLINE_MARGIN_MS`: time kept back from the function's deadline for the SQS calls after the last request. @default 1 second */
  readonly deadlineMargin?: Duration;
  /** `BACKOFF`: delay policy for retries the webhook did not time itself. @default 'exponential' */
  readonly backoff?: BackoffPolicyName;
  /** `BACKOFF_BASE_SECONDS`, whole seconds. @default 2 seconds */
  readonly backoffBase?: Duration;
  /** `BACKOFF_MAX_SECONDS`, whole seconds. @default 300 seconds */
  readonly backoffMax?: Duration;
  /** `BACKOFF_SCHEDULE`: the delays of the `schedule` policy, one per receive (the last repeats), whole seconds. @default the handler's schedule */
  readonly backoffSchedule?: Duration[];
  /** `BACKOFF_JITTER`: add up to 25 % random jitter to backoff delays. @default true */
  readonly backoffJitter?: boolean;
  /** `PERMANENT_FAILURE`: dead-letter a permanent (non-retryable 4xx/3xx) failure at once, or retry it. @default 'dead-letter' */
  readonly permanentFailure?: PermanentFailureMode;
  /** `POWERTOOLS_LOG_LEVEL`. @default 'INFO' */
  readonly logLevel?: LogLevel;
  /**
   * `POWERTOOLS_SERVICE_NAME`: the `service` of every log line and the metrics' dimension, so it
   * must differ between relays whose dashboards should not mix. @default `name`
   */
  readonly serviceName?: string;

  // ---- naming ----

  /**
   * Names the dashboard and the alarms (`<name>-dlq-not-empty`, …) and is the default service
   * name. Letters, digits, `-` and `_`. @default `<stack name>-<construct id>`
   */
  readonly name?: string;

  // ---- the queues ----

  /**
   * An existing queue to relay from, instead of creating one. It needs a dead-letter queue:
   * either its own (a `Queue` created with `deadLetterQueue`) or {@link deadLetterQueue}.
   * @default a new queue
   */
  readonly queue?: sqs.IQueue;
  /**
   * The dead-letter queue of an existing {@link queue} whose redrive policy this construct cannot
   * see (an imported queue). {@link maxReceiveCount} must then equal that redrive policy's count.
   * @default the dead-letter queue of `queue`'s redrive policy, or a new one with a new queue
   */
  readonly deadLetterQueue?: sqs.IQueue;
  /** Create FIFO queues (`.fifo`). @default false */
  readonly fifo?: boolean;
  /** Name of the queue to create (the DLQ gets `<name>-dlq`; `.fifo` is appended for FIFO). @default generated by CloudFormation */
  readonly queueName?: string;
  /** Receives before SQS moves a message to the DLQ (redrive policy); also `MAX_RECEIVE_COUNT`. @default 5 */
  readonly maxReceiveCount?: number;
  /** How long the main queue keeps a message. The DLQ always keeps 14 days. @default 4 days */
  readonly retentionPeriod?: Duration;
  /**
   * The created queue's visibility timeout. @default 6 × `timeout` + `maxBatchingWindow`, as
   * Lambda recommends; an explicit value may not be lower.
   */
  readonly visibilityTimeout?: Duration;

  // ---- the function and its event source ----

  /** Function timeout (1 s to 15 min). @default 30 seconds */
  readonly timeout?: Duration;
  /** Function memory, MB (128 to 10,240). @default 256 */
  readonly memorySize?: number;
  /** Retention of the function's log group. @default one month */
  readonly logRetention?: logs.RetentionDays;
  /** Records per invocation: standard queues 1 to 10,000 (above 10 needs `maxBatchingWindow` ≥ 1 s), FIFO 1 to 10. @default 10 */
  readonly batchSize?: number;
  /** How long the event source gathers records before invoking (0 to 300 s; not for FIFO). @default none (invoke at once) */
  readonly maxBatchingWindow?: Duration;
  /**
   * The event source's maximum concurrent invocations (2 to 1,000): with `requestConcurrency`,
   * the most requests the webhook sees at once (5 × 10 = 50 by default).
   * @default 5
   */
  readonly maxConcurrency?: number;

  // ---- alarms ----

  /** E-mail address subscribed to the alarm topic (the subscription must be confirmed). @default no subscription */
  readonly alarmEmail?: string;
  /** An existing topic for the alarms. @default a new topic */
  readonly alarmTopic?: sns.ITopic;
  /** Alarm when the oldest message in the queue is older than this (1 minute to 14 days). @default 30 minutes */
  readonly oldestMessageAgeThreshold?: Duration;

  // ---- secrets (Secrets Manager; never plaintext in the template) ----

  /**
   * Sign every request (Standard Webhooks). With no `signingSecret` the construct creates one
   * (a random 48-character key, valid as `whsec_<key>`); `false` sends no signatures.
   * @default true
   */
  readonly signing?: boolean;
  /** `SIGNING_SECRET_ARN`: an existing secret holding the signing key(s), instead of a created one. @default a new secret (when `signing`) */
  readonly signingSecret?: secretsmanager.ISecret;
  /** `AUTH_SECRET_ARN`: a secret holding the whole `Authorization` value sent with every request. @default no `Authorization` header */
  readonly authSecret?: secretsmanager.ISecret;
  /** `SECRETS_REFRESH_SECONDS`: how long the function uses a secret value before reading it again. @default 5 minutes */
  readonly secretsRefresh?: Duration;

  // ---- outages ----

  /** `OUTAGE_THRESHOLD`: outage-type failures in a row that open the circuit breaker; 0 switches it off. @default 5 */
  readonly outageThreshold?: number;
  /** `OUTAGE_BACKOFF_SECONDS`: the breaker's first open interval. @default 30 seconds */
  readonly outageBackoff?: Duration;
  /** `OUTAGE_BACKOFF_MAX_SECONDS`: the longest open interval. @default 15 minutes */
  readonly outageBackoffMax?: Duration;
  /**
   * The webhook outage the queue must survive without dead-lettering: `maxReceiveCount` is
   * derived from it (each receive of a held message buys one open interval). A smaller explicit
   * `maxReceiveCount` is an error.
   * @default none: `maxReceiveCount` (5) alone decides
   */
  readonly outageTolerance?: Duration;
  /** Alarm when the breaker has been open this long: the operator hears of the outage before anything is dead-lettered. @default 5 minutes */
  readonly breakerOpenAlarmThreshold?: Duration;
}

/** A prop value that SQS, Lambda or the function would reject. `prop` names the offending prop. */
export class WebhookRelayConfigError extends Error {
  constructor(
    readonly prop: string,
    message: string,
  ) {
    super(`WebhookRelay: ${prop} ${message}`);
    this.name = 'WebhookRelayConfigError';
  }
}

/** Which prop sets each environment variable, so a rejection by the function's own validation names the prop. */
const PROP_OF_VARIABLE: Readonly<Record<string, string>> = {
  WEBHOOK_URL: 'webhookUrl',
  ALLOW_INSECURE_HTTP: 'allowInsecureHttp',
  HEADER_PREFIX: 'headerPrefix',
  DEFAULT_CONTENT_TYPE: 'defaultContentType',
  REQUEST_TIMEOUT_MS: 'requestTimeout',
  MAX_CONCURRENCY: 'requestConcurrency',
  DEADLINE_MARGIN_MS: 'deadlineMargin',
  BACKOFF: 'backoff',
  BACKOFF_BASE_SECONDS: 'backoffBase',
  BACKOFF_MAX_SECONDS: 'backoffMax',
  BACKOFF_JITTER: 'backoffJitter',
  BACKOFF_SCHEDULE: 'backoffSchedule',
  PERMANENT_FAILURE: 'permanentFailure',
  MAX_RECEIVE_COUNT: 'maxReceiveCount',
  SECRETS_REFRESH_SECONDS: 'secretsRefresh',
  OUTAGE_THRESHOLD: 'outageThreshold',
  OUTAGE_BACKOFF_SECONDS: 'outageBackoff',
  OUTAGE_BACKOFF_MAX_SECONDS: 'outageBackoffMax',
};

const SQS_MAX_VISIBILITY = Duration.seconds(MAX_VISIBILITY_SECONDS);
const LAMBDA_MAX_TIMEOUT = Duration.seconds(MAX_FUNCTION_TIMEOUT_SECONDS);
const MAX_BATCHING_WINDOW = Duration.seconds(MAX_BATCHING_WINDOW_SECONDS);

/** The repository root, found from this file so synth works from any working directory. */
const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function check(condition: boolean, prop: string, message: string): asserts condition {
  if (!condition) throw new WebhookRelayConfigError(prop, message);
}

function wholeNumber(value: number, prop: string, min: number, max: number): number {
  check(Number.isInteger(value) && value >= min && value <= max, prop, `must be a whole number from ${min} to ${max}; got ${value}`);
  return value;
}

/** A Duration as whole seconds within bounds; Duration.toSeconds() itself rejects fractions. */
function seconds(value: Duration, prop: string, min: Duration, max: Duration): number {
  let result: number;
  try {
    result = value.toSeconds();
  } catch {
    throw new WebhookRelayConfigError(prop, `must be a whole number of seconds; got ${value.toHumanString()}`);
  }
  check(
    result >= min.toSeconds() && result <= max.toSeconds(),
    prop,
    `must be from ${min.toHumanString()} to ${max.toHumanString()}; got ${value.toHumanString()}`,
  );
  return result;
}

/**
 * An SQS queue relayed to an HTTP webhook by a Lambda function, with a dead-letter queue,
 * least-privilege permissions, alarms to an SNS topic and a CloudWatch dashboard.
 */
export class WebhookRelay extends Construct {
  /** The queue producers send to (created, or the one passed in). */
  readonly queue: sqs.IQueue;
  /** Where messages go after `maxReceiveCount` receives, or at once on a permanent failure. */
  readonly deadLetterQueue: sqs.IQueue;
  /** The relay function. */
  readonly function: lambda.Function;
  /** The function's log group. */
  readonly logGroup: logs.LogGroup;
  /** The topic every alarm notifies. */
  readonly alarmTopic: sns.ITopic;
  /** The operator dashboard. */
  readonly dashboard: cloudwatch.Dashboard;
  /** Alarms: DLQ not empty, oldest message too old, function errors, circuit breaker open too long. */
  readonly alarms: {
    readonly deadLetterQueueNotEmpty: cloudwatch.Alarm;
    readonly oldestMessageAge: cloudwatch.Alarm;
    readonly functionErrors: cloudwatch.Alarm;
    readonly breakerOpen: cloudwatch.Alarm;
  };
  /** The secret requests are signed with (created or passed in); `undefined` when not signing. */
  readonly signingSecret: secretsmanager.ISecret | undefined;
  /** The environment the function gets (tokens included), for inspection and extension. */
  readonly environment: Readonly<Record<string, string>>;
  /** The name of the dashboard, alarms and (by default) the service. */
  readonly name: string;
  /** The `service` dimension of the function's metrics. */
  readonly serviceName: string;
  /** The redrive policy's receive count. */
  readonly maxReceiveCount: number;

  constructor(scope: Construct, id: string, props: WebhookRelayProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const d = RELAY_DEFAULTS;

    this.name = props.name ?? `${stack.stackName}-${id}`;
    check(/^[A-Za-z0-9_-]{1,200}$/.test(this.name), 'name', `must be 1 to 200 letters, digits, "-" or "_" (it names the dashboard and alarms); got ${JSON.stringify(this.name)}`);
    this.serviceName = props.serviceName ?? this.name;

    // ---- settings that need no queue, validated before anything is created ----
    const timeout = props.timeout ?? d.timeout;
    const timeoutSeconds = seconds(timeout, 'timeout', Duration.seconds(1), LAMBDA_MAX_TIMEOUT);
    const memorySize = wholeNumber(props.memorySize ?? d.memorySize, 'memorySize', 128, 10_240);
    const deadlineMargin = props.deadlineMargin ?? d.deadlineMargin;
    // A margin as long as the timeout would leave no time for any request: every batch would fail.
    check(
      deadlineMargin.toMilliseconds() < timeoutSeconds * 1000,
      'deadlineMargin',
      `(${deadlineMargin.toHumanString()}) must be shorter than timeout (${timeout.toHumanString()}), or no request could ever start`,
    );
    const requestTimeout = props.requestTimeout ?? d.requestTimeout;
    if (requestTimeout.toMilliseconds() + deadlineMargin.toMilliseconds() > timeoutSeconds * 1000) {
      Annotations.of(this).addWarningV2(
        'sqs-webhook-relay:requestTimeoutCut',
        `requestTimeout (${requestTimeout.toHumanString()}) plus deadlineMargin exceeds the function timeout (${timeout.toHumanString()}): slow requests will be cut short by the deadline.`,
      );
    }

    const ageThreshold = props.oldestMessageAgeThreshold ?? d.oldestMessageAgeThreshold;
    const ageThresholdSeconds = seconds(ageThreshold, 'oldestMessageAgeThreshold', Duration.minutes(1), DLQ_RETENTION);
    if (props.alarmEmail !== undefined) {
      check(/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(props.alarmEmail), 'alarmEmail', `must be an e-mail address; got ${JSON.stringify(props.alarmEmail)}`);
    }
    const windowSeconds =
      props.maxBatchingWindow === undefined ? 0 : seconds(props.maxBatchingWindow, 'maxBatchingWindow', Duration.seconds(0), MAX_BATCHING_WINDOW);

    const breaker: BreakerSettings = {
      threshold: wholeNumber(props.outageThreshold ?? d.outageThreshold, 'outageThreshold', 0, 1_000),
      initialIntervalSeconds: seconds(props.outageBackoff ?? d.outageBackoff, 'outageBackoff', Duration.seconds(1), SQS_MAX_VISIBILITY),
      maxIntervalSeconds: seconds(props.outageBackoffMax ?? d.outageBackoffMax, 'outageBackoffMax', Duration.seconds(1), SQS_MAX_VISIBILITY),
    };
    const breakerAlarmThreshold = props.breakerOpenAlarmThreshold ?? d.breakerOpenAlarmThreshold;
    const breakerAlarmSeconds = seconds(breakerAlarmThreshold, 'breakerOpenAlarmThreshold', Duration.minutes(1), Duration.days(1));

    // ---- the queues ----
    const { queue, deadLetterQueue, maxReceiveCount } = this.queues(props, timeoutSeconds, windowSeconds, breaker);
    this.queue = queue;
    this.deadLetterQueue = deadLetterQueue;
    this.maxReceiveCount = maxReceiveCount;

    // ---- event source settings ----
    const fifo = queue.fifo;
    const batchSize = props.batchSize ?? d.batchSize;
    check(
      !fifo || batchSize <= MAX_FIFO_EVENT_SOURCE_BATCH_SIZE,
      'batchSize',
      `must be at most ${MAX_FIFO_EVENT_SOURCE_BATCH_SIZE} for a FIFO queue (Lambda's limit for FIFO event sources); got ${batchSize}`,
    );
    wholeNumber(batchSize, 'batchSize', 1, fifo ? MAX_FIFO_EVENT_SOURCE_BATCH_SIZE : MAX_EVENT_SOURCE_BATCH_SIZE);
    check(!fifo || windowSeconds === 0, 'maxBatchingWindow', 'is not supported by Lambda for FIFO queues; leave it unset');
    check(
      batchSize <= 10 || windowSeconds >= 1,
      'batchSize',
      `of ${batchSize} (above 10) needs a maxBatchingWindow of at least 1 second (-c maxBatchingWindowSeconds=1), as Lambda requires`,
    );
    const maxConcurrency = wholeNumber(props.maxConcurrency ?? d.maxConcurrency, 'maxConcurrency', 2, 1_000);

    // ---- secrets ----
    const signing = props.signing ?? (props.signingSecret !== undefined || d.signing);
    check(signing || props.signingSecret === undefined, 'signing', 'is false, but a signingSecret was given');
    this.signingSecret = signing ? (props.signingSecret ?? this.createSigningSecret()) : undefined;

    // ---- environment, validated by the function's own rules ----
    this.environment = this.buildEnvironment(props, deadLetterQueue, maxReceiveCount, breaker);

    // ---- the function ----
    this.logGroup = new logs.LogGroup(this, 'LogGroup', { retention: props.logRetention ?? d.logRetention });
    // An explicit role instead of AWSLambdaBasicExecutionRole: that managed policy may write to
    // any log group; this one writes to its own only.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `sqs-webhook-relay ${this.name}: consume its queue, send to its DLQ, write its logs`,
    });
    this.logGroup.grantWrite(role);

    const runtime = lambda.Runtime.NODEJS_24_X; // pinned rather than NODEJS_LATEST: a CDK upgrade never changes it unannounced
    this.function = new lambda.Function(this, 'Function', {
      // Bundled by esbuild on this machine, split so the SDK clients load on first use (lib/bundle.ts).
      code: functionCode({ entry: join(PROJECT_ROOT, 'lambda', 'handler.ts'), projectRoot: PROJECT_ROOT, runtime }),
      handler: `${HANDLER_MODULE}.handler`,
      runtime,
      architecture: lambda.Architecture.ARM_64,
      memorySize,
      timeout,
      role,
      logGroup: this.logGroup,
      description: `sqs-webhook-relay ${this.name}: POSTs each message of its queue to the webhook`,
      environment: this.environment,
    });

    this.function.addEventSource(
      new SqsEventSource(queue, {
        batchSize,
        // 0 is Lambda's default: leave the property out rather than state it.
        maxBatchingWindow: windowSeconds === 0 ? undefined : Duration.seconds(windowSeconds),
        maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );
    // The event source's grant covers ReceiveMessage, DeleteMessage, ChangeMessageVisibility,
    // GetQueueUrl and GetQueueAttributes on this queue only; the function needs just SendMessage
    // on its DLQ besides (for dead-lettering permanent failures at once).
    deadLetterQueue.grantSendMessages(this.function);
    // Read access to exactly the secrets it sends with, nothing else in Secrets Manager.
    this.signingSecret?.grantRead(this.function);
    props.authSecret?.grantRead(this.function);

    // ---- alarms ----
    this.alarmTopic = props.alarmTopic ?? new sns.Topic(this, 'AlarmTopic', { displayName: `sqs-webhook-relay ${this.name} alarms`, enforceSSL: true });
    if (props.alarmEmail !== undefined) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    this.alarms = this.createAlarms(ageThresholdSeconds, ageThreshold, breakerAlarmSeconds, breakerAlarmThreshold);

    // ---- dashboard ----
    this.dashboard = this.createDashboard(maxConcurrency, timeoutSeconds, ageThresholdSeconds, breakerAlarmSeconds);
  }

  /** A random signing key in Secrets Manager: 48 letters and digits, which is valid base64 (36 bytes). */
  private createSigningSecret(): secretsmanager.Secret {
    const secret = new secretsmanager.Secret(this, 'SigningSecret', {
      description: `sqs-webhook-relay ${this.name}: Standard Webhooks signing key (use it as whsec_<value> in the webhook)`,
      generateSecretString: { passwordLength: 48, excludePunctuation: true, includeSpace: false },
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'A webhook signing key cannot rotate on a schedule: the webhook owner must trust the new key before the relay signs with it alone. ' +
        'Rotate by hand: put "<new> <old>" in the secret (the relay signs with both), update the webhook, then leave only "<new>".',
    });
    return secret;
  }

  /** The main queue and DLQ: created (same kind, redrive, encryption, TLS) or taken from props. */
  private queues(
    props: WebhookRelayProps,
    timeoutSeconds: number,
    windowSeconds: number,
    breaker: BreakerSettings,
  ): { queue: sqs.IQueue; deadLetterQueue: sqs.IQueue; maxReceiveCount: number } {
    const d = RELAY_DEFAULTS;
    const minimumVisibility = visibilityTimeoutSecondsFor(timeoutSeconds, windowSeconds);
    const survivingOutage = this.receivesForOutage(props, breaker);

    if (props.queue !== undefined) {
      const existing = this.existingQueues(props, props.queue, timeoutSeconds, minimumVisibility);
      if (survivingOutage !== undefined) {
        check(existing.maxReceiveCount >= survivingOutage, 'outageTolerance', `needs a maxReceiveCount of at least ${survivingOutage}; the existing queue's redrive policy has ${existing.maxReceiveCount}`);
      }
      return existing;
    }
    check(props.deadLetterQueue === undefined, 'deadLetterQueue', 'is only for an existing queue (pass queue too); the construct creates its own DLQ otherwise');
    if (survivingOutage !== undefined && props.maxReceiveCount !== undefined) {
      check(
        props.maxReceiveCount >= survivingOutage,
        'maxReceiveCount',
        `(${props.maxReceiveCount}) is too small for outageTolerance: surviving ${props.outageTolerance?.toHumanString()} of outage takes ${survivingOutage} receives; leave maxReceiveCount unset to derive it`,
      );
    }
    const maxReceiveCount = wholeNumber(props.maxReceiveCount ?? Math.max(d.maxReceiveCount, survivingOutage ?? 0), 'maxReceiveCount', 1, 1_000);
    const fifo = props.fifo ?? d.fifo;
    const retention = props.retentionPeriod ?? d.retentionPeriod;
    const retentionSeconds = seconds(retention, 'retentionPeriod', Duration.minutes(1), DLQ_RETENTION);

    let visibility = minimumVisibility;
    if (props.visibilityTimeout !== undefined) {
      visibility = seconds(props.visibilityTimeout, 'visibilityTimeout', Duration.seconds(0), SQS_MAX_VISIBILITY);
      check(
        visibility >= minimumVisibility,
        'visibilityTimeout',
        `(${visibility} s) must be at least ${VISIBILITY_TIMEOUT_FACTOR} × timeout + maxBatchingWindow = ${minimumVisibility} s, or Lambda may hand a batch to a second invocation while the first still runs`,
      );
    }
    let names: { queue: string; dlq: string } | undefined;
    if (props.queueName !== undefined) {
      const base = props.queueName.replace(/\.fifo$/, '');
      const suffix = fifo ? '.fifo' : '';
      // SQS: 1-80 characters of letters, digits, - and _, the .fifo suffix included.
      check(/^[A-Za-z0-9_-]+$/.test(base) && `${base}-dlq${suffix}`.length <= 80, 'queueName', `must be letters, digits, "-" or "_", short enough that "<name>-dlq${suffix}" fits 80 characters; got ${JSON.stringify(props.queueName)}`);
      names = { queue: `${base}${suffix}`, dlq: `${base}-dlq${suffix}` };
    }

    const common = {
      fifo: fifo ? true : undefined,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Stated rather than left to the default, which was 256 KiB for queues made before SQS
      // raised its limit: the DLQ must take any message the queue took, plus the relay's reason.
      maxMessageSizeBytes: MAX_MESSAGE_BYTES,
    };
    // A message must outlive its retries, or SQS deletes it before it ever reaches the DLQ.
    const window = retryWindowSeconds(props, maxReceiveCount, visibility, breaker);
    check(
      retentionSeconds >= window,
      'retentionPeriod',
      `(${retention.toHumanString()}) is shorter than the longest retry window these settings allow (${Math.ceil(window / 3600)} hours for ${maxReceiveCount} receives): messages could expire before reaching the DLQ. Raise retentionPeriod (up to 14 days) or lower maxReceiveCount`,
    );
    const deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      ...common,
      queueName: names?.dlq,
      retentionPeriod: DLQ_RETENTION,
    });
    const queue = new sqs.Queue(this, 'Queue', {
      ...common,
      queueName: names?.queue,
      retentionPeriod: retention,
      visibilityTimeout: Duration.seconds(visibility),
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount },
    });
    return { queue, deadLetterQueue, maxReceiveCount };
  }

  private existingQueues(props: WebhookRelayProps, queue: sqs.IQueue, timeoutSeconds: number, minimumVisibility: number): { queue: sqs.IQueue; deadLetterQueue: sqs.IQueue; maxReceiveCount: number } {
    for (const prop of ['queueName', 'retentionPeriod', 'visibilityTimeout'] as const) {
      check(props[prop] === undefined, prop, 'applies to a queue the construct creates; an existing queue keeps its own settings');
    }
    check(props.fifo === undefined || props.fifo === queue.fifo, 'fifo', `is ${props.fifo}, but the existing queue is ${queue.fifo ? '' : 'not '}FIFO`);
    let deadLetterQueue = props.deadLetterQueue;
    let maxReceiveCount = props.maxReceiveCount ?? RELAY_DEFAULTS.maxReceiveCount;
    if (queue instanceof sqs.Queue) {
      const own = queue.deadLetterQueue;
      if (own !== undefined) {
        check(deadLetterQueue === undefined || deadLetterQueue === own.queue, 'deadLetterQueue', 'differs from the dead-letter queue of the queue passed in; leave it unset');
        check(props.maxReceiveCount === undefined || props.maxReceiveCount === own.maxReceiveCount, 'maxReceiveCount', `(${props.maxReceiveCount}) differs from the queue's redrive policy (${own.maxReceiveCount}); leave it unset`);
        deadLetterQueue = own.queue;
        maxReceiveCount = own.maxReceiveCount;
      }
      // Lambda refuses an event source whose queue hides messages for less than the function may
      // run; below 6× it works but a throttled retry can deliver a batch twice.
      const cfn = queue.node.defaultChild;
      if (cfn instanceof sqs.CfnQueue && !Token.isUnresolved(cfn.visibilityTimeout)) {
        const visibility = cfn.visibilityTimeout ?? 30;
        check(visibility >= timeoutSeconds, 'queue', `has a visibility timeout of ${visibility} s, shorter than the function timeout (${timeoutSeconds} s): Lambda would reject the event source`);
        if (visibility < minimumVisibility) {
          Annotations.of(this).addWarningV2(
            'sqs-webhook-relay:visibilityBelowRecommendation',
            `The queue's visibility timeout (${visibility} s) is below ${VISIBILITY_TIMEOUT_FACTOR} × timeout + maxBatchingWindow (${minimumVisibility} s): a batch may be delivered twice after a throttled invocation.`,
          );
        }
      }
    }
    check(
      deadLetterQueue !== undefined,
      'deadLetterQueue',
      'is required with an existing queue that has no dead-letter queue the construct can see: pass the DLQ of its redrive policy (and maxReceiveCount), or a Queue created with deadLetterQueue',
    );
    const dlq = deadLetterQueue;
    check(dlq.fifo === queue.fifo, 'deadLetterQueue', `must be of the same kind as the queue (${queue.fifo ? 'FIFO' : 'standard'}), as SQS requires`);
    wholeNumber(maxReceiveCount, 'maxReceiveCount', 1, 1_000);
    return { queue, deadLetterQueue: dlq, maxReceiveCount };
  }

  /** The receives an outage of `outageTolerance` takes with the breaker's intervals, if one is asked for. */
  private receivesForOutage(props: WebhookRelayProps, breaker: BreakerSettings): number | undefined {
    if (props.outageTolerance === undefined) return undefined;
    const tolerance = seconds(props.outageTolerance, 'outageTolerance', Duration.minutes(1), Duration.days(14));
    check(breaker.threshold > 0, 'outageTolerance', 'relies on the circuit breaker, which outageThreshold 0 switches off');
    return receivesToSurvive(tolerance / 3600, breaker);
  }

  /** Every variable the handler reads that this construct has a knob for; then the handler's own validation. */
  private buildEnvironment(props: WebhookRelayProps, deadLetterQueue: sqs.IQueue, maxReceiveCount: number, breaker: BreakerSettings): Record<string, string> {
    const d = RELAY_DEFAULTS;
    const allowInsecureHttp = props.allowInsecureHttp ?? d.allowInsecureHttp;
    if (!Token.isUnresolved(props.webhookUrl)) checkWebhookUrl(props.webhookUrl, allowInsecureHttp);
    const backoff = props.backoff ?? d.backoff;
    check((BACKOFF_POLICIES as readonly string[]).includes(backoff), 'backoff', `must be one of ${BACKOFF_POLICIES.join(', ')}; got ${JSON.stringify(backoff)}`);
    const permanentFailure = props.permanentFailure ?? d.permanentFailure;
    check((PERMANENT_FAILURE_MODES as readonly string[]).includes(permanentFailure), 'permanentFailure', `must be one of ${PERMANENT_FAILURE_MODES.join(', ')}; got ${JSON.stringify(permanentFailure)}`);
    const logLevel = props.logLevel ?? d.logLevel;
    check((LOG_LEVELS as readonly string[]).includes(logLevel), 'logLevel', `must be one of ${LOG_LEVELS.join(', ')}; got ${JSON.stringify(logLevel)}`);
    const wholeSeconds = (value: Duration, prop: string): string => String(seconds(value, prop, Duration.seconds(0), SQS_MAX_VISIBILITY));
    const milliseconds = (value: Duration): string => String(value.toMilliseconds());

    const environment: Record<string, string> = {
      WEBHOOK_URL: props.webhookUrl,
      ALLOW_INSECURE_HTTP: String(allowInsecureHttp),
      HEADER_PREFIX: props.headerPrefix ?? d.headerPrefix,
      DEFAULT_CONTENT_TYPE: props.defaultContentType ?? d.defaultContentType,
      REQUEST_TIMEOUT_MS: milliseconds(props.requestTimeout ?? d.requestTimeout),
      MAX_CONCURRENCY: String(props.requestConcurrency ?? d.requestConcurrency),
      DEADLINE_MARGIN_MS: milliseconds(props.deadlineMargin ?? d.deadlineMargin),
      BACKOFF: backoff,
      BACKOFF_BASE_SECONDS: wholeSeconds(props.backoffBase ?? d.backoffBase, 'backoffBase'),
      BACKOFF_MAX_SECONDS: wholeSeconds(props.backoffMax ?? d.backoffMax, 'backoffMax'),
      BACKOFF_JITTER: String(props.backoffJitter ?? d.backoffJitter),
      // Only when given: the handler's own default schedule stays the single source of it.
      ...(props.backoffSchedule === undefined ? {} : { BACKOFF_SCHEDULE: props.backoffSchedule.map((delay) => wholeSeconds(delay, 'backoffSchedule')).join(',') }),
      PERMANENT_FAILURE: permanentFailure,
      // The URL, so the function never needs GetQueueAttributes to find its DLQ.
      DLQ_URL: deadLetterQueue.queueUrl,
      MAX_RECEIVE_COUNT: String(maxReceiveCount),
      // Secrets by ARN only: the function reads the values from Secrets Manager at run time.
      ...(this.signingSecret === undefined ? {} : { SIGNING_SECRET_ARN: this.signingSecret.secretArn }),
      ...(props.authSecret === undefined ? {} : { AUTH_SECRET_ARN: props.authSecret.secretArn }),
      SECRETS_REFRESH_SECONDS: wholeSeconds(props.secretsRefresh ?? d.secretsRefresh, 'secretsRefresh'),
      OUTAGE_THRESHOLD: String(breaker.threshold),
      OUTAGE_BACKOFF_SECONDS: String(breaker.initialIntervalSeconds),
      OUTAGE_BACKOFF_MAX_SECONDS: String(breaker.maxIntervalSeconds),
      POWERTOOLS_SERVICE_NAME: this.serviceName,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      POWERTOOLS_LOG_LEVEL: logLevel,
      // Stack traces point at lambda/*.ts lines instead of the minified bundle.
      NODE_OPTIONS: '--enable-source-maps',
    };

    // The function validates this environment at cold start; running the same validation now
    // turns a crash-looping deployment into a synth error. Tokens are deploy-time values: stand-ins.
    const standIns: Record<string, string> = {
      WEBHOOK_URL: 'https://deploy-time.invalid/',
      SIGNING_SECRET_ARN: 'arn:aws:secretsmanager:region:000000000000:secret:deploy-time',
      AUTH_SECRET_ARN: 'arn:aws:secretsmanager:region:000000000000:secret:deploy-time',
    };
    const literal = Object.fromEntries(
      Object.entries(environment).map(([name, value]) => [name, Token.isUnresolved(value) ? standIns[name] : value]),
    );
    try {
      loadConfig(literal);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      throw new WebhookRelayConfigError(PROP_OF_VARIABLE[error.variable] ?? error.variable, `is rejected by the function: ${error.message}`);
    }
    return environment;
  }

  private createAlarms(ageThresholdSeconds: number, ageThreshold: Duration, breakerAlarmSeconds: number, breakerAlarmThreshold: Duration): WebhookRelay['alarms'] {
    const period = Duration.minutes(5);
    const action = new cloudwatchActions.SnsAction(this.alarmTopic);
    const alarm = (id: string, suffix: string, props: Omit<cloudwatch.AlarmProps, 'alarmName' | 'treatMissingData' | 'evaluationPeriods'>): cloudwatch.Alarm => {
      const created = new cloudwatch.Alarm(this, id, {
        ...props,
        alarmName: `${this.name}-${suffix}`,
        evaluationPeriods: 1,
        // No data means no messages and no invocations: nothing is wrong.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(action);
      // Tell the operator when it is over, too (after a redrive, or when the webhook is back).
      created.addOkAction(action);
      return created;
    };
    return {
      deadLetterQueueNotEmpty: alarm('DeadLetterQueueNotEmptyAlarm', 'dlq-not-empty', {
        metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        alarmDescription:
          `Messages are in the dead-letter queue of ${this.name}: the webhook refused them permanently or they failed ${this.maxReceiveCount} times. ` +
          'Read why in the DLQ messages\' attributes and the function logs, fix the cause, then redrive from the SQS console (DLQ > Start DLQ redrive).',
      }),
      oldestMessageAge: alarm('OldestMessageAgeAlarm', 'oldest-message-age', {
        metric: this.queue.metricApproximateAgeOfOldestMessage({ period, statistic: cloudwatch.Stats.MAXIMUM }),
        threshold: ageThresholdSeconds,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        alarmDescription:
          `The oldest message in the queue of ${this.name} is older than ${ageThreshold.toHumanString()}: the webhook is down or pushing back (429/503), or the relay cannot keep up. ` +
          'Check the dashboard (retried vs delivered, webhook latency, function errors).',
      }),
      functionErrors: alarm('FunctionErrorsAlarm', 'function-errors', {
        metric: this.function.metricErrors({ period, statistic: cloudwatch.Stats.SUM }),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        alarmDescription:
          `The relay function of ${this.name} failed whole batches (invalid configuration, a crash or a timeout): every record of those batches is retried. ` +
          'Read the function logs for the error.',
      }),
      breakerOpen: alarm('BreakerOpenAlarm', 'breaker-open', {
        metric: new cloudwatch.Metric({
          namespace: METRICS_NAMESPACE,
          metricName: RELAY_METRICS.breakerOpenSeconds,
          dimensionsMap: { service: this.serviceName },
          statistic: cloudwatch.Stats.MAXIMUM,
          period: Duration.minutes(1),
        }),
        threshold: breakerAlarmSeconds,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        alarmDescription:
          `The webhook of ${this.name} has looked down for ${breakerAlarmThreshold.toHumanString()} (connection errors, timeouts, 502/503/504): the circuit breaker is holding messages back, one probe per interval. ` +
          'Nothing is lost while messages have receives left; restore the webhook, or raise maxReceiveCount (outageTolerance) before the DLQ alarm follows.',
      }),
    };
  }

  private createDashboard(maxConcurrency: number, timeoutSeconds: number, ageThresholdSeconds: number, breakerAlarmSeconds: number): cloudwatch.Dashboard {
    const minute = Duration.minutes(1);
    const relayMetric = (metricName: string, label: string, statistic: string): cloudwatch.Metric =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { service: this.serviceName },
        statistic,
        label,
        period: minute,
      });
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: this.name,
      defaultInterval: Duration.hours(3),
    });
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown:
          `## sqs-webhook-relay: ${this.name}\n` +
          'Producers send to the queue; the function POSTs each message to the webhook. **Delivered** = 2xx; **retried** = the webhook asked to see it again (429/5xx/timeout), with a delay; ' +
          `**dead-lettered** = refused permanently or failed ${this.maxReceiveCount} times. Anything in the DLQ needs an operator: see the README, Deploy.`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: [this.alarms.deadLetterQueueNotEmpty, this.alarms.oldestMessageAge, this.alarms.functionErrors, this.alarms.breakerOpen],
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Deliveries (per minute)',
        left: [
          relayMetric(RELAY_METRICS.delivered, 'delivered', cloudwatch.Stats.SUM),
          relayMetric(RELAY_METRICS.retried, 'retried', cloudwatch.Stats.SUM),
          relayMetric(RELAY_METRICS.deadLettered, 'dead-lettered', cloudwatch.Stats.SUM),
        ],
        leftYAxis: { min: 0, showUnits: false },
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Webhook latency (ms)',
        left: [
          relayMetric(RELAY_METRICS.webhookLatency, 'p50', cloudwatch.Stats.p(50)),
          relayMetric(RELAY_METRICS.webhookLatency, 'p99', cloudwatch.Stats.p(99)),
        ],
        leftYAxis: { min: 0, showUnits: false },
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Circuit breaker: seconds open (webhook looks down)',
        left: [relayMetric(RELAY_METRICS.breakerOpenSeconds, 'open for (s)', cloudwatch.Stats.MAXIMUM)],
        leftAnnotations: [{ value: breakerAlarmSeconds, label: 'alarm', color: cloudwatch.Color.RED }],
        leftYAxis: { min: 0, showUnits: false },
        width: 24,
        height: 4,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Queue depth',
        left: [
          this.queue.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: cloudwatch.Stats.MAXIMUM, label: 'waiting (visible)' }),
          this.queue.metricApproximateNumberOfMessagesNotVisible({ period: minute, statistic: cloudwatch.Stats.MAXIMUM, label: 'in flight or delayed by a retry' }),
        ],
        leftYAxis: { min: 0, showUnits: false },
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Age of oldest message (s)',
        left: [this.queue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: cloudwatch.Stats.MAXIMUM, label: 'oldest message' })],
        leftAnnotations: [{ value: ageThresholdSeconds, label: 'alarm', color: cloudwatch.Color.RED }],
        leftYAxis: { min: 0, showUnits: false },
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queue depth',
        left: [this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: cloudwatch.Stats.MAXIMUM, label: 'messages in the DLQ' })],
        leftAnnotations: [{ value: 0, label: 'anything above 0 alarms', color: cloudwatch.Color.RED }],
        leftYAxis: { min: 0, showUnits: false },
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Function invocations and errors',
        left: [
          this.function.metricInvocations({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'invocations' }),
          this.function.metricErrors({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'errors (whole batch failed)' }),
          this.function.metricThrottles({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'throttles' }),
        ],
        leftYAxis: { min: 0, showUnits: false },
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Function duration (ms)',
        left: [
          this.function.metricDuration({ period: minute, statistic: cloudwatch.Stats.p(50), label: 'p50' }),
          this.function.metricDuration({ period: minute, statistic: cloudwatch.Stats.p(99), label: 'p99' }),
          this.function.metricDuration({ period: minute, statistic: cloudwatch.Stats.MAXIMUM, label: 'max' }),
        ],
        leftAnnotations: [{ value: timeoutSeconds * 1000, label: 'timeout', color: cloudwatch.Color.RED }],
        leftYAxis: { min: 0, showUnits: false },
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Concurrent executions',
        left: [this.function.metric('ConcurrentExecutions', { period: minute, statistic: cloudwatch.Stats.MAXIMUM, label: 'concurrent executions' })],
        leftAnnotations: [{ value: maxConcurrency, label: 'event source maximum', color: cloudwatch.Color.ORANGE }],
        leftYAxis: { min: 0, showUnits: false },
        width: 8,
      }),
    );
    return dashboard;
  }
}

/**
 * The longest a message can take through `maxReceiveCount` receives under this relay's own
 * policies (a webhook's `Retry-After` aside): each receive parks it for the longest of its backoff
 * delay (with full jitter), the breaker's longest interval and the queue's visibility timeout.
 */
function retryWindowSeconds(props: WebhookRelayProps, maxReceiveCount: number, visibilitySeconds: number, breaker: BreakerSettings): number {
  const d = RELAY_DEFAULTS;
  const settings = {
    policy: props.backoff ?? d.backoff,
    baseSeconds: (props.backoffBase ?? d.backoffBase).toSeconds(),
    maxSeconds: (props.backoffMax ?? d.backoffMax).toSeconds(),
    jitter: props.backoffJitter ?? d.backoffJitter,
    schedule: props.backoffSchedule?.map((delay) => delay.toSeconds()),
  };
  // An unknown policy is reported by the environment's validation, with the prop's name.
  if (!(BACKOFF_POLICIES as readonly string[]).includes(settings.policy)) return 0;
  const breakerSeconds = breaker.threshold > 0 ? breaker.maxIntervalSeconds : 0;
  let window = 0;
  for (let receive = 1; receive <= maxReceiveCount; receive += 1) {
    const backoff = backoffDelay(settings, receive, () => 0.999_999) ?? visibilitySeconds;
    window += Math.min(MAX_VISIBILITY_SECONDS, Math.max(backoff, breakerSeconds, visibilitySeconds));
  }
  return window;
}

/**
 * The deploy-side rules for a webhook URL: absolute, `https` unless explicitly allowed, no
 * credentials (they would sit in the template), and not this machine (a function cannot reach it).
 */
function checkWebhookUrl(raw: string, allowInsecureHttp: boolean): void {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookRelayConfigError('webhookUrl', `must be an absolute URL such as https://example.com/hook; got ${JSON.stringify(redactUrl(raw))}`);
  }
  // Never the raw URL: a token in its query string or user:password would land in the log.
  check(url.protocol === 'https:' || url.protocol === 'http:', 'webhookUrl', `must be an https:// URL; got ${JSON.stringify(redactUrl(raw))}`);
  check(url.protocol === 'https:' || allowInsecureHttp, 'webhookUrl', `must be https:// (plain http only with allowInsecureHttp, -c allowInsecureHttp=true); got ${JSON.stringify(redactUrl(raw))}`);
  check(url.username === '' && url.password === '', 'webhookUrl', 'must not carry user:password (it would be stored in the template in clear); use an auth secret');
  check(!isLoopbackHost(url.hostname), 'webhookUrl', `points at ${url.hostname}, which in Lambda is the function itself; use a host the function can reach`);
}
