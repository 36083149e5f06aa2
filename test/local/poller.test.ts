/**
 * The event source mapping of local mode against the embedded emulator, with stand-in handlers:
 * what gets deleted, what stays in flight, what a failed invocation does, and how stop() waits
 * for the batch in flight. (The real handler runs in runner.e2e.test.ts.)
 */
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { RECEIVE_ANSWER_SLACK_MS } from '../../local/answer-timeout';
import { EMULATOR_CREDENTIALS } from '../../local/existing-queue';
import { type EmbeddedSqs, startEmbeddedSqs } from '../../local/sandbox/emulator';
import { startSqsProxy } from '../../testkit/sqs-proxy';
import {
  type EventSourceMapping,
  type EventSourceMappingOptions,
  type InvocationResult,
  interpretBatchResponse,
  type SqsHandler,
  startEventSourceMapping,
} from '../../local/poller';

let emulator: EmbeddedSqs;
let sqs: SQSClient;
let mapping: EventSourceMapping | undefined;

async function send(bodies: readonly string[]): Promise<void> {
  for (let start = 0; start < bodies.length; start += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: emulator.queue.url,
        Entries: bodies.slice(start, start + 10).map((body, index) => ({ Id: `m${index}`, MessageBody: body })),
      }),
    );
  }
}

/** The main queue's counts as any SQS client sees them. */
async function counts(): Promise<{ visible: number; inFlight: number }> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: emulator.queue.url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return { visible: Number(Attributes?.ApproximateNumberOfMessages), inFlight: Number(Attributes?.ApproximateNumberOfMessagesNotVisible) };
}

/** A full garbage collection: a timeout that only a weak reference keeps (AbortSignal.timeout inside AbortSignal.any) is gone after it. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Resolves when `predicate` holds, checking every 20 ms; the test's timeout bounds it. */
async function until(predicate: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await predicate())) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * An SQS endpoint that takes the connection and the request, and says nothing: its sockets (one
 * per request made to it), a mapping polling it (1 s long polls, with `options`), and how to close
 * it all (the mapping once stopped).
 */
async function silentSqs(
  options: Pick<EventSourceMappingOptions, 'pollers' | 'observer' | 'finishReceivesOnStop'>,
): Promise<{ sockets: Set<Socket>; mapping: EventSourceMapping; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = new SQSClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    credentials: EMULATOR_CREDENTIALS,
    maxAttempts: 1,
  });
  const mapping = startEventSourceMapping({
    sqs: client,
    queueUrl: `http://127.0.0.1:${port}/000000000000/q`,
    queueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
    createHandler: () => async () => undefined,
    batchSize: 10,
    maxBatchingWindowMs: 0,
    functionTimeoutMs: 30_000,
    waitTimeSeconds: 1,
    ...options,
  });
  const close = async (): Promise<void> => {
    client.destroy();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { sockets, mapping, close };
}

function start(
  handler: SqsHandler,
  overrides: {
    batchSize?: number;
    functionTimeoutMs?: number;
    pollers?: number;
    maxBatchingWindowMs?: number;
    waitTimeSeconds?: number;
  } = {},
) {
  const completed: InvocationResult[] = [];
  const failures: { failure: string; detail: string; records: number }[] = [];
  mapping = startEventSourceMapping({
    sqs,
    queueUrl: emulator.queue.url,
    queueArn: emulator.queue.arn,
    createHandler: () => handler,
    pollers: overrides.pollers ?? 1,
    batchSize: overrides.batchSize ?? 10,
    maxBatchingWindowMs: overrides.maxBatchingWindowMs ?? 0,
    functionTimeoutMs: overrides.functionTimeoutMs ?? 30_000,
    waitTimeSeconds: overrides.waitTimeSeconds ?? 1,
    observer: {
      completed: (_, result) => completed.push(result),
      invocationFailed: (_, records, failure, detail) => failures.push({ failure, detail, records: records.length }),
    },
  });
  return { completed, failures, mapping };
}

