/**
 * `npm start`: the relay's Lambda handler running on this machine. Either an SQS emulator in
 * this process holds the queue, its DLQ and the redrive policy (the default: no AWS account
 * needed), or `QUEUE_URL` names an existing queue (a standalone relay beside a worker). Pollers
 * feed the handler as Lambda's event source mapping would; without `WEBHOOK_URL` a demo webhook
 * prints what arrives.
 *
 * The handler is `createRelayHandler` from `lambda/relay.ts` with the configuration that
 * `lambda/config.ts` reads from the environment: the code Lambda runs. Only its Logger (to print
 * readable lines on a terminal), its Metrics (EMF is for CloudWatch, off by default here) and its
 * SQS client (an explicit endpoint) are given to it.
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import { SQSClient } from '@aws-sdk/client-sqs';
import { loadConfig, redactUrl } from '../lambda/config';
import { createRelayHandler, DEFAULT_METRICS_NAMESPACE, DEFAULT_SERVICE_NAME } from '../lambda/relay';
import { errorText } from '../lambda/sqs-util';
import { awsCliCommand, formatBanner, type ReadyInfo, sendCommand } from './banner';
import { type DemoReply, type DemoRequest, startDemoWebhook } from './demo-webhook';
import { EMULATOR_CREDENTIALS, startEmbeddedSqs } from './emulator';
import { clientConfig, connectionFor, describeExistingQueue, type ExistingQueue, type SqsConnection } from './existing-queue';
import { createLocalLog, type LocalLog, PLAIN, RelayLogger, type Styles, type TextOutput } from './log';
import { HealthGate } from './health-check';
import { type EventSourceMapping, type MappingObserver, startEventSourceMapping } from './poller';
import { loadLocalSettings, visibilityTimeoutFor } from './settings';

/** Where the runner writes, and how. */
export interface RunnerIo {
  readonly out: TextOutput;
  /** Whether `out` is a terminal (pretty log lines by default). */
  readonly isTerminal: boolean;
  /** Colours for pretty output. */
  readonly styles: Styles;
}

/** A running local relay. */
export interface LocalRelay {
  readonly info: ReadyInfo;
  readonly log: LocalLog;
  /** Stops polling, lets the batches in flight finish and be acknowledged, then closes everything. */
  stop(): Promise<void>;
}

/** Default of `MAX_RECEIVE_COUNT` for the embedded queue, as the stack's. */
export const DEFAULT_MAX_RECEIVE_COUNT = 5;
/**
 * Long-poll wait of a standalone relay (QUEUE_URL), seconds. Its queue outlives it, so a stop lets
 * the receive under way answer rather than abort it (which would leave its messages invisible for
 * a visibility timeout); 5 s keeps that wait, and the stop, within a container's usual 10 s grace.
 */
export const STANDALONE_WAIT_TIME_SECONDS = 5;
/** Demo bodies longer than this are cut when printed. */
export const DEMO_BODY_PRINT_LIMIT = 2_000;

/** Headers whose values are credentials: the demo prints only their first characters. */
const SECRET_HEADERS = new Set(['authorization', 'webhook-signature', 'proxy-authorization', 'cookie']);

/**
 * A credential as the demo prints it: a leading scheme (`Bearer `, `v1,`) and at most four more
 * characters (fewer for short values), then `…`: enough to tell two keys apart, not to reuse one.
 */
export function maskSecret(value: string): string {
  const scheme = /^[A-Za-z0-9_-]{1,20}[ ,]/.exec(value)?.[0] ?? '';
  const rest = value.slice(scheme.length);
  return `${scheme}${rest.slice(0, Math.min(4, Math.floor(rest.length / 4)))}…`;
}

/** A request's headers with credential values masked. */
export function printableHeaders(headers: readonly (readonly [string, string])[]): [string, string][] {
  return headers.map(([name, value]) => [name, SECRET_HEADERS.has(name.toLowerCase()) ? maskSecret(value) : value]);
}

function printDemoRequest(log: LocalLog, request: DemoRequest, reply: DemoReply): void {
  const printable = printableHeaders(request.headers);
  const headers = Object.fromEntries(printable);
  if (log.format === 'json') {
    log.line('INFO', 'Demo webhook received a request', {
      method: request.method,
      path: request.path,
      status: reply.status,
      headers,
      body: request.body,
    });
    return;
  }
  const body =
    request.body.length > DEMO_BODY_PRINT_LIMIT
      ? `${request.body.slice(0, DEMO_BODY_PRINT_LIMIT)}… (${request.body.length} characters)`
      : request.body;
  const lines = [
    log.styles.bold(
      `▶ webhook got ${request.method} ${request.path}, answered ${reply.status}${reply.headers['Retry-After'] === undefined ? '' : ` with Retry-After: ${reply.headers['Retry-After']}`}`,
    ),
    ...printable.map(([name, value]) => `    ${name}: ${value}`),
    '',
    ...body.split('\n').map((line) => `    ${line}`),
  ];
  log.line('INFO', 'Demo webhook received a request', {}, lines.join('\n'));
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
  };
}

