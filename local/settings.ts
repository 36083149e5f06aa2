/**
 * The local runner's own settings (`npm start`): where the queue comes from, how it is polled,
 * and how the output looks. The handler's settings (WEBHOOK_URL, BACKOFF, …) are not parsed
 * here but by `lambda/config.ts`, the same code Lambda runs, so both fail the same way.
 */
import { expectedUrl } from '../lambda/config';
import { ConfigError, type Env, read, readSetting } from '../lambda/env';
import { likelyTypos } from '../lambda/nearest-name';
import { FUNCTION_SETTINGS, LOCAL_SETTINGS, SETTING_LIST, type SettingName } from '../lambda/settings';
import { MAX_QUEUE_NAME_LENGTH } from '../lambda/aws-limits';
import { DEAD_LETTER_SUFFIX, deadLetterQueueName, isQueueName, isQueueUrl, QUEUE_URL_EXAMPLE } from '../lambda/sqs-util';
import { checkHttpsOrLoopback, redactUrl } from '../lambda/url-rules';
import { sqsEndpointFor } from './existing-queue';

/** How the runner's and the handler's log lines are written. */
export type LogFormat = 'pretty' | 'json';

/** Everything `npm start` reads from its environment besides the handler's variables. */
export interface LocalSettings {
  /** `QUEUE_URL`: relay from this existing queue (daemon mode) instead of an embedded emulator. */
  readonly queueUrl: string | undefined;
  /** `SQS_PORT`: the embedded emulator's port on 127.0.0.1; 0 picks a free one. */
  readonly sqsPort: number;
  /** `QUEUE_NAME`: the embedded main queue; the DLQ is `<name>-dlq` (`<base>-dlq.fifo` for FIFO). */
  readonly queueName: string;
  /** `MAX_RECEIVE_COUNT` as set, or `undefined` (embedded: 5; daemon: the queue's redrive policy). */
  readonly maxReceiveCount: number | undefined;
  /** `BATCH_SIZE`: records per invocation, at most. */
  readonly batchSize: number;
  /** `MAX_BATCHING_WINDOW_SECONDS`: how long to gather records for one invocation. */
  readonly maxBatchingWindowSeconds: number;
  /** `POLLERS`: concurrent poll-and-invoke loops (Lambda's concurrent invocations). */
  readonly pollers: number;
  /**
   * `CONCURRENT_INVOCATIONS`: the pollers that share `MAX_REQUESTS_PER_SECOND` and a webhook's quota, `POLLERS` unless
   * given: several daemons at one webhook count all of theirs.
   */
  readonly concurrentInvocations: number;
  /** `FUNCTION_TIMEOUT_SECONDS`: the deadline each invocation's context counts down from. */
  readonly functionTimeoutSeconds: number;
  /** `WEBHOOK_URL`, or `undefined` to start the demo webhook (the sandbox only: with `QUEUE_URL` it is required). */
  readonly webhookUrl: string | undefined;
  /** `DEMO_WEBHOOK_PORT`: the demo webhook's port on 127.0.0.1; 0 (default) picks a free one. */
  readonly demoWebhookPort: number;
  /** `LOG_FORMAT`, else pretty on a terminal and JSON otherwise. */
  readonly logFormat: LogFormat;
  /** `LOG_LEVEL` / `POWERTOOLS_LOG_LEVEL`, upper-cased; INFO by default. */
  readonly logLevel: string;
  /** `WEBHOOK_HEALTH_CHECK_URL`: poll only while this answers 2xx (Carrier's health check). */
  readonly healthCheckUrl: URL | undefined;
  /** `HEALTH_CHECK_INTERVAL_SECONDS`: how often it is checked while failing, and at most how stale a pass may be. */
  readonly healthCheckIntervalSeconds: number;
}

/** `QUEUE_URL`, checked: a queue URL, and where its signed calls go allowed (`sqsEndpointFor`). */
function queueUrl(env: Env): string | undefined {
  const raw = read(env, 'QUEUE_URL');
  if (raw === undefined) return undefined;
  if (!isQueueUrl(raw)) throw new ConfigError('QUEUE_URL', `an SQS queue URL such as ${QUEUE_URL_EXAMPLE}`, redactUrl(raw));
  sqsEndpointFor(raw, env);
  return raw;
}

function healthCheckUrl(env: Env): URL | undefined {
  const raw = read(env, 'WEBHOOK_HEALTH_CHECK_URL');
  if (raw === undefined) return undefined;
  const checked = checkHttpsOrLoopback(raw, readSetting(env, FUNCTION_SETTINGS.ALLOW_INSECURE_HTTP));
  if (checked instanceof URL) return checked;
  throw new ConfigError('WEBHOOK_HEALTH_CHECK_URL', expectedUrl(checked), redactUrl(raw));
}

/** `LOG_LEVEL`, else `POWERTOOLS_LOG_LEVEL`, else INFO: as the levels are written, upper-case. */
function logLevel(env: Env): string {
  return read(env, 'LOG_LEVEL') === undefined
    ? readSetting(env, FUNCTION_SETTINGS.POWERTOOLS_LOG_LEVEL)
    : readSetting(env, LOCAL_SETTINGS.LOG_LEVEL);
}

/** Every variable the function and the local runner read. */
const VARIABLES: readonly string[] = SETTING_LIST.flatMap((setting) =>
  setting.scope !== 'stack' && setting.variable !== undefined ? [setting.variable] : [],
);

