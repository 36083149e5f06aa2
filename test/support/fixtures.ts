/**
 * The test parts' set-up in one place, so a test file states only what differs: the options.
 * `…ForFile`: awaited at a file's top level; the part serves every test of the file, is put back as
 * started after each test (a test's leftovers must not decide the next one's outcome), and is stopped
 * after the last. `…ForTest`: called in a test; the part is stopped once that test ends, passed or failed.
 * A test that runs concurrently with others passes its own context to a `…ForTest` part (see {@link RunningTest}).
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, onTestFinished, type TestContext } from 'vitest';
import { type Emulator, type EmulatorOptions, startEmulator } from '../../testkit/emulator';
import { type ReadyLine, readyLine, type RelayProcess, sqsClientFor, startRelayProcess, stopRelay } from '../../testkit/relay-process';
import { type FakeSecretsManager, startSecretsManager } from '../../testkit/secrets-manager';
import { type SqsProxy, type SqsProxyOptions, startSqsProxy } from '../../testkit/sqs-proxy';
import { type Responder, startWebhook, type TestWebhook } from '../../testkit/webhook';

/** The file's SQS emulator (see `startEmulator`), its queues emptied after each test. */
export async function emulatorForFile(options?: EmulatorOptions): Promise<Emulator> {
  const emulator = await startEmulator(options);
  afterAll(() => emulator.stop());
  afterEach(() => emulator.server.reset());
  return emulator;
}

/** The file's webhook (see `startWebhook`); after each test it forgets its requests and answers with `responder` again. */
export async function webhookForFile(responder?: Responder): Promise<TestWebhook> {
  const webhook = await startWebhook(responder);
  afterAll(() => webhook.close());
  afterEach(() => webhook.reset());
  return webhook;
}

/** The file's stand-in Secrets Manager, failing and slowness switched off after each test (the secrets stay). */
export async function secretsManagerForFile(): Promise<FakeSecretsManager> {
  const secretsManager = await startSecretsManager();
  afterAll(() => secretsManager.close());
  afterEach(() => {
    secretsManager.failing = false;
    secretsManager.delayMs = 0;
  });
  return secretsManager;
}

/** The file's proxy in front of `emulator`; after each test it refuses and hangs nothing, holds no call, and its counts start again. */
export async function sqsProxyForFile(emulator: Emulator, options?: SqsProxyOptions): Promise<SqsProxy> {
  const proxy = await startSqsProxy(emulator.endpoint, emulator.region, options);
  afterAll(() => proxy.close());
  afterEach(() => {
    proxy.refused.clear();
    proxy.hung.clear();
    proxy.answersWithheld.clear();
    proxy.releaseHung();
    proxy.refusals.clear();
    proxy.reset();
  });
  return proxy;
}

/**
 * The test a `…ForTest` part belongs to: where it registers its stop. Concurrent tests (`test.concurrent`,
 * `describe.concurrent`) pass their own context (`async ({ onTestFinished }) => …`): the global `onTestFinished` knows only
 * the test that started last, which, once two tests await at once, may be the other one.
 */
export type RunningTest = Pick<TestContext, 'onTestFinished'>;

/** The running test as the global hook sees it: right for tests that run one at a time. */
const CURRENT_TEST: RunningTest = { onTestFinished: (handler, timeout) => onTestFinished(handler, timeout) };

/** An emulator for the running test. */
export async function emulatorForTest(options?: EmulatorOptions, running: RunningTest = CURRENT_TEST): Promise<Emulator> {
  const emulator = await startEmulator(options);
  running.onTestFinished(() => emulator.stop());
  return emulator;
}

/** A webhook for the running test. */
export async function webhookForTest(responder?: Responder, running: RunningTest = CURRENT_TEST): Promise<TestWebhook> {
  const webhook = await startWebhook(responder);
  running.onTestFinished(() => webhook.close());
  return webhook;
}

/** A relay run as `npm start` runs it, once ready: the process, its ready line, and an SQS client for its emulator. */
export interface LocalRelay {
  readonly relay: RelayProcess;
  readonly ready: ReadyLine;
  readonly sqs: SQSClient;
}

/** Starts the relay with `env` for the running test and waits until it is ready; killed (SIGKILL) once the test ends if still running. */
export async function localRelayForTest(env: Record<string, string>, running: RunningTest = CURRENT_TEST): Promise<LocalRelay> {
  const relay = startRelayProcess(env);
  running.onTestFinished(async () => {
    await stopRelay(relay, 'SIGKILL');
  });
  const ready = await readyLine(relay);
  const sqs = sqsClientFor(ready);
  running.onTestFinished(() => sqs.destroy());
  return { relay, ready, sqs };
}
