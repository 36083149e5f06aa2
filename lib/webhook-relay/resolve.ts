/**
 * From props to resolved settings: every check and every derived value of the construct
 * (receive count, visibility timeout, retention against the retry window, event source limits),
 * as a pure function, so each rule is testable without a Stack. What SQS, Lambda or the
 * function would reject is rejected here with a message naming the prop.
 */
import { type Duration, Token } from 'aws-cdk-lib';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { MAX_FIFO_EVENT_SOURCE_BATCH_SIZE } from '../../lambda/aws-limits';
import type { BreakerSettings } from '../../lambda/breaker';
import { redactUrl } from '../../lambda/url-rules';
import { SETTINGS } from '../../lambda/settings';
import { MIN_SIGNING_KEY_BYTES, parseSigningKeys } from '../../lambda/signing';
import { check, checkPropTypes, settingNumber, settingSeconds, wholeNumber } from './checks';
import { RELAY_DEFAULTS } from './defaults';
import { type WebhookRelayProps, WebhookRelayConfigError } from './props';
import { type ExistingQueues, type QueuesToCreate, resolveQueues } from './resolve-queues';

/** A synth-time warning the construct attaches to itself. */
export interface ResolvedWarning {
  readonly id: string;
  readonly message: string;
}

/** Everything the construct builds from, checked. */
export interface ResolvedSettings {
  readonly name: string;
  readonly serviceName: string;
  readonly timeout: Duration;
  readonly timeoutSeconds: number;
  readonly memorySize: number;
  readonly logRetention: logs.RetentionDays;
  readonly ageThreshold: Duration;
  readonly ageThresholdSeconds: number;
  readonly breakerAlarmThreshold: Duration;
  readonly breakerAlarmSeconds: number;
  /** When the oldest dead letter alarms, seconds. */
  readonly deadLetterAgeAlarmSeconds: number;
  readonly breaker: BreakerSettings;
  readonly queues: QueuesToCreate | ExistingQueues;
  readonly maxReceiveCount: number;
  /** The retry window, whole seconds (`RETRY_WINDOW_HOURS`); 0 with SQS's count semantics (`maxReceiveCount` given). */
  readonly retryWindowSeconds: number;
  readonly fifo: boolean;
  readonly batchSize: number;
  readonly windowSeconds: number;
  readonly maxConcurrency: number;
  /** Sign requests: with `signingSecret`, or with a secret the construct creates. */
  readonly signing: boolean;
  readonly warnings: readonly ResolvedWarning[];
}

/**
 * Checks `props` and derives every value the construct needs.
 * @param defaultName the name when `props.name` is unset (`<stack name>-<construct id>`)
 * @throws {WebhookRelayConfigError} naming the first prop SQS, Lambda or the function would reject
 */
