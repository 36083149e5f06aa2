/**
 * The runner: the relay's Lambda handler fed by pollers, as Lambda's event source mapping would
 * feed it. The development sandbox (`local/sandbox/`: emulator, demo webhook) and the daemon
 * (`local/daemon.ts`: an existing queue) both end here, with everything decided and passed as a
 * value: the handler's configuration, the runner's settings, and how to reach the queue.
 *
 * The handler is `createRelayHandler` from `lambda/relay.ts`, the code Lambda runs. Only its
 * Logger (to print readable lines on a terminal), its Metrics (EMF is for CloudWatch, off by
 * default here) and its SQS client (an explicit endpoint) are given to it.
 */
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { SQSClient } from '@aws-sdk/client-sqs';
import { loadConfig, type RelayConfig } from '../lambda/config';
import { redactUrl } from '../lambda/url-rules';
import { type Env, read, readSetting } from '../lambda/env';
import { createRelayHandler } from '../lambda/relay';
import { FUNCTION_SETTINGS } from '../lambda/settings';
import { errorText } from '../lambda/sqs-util';
import { awsCliCommand, formatBanner, type ReadyInfo, sendCommand } from './banner';
import { keepProtoNamedAttributes } from './event-source';
import { clientConfig, type SqsConnection } from './existing-queue';
import { checkHealth, HEALTH_CHECK_TIMEOUT_MS, HealthGate, healthCheckAgent } from './health-check';
import { createLocalLog, type LocalLog, PLAIN, RelayLogger, type Styles, type TextOutput } from './log';
import { type EventSourceMapping, type MappingObserver, startEventSourceMapping } from './poller';
import { type LocalSettings, loadLocalSettings, mistypedVariables } from './settings';

/** Where the runner writes, and how. */
export interface RunnerIo {
  readonly out: TextOutput;
  /** Whether `out` is a terminal (pretty log lines by default). */
  readonly isTerminal: boolean;
  /** Colours for pretty output. */
  readonly styles: Styles;
  /** Aborts when a stop is asked for before the relay is up: the daemon gives up its start-up calls to SQS. */
  readonly startupStop?: AbortSignal;
}

/** A running local relay. */
export interface LocalRelay {
  readonly info: ReadyInfo;
  readonly log: LocalLog;
  /** Stops polling, lets the batches in flight finish and be acknowledged, then closes everything. */
  stop(): Promise<void>;
}

/** The queue the runner polls, as the sandbox made it or the daemon found it. */
export type RunnerQueue = Pick<
  ReadyInfo,
  'mode' | 'queueUrl' | 'queueArn' | 'dlqUrl' | 'maxReceiveCount' | 'fifo' | 'visibilityTimeoutSeconds'
>;

/** Everything the runner needs, decided by its caller. */
export interface RunnerOptions {
  /** The handler's configuration (`loadConfig`), with the queue's DLQ and the webhook filled in. */
  readonly config: RelayConfig;
  /** The runner's own settings (`loadLocalSettings`). */
  readonly settings: LocalSettings;
  readonly connection: SqsConnection;
  readonly queue: RunnerQueue;
  /** The webhook's URL as given (the demo's when `demoWebhook`); printed redacted. */
  readonly webhookUrl: string;
  readonly demoWebhook: boolean;
  /** Powertools' service name and metrics namespace for the handler's Logger and Metrics. */
  readonly telemetry: Telemetry;
  readonly log: LocalLog;
  readonly styles: Styles;
  /** Closes what the caller started (emulator, demo webhook), after the last batch is acknowledged. */
  readonly close: () => Promise<void>;
}

/** Powertools' names for the handler's logs and metrics. */
export interface Telemetry {
  readonly serviceName: string;
  readonly namespace: string;
}

/** What both entries start from: the runner's settings, its log, and the handler's names. */
export interface LocalStart {
  /**
   * The environment as the handler reads it here: the given one, with `CONCURRENT_INVOCATIONS` set
   * to `POLLERS` unless given (each poller is a container of its own, sharing `MAX_REQUESTS_PER_SECOND`
   * as concurrent invocations do).
   */
  readonly functionEnv: Env;
  readonly settings: LocalSettings;
  readonly log: LocalLog;
  readonly telemetry: Telemetry;
  /** The handler's configuration as the environment gives it, checked before anything listens. */
  readonly preliminary: RelayConfig;
}

/**
 * Long-poll wait of a standalone relay (QUEUE_URL), seconds. Its queue outlives it, so a stop lets
 * the receive under way answer rather than abort it (which would leave its messages invisible for
 * a visibility timeout); 5 s keeps that wait, and the stop, within a container's usual 10 s grace.
 */
