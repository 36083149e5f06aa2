/**
 * `npm start` as a user runs it, for the local-mode tests and the back-pressure bench: a child process on free ports whose
 * output is collected, whose "ready" line tells the queue URLs, and that is stopped with a signal.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';

/** The repository root (where `npm start` runs). */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Variables the parent's environment must not leak into the relay under test. */
const OWN_VARIABLES =
  /^(AWS_|POWERTOOLS_|WEBHOOK_URL$|QUEUE_URL$|QUEUE_NAME$|SQS_PORT$|DLQ_URL$|MAX_RECEIVE_COUNT$|BACKOFF|BATCH_|POLLERS$|FUNCTION_TIMEOUT|LOG_|HEADER_PREFIX$|DEMO_WEBHOOK_PORT$|NO_COLOR$|MAX_CONCURRENCY$|PACING$|MAX_REQUESTS_PER_SECOND$|CONCURRENT_INVOCATIONS$|RETRY_WINDOW_HOURS$|OUTAGE_|OAUTH_|CLIENT_CERTIFICATE_|CLIENT_KEY_FILE$|CA_CERTIFICATE_FILE$|HTTPS?_PROXY$|NO_PROXY$|https?_proxy$|no_proxy$)/;

/** A clean environment for a child: the parent's minus anything the relay reads, plus `env`. */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !OWN_VARIABLES.test(name)));
  return { ...base, SQS_PORT: '0', ...env };
}

/** The JSON "ready" line of the runner. */
export interface ReadyLine {
  readonly sqsEndpoint: string;
  readonly region: string;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  readonly webhookUrl: string;
  readonly maxReceiveCount: number;
  readonly sendCommand: string;
}

/** A relay started as a child process. */
export interface RelayProcess {
  readonly child: ChildProcess;
  /** Standard output and error so far, interleaved. */
  output(): string;
  /** Standard error so far. */
  errors(): string;
  /** Standard output's JSON lines so far. */
  jsonLines(): Record<string, unknown>[];
  /** Resolves once the output matches `pattern`; rejects if the process exits first. */
  waitForOutput(pattern: RegExp): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>;
}

/** Starts `node --import tsx bin/local.ts` (or `npm start`, with `viaNpm`) in its own process group. */
export function startRelayProcess(env: Record<string, string>, options: { viaNpm?: boolean } = {}): RelayProcess {
  const [command, args] =
    options.viaNpm === true ? ['npm', ['start', '--silent']] : [process.execPath, ['--import', 'tsx', 'bin/local.ts']];
  // Its own process group, so that stopping `npm start` reaches the relay under npm and tsx too.
  const child = spawn(command, args as string[], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let all = '';
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const changed = (): void => {
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    all += chunk.toString();
    changed();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    all += chunk.toString();
    changed();
  });
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string);
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    changed();
  });
  return {
    child,
    output: () => all,
    errors: () => stderr,
    jsonLines: () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    waitForOutput(pattern) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = all.match(pattern);
          if (match !== null) {
            listeners.delete(check);
            resolve(match);
          } else if (hasExited) {
            listeners.delete(check);
            reject(new Error(`the relay exited before printing ${pattern}; its output:\n${all}`));
          }
        };
        listeners.add(check);
        check();
      });
    },
    exited,
  };
}

/** Waits for the JSON "ready" line and returns it. */
export async function readyLine(relay: RelayProcess): Promise<ReadyLine> {
  await relay.waitForOutput(/"message":"Local relay ready"/);
  const line = relay.jsonLines().find((entry) => entry.message === 'Local relay ready');
  return line as unknown as ReadyLine;
}

