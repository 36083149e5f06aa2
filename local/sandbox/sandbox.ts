/**
 * The development sandbox (`npm start` without `QUEUE_URL`): an SQS emulator in this process
 * holds the queue, its DLQ and the redrive policy (no AWS account needed), and without
 * `WEBHOOK_URL` a demo webhook prints what arrives. Then the runner (`local/runner.ts`) polls it.
 */
import { loadConfig, type RelayConfig } from '../../lambda/config';
import { backstopReceiveCount } from '../../lambda/retry-window';
import { type Env, read } from '../../lambda/env';
import type { DemoReply, DemoRequest } from './demo-webhook';
import { startDemoWebhook } from './demo-webhook';
import { EMULATOR_CREDENTIALS } from '../existing-queue';
import { startEmbeddedSqs } from './emulator';
import { type LocalLog, terminalSafe } from '../log';
import { visibilityTimeoutSecondsFor } from '../../lambda/aws-limits';
import { FUNCTION_SETTINGS } from '../../lambda/settings';
import { type LocalRelay, prepareLocalStart, type RunnerIo, startRunner, withCleanup } from '../runner';
import type { LocalSettings } from '../settings';

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
  // What arrives is anyone's text (a producer's body and attributes, any client on this machine):
  // nothing in it may steer the terminal (terminalSafe).
  const body = terminalSafe(
    request.body.length > DEMO_BODY_PRINT_LIMIT
      ? `${request.body.slice(0, DEMO_BODY_PRINT_LIMIT)}… (${request.body.length} characters)`
      : request.body,
    { multiline: true },
  );
  const lines = [
    log.styles.bold(
      `▶ webhook got ${terminalSafe(request.method)} ${terminalSafe(request.path)}, answered ${reply.status}${reply.headers['Retry-After'] === undefined ? '' : ` with Retry-After: ${reply.headers['Retry-After']}`}`,
    ),
    ...printable.map(([name, value]) => `    ${terminalSafe(name)}: ${terminalSafe(value)}`),
    '',
    ...body.split('\n').map((line) => `    ${line}`),
  ];
  log.line('INFO', 'Demo webhook received a request', {}, lines.join('\n'));
}

/**
 * The webhook to relay to: `WEBHOOK_URL`, or else a demo webhook started here that prints what it
 * gets. The sandbox's only: it answers 200 to everything, so a real queue relayed into it would be emptied.
 */
async function webhookFor(
  settings: LocalSettings,
  preliminary: RelayConfig,
  log: LocalLog,
  onClose: (close: () => Promise<void>) => void,
): Promise<{ webhookUrl: string; demoWebhook: boolean }> {
  if (settings.webhookUrl !== undefined) return { webhookUrl: settings.webhookUrl, demoWebhook: false };
  const demo = await startDemoWebhook(settings.demoWebhookPort, preliminary.headerPrefix, (request, reply) =>
    printDemoRequest(log, request, reply),
  );
  onClose(() => demo.close());
  return { webhookUrl: demo.url, demoWebhook: true };
}

/**
 * Starts the sandbox: the emulator, the demo webhook unless `WEBHOOK_URL` is set, then the runner.
 * @param env the environment, read and never written (`process.env`)
 * @throws a ConfigError, StartupError or port-in-use error whose message is the line to print
 */
export async function startSandbox(io: RunnerIo, env: Env = process.env): Promise<LocalRelay> {
  const { functionEnv, settings, log, telemetry, preliminary } = prepareLocalStart(env, io);
  return withCleanup(async (onClose, closeAll) => {
    const visibilityTimeoutSeconds = visibilityTimeoutSecondsFor(settings.functionTimeoutSeconds, settings.maxBatchingWindowSeconds);
    // As the stack does: a backstop derived from the retry window, or SQS's count when the window is off.
    // MAX_RECEIVE_COUNT alone asks for SQS's count semantics, as `maxReceiveCount` does in the stack.
    const countOnly = settings.maxReceiveCount !== undefined && read(functionEnv, 'RETRY_WINDOW_HOURS') === undefined;
    const windowSeconds = countOnly ? 0 : preliminary.retryWindowSeconds;
    const maxReceiveCount =
      settings.maxReceiveCount ??
      (windowSeconds > 0 ? backstopReceiveCount(windowSeconds, visibilityTimeoutSeconds) : FUNCTION_SETTINGS.MAX_RECEIVE_COUNT.default);
    const emulator = await startEmbeddedSqs({
      port: settings.sqsPort,
      queueName: settings.queueName,
      maxReceiveCount,
      visibilityTimeoutSeconds,
    });
    onClose(() => emulator.stop());

    const { webhookUrl, demoWebhook } = await webhookFor(settings, preliminary, log, onClose);

    // The handler's view of the sandbox: the emulator's DLQ and receive count, the demo's URL.
    const config = loadConfig({
      ...functionEnv,
      DLQ_URL: emulator.dlq.url,
      MAX_RECEIVE_COUNT: String(maxReceiveCount),
      RETRY_WINDOW_HOURS: String(windowSeconds / 3600),
      WEBHOOK_URL: webhookUrl,
    });
    return startRunner({
      config,
      settings,
      // The emulator is the only SQS this process talks to; a developer's real credentials stay out of it.
      connection: { endpoint: emulator.endpoint, region: emulator.region, credentials: EMULATOR_CREDENTIALS },
      queue: {
        mode: 'embedded',
        queueUrl: emulator.queue.url,
        queueArn: emulator.queue.arn,
        dlqUrl: emulator.dlq.url,
        maxReceiveCount,
        fifo: emulator.fifo,
        visibilityTimeoutSeconds,
      },
      webhookUrl,
      demoWebhook,
      telemetry,
      log,
      styles: io.styles,
      close: closeAll,
    });
  });
}