export const STANDALONE_WAIT_TIME_SECONDS = 5;

/**
 * Reads the runner's settings and checks the handler's configuration before anything listens
 * (the demo's URL is not known yet, so a placeholder stands in for an unset WEBHOOK_URL).
 * @throws {ConfigError} naming the first variable that is malformed
 */
export function prepareLocalStart(env: Env, io: RunnerIo): LocalStart {
  const settings = loadLocalSettings(env, io.isTerminal);
  const log = createLocalLog(settings.logFormat, settings.logLevel, io.out, settings.logFormat === 'pretty' ? io.styles : PLAIN);
  for (const [typo, variable] of mistypedVariables(env)) {
    // Both may be set (`webhook_url` beside `WEBHOOK_URL`): then the setting has the value it was given, not its default.
    const outcome = read(env, variable) === undefined ? `${variable} keeps its default` : `the value of ${variable} is used`;
    log.line('WARN', `${typo} is not a setting of the relay; did you mean ${variable}? (${typo} is ignored: ${outcome})`);
  }
  const functionEnv: Env = { ...env, CONCURRENT_INVOCATIONS: String(settings.concurrentInvocations) };
  const preliminary = loadConfig({ ...functionEnv, WEBHOOK_URL: settings.webhookUrl ?? 'http://127.0.0.1/webhook' });
  // EMF lines are for CloudWatch; here they would bury the log. POWERTOOLS_METRICS_DISABLED=false brings them back.
  // Powertools' Metrics reads this only from process.env (no constructor option), hence the one write.
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const telemetry = {
    serviceName: readSetting(env, FUNCTION_SETTINGS.POWERTOOLS_SERVICE_NAME),
    namespace: readSetting(env, FUNCTION_SETTINGS.POWERTOOLS_METRICS_NAMESPACE),
  };
  return { functionEnv, settings, log, telemetry, preliminary };
}

