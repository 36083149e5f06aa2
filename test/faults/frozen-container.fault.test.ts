/**
 * Fault: a warm container frozen between two invocations while the network drops its idle
 * kept-alive connections to the webhook.
 *
 * The deployable bundle runs in a plain `node` child process (as Lambda's runtime would), and is
 * frozen with SIGSTOP and thawed with SIGCONT between two invocations, as Lambda freezes an
 * execution environment between invocations. The webhook sits behind a TCP relay that acts like
 * a NAT gateway or load balancer dropping idle connections: a connection idle longer than
 * {@link FORGET_AFTER_MS} is forgotten, and the next packet on it is answered with a reset (RST),
 * without the webhook ever seeing the request. (A server that closes idle connections with a FIN
 * does not make the relay fail: the thawed process reads the FIN before the next invocation
 * arrives, and node:http drops the connection from its pool. The silent drop is the one that
 * bites, and what AWS NAT gateways do after 350 s.)
 *
 * What the operator must see: every record delivered exactly once, none in `batchItemFailures`,
 * nothing left on the queue or in the DLQ, and no breaker WARN in the function's logs.
 */
import { createServer as createTcpServer, connect, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { rmSync } from 'node:fs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deployedEnvironment, startTemplateEmulator } from '../../testkit/deployed';
import type { Emulator } from '../../testkit/emulator';
import { acknowledge, sleep } from '../support/relay';
import { type FakeSecretsManager, startSecretsManager } from '../../testkit/secrets-manager';
import { type LoadedBundle, startBundle, type SynthesizedBundle, synthesizeBundle, templateQueues } from '../../testkit/synth';
import { startWebhook, type TestWebhook } from '../../testkit/webhook';

/** Idle time after which the relay in front of the webhook forgets a connection. */
const FORGET_AFTER_MS = 300;
/** Records per invocation: the template's MAX_CONCURRENCY, so every pooled connection is in use. */
const RECORDS = 10;
const SIGNING_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:RelaySigningSecret-AbCdEf';
const SIGNING_KEY = 'Zx8kQ2mN4pR6sT8vW0yA2cE4gI6kM8oQ0sU2wY4aC6eG8iK0';

/** A TCP relay to `target` that forgets connections idle over `forgetAfterMs` and resets them on their next packet. */
interface ForgetfulRelay {
  readonly url: string;
  /** Connections reset because they had been forgotten. */
  resets: number;
  close(): Promise<void>;
}

async function startForgetfulRelay(target: URL, forgetAfterMs: number): Promise<ForgetfulRelay> {
  const sockets = new Set<Socket>();
  const state = { resets: 0 };
  const server: TcpServer = createTcpServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    let lastActive = performance.now();
    client.on('data', (chunk: Buffer) => {
      if (performance.now() - lastActive > forgetAfterMs) {
        state.resets += 1;
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      lastActive = performance.now();
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      lastActive = performance.now();
      client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

let bundle: SynthesizedBundle;
let emulator: Emulator;
let secretsManager: FakeSecretsManager;
let webhook: TestWebhook;
let network: ForgetfulRelay;
let environment: Record<string, string>;
/** The function's process of the test running: each test gets a cold start of its own. */
let relay: LoadedBundle;

beforeAll(async () => {
  bundle = await synthesizeBundle();
  const queues = templateQueues(bundle.template);
  emulator = await startTemplateEmulator(queues);
  secretsManager = await startSecretsManager();
  secretsManager.secrets.set(SIGNING_SECRET_ARN, SIGNING_KEY);
  webhook = await startWebhook();
  network = await startForgetfulRelay(new URL(webhook.url), FORGET_AFTER_MS);
  environment = deployedEnvironment(bundle, queues, emulator, SIGNING_SECRET_ARN, {
    WEBHOOK_URL: network.url,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager.endpoint,
  });
  expect(environment.MAX_CONCURRENCY).toBe(String(RECORDS));
}, 120_000);

beforeEach(async () => {
  relay = await startBundle(bundle, { environment, aws: { endpoint: emulator.endpoint, region: emulator.region } });
});

afterEach(async () => {
  process.kill(relay.pid, 'SIGCONT'); // never leave a stopped process behind, whatever failed
  await relay.stop();
});

afterAll(async () => {
  await network?.close();
  await webhook?.close();
  await secretsManager?.close();
  await emulator?.stop();
  if (bundle !== undefined) rmSync(bundle.assemblyDir, { recursive: true, force: true });
});

/** Sends `bodies` to the queue and receives them as one event, as the event source would. */
async function batchOf(bodies: readonly string[]): Promise<SQSEvent> {
  for (const body of bodies) await emulator.send(body);
  const records: SQSEvent['Records'] = [];
  while (records.length < bodies.length) records.push(...(await emulator.receiveEvent(bodies.length - records.length, 1)).Records);
  return { Records: records };
}

/** Invokes the function with `bodies` and acknowledges what it reports done, as Lambda would. */
async function invokeWith(bodies: readonly string[]): Promise<SQSBatchResponse> {
  const event = await batchOf(bodies);
  const outcome = await relay.invoke(event, 10_000);
  if (!outcome.ok) throw new Error(`the invocation failed: ${outcome.error}`);
  const response = outcome.response ?? { batchItemFailures: [] };
  await acknowledge(emulator.sqs, emulator.queue.url, event, response);
  return response;
}

/** Freezes the function's process for `ms`, as Lambda does between invocations. */
async function freezeFor(ms: number): Promise<void> {
  process.kill(relay.pid, 'SIGSTOP');
  try {
    await sleep(ms);
  } finally {
    process.kill(relay.pid, 'SIGCONT');
  }
}

/** The function's log lines at WARN or above. */
function warnings(): Record<string, unknown>[] {
  return relay.jsonLogs().filter((line) => line.level === 'WARN' || line.level === 'ERROR' || line.level === 'CRITICAL');
}

/** Runs one invocation, a freeze of `frozenMs`, and another; returns the relay's resets during the second. */
async function acrossAFreeze(name: string, frozenMs: number): Promise<{ resets: number }> {
  const before = Array.from({ length: RECORDS }, (_, i) => `${name} before ${i}`);
  const after = Array.from({ length: RECORDS }, (_, i) => `${name} after ${i}`);
  expect(await invokeWith(before)).toEqual({ batchItemFailures: [] });
  await freezeFor(frozenMs);
  const resetsBefore = network.resets;
  const response = await invokeWith(after);
  const resets = network.resets - resetsBefore;

  expect(response).toEqual({ batchItemFailures: [] });
  // Exactly once: a request reset by the network never reached the webhook, its retry did.
  const seen = webhook.requests.map((request) => request.body.toString()).filter((body) => body.startsWith(`${name} `));
  expect(seen.sort()).toEqual([...before, ...after].sort());
  expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  expect(warnings()).toEqual([]); // no breaker WARN, no record given up
  return { resets };
}

describe('a warm container frozen between invocations, its idle webhook connections dropped meanwhile', () => {
  it('frozen for less than the idle bound: the connections are reused, reset, and every request sent again on a new one', async () => {
    const { resets } = await acrossAFreeze('short', 3 * FORGET_AFTER_MS);
    expect(resets).toBeGreaterThan(0); // the race did happen: dropped connections were reused
  });

  it('frozen for longer than the idle bound (4 s): no idle connection is reused at all', async () => {
    const { resets } = await acrossAFreeze('long', 4_500);
    expect(resets).toBe(0);
  });
});
