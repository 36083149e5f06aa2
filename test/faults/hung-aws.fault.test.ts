/**
 * Fault injection: AWS endpoints that accept connections and never answer.
 * The real handler, its own SDK clients (built from AWS_ENDPOINT_URL_*), fauxqs behind a proxy
 * that hangs chosen SQS actions, and a silent TCP endpoint standing in for Secrets Manager. Each
 * invocation must end before its deadline with every record it did not settle in
 * `batchItemFailures`; once the hang is over and the queue drained by the same handler, every
 * message is delivered exactly once or dead-lettered, nothing lost, nothing sent unsigned.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeEach, describe, expect, test } from 'vitest';
import type { RelayHandler } from '../../lambda/relay';
import { signatureHeadersOf } from '../../testkit/webhook';
import { emulatorForFile, secretsManagerForFile, sqsProxyForFile, webhookForFile } from '../support/fixtures';
import { acknowledge, capturedTelemetry, invoke, relayFor } from '../support/relay';
import { startSilentEndpoint } from '../support/silent-endpoint';

/** The function's timeout in these tests, and the margin kept for the SQS calls after the requests. */
const DEADLINE_MS = 2_000;
const MARGIN_MS = '800';
/** Longer than an invocation here, so that only a visibility change that was not made brings a record back. */
const QUEUE_VISIBILITY_SECONDS = 3;
const SECRET = `whsec_${Buffer.from('a signing key of thirty-two bytes').toString('base64')}`;
const SECRET_ID = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:hung-signing';

/** Bodies the webhook refuses with a 404 (a permanent failure). */
const refused = new Set<string>();
/** While true the webhook answers 500 to every body starting with "flaky". */
let flaky = true;
/** 2xx answers given, by body. */
const delivered = new Map<string, number>();

const emulator = await emulatorForFile({ visibilityTimeout: QUEUE_VISIBILITY_SECONDS });
const proxy = await sqsProxyForFile(emulator);
// The relay builds its own SQS client (with its timeouts) from the environment: through the proxy.
process.env.AWS_ENDPOINT_URL_SQS = proxy.endpoint;
const silent = await startSilentEndpoint();
afterAll(() => silent.close());
const secretsManager = await secretsManagerForFile();
const webhook = await webhookForFile((request) => {
  const body = request.body.toString();
  if (refused.has(body)) return { status: 404, body: 'no such tenant' };
  if (flaky && body.startsWith('flaky')) return { status: 500 };
  delivered.set(body, (delivered.get(body) ?? 0) + 1);
  return { status: 200 };
});
beforeEach(() => {
  refused.clear();
  delivered.clear();
  flaky = true;
});