/** Runs `start` and, when it throws, closes in reverse order whatever it registered with `onClose`. */
export async function withCleanup<T>(
  start: (onClose: (close: () => Promise<void>) => void, closeAll: () => Promise<void>) => Promise<T>,
): Promise<T> {
  const closes: (() => Promise<void>)[] = [];
  const closeAll = async (): Promise<void> => {
    for (const close of closes.reverse()) await close().catch(() => undefined);
  };
  try {
    return await start((close) => closes.push(close), closeAll);
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** What the mapping's events look like in the log. */
function mappingObserver(log: LocalLog, deadLettered: readonly Set<string>[], visibilityTimeoutSeconds: number): MappingObserver {
  return {
    invoking(poller, records) {
      log.line('DEBUG', 'Invoking the handler', { poller, records: records.length });
    },
    completed(poller, result) {
      const refused = deadLettered[poller] ?? new Set<string>();
      const notDeleted = new Set(result.deleteFailures.map((failure) => failure.record.messageId));
      for (const record of result.acknowledged) {
        // Acknowledged records are delivered, unless the handler's own line said it dead-lettered them.
        if (refused.has(record.messageId) || notDeleted.has(record.messageId)) continue;
        const receiveCount = Number(record.attributes.ApproximateReceiveCount);
        log.line(
          log.format === 'pretty' ? 'INFO' : 'DEBUG',
          'Message delivered',
          { messageId: record.messageId, receiveCount },
          `${log.styles.green('✓ delivered')}  ${record.messageId}  receive ${receiveCount}`,
        );
      }
      refused.clear();
      for (const { record, reason } of result.deleteFailures) {
        log.line('WARN', 'Acknowledged message not deleted: it will be delivered again', { messageId: record.messageId, error: reason });
      }
    },
    invocationFailed(poller, records, failure, detail) {
      deadLettered[poller]?.clear();
      const what = failure === 'timeout' ? 'timed out' : failure === 'invalid-response' ? 'returned an invalid batch response' : 'failed';
      log.line(
        'ERROR',
        `Invocation ${what}; its ${records.length} message(s) come back after the visibility timeout (${visibilityTimeoutSeconds} s)`,
        {
          poller,
          failure,
          error: detail,
          messageIds: records.map((record) => record.messageId),
        },
      );
    },
    receiveFailed(poller, error, retryInMs) {
      log.line('WARN', `ReceiveMessage failed; polling again in ${retryInMs / 1000} s`, { poller, error: errorText(error) });
    },
    released(poller, messages) {
      log.line('INFO', `Handed ${messages} message(s) received during shutdown back to the queue`, { poller, messages });
    },
    extensionFailed(poller, failures) {
      log.line(
        'WARN',
        `Could not keep ${failures.length} message(s) invisible for the function timeout (the queue's visibility timeout is ${visibilityTimeoutSeconds} s): they may be received again while in flight`,
        { poller, messageIds: failures.map(({ record }) => record.MessageId), error: failures[0]?.reason },
      );
    },
  };
}

/**
 * Starts the pollers that feed the handler, after printing the banner (or the JSON ready line).
 * Takes every setting as a value: the environment is neither read nor written here.
 */
export function startRunner(options: RunnerOptions): LocalRelay {
  const { config, settings, connection, queue, log, telemetry } = options;
  const sqs = new SQSClient(clientConfig(connection));
  keepProtoNamedAttributes(sqs);
  const deadLettered = Array.from({ length: settings.pollers }, () => new Set<string>());
  const info: ReadyInfo = {
    ...queue,
    sqsEndpoint: connection.endpoint,
    emulatorCredentials: connection.credentials !== undefined,
    region: connection.region,
    // A token in the webhook's query string stays out of the banner and the log.
    webhookUrl: redactUrl(options.webhookUrl),
    demoWebhook: options.demoWebhook,
    pollers: settings.pollers,
    batchSize: settings.batchSize,
    functionTimeoutSeconds: settings.functionTimeoutSeconds,
    retryWindowSeconds: config.retryWindowSeconds,
  };
  if (log.format === 'pretty') log.text(formatBanner(info, options.styles));
  else log.line('INFO', 'Local relay ready', { ...info, sendCommand: sendCommand(info), awsCliCommand: awsCliCommand(info) });

  const healthUrl = settings.healthCheckUrl;
  const relayLogger = (observe?: (attributes: Record<string, unknown>) => void): RelayLogger =>
    new RelayLogger({ serviceName: telemetry.serviceName, logLevel: settings.logLevel as LogLevel }, log, observe);
  const healthAgent = healthUrl === undefined ? undefined : healthCheckAgent(healthUrl, config, relayLogger());
  const healthGate =
    healthUrl === undefined
      ? undefined
      : new HealthGate(
          healthUrl,
          settings.healthCheckIntervalSeconds * 1000,
          {
            unhealthy: (url, reason) =>
              log.line('WARN', `Webhook health check failing (${redactUrl(url)}: ${reason}): polling paused`, {
                healthCheckUrl: redactUrl(url),
                reason,
              }),
            healthy: (url) =>
              log.line('INFO', `Webhook health check passing (${redactUrl(url)}): polling`, { healthCheckUrl: redactUrl(url) }),
          },
          (url) => checkHealth(url, HEALTH_CHECK_TIMEOUT_MS, healthAgent),
        );
  const mapping: EventSourceMapping = startEventSourceMapping({
    sqs,
    queueUrl: queue.queueUrl,
    queueArn: queue.queueArn,
    pollers: settings.pollers,
    batchSize: settings.batchSize,
    maxBatchingWindowMs: settings.maxBatchingWindowSeconds * 1000,
    functionTimeoutMs: settings.functionTimeoutSeconds * 1000,
    visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
    // The emulator's queue ends with this process: nothing to strand, and Ctrl-C stops at once.
    ...(queue.mode === 'existing' ? { waitTimeSeconds: STANDALONE_WAIT_TIME_SECONDS, finishReceivesOnStop: true } : {}),
    observer: mappingObserver(log, deadLettered, queue.visibilityTimeoutSeconds),
    beforeReceive: healthGate === undefined ? undefined : (signal) => healthGate.whenHealthy(signal),
    // One handler per poller: each poller is a warm container of its own, as concurrent Lambda invocations are.
    createHandler: (poller) =>
      createRelayHandler(config, {
        logger: relayLogger((attributes) => {
          if (attributes.outcome === 'dead-lettered' && typeof attributes.messageId === 'string')
            deadLettered[poller]?.add(attributes.messageId);
        }),
        metrics: new Metrics({ namespace: telemetry.namespace, serviceName: telemetry.serviceName }),
        sqs,
      }),
  });

  let stopped: Promise<void> | undefined;
  return {
    info,
    log,
    stop() {
      stopped ??= (async () => {
        const inFlight = mapping.inFlight;
        const message = inFlight === 0 ? 'Stopping' : `Stopping: finishing ${inFlight} batch(es) in flight`;
        log.line('INFO', message, { inFlight }, message);
        await mapping.stop();
        sqs.destroy();
        await options.close();
        log.line('INFO', 'Stopped');
      })();
      return stopped;
    },
  };
}