/**
 * Variables with a meaning of their own that are a typo away from a setting's: the AWS SDK's
 * endpoint for another service (`AWS_ENDPOINT_URL_STS`, which the SDK reads), the FTP proxy
 * (set beside `http_proxy` on many machines), and a queue's ARN kept beside its URL (`QUEUE_ARN`).
 */
/**
 * The function's settings local runs refuse, and why: the deployed function's alone. Left out of the daemon's `--help`.
 */
export const STACK_ONLY_SETTINGS: Readonly<Partial<Record<SettingName, string>>> = {
  WEBHOOK_URL_SECRET_ARN: "unset here: it is the deployed function's; local runs and the daemon take the URL in WEBHOOK_URL",
};

const NOT_TYPOS = /^(AWS_ENDPOINT_URL_\w+|FTP_PROXY|QUEUE_ARN|DLQ_ARN)$/i;

/**
 * The environment's variables that look like a mistyped setting (`WEBHOOK_ULR`, `webhook_url`),
 * each with the setting's variable: the setting itself then silently keeps its default.
 */
export function mistypedVariables(env: Env): Map<string, string> {
  return likelyTypos(
    Object.keys(env).filter((name) => read(env, name) !== undefined && !NOT_TYPOS.test(name)),
    VARIABLES,
  );
}

/**
 * Reads the local runner's settings.
 * @param env the environment (`process.env`)
 * @param isTerminal whether standard output is a terminal (picks the default log format)
 * @throws {ConfigError} naming the first variable that is malformed
 */
export function loadLocalSettings(env: Env, isTerminal: boolean): LocalSettings {
  const setting = <N extends keyof typeof LOCAL_SETTINGS>(name: N, expected?: string) => readSetting(env, LOCAL_SETTINGS[name], expected);
  const queueName = setting('QUEUE_NAME');
  // The DLQ is named after the queue, and SQS's rule holds for both names.
  if (!isQueueName(queueName) || !isQueueName(deadLetterQueueName(queueName))) {
    const longest = MAX_QUEUE_NAME_LENGTH - DEAD_LETTER_SUFFIX.length;
    throw new ConfigError('QUEUE_NAME', `up to ${longest} letters, digits, "-" or "_", optionally ending in ".fifo"`, queueName);
  }
  const format = setting('LOG_FORMAT', '"pretty" or "json"');
  const maxReceiveCount = read(env, 'MAX_RECEIVE_COUNT') === undefined ? undefined : readSetting(env, FUNCTION_SETTINGS.MAX_RECEIVE_COUNT);
  const existingQueueUrl = queueUrl(env);
  const webhookUrl = read(env, 'WEBHOOK_URL');
  for (const [name, expected] of Object.entries(STACK_ONLY_SETTINGS)) {
    if (read(env, name) !== undefined) throw new ConfigError(name, expected, read(env, name));
  }
  // A near miss of QUEUE_URL switches the mode: the sandbox would start in its place and relay its own empty queue into
  // WEBHOOK_URL, while the queue meant waits unrelayed behind a line of warning.
  const typoOf = (variable: string): string | undefined => [...mistypedVariables(env)].find(([, meant]) => meant === variable)?.[0];
  const queueUrlTypo = existingQueueUrl === undefined ? typoOf('QUEUE_URL') : undefined;
  if (queueUrlTypo !== undefined) {
    throw new ConfigError(
      'QUEUE_URL',
      `set to relay an existing queue (${queueUrlTypo} is set: a typo? Without QUEUE_URL the relay runs its own sandbox queue)`,
      undefined,
    );
  }
  // The demo webhook answers 200 to everything: relaying a real queue into it would delete every message.
  if (existingQueueUrl !== undefined && webhookUrl === undefined) {
    const typo = typoOf('WEBHOOK_URL');
    const hint = typo === undefined ? '' : `; ${typo} is set: a typo?`;
    throw new ConfigError(
      'WEBHOOK_URL',
      `set when QUEUE_URL names an existing queue (the demo webhook is for the sandbox only${hint})`,
      undefined,
    );
  }
  const pollers = setting('POLLERS');
  const sharing = read(env, 'CONCURRENT_INVOCATIONS') === undefined ? pollers : readSetting(env, FUNCTION_SETTINGS.CONCURRENT_INVOCATIONS);
  if (sharing < pollers) {
    throw new ConfigError(
      'CONCURRENT_INVOCATIONS',
      `at least POLLERS (${pollers}): the pollers of every relay that shares the webhook, this one's included`,
      read(env, 'CONCURRENT_INVOCATIONS'),
    );
  }
  return {
    queueUrl: existingQueueUrl,
    sqsPort: setting('SQS_PORT'),
    queueName,
    maxReceiveCount,
    batchSize: setting('BATCH_SIZE'),
    maxBatchingWindowSeconds: setting('MAX_BATCHING_WINDOW_SECONDS'),
    pollers,
    concurrentInvocations: sharing,
    functionTimeoutSeconds: setting('FUNCTION_TIMEOUT_SECONDS'),
    webhookUrl,
    demoWebhookPort: setting('DEMO_WEBHOOK_PORT'),
    logFormat: format ?? (isTerminal ? 'pretty' : 'json'),
    logLevel: logLevel(env),
    healthCheckUrl: healthCheckUrl(env),
    healthCheckIntervalSeconds: setting('HEALTH_CHECK_INTERVAL_SECONDS'),
  };
}
