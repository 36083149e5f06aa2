/**
 * The daemon (`npm start` with `QUEUE_URL`): a standalone relay beside a worker, polling a queue
 * that already exists, on real SQS or another emulator. What Lambda's event source mapping knows
 * from its configuration is asked of the queue (`local/existing-queue.ts`); then the runner
 * (`local/runner.ts`) polls it.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { loadConfig } from '../lambda/config';
import { durationText } from '../lambda/duration-text';
import { backstopReceiveCount } from '../lambda/retry-window';
import { type Env, read } from '../lambda/env';
import { clientConfig, connectionFor, describeExistingQueue, type ExistingQueue } from './existing-queue';
import { type LocalRelay, prepareLocalStart, type RunnerIo, startRunner, withCleanup } from './runner';

/**
 * Starts the daemon on `QUEUE_URL`.
 * @param env the environment (`process.env`); only AWS_REGION may be written, see below
 * @throws a ConfigError or StartupError whose message is the line to print
 */
export async function startDaemon(io: RunnerIo, env: Env = process.env): Promise<LocalRelay> {
  const { functionEnv, settings, log, telemetry, preliminary } = prepareLocalStart(env, io);
  const { queueUrl, webhookUrl } = settings;
  // loadLocalSettings refuses QUEUE_URL without WEBHOOK_URL; bin/local.ts starts the sandbox without QUEUE_URL.
  if (queueUrl === undefined || webhookUrl === undefined) throw new Error('startDaemon needs QUEUE_URL and WEBHOOK_URL');
  const connection = connectionFor(queueUrl, env);
  const probe = new SQSClient(clientConfig(connection));
  let described: ExistingQueue;
  try {
    described = await describeExistingQueue(probe, queueUrl, undefined, io.startupStop);
  } finally {
    probe.destroy();
  }
  // The handler's Secrets Manager client is the SDK's default one, which finds its region only in
  // the environment: the queue's region (from its URL) is the best guess when none is set.
  if (!process.env.AWS_REGION) process.env.AWS_REGION = connection.region;

  let maxReceiveCount = described.maxReceiveCount;
  if (settings.maxReceiveCount !== undefined && maxReceiveCount !== undefined && settings.maxReceiveCount !== maxReceiveCount) {
    log.line(
      'WARN',
      `MAX_RECEIVE_COUNT is ${settings.maxReceiveCount} but the queue's redrive policy says ${maxReceiveCount}; SQS follows the policy`,
    );
  }
  maxReceiveCount ??= settings.maxReceiveCount;
  const windowSeconds = preliminary.retryWindowSeconds;
  const backstop = backstopReceiveCount(windowSeconds, described.visibilityTimeoutSeconds);
  if (windowSeconds > 0 && maxReceiveCount !== undefined && maxReceiveCount < backstop) {
    log.line(
      'WARN',
      `The queue's maxReceiveCount (${maxReceiveCount}) is small for a retry window of ${durationText(windowSeconds, 'hours')}: retries are spaced far apart to keep clear of it. Raise it to ${backstop}, or set RETRY_WINDOW_HOURS=0 for SQS's count semantics`,
    );
  }
  if (described.dlqProblem !== undefined) log.line('WARN', `No dead-letter queue: ${described.dlqProblem}`);
  if (described.visibilityTimeoutSeconds < settings.functionTimeoutSeconds + settings.maxBatchingWindowSeconds) {
    const window =
      settings.maxBatchingWindowSeconds > 0 ? ` plus MAX_BATCHING_WINDOW_SECONDS (${settings.maxBatchingWindowSeconds} s)` : '';
    log.line(
      'WARN',
      `The queue's visibility timeout (${described.visibilityTimeoutSeconds} s) is shorter than FUNCTION_TIMEOUT_SECONDS (${settings.functionTimeoutSeconds} s)${window}: a slow batch has its visibility extended as it is invoked, one more SQS call (the stack uses 6 times the function timeout plus the window)`,
    );
  }
  // DLQ_URL and MAX_RECEIVE_COUNT as set win; otherwise the queue's redrive policy fills them in.
  const dlqUrl = read(env, 'DLQ_URL') ?? described.dlqUrl;
  return withCleanup(async (_onClose, closeAll) => {
    const config = loadConfig({
      ...functionEnv,
      DLQ_URL: dlqUrl,
      WEBHOOK_URL: webhookUrl,
      MAX_RECEIVE_COUNT:
        settings.maxReceiveCount === undefined && maxReceiveCount !== undefined ? String(maxReceiveCount) : env.MAX_RECEIVE_COUNT,
    });
    return startRunner({
      config,
      settings,
      connection,
      queue: {
        mode: 'existing',
        queueUrl,
        queueArn: described.queueArn,
        dlqUrl,
        maxReceiveCount,
        fifo: described.fifo,
        visibilityTimeoutSeconds: described.visibilityTimeoutSeconds,
      },
      webhookUrl,
      demoWebhook: false,
      telemetry,
      log,
      styles: io.styles,
      close: closeAll,
    });
  });
}
