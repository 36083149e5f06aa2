/**
 * The local runner's own settings (`npm start`): where the queue comes from, how it is polled,
 * and how the output looks. The handler's settings (WEBHOOK_URL, BACKOFF, …) are not parsed
 * here but by `lambda/config.ts`, the same code Lambda runs, so both fail the same way.
 */
import { parseHttpsOrLoopback, redactUrl } from '../lambda/config';
import { boolean, ConfigError, type Env, integerSetting, read } from '../lambda/env';
import { likelyTypos } from '../lambda/nearest-name';
import { FUNCTION_SETTINGS, LOG_LEVELS, SETTING_LIST, SETTINGS, type SettingName } from '../lambda/settings';
import { emulatorOrigin, isAwsHost } from './existing-queue';

export { LOG_LEVELS };

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

// SQS queue names: 1-80 characters of letters, digits, '-' and '_', plus '.fifo' for FIFO queues.
// The DLQ adds '-dlq' (4 characters), so the main queue's base name may have at most 76.
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,76}(\.fifo)?$/;

/** `ALLOW_INSECURE_HTTP`, as the function reads it: plain http to hosts that are not loopback. */
function allowInsecureHttp(env: Env): boolean {
  return boolean(env, 'ALLOW_INSECURE_HTTP', FUNCTION_SETTINGS.ALLOW_INSECURE_HTTP.default);
}

function queueUrl(env: Env): string | undefined {
  const raw = read(env, 'QUEUE_URL');
  if (raw === undefined) return undefined;
  const example = 'an SQS queue URL such as https://sqs.eu-west-1.amazonaws.com/123456789012/orders';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('QUEUE_URL', example, redactUrl(raw));
  }
  const segments = url.pathname.split('/').filter((segment) => segment !== '');
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || segments.length < 2) {
    throw new ConfigError('QUEUE_URL', example, redactUrl(raw));
  }
  // The daemon's SQS calls are SigV4-signed, with session tokens: the webhook URL's rule holds for
  // where they go (an endpoint variable, else a queue URL not on AWS, which is its own endpoint).
  const endpointVariable = ['AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL'].find((name) => read(env, name) !== undefined);
  // Where connectionFor sends them: a `*.localhost` queue URL is reached at 127.0.0.1.
  const [name, endpoint] =
    endpointVariable === undefined
      ? ['QUEUE_URL', isAwsHost(url.hostname) ? undefined : emulatorOrigin(url)]
      : [endpointVariable, read(env, endpointVariable)];
  if (endpoint !== undefined) {
    const checked = parseHttpsOrLoopback(endpoint, allowInsecureHttp(env));
    if (!(checked instanceof URL)) {
      throw new ConfigError(
        name,
        `${checked.expected} (signed SQS calls go there; for an emulator on this machine, use 127.0.0.1 or localhost, e.g. AWS_ENDPOINT_URL_SQS=http://127.0.0.1:4566)`,
        checked.shown,
      );
    }
  }
  return raw;
}

function healthCheckUrl(env: Env): URL | undefined {
  const raw = read(env, 'WEBHOOK_HEALTH_CHECK_URL');
  if (raw === undefined) return undefined;
  const checked = parseHttpsOrLoopback(raw, allowInsecureHttp(env));
  if (checked instanceof URL) return checked;
  throw new ConfigError('WEBHOOK_HEALTH_CHECK_URL', checked.expected, checked.shown);
}

/** A whole-number setting, with the registry's default and bounds. */
function int(env: Env, name: SettingName): number {
  return integerSetting(env, name, SETTINGS[name]);
}

function logLevel(env: Env): string {
  const name = read(env, 'LOG_LEVEL') === undefined ? 'POWERTOOLS_LOG_LEVEL' : 'LOG_LEVEL';
  const raw = read(env, name) ?? SETTINGS[name].default;
  const level = raw.toUpperCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new ConfigError(name, `one of ${LOG_LEVELS.join(', ')}`, raw);
  return level;
}

/** Every variable the function and the local runner read. */
const VARIABLES: readonly string[] = SETTING_LIST.flatMap((setting) =>
  setting.scope !== 'stack' && setting.variable !== undefined ? [setting.variable] : [],
);

/**
 * The environment's variables that look like a mistyped setting (`WEBHOOK_ULR`, `webhook_url`),
 * each with the setting's variable: the setting itself then silently keeps its default.
 */
export function mistypedVariables(env: Env): Map<string, string> {
  return likelyTypos(
    Object.keys(env).filter((name) => read(env, name) !== undefined),
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
  const queueName = read(env, 'QUEUE_NAME') ?? SETTINGS.QUEUE_NAME.default;
  if (!QUEUE_NAME.test(queueName)) {
    throw new ConfigError('QUEUE_NAME', 'up to 76 letters, digits, "-" or "_", optionally ending in ".fifo"', queueName);
  }
  const format = read(env, 'LOG_FORMAT')?.toLowerCase();
  if (format !== undefined && format !== 'pretty' && format !== 'json') throw new ConfigError('LOG_FORMAT', '"pretty" or "json"', format);
  const maxReceiveCount = read(env, 'MAX_RECEIVE_COUNT') === undefined ? undefined : int(env, 'MAX_RECEIVE_COUNT');
  const existingQueueUrl = queueUrl(env);
  const webhookUrl = read(env, 'WEBHOOK_URL');
  if (read(env, 'WEBHOOK_URL_SECRET_ARN') !== undefined) {
    throw new ConfigError(
      'WEBHOOK_URL_SECRET_ARN',
      "unset here: it is the deployed function's; local runs and the daemon take the URL in WEBHOOK_URL",
      read(env, 'WEBHOOK_URL_SECRET_ARN'),
    );
  }
  // The demo webhook answers 200 to everything: relaying a real queue into it would delete every message.
  if (existingQueueUrl !== undefined && webhookUrl === undefined) {
    const typo = [...mistypedVariables(env)].find(([, variable]) => variable === 'WEBHOOK_URL')?.[0];
    const hint = typo === undefined ? '' : `; ${typo} is set: a typo?`;
    throw new ConfigError(
      'WEBHOOK_URL',
      `set when QUEUE_URL names an existing queue (the demo webhook is for the sandbox only${hint})`,
      undefined,
    );
  }
  return {
    queueUrl: existingQueueUrl,
    sqsPort: int(env, 'SQS_PORT'),
    queueName,
    maxReceiveCount,
    batchSize: int(env, 'BATCH_SIZE'),
    maxBatchingWindowSeconds: int(env, 'MAX_BATCHING_WINDOW_SECONDS'),
    pollers: int(env, 'POLLERS'),
    functionTimeoutSeconds: int(env, 'FUNCTION_TIMEOUT_SECONDS'),
    webhookUrl,
    demoWebhookPort: int(env, 'DEMO_WEBHOOK_PORT'),
    logFormat: format ?? (isTerminal ? 'pretty' : 'json'),
    logLevel: logLevel(env),
    healthCheckUrl: healthCheckUrl(env),
    healthCheckIntervalSeconds: int(env, 'HEALTH_CHECK_INTERVAL_SECONDS'),
  };
}