export function resolveSettings(props: WebhookRelayProps, defaultName: string): ResolvedSettings {
  checkPropTypes(props);
  const d = RELAY_DEFAULTS;
  const warnings: ResolvedWarning[] = [];
  const name = props.name ?? defaultName;
  check(
    /^[A-Za-z0-9_-]{1,200}$/.test(name),
    'name',
    `must be 1 to 200 letters, digits, "-" or "_" (it names the dashboard and alarms); got ${JSON.stringify(name)}`,
  );

  const webhookUrlWarning = queryStringWarning(props.webhookUrl);
  if (webhookUrlWarning !== undefined) warnings.push(webhookUrlWarning);

  const timeout = props.timeout ?? d.timeout;
  const timeoutSeconds = settingSeconds(SETTINGS.FUNCTION_TIMEOUT_SECONDS, timeout);
  const memorySize = settingNumber(SETTINGS.memorySize, props.memorySize ?? d.memorySize);
  const deadlineMargin = props.deadlineMargin ?? d.deadlineMargin;
  // A margin as long as the timeout would leave no time for any request: every batch would fail.
  check(
    deadlineMargin.toMilliseconds() < timeoutSeconds * 1000,
    'deadlineMargin',
    `(${deadlineMargin.toHumanString()}) must be shorter than timeout (${timeout.toHumanString()}), or no request could ever start`,
  );
  const requestTimeout = props.requestTimeout ?? d.requestTimeout;
  if (requestTimeout.toMilliseconds() + deadlineMargin.toMilliseconds() > timeoutSeconds * 1000) {
    warnings.push({
      id: 'sqs-webhook-relay:requestTimeoutCut',
      message: `requestTimeout (${requestTimeout.toHumanString()}) plus deadlineMargin exceeds the function timeout (${timeout.toHumanString()}): slow requests will be cut short by the deadline.`,
    });
  }

  const ageThreshold = props.oldestMessageAgeThreshold ?? d.oldestMessageAgeThreshold;
  const ageThresholdSeconds = settingSeconds(SETTINGS.oldestMessageAgeAlarmMinutes, ageThreshold);
  // A token (a parameter, an SSM value) is CloudFormation's to resolve, as SNS takes it.
  if (props.alarmEmail !== undefined && !Token.isUnresolved(props.alarmEmail)) {
    check(
      /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(props.alarmEmail),
      'alarmEmail',
      `must be an e-mail address; got ${JSON.stringify(props.alarmEmail)}`,
    );
  }
  const windowSeconds = settingSeconds(SETTINGS.MAX_BATCHING_WINDOW_SECONDS, props.maxBatchingWindow ?? d.maxBatchingWindow);

  const breaker: BreakerSettings = {
    threshold: settingNumber(SETTINGS.OUTAGE_THRESHOLD, props.outageThreshold ?? d.outageThreshold),
    probeIntervalSeconds: settingSeconds(SETTINGS.OUTAGE_BACKOFF_SECONDS, props.outageBackoff ?? d.outageBackoff),
    maxHoldSeconds: settingSeconds(SETTINGS.OUTAGE_BACKOFF_MAX_SECONDS, props.outageBackoffMax ?? d.outageBackoffMax),
  };
  const breakerAlarmThreshold = props.breakerOpenAlarmThreshold ?? d.breakerOpenAlarmThreshold;
  const breakerAlarmSeconds = settingSeconds(SETTINGS.breakerOpenAlarmMinutes, breakerAlarmThreshold);
  const deadLetterAgeAlarmSeconds = settingSeconds(
    SETTINGS.deadLetterAgeAlarmDays,
    props.deadLetterAgeAlarmThreshold ?? d.deadLetterAgeAlarmThreshold,
  );

  const { queues, maxReceiveCount, retryWindowSeconds } = resolveQueues(props, timeoutSeconds, windowSeconds, breaker, warnings);

  // ---- event source ----
  const fifo = queues.kind === 'existing' ? queues.queue.fifo : queues.fifo;
  const batchSize = props.batchSize ?? d.batchSize;
  check(
    !fifo || batchSize <= MAX_FIFO_EVENT_SOURCE_BATCH_SIZE,
    'batchSize',
    `must be at most ${MAX_FIFO_EVENT_SOURCE_BATCH_SIZE} for a FIFO queue (Lambda's limit for FIFO event sources); got ${batchSize}`,
  );
  wholeNumber(batchSize, 'batchSize', SETTINGS.BATCH_SIZE.min, fifo ? MAX_FIFO_EVENT_SOURCE_BATCH_SIZE : SETTINGS.BATCH_SIZE.max);
  check(!fifo || windowSeconds === 0, 'maxBatchingWindow', 'is not supported by Lambda for FIFO queues; leave it unset');
  check(
    batchSize <= 10 || windowSeconds >= 1,
    'batchSize',
    `of ${batchSize} (above 10) needs a maxBatchingWindow of at least 1 second (-c maxBatchingWindowSeconds=1), as Lambda requires`,
  );
  const maxConcurrency = settingNumber(SETTINGS.maxConcurrency, props.maxConcurrency ?? d.maxConcurrency);

  // ---- secrets ----
  const signing = props.signing ?? (props.signingSecret !== undefined || d.signing);
  check(signing || props.signingSecret === undefined, 'signing', 'is false, but a signingSecret was given');
  if (props.signingSecret !== undefined) checkSigningSecret(props.signingSecret);

  return {
    name,
    serviceName: props.serviceName ?? name,
    timeout,
    timeoutSeconds,
    memorySize,
    logRetention: props.logRetention ?? d.logRetention,
    ageThreshold,
    ageThresholdSeconds,
    breakerAlarmThreshold,
    breakerAlarmSeconds,
    deadLetterAgeAlarmSeconds,
    breaker,
    queues,
    maxReceiveCount,
    retryWindowSeconds,
    fifo,
    batchSize,
    windowSeconds,
    maxConcurrency,
    signing,
    warnings,
  };
}

