/**
 * The handler end to end with real parts: fauxqs speaking the SQS wire protocol on a free
 * port, a real HTTP webhook on 127.0.0.1, records received with ReceiveMessage and shaped as
 * Lambda's event, and the queue observed afterwards.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, test } from 'vitest';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import { emulatorForFile, sqsProxyForFile, webhookForFile } from '../support/fixtures';
import { acknowledge, capturedTelemetry, invoke, relayFor, sleep } from '../support/relay';

const emulator = await emulatorForFile({ visibilityTimeout: 30, maxReceiveCount: 5 });
const webhook = await webhookForFile();
/** Between the handler and the emulator where a test passes `proxy.sqs`: it refuses the calls a test names. */
const proxy = await sqsProxyForFile(emulator);

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

  test.each([
    ['429 with Retry-After: 0', 429, '0'],
    ['503 with a Retry-After date in the past', 503, 'Sun, 06 Nov 1994 08:49:37 GMT'],
  ])('%s hides the message for 1 s, not at once: one receive a second at most', async (_, status, retryAfter) => {
    webhook.respondWith(() => ({ status, headers: { 'Retry-After': retryAfter } }));
    await emulator.send('now');
    const event = await emulator.receiveEvent();
    const telemetry = capturedTelemetry();
    const invokedAt = Date.now();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }, telemetry), event);
    const returnedAt = Date.now();
    const messageId = event.Records[0]?.messageId;
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: messageId }]);
    expect(telemetry.lines.find((line) => line.messageId === messageId && 'visibilitySeconds' in line)).toMatchObject({
      delaySeconds: 0,
      visibilitySeconds: 1,
    });
    // Set between the invocation's start and its end: exact bounds, not a timing guess.
    const [entry] = emulator.server.inspectQueue(emulator.queue.name)?.messages.inflight ?? [];
    expect(entry?.message.messageId).toBe(messageId);
    expect(entry?.visibilityDeadline).toBeGreaterThanOrEqual(invokedAt + 1_000);
    expect(entry?.visibilityDeadline).toBeLessThanOrEqual(returnedAt + 1_000);
    await sleep((entry?.visibilityDeadline ?? 0) - Date.now() + 100);
    const again = await emulator.receive(emulator.queue);
    expect(again.map((message) => message.MessageId)).toEqual([messageId]);
    expect(again[0]?.Attributes?.ApproximateReceiveCount).toBe('2');
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
    const failedBodies = event.Records.filter((record) =>
      response.batchItemFailures.some((f) => f.itemIdentifier === record.messageId),
    ).map((record) => record.body);
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

describe('when SQS refuses', () => {
  test('the visibility call: the record stays failed, in flight with the queue default, and the failure is logged', async () => {
    proxy.refused.add('ChangeMessageVisibilityBatch');
    webhook.respondWith(() => ({ status: 429, headers: { 'Retry-After': '0' } }));
    await emulator.send('refused visibility');
    const event = await emulator.receiveEvent();
    const telemetry = capturedTelemetry();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }, { sqs: proxy.sqs, ...telemetry }), event);
    expect(proxy.refusals.get('ChangeMessageVisibilityBatch')).toBeGreaterThan(0);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: event.Records[0]?.messageId }]);
    // Retry-After: 0 would have hidden it for 1 s; refused, it keeps the 30 s default.
    expect(emulator.counts(emulator.queue)).toMatchObject({ ready: 0, inflight: 1 });
    expect(telemetry.lines.find((line) => line.level === 'ERROR')).toMatchObject({
      messageId: event.Records[0]?.messageId,
      error: expect.stringContaining('AccessDenied'),
    });
  });

  test('the dead-letter copy: a permanent failure is retried instead of acknowledged', async () => {
    proxy.refused.add('SendMessage');
    webhook.respondWith(() => ({ status: 404, body: 'no such tenant' }));
    await emulator.send('refused dlq');
    const event = await emulator.receiveEvent();
    const response = await invoke(
      relayFor({ WEBHOOK_URL: webhook.url, DLQ_URL: emulator.dlq.url, BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '1' }, { sqs: proxy.sqs }),
      event,
    );
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: event.Records[0]?.messageId }]);
    await acknowledge(emulator.sqs, emulator.queue.url, event, response);
    expect(emulator.counts(emulator.queue).inflight).toBe(1);
    expect(emulator.counts(emulator.dlq).ready).toBe(0);
  });
});

describe('permanent failures', () => {
  test('a 404 is copied to the DLQ with why, then acknowledged; the DLQ is found from the redrive policy', async () => {
    webhook.respondWith(() => ({ status: 404, body: 'no such tenant' }));
    const id = await emulator.send('{"tenant":"gone"}', { attributes: { tenant: { DataType: 'String', StringValue: 'gone' } } });
    const event = await emulator.receiveEvent();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }), event);
    expect(response.batchItemFailures).toEqual([]);
    const [copy] = await emulator.receive(emulator.dlq);
    expect(copy?.Body).toBe('{"tenant":"gone"}');
    expect(copy?.MessageAttributes?.tenant?.StringValue).toBe('gone');
    const reason = JSON.parse(copy?.MessageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue ?? '{}');
    expect(reason).toMatchObject({
      status: 404,
      response: 'no such tenant',
      originalMessageId: id,
      sourceQueue: emulator.queue.name,
      receiveCount: 1,
    });
    expect(Date.parse(reason.deadLetteredAt)).not.toBeNaN();
  });

  test('PERMANENT_FAILURE=retry treats a 404 as a retry', async () => {
    webhook.respondWith(() => ({ status: 404 }));
    await emulator.send('retry me');
    const event = await emulator.receiveEvent();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url, PERMANENT_FAILURE: 'retry' }), event);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(emulator.counts(emulator.dlq).ready).toBe(0);
  });
});

