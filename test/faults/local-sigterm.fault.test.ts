/**
 * Local mode stopped as a container runtime or a process manager stops it: `SIGTERM` to the one
 * process it started (npm's, npx's), not to the whole process group as a terminal's Ctrl-C does.
 * The batch in flight is finished and acknowledged, the exit is clean, nothing is left running
 * (holding the emulator's port and polling), and a stop strands no message in flight.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, test } from 'vitest';
import { childEnv, closedPort, ROOT, sqsClientFor, until } from '../../testkit/relay-process';
import { emulatorForTest, webhookForTest } from '../support/fixtures';
import { startSilentEndpoint } from '../support/silent-endpoint';

/** A launcher (npm, npx, node) in a process group of its own, so the test can always clean up. */
interface Launched {
  readonly child: ChildProcess;
  readonly pid: number;
  output(): string;
  /** The launcher's exit: code, or signal name. */
  readonly exited: Promise<number | string>;
  /** Every writer of the output pipes is gone (the relay under the launcher included). */
  readonly drained: Promise<void>;
}

const launched: Launched[] = [];
afterEach(() => {
  for (const { pid } of launched.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // the group is gone: what the tests want
    }
  }
});

function launch(command: string, args: string[], env: Record<string, string>): Launched {
  const child = spawn(command, args, { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const entry: Launched = {
    child,
    pid: child.pid as number,
    output: () => output,
    exited: once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string),
    drained: Promise.all([once(child.stdout!, 'close'), once(child.stderr!, 'close')]).then(() => undefined),
  };
  launched.push(entry);
  return entry;
}

/** Resolves once `predicate` holds or `ms` have passed, whichever comes first. */
async function within(ms: number, predicate: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end && !(await predicate())) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** True while any process of the group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** True when nothing listens on 127.0.0.1:`port` (a server can take it). */
async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function jsonLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function readyOf(relay: Launched): Promise<{ queueUrl: string; sqsEndpoint: string; region: string }> {
  await until(() => relay.output().includes('"message":"Local relay ready"') || relay.child.exitCode !== null);
  const ready = jsonLines(relay.output()).find((line) => line.message === 'Local relay ready');
  if (ready === undefined) throw new Error(`the relay did not start:\n${relay.output()}`);
  return ready as unknown as { queueUrl: string; sqsEndpoint: string; region: string };
}

/**
 * A standalone relay (`QUEUE_URL`, the queue outliving it, its visibility timeout 600 s) on an
 * emulator, delivering to a test webhook, ready and with its first long poll under way.
 */
async function standaloneRelayPolling() {
  const emulator = await emulatorForTest({ keepEnvironment: true, visibilityTimeout: 600 });
  const webhook = await webhookForTest();
  const relay = launch(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
    QUEUE_URL: emulator.queue.url,
    AWS_ENDPOINT_URL_SQS: emulator.endpoint,
    WEBHOOK_URL: webhook.url,
    LOG_FORMAT: 'json',
  });
  await readyOf(relay);
  // The first long poll is under way once the relay is ready; let it reach the emulator.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return { emulator, webhook, relay };
}

/**
 * Starts the relay with `command`, puts a message in flight (the webhook holds it), sends SIGTERM
 * to the launcher's process only, and checks what a container or process manager would see.
 */