/** Characters Secrets Manager generates that base64 holds (`excludePunctuation` leaves letters and digits). */
const BASE64_CHARACTERS_PER_BYTE = 4 / 3;

/**
 * The signing secret's value, where it is known at synth (a `Secret` of this app, with a value or
 * generated): a key the function would refuse at run time (not base64, under
 * {@link MIN_SIGNING_KEY_BYTES} bytes) fails synth instead. An imported secret is checked when
 * the function reads it.
 */
function checkSigningSecret(secret: secretsmanager.ISecret): void {
  const cfn = secret.node.defaultChild;
  if (!(cfn instanceof secretsmanager.CfnSecret)) return;
  if (typeof cfn.secretString === 'string' && !Token.isUnresolved(cfn.secretString)) {
    try {
      parseSigningKeys(cfn.secretString);
    } catch (error) {
      throw new WebhookRelayConfigError('signingSecret', `holds a value the function would refuse: ${(error as Error).message}`);
    }
    return;
  }
  const generated = cfn.generateSecretString;
  if (generated === undefined || Token.isUnresolved(generated)) return;
  const options = generated as secretsmanager.CfnSecret.GenerateSecretStringProperty;
  const length = options.passwordLength ?? 32; // Secrets Manager's default
  const minimum = Math.ceil(MIN_SIGNING_KEY_BYTES * BASE64_CHARACTERS_PER_BYTE);
  let problem: string | undefined;
  if (options.secretStringTemplate !== undefined || options.generateStringKey !== undefined)
    problem = 'generates a JSON document; the function needs the key itself';
  else if (options.excludePunctuation !== true || options.includeSpace === true)
    problem = 'generates punctuation or spaces, which are not base64';
  else if (typeof length === 'number' && !Token.isUnresolved(length)) {
    // Base64 of 4n+1 characters decodes to nothing whole.
    if (length % 4 === 1) problem = `generates ${length} characters, which is not base64 (no length of 4n + 1 is)`;
    else if (length < minimum)
      problem = `generates ${length} characters, a key of ${Math.floor(length / BASE64_CHARACTERS_PER_BYTE)} bytes`;
  }
  check(
    problem === undefined,
    'signingSecret',
    `${problem}: a Standard Webhooks key is base64 of at least ${MIN_SIGNING_KEY_BYTES} bytes; generate it with { excludePunctuation: true, includeSpace: false, passwordLength: 48 } (as the construct does when given none)`,
  );
}

/**
 * A warning when the webhook URL has a query string or fragment, where tokens travel: the URL is
 * written into the template and the function's environment as given. (User-info is refused.)
 */
function queryStringWarning(webhookUrl: string | undefined): ResolvedWarning | undefined {
  if (webhookUrl === undefined || Token.isUnresolved(webhookUrl)) return undefined;
  let url: URL;
  try {
    url = new URL(webhookUrl);
  } catch {
    return undefined; // refused with the function's rules, by the environment's check
  }
  if (url.search === '' && url.hash === '' && !webhookUrl.includes('?')) return undefined;
  return {
    id: 'sqs-webhook-relay:webhookUrlInTemplate',
    message: `webhookUrl ${redactUrl(webhookUrl)} has a query string, which is written into the template and the function's environment in clear. If it carries a token, keep the whole URL in Secrets Manager instead: webhookUrlSecret (-c webhookUrlSecretArn=…).`,
  };
}