/** Sends `signal` to the relay's process group and waits for it to exit. */
export async function stopRelay(relay: RelayProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string> {
  if (relay.child.exitCode === null && relay.child.signalCode === null && relay.child.pid !== undefined) {
    try {
      process.kill(-relay.child.pid, signal);
    } catch {
      // already gone
    }
  }
  return relay.exited;
}

/** A port nothing listens on (taken from the OS, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** A queue's visible, in-flight and delayed counts, as any SQS client reads them. */
export async function queueCounts(sqs: SQSClient, queueUrl: string): Promise<{ visible: number; inFlight: number; delayed: number }> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return {
    visible: Number(Attributes?.ApproximateNumberOfMessages),
    inFlight: Number(Attributes?.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(Attributes?.ApproximateNumberOfMessagesDelayed),
  };
}

/** Resolves when `predicate` holds, checking every 50 ms; the test's timeout bounds the wait. */
export async function until(predicate: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await predicate())) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** An SQS client for the emulator a relay's ready line names (its test credentials, the SDK's chatter silenced). */
export function sqsClientFor(ready: Pick<ReadyLine, 'sqsEndpoint' | 'region'>): SQSClient {
  return new SQSClient({
    endpoint: ready.sqsEndpoint,
    region: ready.region,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    logger: QUIET_SDK_LOGGER,
  });
}

/** A silent logger for SDK clients (the SDK warns when a QueueUrl's host differs from its endpoint). */
export const QUIET_SDK_LOGGER = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Sends `count` messages to `queueUrl` at once (batches of 10, 16 calls in flight), the i-th `bodyOf(i)`, with the string
 * attributes `attributesOf(i)` when given; returns their ids, in the order sent.
 */
export async function sendMessages(
  sqs: SQSClient,
  queueUrl: string,
  count: number,
  bodyOf = (index: number): string => `message ${index}`,
  attributesOf?: (index: number) => Readonly<Record<string, string>> | undefined,
): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const sender = async (): Promise<void> => {
    for (let start = next; start < count; start = next) {
      next += 10;
      const entries = Array.from({ length: Math.min(10, count - start) }, (_, i) => {
        const attributes = attributesOf?.(start + i);
        return {
          Id: `m${i}`,
          MessageBody: bodyOf(start + i),
          ...(attributes === undefined
            ? {}
            : {
                MessageAttributes: Object.fromEntries(
                  Object.entries(attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }]),
                ),
              }),
        };
      });
      const { Successful, Failed } = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
      if ((Failed ?? []).length > 0) throw new Error(`SendMessageBatch failed for ${Failed?.length} entries`);
      // In the order sent: a batch's entries by their position, the batches as they were sent.
      const byEntry = new Map((Successful ?? []).map((entry) => [entry.Id, entry.MessageId ?? '']));
      for (let i = 0; i < entries.length; i += 1) ids[start + i] = byEntry.get(`m${i}`) ?? '';
    }
  };
  await Promise.all(Array.from({ length: 16 }, sender));
  return ids;
}

/** Where `count` sent messages ended once settled: the DLQ's count and what is left on the main queue. */
export interface Settled {
  /** Every message delivered or dead-lettered and the main queue empty, before the deadline. */
  readonly settled: boolean;
  readonly deadLettered: number;
  /** Messages still on the main queue (visible, in flight or delayed). */
  readonly left: number;
}

/**
 * Waits until each of `count` messages is delivered (`delivered()` counts distinct ones) or
 * dead-lettered and the main queue is empty, checking every 250 ms, or until `deadline` (`Date.now()`).
 */
export async function settle(
  sqs: SQSClient,
  queues: { readonly queueUrl: string; readonly dlqUrl: string },
  count: number,
  delivered: () => number,
  deadline = Number.POSITIVE_INFINITY,
): Promise<Settled> {
  for (;;) {
    const main = await queueCounts(sqs, queues.queueUrl);
    const dlq = await queueCounts(sqs, queues.dlqUrl);
    const left = main.visible + main.inFlight + main.delayed;
    const settled = left === 0 && delivered() + dlq.visible === count;
    if (settled || Date.now() > deadline) return { settled, deadLettered: dlq.visible, left };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