/**
 * Starts the local relay from `process.env` (the handler and Powertools read it too, so it is
 * updated in place: endpoint, region, credentials, DLQ_URL, WEBHOOK_URL for the demo).
 * @throws a ConfigError, StartupError or port-in-use error whose message is the line to print
 */
export async function startLocalRelay(io: RunnerIo): Promise<LocalRelay> {
  const env = process.env;
  const settings = loadLocalSettings(env, io.isTerminal);
  const log = createLocalLog(settings.logFormat, settings.logLevel, io.out, settings.logFormat === 'pretty' ? io.styles : PLAIN);
  // The handler's configuration is checked before anything listens; the demo's URL is not known yet.
  const preliminary = loadConfig({ ...env, WEBHOOK_URL: settings.webhookUrl ?? 'http://127.0.0.1/webhook' });

  const cleanups: (() => Promise<void>)[] = [];
  const cleanUp = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    let connection: SqsConnection;
    let queue: Pick<ReadyInfo, 'mode' | 'queueUrl' | 'queueArn' | 'dlqUrl' | 'maxReceiveCount' | 'fifo' | 'visibilityTimeoutSeconds'>;
    if (settings.queueUrl === undefined) {
      const maxReceiveCount = settings.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT;
      const visibilityTimeoutSeconds = visibilityTimeoutFor(settings.functionTimeoutSeconds, settings.maxBatchingWindowSeconds);
      const emulator = await startEmbeddedSqs({
        port: settings.sqsPort,
        queueName: settings.queueName,
        maxReceiveCount,
        visibilityTimeoutSeconds,
      });
      cleanups.push(() => emulator.stop());
      connection = { endpoint: emulator.endpoint, region: emulator.region, credentials: EMULATOR_CREDENTIALS };
      // The emulator is the only SQS this process talks to; a developer's real credentials stay out of it.
      Object.assign(env, {
        AWS_ENDPOINT_URL_SQS: emulator.endpoint,
        AWS_REGION: emulator.region,
        AWS_ACCESS_KEY_ID: EMULATOR_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: EMULATOR_CREDENTIALS.secretAccessKey,
        DLQ_URL: emulator.dlq.url,
        MAX_RECEIVE_COUNT: String(maxReceiveCount),
      });
      delete env.AWS_SESSION_TOKEN;
      delete env.AWS_PROFILE;
      queue = {
        mode: 'embedded',
        queueUrl: emulator.queue.url,
        queueArn: emulator.queue.arn,
        dlqUrl: emulator.dlq.url,
        maxReceiveCount,
        fifo: emulator.fifo,
        visibilityTimeoutSeconds,
      };
    } else {
      connection = connectionFor(settings.queueUrl, env);
      const probe = new SQSClient(clientConfig(connection));
      let described: ExistingQueue;
      try {
        described = await describeExistingQueue(probe, settings.queueUrl);
      } finally {
        probe.destroy();
      }
      env.AWS_REGION = connection.region;
      if (connection.endpoint !== undefined && !env.AWS_ENDPOINT_URL_SQS && !env.AWS_ENDPOINT_URL)
        env.AWS_ENDPOINT_URL_SQS = connection.endpoint;
      if (connection.credentials !== undefined) {
        env.AWS_ACCESS_KEY_ID = connection.credentials.accessKeyId;
        env.AWS_SECRET_ACCESS_KEY = connection.credentials.secretAccessKey;
      }
      if (!env.DLQ_URL && described.dlqUrl !== undefined) env.DLQ_URL = described.dlqUrl;
      let maxReceiveCount = described.maxReceiveCount;
      if (settings.maxReceiveCount === undefined && maxReceiveCount !== undefined) {
        env.MAX_RECEIVE_COUNT = String(maxReceiveCount);
      } else if (settings.maxReceiveCount !== undefined && maxReceiveCount !== undefined && settings.maxReceiveCount !== maxReceiveCount) {
        log.line(
          'WARN',
          `MAX_RECEIVE_COUNT is ${settings.maxReceiveCount} but the queue's redrive policy says ${maxReceiveCount}; SQS follows the policy`,
        );
      }
      maxReceiveCount ??= settings.maxReceiveCount;
      if (described.dlqProblem !== undefined) log.line('WARN', `No dead-letter queue: ${described.dlqProblem}`);
      if (described.visibilityTimeoutSeconds < settings.functionTimeoutSeconds) {
        log.line(
          'WARN',
          `The queue's visibility timeout (${described.visibilityTimeoutSeconds} s) is shorter than FUNCTION_TIMEOUT_SECONDS (${settings.functionTimeoutSeconds} s): a slow batch can be received twice (Lambda refuses this; the stack uses 6 times the function timeout)`,
        );
      }
      queue = {
        mode: 'existing',
        queueUrl: settings.queueUrl,
        queueArn: described.queueArn,
        dlqUrl: env.DLQ_URL || described.dlqUrl,
        maxReceiveCount,
        fifo: described.fifo,
        visibilityTimeoutSeconds: described.visibilityTimeoutSeconds,
      };
    }

    let webhookUrl = settings.webhookUrl;
    const demoWebhook = webhookUrl === undefined;
    if (webhookUrl === undefined) {
      const demo = await startDemoWebhook(settings.demoWebhookPort, preliminary.headerPrefix, (request, reply) =>
        printDemoRequest(log, request, reply),
      );
      cleanups.push(() => demo.close());
      webhookUrl = demo.url;
      env.WEBHOOK_URL = demo.url;
    }

    // EMF lines are for CloudWatch; here they would bury the log. POWERTOOLS_METRICS_DISABLED=false brings them back.
    env.POWERTOOLS_METRICS_DISABLED ??= 'true';
    const serviceName = env.POWERTOOLS_SERVICE_NAME || DEFAULT_SERVICE_NAME;
    const namespace = env.POWERTOOLS_METRICS_NAMESPACE || DEFAULT_METRICS_NAMESPACE;
    const config = loadConfig(env);

    const sqs = new SQSClient(clientConfig(connection));
    cleanups.push(async () => sqs.destroy());
    const deadLettered = Array.from({ length: settings.pollers }, () => new Set<string>());
    const info: ReadyInfo = {
      ...queue,
      sqsEndpoint: connection.endpoint,
      region: connection.region,
      // A token in the webhook's query string stays out of the banner and the log.
      webhookUrl: redactUrl(webhookUrl),
      demoWebhook,
      pollers: settings.pollers,
      batchSize: settings.batchSize,
      functionTimeoutSeconds: settings.functionTimeoutSeconds,
    };
    if (log.format === 'pretty') log.text(formatBanner(info, io.styles));
    else log.line('INFO', 'Local relay ready', { ...info, sendCommand: sendCommand(info), awsCliCommand: awsCliCommand(info) });

    const healthUrl = settings.healthCheckUrl;
    const healthGate =
      healthUrl === undefined
        ? undefined
        : new HealthGate(healthUrl, settings.healthCheckIntervalSeconds * 1000, {
            unhealthy: (url) =>
              log.line('WARN', `Webhook health check failing (${redactUrl(url)}): polling paused`, { healthCheckUrl: redactUrl(url) }),
            healthy: (url) =>
              log.line('INFO', `Webhook health check passing (${redactUrl(url)}): polling`, { healthCheckUrl: redactUrl(url) }),
          });
    const mapping: EventSourceMapping = startEventSourceMapping({
      sqs,
      queueUrl: queue.queueUrl,
      queueArn: queue.queueArn,
      pollers: settings.pollers,
      batchSize: settings.batchSize,
      maxBatchingWindowMs: settings.maxBatchingWindowSeconds * 1000,
      functionTimeoutMs: settings.functionTimeoutSeconds * 1000,
      // The emulator's queue ends with this process: nothing to strand, and Ctrl-C stops at once.
      ...(queue.mode === 'existing' ? { waitTimeSeconds: STANDALONE_WAIT_TIME_SECONDS, finishReceivesOnStop: true } : {}),
      observer: mappingObserver(log, deadLettered, queue.visibilityTimeoutSeconds),
      beforeReceive: healthGate === undefined ? undefined : (signal) => healthGate.whenHealthy(signal),
      // One handler per poller: each poller is a warm container of its own, as concurrent Lambda invocations are.
      createHandler: (poller) =>
        createRelayHandler(config, {
          logger: new RelayLogger({ serviceName, logLevel: settings.logLevel as LogLevel }, log, (attributes) => {
            if (attributes.outcome === 'dead-lettered' && typeof attributes.messageId === 'string')
              deadLettered[poller]?.add(attributes.messageId);
          }),
          metrics: new Metrics({ namespace, serviceName }),
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
          await cleanUp();
          log.line('INFO', 'Stopped');
        })();
        return stopped;
      },
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}