/** Invokes with a {@link DEADLINE_MS} deadline; fails if the handler is still running well after it. */
async function invokeBounded(handler: RelayHandler, event: SQSEvent): Promise<{ response: SQSBatchResponse; elapsedMs: number }> {
  const startedAt = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the invocation was still running ${DEADLINE_MS + 3_000} ms in, its deadline at ${DEADLINE_MS} ms`)),
      DEADLINE_MS + 3_000,
    );
  });
  try {
    const response = await Promise.race([invoke(handler, event, DEADLINE_MS), overdue]);
    return { response, elapsedMs: Date.now() - startedAt };
  } finally {
    clearTimeout(timer);
  }
}

/** Sends `bodies` and receives them all as one event. */
async function batchOf(bodies: readonly string[]): Promise<SQSEvent> {
  for (const body of bodies) await emulator.send(body);
  const event = await emulator.receiveEvent(10);
  expect(event.Records.map((record) => record.body).sort()).toEqual([...bodies].sort());
  return event;
}

const idsOf = (event: SQSEvent, bodies: readonly string[]): string[] =>
  event.Records.filter((record) => bodies.includes(record.body))
    .map((record) => record.messageId)
    .sort();
const failedIds = (response: SQSBatchResponse): string[] => response.batchItemFailures.map((failure) => failure.itemIdentifier).sort();

/** What the event source does after the hang: receive, invoke (with time to spare), delete what was acknowledged, until the queue is empty. */
async function drain(handler: RelayHandler): Promise<void> {
  const giveUpAt = Date.now() + 15_000;
  for (;;) {
    const { ready, inflight, delayed } = emulator.counts(emulator.queue);
    if (ready + inflight + delayed === 0) return;
    if (Date.now() > giveUpAt) throw new Error(`queue not drained: ${JSON.stringify({ ready, inflight, delayed })}`);
    const event = await emulator.receiveEvent(10, 1);
    if (event.Records.length === 0) continue;
    const response = await invoke(handler, event, 10_000);
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
  }
}

/** The bodies in the DLQ (received, then left there: their visibility runs out long after the test). */
async function deadLettered(): Promise<string[]> {
  return (await emulator.receive(emulator.dlq, 10)).map((message) => message.Body ?? '').sort();
}

describe('SQS accepts and never answers', () => {
  test('ChangeMessageVisibilityBatch hangs: the invocation ends before its deadline, delivered records acknowledged, the others failed', async () => {
    const event = await batchOf(['ok-1', 'ok-2', 'flaky-1', 'flaky-2']);
    proxy.hung.add('ChangeMessageVisibilityBatch');
    const telemetry = capturedTelemetry();
    // Retries with delay 0: had the visibility change been made, they would be back at once.
    const handler = relayFor(
      { WEBHOOK_URL: webhook.url, DEADLINE_MARGIN_MS: MARGIN_MS, BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '0' },
      telemetry,
    );
    const { response, elapsedMs } = await invokeBounded(handler, event);
    expect(elapsedMs).toBeLessThan(DEADLINE_MS);
    expect(proxy.hangs.get('ChangeMessageVisibilityBatch')).toBeGreaterThan(0);
    expect(failedIds(response)).toEqual(idsOf(event, ['flaky-1', 'flaky-2']));
    // One line for the batch, naming how many changes failed.
    expect(telemetry.lines.filter((line) => line.level === 'ERROR')).toEqual([
      expect.objectContaining({ failed: 2, error: expect.stringContaining('ChangeMessageVisibilityBatch abandoned') }),
    ]);
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    // The change never reached SQS: the two keep the queue's default visibility and come back after it.
    expect(emulator.counts(emulator.queue)).toMatchObject({ ready: 0, inflight: 2 });

    proxy.hung.clear();
    flaky = false;
    await drain(handler);
    expect(Object.fromEntries(delivered)).toEqual({ 'ok-1': 1, 'ok-2': 1, 'flaky-1': 1, 'flaky-2': 1 });
    expect(emulator.counts(emulator.dlq).ready).toBe(0);
  });

  test('GetQueueUrl hangs: the dead-letter copy and the visibility change are abandoned in time; the refused record is retried, then dead-lettered once', async () => {
    const event = await batchOf(['ok-1', 'refused-1']);
    refused.add('refused-1');
    proxy.hung.add('GetQueueUrl');
    const handler = relayFor({ WEBHOOK_URL: webhook.url, DEADLINE_MARGIN_MS: MARGIN_MS, BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '0' });
    const { response, elapsedMs } = await invokeBounded(handler, event);
    expect(elapsedMs).toBeLessThan(DEADLINE_MS);
    // Once for the DLQ's discovery (during the requests), once for the visibility change (in the margin).
    expect(proxy.hangs.get('GetQueueUrl')).toBeGreaterThanOrEqual(2);
    expect(failedIds(response)).toEqual(idsOf(event, ['refused-1']));
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    expect(emulator.counts(emulator.dlq).ready).toBe(0);

    proxy.hung.clear();
    await drain(handler);
    expect(Object.fromEntries(delivered)).toEqual({ 'ok-1': 1 });
    expect(await deadLettered()).toEqual(['refused-1']);
  });

  test('the DLQ SendMessage hangs: the copy is abandoned before the margin, the original retried, never acknowledged without its copy', async () => {
    const event = await batchOf(['ok-1', 'refused-1', 'ok-2']);
    refused.add('refused-1');
    proxy.hung.add('SendMessage');
    const handler = relayFor({ WEBHOOK_URL: webhook.url, DEADLINE_MARGIN_MS: MARGIN_MS, BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '0' });
    const { response, elapsedMs } = await invokeBounded(handler, event);
    expect(elapsedMs).toBeLessThan(DEADLINE_MS);
    expect(proxy.hangs.get('SendMessage')).toBe(1);
    expect(failedIds(response)).toEqual(idsOf(event, ['refused-1']));
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    // The copy was abandoned within the requests' time, so the margin was left for the visibility change: back at once.
    expect(proxy.counts().ChangeMessageVisibilityBatch).toBe(1);
    expect(emulator.counts(emulator.dlq).ready).toBe(0);

    proxy.hung.clear();
    await drain(handler);
    expect(Object.fromEntries(delivered)).toEqual({ 'ok-1': 1, 'ok-2': 1 });
    expect(await deadLettered()).toEqual(['refused-1']);
  });

  test('SQS takes the DLQ copy but its answer never comes: the original is retried all the same, so the DLQ ends with two copies, never none', async () => {
    const event = await batchOf(['refused-1']);
    refused.add('refused-1');
    proxy.answersWithheld.add('SendMessage');
    const handler = relayFor({ WEBHOOK_URL: webhook.url, DEADLINE_MARGIN_MS: MARGIN_MS, BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '0' });
    const { response, elapsedMs } = await invokeBounded(handler, event);
    expect(elapsedMs).toBeLessThan(DEADLINE_MS);
    expect(failedIds(response)).toEqual(idsOf(event, ['refused-1']));
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);

    proxy.answersWithheld.clear();
    await drain(handler);
    expect(await deadLettered()).toEqual(['refused-1', 'refused-1']);
    expect(delivered.size).toBe(0);
  });
});

describe('Secrets Manager accepts and never answers', () => {
  test('the invocation ends before its deadline with every record failed and none sent; the next one does not wait again; a new container delivers them signed', async () => {
    process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = silent.endpoint;
    const telemetry = capturedTelemetry();
    const env = {
      WEBHOOK_URL: webhook.url,
      SIGNING_SECRET_ARN: SECRET_ID,
      DEADLINE_MARGIN_MS: MARGIN_MS,
      BACKOFF: 'fixed',
      BACKOFF_BASE_SECONDS: '0',
    };
    const hung = relayFor(env, telemetry);
    const bodies = ['ok-1', 'ok-2', 'ok-3'];
    const event = await batchOf(bodies);
    const connectionsBefore = silent.connections.count;
    const { response, elapsedMs } = await invokeBounded(hung, event);
    expect(elapsedMs).toBeLessThan(DEADLINE_MS);
    expect(silent.connections.count).toBeGreaterThan(connectionsBefore);
    expect(failedIds(response)).toEqual(idsOf(event, bodies));
    expect(webhook.requests).toHaveLength(0); // nothing went out unsigned
    expect(telemetry.lines.find((line) => line.level === 'ERROR')).toMatchObject({
      secret: SECRET_ID,
      error: expect.stringContaining('GetSecretValue abandoned'),
    });
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);

    // Handed back at once (delay 0); the secret's read is now waited out rather than tried again.
    const again = await emulator.receiveEvent(10, 2);
    expect(again.Records).toHaveLength(3);
    const connectionsAfterFirst = silent.connections.count;
    const second = await invokeBounded(hung, again);
    expect(second.elapsedMs).toBeLessThan(1_000); // it did not wait for Secrets Manager a second time
    expect(failedIds(second.response)).toEqual(idsOf(again, bodies));
    expect(silent.connections.count).toBe(connectionsAfterFirst);
    expect(webhook.requests).toHaveLength(0);
    await acknowledge(emulator.sqs, emulator.queue.url, again, second.response);

    // The hang over: a new container, its Secrets Manager answering, drains the queue, every request signed.
    secretsManager.secrets.set(SECRET_ID, SECRET);
    process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = secretsManager.endpoint;
    await drain(relayFor(env));
    expect(Object.fromEntries(delivered)).toEqual({ 'ok-1': 1, 'ok-2': 1, 'ok-3': 1 });
    const verifier = new Webhook(SECRET);
    for (const request of webhook.requests) {
      expect(() => verifier.verify(request.body.toString(), signatureHeadersOf(request), { jsonParse: false })).not.toThrow();
    }
  });
});