describe('interpretBatchResponse, as Lambda reads a partial batch response', () => {
  const records = [{ messageId: 'a' }, { messageId: 'b' }] as SQSRecord[];
  test.each([undefined, null, {}, { batchItemFailures: [] }, { batchItemFailures: null }])('%j: every record succeeded', (response) => {
    expect(interpretBatchResponse(records, response)).toEqual({ ok: true, failed: new Set() });
  });
  test('the named records failed', () => {
    expect(interpretBatchResponse(records, { batchItemFailures: [{ itemIdentifier: 'b' }] })).toEqual({ ok: true, failed: new Set(['b']) });
  });
  test.each([
    ['a string', 'ok'],
    ['an array', [{ itemIdentifier: 'a' }]],
    ['batchItemFailures not an array', { batchItemFailures: { itemIdentifier: 'a' } }],
    ['an empty itemIdentifier', { batchItemFailures: [{ itemIdentifier: '' }] }],
    ['a null itemIdentifier', { batchItemFailures: [{ itemIdentifier: null }] }],
    ['a misspelt key', { batchItemFailures: [{ messageId: 'a' }] }],
    ['an id not in the batch', { batchItemFailures: [{ itemIdentifier: 'zzz' }] }],
  ])('%s fails the whole batch', (_, response) => {
    expect(interpretBatchResponse(records, response).ok).toBe(false);
  });
});