describe('the function deadline', () => {
  test('no request starts when too little time is left; unsent records come back at once', async () => {
    for (let i = 0; i < 5; i += 1) await emulator.send(`late ${i}`);
    const event = await emulator.receiveEvent(10);
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url, DEADLINE_MARGIN_MS: '1000' }), event, 1_050);
    expect(webhook.requests).toHaveLength(0);
    expect(response.batchItemFailures).toHaveLength(5);
    expect(ready()).toBe(5);
  });

  test('a slow webhook: requests are cut at the deadline and records not reached are returned', async () => {
    webhook.respondWith(() => ({ status: 200, delayMs: 700 }));
    for (let i = 0; i < 4; i += 1) await emulator.send(`slow ${i}`);
    const event = await emulator.receiveEvent(10);
    // Concurrency 1, 1.5 s of budget after the margin: the first request completes, later ones cannot all.
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '1', DEADLINE_MARGIN_MS: '500' }), event, 2_000);
    const delivered = event.Records.length - response.batchItemFailures.length;
    expect(delivered).toBeGreaterThanOrEqual(1);
    expect(delivered).toBeLessThan(4);
    const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    // Whatever was not acknowledged is still on the queue.
    expect(ready() + inflight()).toBe(4);
    expect(failed.size).toBe(4 - delivered);
  });
});

describe('logs and input', () => {
  test('a failure on the last receive before the DLQ is logged at WARN', async () => {
    webhook.respondWith(() => ({ status: 500 }));
    await emulator.send('last chance');
    const event = await emulator.receiveEvent();
    const telemetry = capturedTelemetry();
    await invoke(relayFor({ WEBHOOK_URL: webhook.url, MAX_RECEIVE_COUNT: '1' }, telemetry), event);
    const warning = telemetry.lines.find((line) => line.level === 'WARN');
    expect(warning).toMatchObject({ messageId: event.Records[0]?.messageId, status: 500, outcome: 'retry', receiveCount: 1 });
    const summary = telemetry.lines.find((line) => line.message === 'Batch relayed');
    expect(summary).toMatchObject({ records: 1, delivered: 0, retried: 1, deadLettered: 0 });
    // No message body at INFO or above.
    expect(JSON.stringify(telemetry.lines)).not.toContain('last chance');
    expect(telemetry.emf.at(-1)).toMatchObject({ Delivered: 0, Retried: 1, DeadLettered: 0 });
  });

  test('a hostile attribute value is skipped with a warning, and the record still goes out', async () => {
    const telemetry = capturedTelemetry();
    await emulator.send('hostile', {
      attributes: { evil: { DataType: 'String', StringValue: 'a\r\nX-Injected: 1' }, fine: { DataType: 'Number', StringValue: '7' } },
    });
    const event = await emulator.receiveEvent();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }, telemetry), event);
    expect(response.batchItemFailures).toEqual([]);
    expect(webhook.requests[0]?.headers['x-injected']).toBeUndefined();
    expect(webhook.requests[0]?.headers['x-carrier-attr-evil']).toBeUndefined();
    expect(webhook.requests[0]?.headers['x-carrier-attr-fine']).toBe('7');
    expect(telemetry.lines.find((line) => line.level === 'WARN')).toMatchObject({ attribute: 'evil' });
  });

  test('an event that is not an SQS batch fails the invocation with a message that says so', async () => {
    const handler = relayFor({ WEBHOOK_URL: webhook.url });
    await expect(invoke(handler, { detail: {} } as never)).rejects.toThrow(/not an SQS batch/);
    await expect(invoke(handler, { Records: [{ eventSource: 'aws:s3' }] } as never)).rejects.toThrow(/Records\[0\]/);
  });

  test('the handler module refuses to load with an invalid configuration, naming the variable', async () => {
    const saved = process.env.WEBHOOK_URL;
    process.env.WEBHOOK_URL = 'http://example.com/hook';
    try {
      await expect(import('../../lambda/handler')).rejects.toThrow(/WEBHOOK_URL must be an absolute https:\/\/ URL/);
    } finally {
      process.env.WEBHOOK_URL = saved;
    }
  });
});

describe('a dead-letter copy redriven to the queue', () => {
  test('reaches the webhook under the original message id, without the relay’s bookkeeping attribute', async () => {
    webhook.respondWith(() => ({ status: 404 }));
    const originalId = await emulator.send('{"redrive":"me"}', { attributes: { tenant: { DataType: 'String', StringValue: 'acme' } } });
    await invoke(
      relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: `whsec_${Buffer.from('the redrive test signing key').toString('base64')}` }),
      await emulator.receiveEvent(),
    );
    const [copy] = await emulator.receive(emulator.dlq);
    expect(copy).toBeDefined();
    // The operator fixed the webhook and redrove the DLQ: the copy comes back with a new SQS id.
    webhook.requests.length = 0;
    webhook.respondWith(() => ({ status: 200 }));
    const redrivenId = await emulator.send(copy?.Body ?? '', { attributes: copy?.MessageAttributes });
    expect(redrivenId).not.toBe(originalId);
    const response = await invoke(
      relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: `whsec_${Buffer.from('the redrive test signing key').toString('base64')}` }),
      await emulator.receiveEvent(),
    );
    expect(response.batchItemFailures).toEqual([]);
    const [request] = webhook.requests;
    expect(request?.headers['x-carrier-message-id']).toBe(originalId);
    expect(request?.headers['webhook-id']).toBe(originalId);
    expect(request?.headers['x-carrier-attr-tenant']).toBe('acme');
    expect(Object.keys(request?.headers ?? {}).filter((name) => name.includes('dead-letter'))).toEqual([]);
  });
});
