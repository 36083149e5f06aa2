/**
 * The handler end to end with real parts: fauxqs speaking the SQS wire protocol on a free
 * port, a real HTTP webhook on 127.0.0.1, records received with ReceiveMessage and shaped as
 * Lambda's event, and the queue observed afterwards.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/dead-letter';
import { type Emulator, startEmulator } from '../support/emulator';
import { acknowledge, capturedTelemetry, invoke, relayFor, sleep } from '../support/relay';
import { startWebhook, type TestWebhook } from '../support/webhook';

let emulator: Emulator;
let webhook: TestWebhook;

beforeAll(async () => {
  emulator = await startEmulator({ visibilityTimeout: 30, maxReceiveCount: 5 });
  webhook = await startWebhook();
});
afterAll(async () => {
  await webhook.close();
  await emulator.stop();
});
afterEach(() => {
  emulator.server.reset();
  webhook.requests.length = 0;
  webhook.respondWith(() => ({ status: 200 }));
});

/** Visible messages of the main queue right now, without receiving them. */
const ready = (): number => emulator.counts(emulator.queue).ready;
const inflight = (): number => emulator.counts(emulator.queue).inflight;

describe('delivery', () => {
  test('a 200 acknowledges the message; once Lambda deletes it the queue is empty', async () => {
    const id = await emulator.send('{"order":42}', { attributes: { tenant: { DataType: 'String', StringValue: 'acme' } } });
    const event = await emulator.receiveEvent();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }), event);
    expect(response.batchItemFailures).toEqual([]);
    expect(webhook.requests).toHaveLength(1);
    const [request] = webhook.requests;
    expect(request?.body.toString()).toBe('{"order":42}');
    expect(request?.headers['x-carrier-message-id']).toBe(id);
    expect(request?.headers['x-carrier-receive-count']).toBe('1');
    expect(request?.headers['x-carrier-queue']).toBe(emulator.queue.name);
    expect(request?.headers['x-carrier-attr-tenant']).toBe('acme');
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  });

  test('429 with Retry-After: 2 hides the message for 2 s: invisible at 1 s, visible again at 3 s', async () => {
    webhook.respondWith(() => ({ status: 429, headers: { 'Retry-After': '2' } }));
    await emulator.send('later');
    const event = await emulator.receiveEvent();
    const started = Date.now();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }), event);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: event.Records[0]?.messageId }]);
    await sleep(1_000 - (Date.now() - started));
    expect(await emulator.receive(emulator.queue)).toEqual([]);
    expect(inflight()).toBe(1);
    await sleep(3_000 - (Date.now() - started));
    const again = await emulator.receive(emulator.queue);
    expect(again.map((message) => message.MessageId)).toEqual([event.Records[0]?.messageId]);
    expect(again[0]?.Attributes?.ApproximateReceiveCount).toBe('2');
  });

  test('429 with Retry-After: 0 makes the message visible at once', async () => {
    webhook.respondWith(() => ({ status: 429, headers: { 'Retry-After': '0' } }));
    await emulator.send('now');
    const event = await emulator.receiveEvent();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }), event);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(ready()).toBe(1);
  });

  test('a mixed batch reports exactly the records that got no 2xx', async () => {
    for (let i = 0; i < 10; i += 1) await emulator.send(String(i));
    webhook.respondWith((request) => {
      const n = Number(request.body.toString());
      return n % 3 === 0 ? { status: 503, headers: { 'Retry-After': '60' } } : { status: 204 };
    });
    const event = await emulator.receiveEvent(10);
    expect(event.Records).toHaveLength(10);
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }), event);
    const failedBodies = event.Records.filter((record) => response.batchItemFailures.some((f) => f.itemIdentifier === record.messageId)).map((record) => record.body);
    expect(failedBodies.sort()).toEqual(['0', '3', '6', '9']);
  });
});

describe('nothing is lost when', () => {
  /** Runs one message through a relay and checks it is reported failed and still on the queue. */
  async function expectKept(env: Record<string, string>): Promise<void> {
    await emulator.send('keep me');
    const event = await emulator.receiveEvent();
    const response = await invoke(relayFor({ BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '1', ...env }), event);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: event.Records[0]?.messageId }]);
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    expect(ready() + inflight()).toBe(1);
  }

  test('the webhook is down (connection refused)', async () => {
    const closed: Server = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expectKept({ WEBHOOK_URL: `http://127.0.0.1:${port}/hook` });
  });

  test('the webhook hangs past the request timeout', async () => {
    webhook.respondWith(() => ({ hang: true }));
    await expectKept({ WEBHOOK_URL: webhook.url, REQUEST_TIMEOUT_MS: '300' });
  });

  test('the connection is reset mid-response, after a 200 status line', async () => {
    webhook.respondWith(() => ({ resetMidResponse: true }));
    await expectKept({ WEBHOOK_URL: webhook.url });
  });

  test('the connection is reset before any response', async () => {
    webhook.respondWith(() => ({ resetBeforeResponse: true }));
    await expectKept({ WEBHOOK_URL: webhook.url });
  });

  test('the webhook answers garbage instead of HTTP', async () => {
    const garbage = createServer();
    garbage.on('connection', (socket) => socket.end('NOT HTTP AT ALL\r\n\r\n'));
    await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
    const { port } = garbage.address() as AddressInfo;
    try {
      await expectKept({ WEBHOOK_URL: `http://127.0.0.1:${port}/hook` });
    } finally {
      garbage.close();
    }
  });
});