describe('the event source mapping', () => {
  beforeEach(async () => {
    emulator = await startEmbeddedSqs({ port: 0, queueName: 'poller-test', maxReceiveCount: 5, visibilityTimeoutSeconds: 60 });
    sqs = new SQSClient({ endpoint: emulator.endpoint, region: emulator.region, credentials: EMULATOR_CREDENTIALS });
  });
  afterEach(async () => {
    await mapping?.stop();
    mapping = undefined;
    sqs.destroy();
    await emulator.stop();
  });

  test('hands the handler Lambda-shaped batches, deletes what succeeded and leaves the failures in flight', async () => {
    const bodies = Array.from({ length: 25 }, (_, index) => (index % 5 === 0 ? `fail-${index}` : `ok-${index}`));
    await send(bodies);
    const events: SQSEvent[] = [];
    const { completed } = start(async (event, context) => {
      events.push(event);
      expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
      return {
        batchItemFailures: event.Records.filter((record) => record.body.startsWith('fail')).map((record) => ({
          itemIdentifier: record.messageId,
        })),
      };
    });
    await until(() => completed.reduce((sum, result) => sum + result.records.length, 0) === 25);
    const records = events.flatMap((event) => event.Records);
    expect(records.map((record) => record.body).sort()).toEqual([...bodies].sort());
    for (const record of records) {
      expect(record).toMatchObject({ eventSource: 'aws:sqs', eventSourceARN: emulator.queue.arn, awsRegion: emulator.region });
      expect(record.attributes.ApproximateReceiveCount).toBe('1');
    }
    expect(events.every((event) => event.Records.length <= 10)).toBe(true);
    expect(completed.flatMap((result) => result.deleteFailures)).toEqual([]);
    expect(await counts()).toEqual({ visible: 0, inFlight: 5 });
  });

  test('gathers batches larger than one receive when the queue has more', async () => {
    await send(Array.from({ length: 25 }, (_, index) => `m${index}`));
    const sizes: number[] = [];
    const { completed } = start(
      async (event) => {
        sizes.push(event.Records.length);
      },
      { batchSize: 25 },
    );
    await until(() => completed.reduce((sum, result) => sum + result.records.length, 0) === 25);
    expect(sizes).toEqual([25]);
    expect(await counts()).toEqual({ visible: 0, inFlight: 0 });
  });

  const failing: [string, string, SqsHandler][] = [
    ['throws', 'error', async () => Promise.reject(new Error('boom'))],
    ['answers an invalid batch response', 'invalid-response', async () => ({ batchItemFailures: [{ itemIdentifier: 'not-in-batch' }] })],
    ['runs past the function timeout', 'timeout', () => new Promise<void>((resolve) => setTimeout(resolve, 2_000))],
  ];
  test('with a batching window, keeps gathering what arrives before invoking', async () => {
    await send(['early-1', 'early-2', 'early-3']);
    const sizes: number[] = [];
    const { completed } = start(
      async (event) => {
        sizes.push(event.Records.length);
      },
      { batchSize: 50, maxBatchingWindowMs: 2_000 },
    );
    // Received, so the window is open: what is sent now must join the same batch.
    await until(async () => (await counts()).inFlight === 3);
    await send(['late-1', 'late-2', 'late-3', 'late-4']);
    await until(() => completed.length === 1);
    expect(sizes).toEqual([7]);
  });

  test.each(failing)('a handler that %s deletes nothing: the whole batch stays on the queue', async (_, failure, handler) => {
    await send(['one', 'two', 'three']);
    const { failures } = start(handler, { functionTimeoutMs: 300 });
    await until(() => failures.length > 0);
    expect(failures[0]).toMatchObject({ failure, records: 3 });
    expect(await counts()).toEqual({ visible: 0, inFlight: 3 });
  });

  test('stop() lets the batch in flight finish and be acknowledged before it resolves', async () => {
    await send(['slow']);
    let release: () => void = () => undefined;
    let invoked: () => void = () => undefined;
    const started = new Promise<void>((resolve) => {
      invoked = resolve;
    });
    const { completed } = start(async () => {
      invoked();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await started;
    let stopped = false;
    const stopping = mapping!.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stopped).toBe(false);
    expect(mapping!.inFlight).toBe(1);
    release();
    await stopping;
    expect(completed).toHaveLength(1);
    expect(await counts()).toEqual({ visible: 0, inFlight: 0 });
  });

  test("stop() ends idle long polls of every poller at once, not when SQS's 20-second wait is over", async () => {
    // Polls as long as npm start's, so that a stop waiting them out would take up to 20 s.
    const { failures } = start(async () => undefined, { pollers: 3, waitTimeSeconds: 20 });
    await new Promise((resolve) => setTimeout(resolve, 500)); // the three receives are waiting at the emulator
    const asked = Date.now();
    await mapping!.stop();
    // A generous bound, for a slow machine: far below the 19.5 s the polls still had to run.
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(failures).toEqual([]);
  });

  test('a delete SQS takes and never answers: the acknowledged records count as not deleted once the delete overstays, and the poller (and a stop) go on', async () => {
    const proxy = await startSqsProxy(emulator.endpoint, emulator.region);
    proxy.hung.add('DeleteMessageBatch');
    const completed: InvocationResult[] = [];
    const proxied = startEventSourceMapping({
      sqs: proxy.sqs,
      queueUrl: emulator.queue.url,
      queueArn: emulator.queue.arn,
      createHandler: () => async () => undefined,
      pollers: 1,
      batchSize: 10,
      maxBatchingWindowMs: 0,
      functionTimeoutMs: 30_000,
      waitTimeSeconds: 1,
      deleteTimeoutMs: 300,
      observer: { completed: (_, result) => completed.push(result) },
    });
    try {
      await send(['a', 'b', 'c']);
      await until(() => (proxy.hangs.get('DeleteMessageBatch') ?? 0) > 0);
      collectGarbage();
      await until(() => completed.length > 0);
      expect(completed[0]?.deleteFailures.map((failure) => failure.record.body).sort()).toEqual(['a', 'b', 'c']);
      const asked = Date.now();
      await proxied.stop();
      expect(Date.now() - asked).toBeLessThan(5_000);
    } finally {
      proxy.releaseHung();
      await proxy.close();
    }
  }, 15_000);
});

describe('an SQS that takes a receive and never answers', () => {
  test('the receive is given up past its long poll plus a slack, counted as failed, and polling goes on', async () => {
    const failed: number[] = [];
    const started = Date.now();
    const {
      sockets,
      mapping: silentMapping,
      close,
    } = await silentSqs({
      pollers: 1,
      observer: { receiveFailed: () => failed.push(Date.now() - started) },
    });
    try {
      await until(() => sockets.size > 0);
      collectGarbage();
      // Not stalled for good: the silent receive fails, and the poller asks again (a new request).
      await until(() => failed.length > 0 && sockets.size > 1);
      expect(failed[0]).toBeLessThan(1_000 + RECEIVE_ANSWER_SLACK_MS + 2_000);
    } finally {
      await silentMapping.stop();
      await close();
    }
  }, 15_000);
});

describe('a stop that lets the pending receive answer (finishReceivesOnStop)', () => {
  test('is bounded by the long poll plus a slack even when SQS accepts and never answers', async () => {
    const { sockets, mapping: silentMapping, close } = await silentSqs({ pollers: 2, finishReceivesOnStop: true });
    try {
      await until(() => sockets.size > 0);
      const asked = Date.now();
      await silentMapping.stop();
      // 1 s of long poll plus RECEIVE_ANSWER_SLACK_MS, with room for a slow machine.
      expect(Date.now() - asked).toBeLessThan(1_000 + RECEIVE_ANSWER_SLACK_MS + 2_000);
    } finally {
      await close();
    }
  }, 15_000);
});