async function stopWithSigtermToLauncher(command: string, args: string[]): Promise<{ relay: Launched; exit: number | string; id: string }> {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const webhook = await webhookForTest(async () => {
    await held;
    return { status: 200 };
  });
  const port = await closedPort();
  const relay = launch(command, args, { WEBHOOK_URL: webhook.url, SQS_PORT: String(port), LOG_FORMAT: 'json', LOG_LEVEL: 'DEBUG' });
  const ready = await readyOf(relay);
  const sqs = sqsClientFor(ready);
  const { MessageId } = await sqs.send(new SendMessageCommand({ QueueUrl: ready.queueUrl, MessageBody: '{"order":1}' }));
  sqs.destroy();
  await until(() => webhook.requests.length === 1);

  // What `docker stop`, systemd (KillMode=mixed) or a process manager does: the launcher alone.
  process.kill(relay.pid, 'SIGTERM');
  // The batch in flight is answered only after the stop was requested.
  setTimeout(release, 500);
  const exit = await relay.exited;
  // The relay's tooling (esbuild's service) goes with it; give it a bounded moment.
  await Promise.race([relay.drained, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  await within(5_000, async () => !groupAlive(relay.pid) && (await portFree(port)));
  expect(groupAlive(relay.pid), `processes left running:\n${relay.output()}`).toBe(false);
  expect(await portFree(port)).toBe(true);

  expect(webhook.requests).toHaveLength(1);
  const lines = jsonLines(relay.output());
  const delivered = lines.findIndex((line) => line.message === 'Message delivered' && line.messageId === MessageId);
  const stopped = lines.findIndex((line) => line.message === 'Stopped');
  expect(delivered).toBeGreaterThanOrEqual(0);
  expect(stopped).toBeGreaterThan(delivered);
  return { relay, exit, id: MessageId ?? '' };
}

describe('SIGTERM to the launcher only', () => {
  test('npm start: the batch in flight is delivered and deleted, npm exits 0, no process is left and the port is free', async () => {
    const { exit } = await stopWithSigtermToLauncher('npm', ['start', '--silent']);
    expect(exit).toBe(0);
  }, 30_000);

  test('node --import tsx bin/local.ts (the container command): the same', async () => {
    const { exit } = await stopWithSigtermToLauncher(process.execPath, ['--import', 'tsx', 'bin/local.ts']);
    expect(exit).toBe(0);
  }, 30_000);
});

describe('a stop strands no message', () => {
  test('a message a pending long poll receives after the stop is handed back at once, not after the visibility timeout', async () => {
    const { emulator, webhook, relay } = await standaloneRelayPolling();

    process.kill(relay.pid, 'SIGTERM');
    // Once it says so, the relay has stopped polling; its long poll is still pending.
    await until(() => relay.output().includes('"message":"Stopping"') || relay.child.exitCode !== null);
    await emulator.send('{"sent":"just after the stop"}');
    const exit = await relay.exited;

    expect(exit).toBe(0);
    expect(webhook.requests).toHaveLength(0);
    // Visible again now, not in 600 s: the next consumer gets it at once.
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 1, inflight: 0, delayed: 0 });
    expect(
      jsonLines(relay.output()).some((line) => line.message === 'Handed 1 message(s) received during shutdown back to the queue'),
    ).toBe(true);
  }, 30_000);
});

describe('a relay frozen and thawed (SIGSTOP, SIGCONT)', () => {
  test('what its pending long poll received while frozen is relayed at once after, not given up and left for the visibility timeout', async () => {
    const { emulator, webhook, relay } = await standaloneRelayPolling();

    process.kill(relay.pid, 'SIGSTOP');
    try {
      await emulator.send('{"sent":"while frozen"}');
      // Longer than the daemon's 5 s long poll and the 2 s a receive may overstay it: its timer fires late on SIGCONT.
      await new Promise((resolve) => setTimeout(resolve, 9_000));
    } finally {
      process.kill(relay.pid, 'SIGCONT');
    }
    await within(5_000, async () => webhook.requests.length > 0);
    expect(webhook.requests).toHaveLength(1);
    await within(2_000, async () => emulator.counts(emulator.queue).inflight === 0);
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
    process.kill(relay.pid, 'SIGTERM');
    expect(await relay.exited).toBe(0);
  }, 40_000);
});

describe('a stop while the daemon starts', () => {
  test('at an SQS that takes the start-up call and never answers, the stop ends the start at once, as asked: exit 0', async () => {
    const silent = await startSilentEndpoint();
    try {
      const relay = launch(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
        QUEUE_URL: `${silent.endpoint}/000000000000/orders`,
        AWS_ENDPOINT_URL_SQS: silent.endpoint,
        AWS_REGION: 'us-east-1',
        WEBHOOK_URL: 'http://127.0.0.1:9/webhook',
      });
      await within(10_000, async () => silent.connections.count > 0);
      expect(silent.connections.count).toBeGreaterThan(0);
      process.kill(relay.pid, 'SIGINT');
      // Without the stop passed to the start-up calls, this was exit 1 with "no answer from SQS" once their 10 s were up.
      expect(await relay.exited).toBe(0);
      expect(relay.output()).toContain('stopped while starting, before polling began');
      expect(relay.output()).not.toContain('no answer from SQS');
    } finally {
      await silent.close();
    }
  }, 30_000);
});
