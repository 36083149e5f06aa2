/**
 * Fault injection at the dead-letter edges, with the real handler,
 * fauxqs speaking the SQS wire protocol (it deduplicates FIFO sends for 5 minutes and refuses
 * messages over the queue's 1 MiB, as SQS does), a proxy that refuses attribute values with
 * characters SQS refuses (fauxqs checks only bodies), and a real webhook on 127.0.0.1.
 * Each test says where every message is at the end and what the webhook saw.
 */
import {
  DeleteMessageCommand,
  type Message,
  type MessageAttributeValue,
  SendMessageCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, test } from 'vitest';
import { MAX_MESSAGE_BYTES } from '../../lambda/aws-limits';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import { FIFO_SUFFIX } from '../../lambda/sqs-util';
import type { Emulator, QueueRef } from '../../testkit/emulator';
import type { SqsProxy } from '../../testkit/sqs-proxy';
import { signatureHeadersOf } from '../../testkit/webhook';
import { emulatorForFile, sqsProxyForFile, webhookForFile } from '../support/fixtures';
import { acknowledge, capturedTelemetry, invoke, type LogLine, relayFor } from '../support/relay';

const SECRET = `whsec_${Buffer.from('the dead-letter fault key, 32 b.').toString('base64')}`;

const webhook = await webhookForFile();
const standard = await emulatorForFile({ keepEnvironment: true, maxReceiveCount: 5 });
const fifo = await emulatorForFile({ fifo: true, keepEnvironment: true, maxReceiveCount: 5 });
// SQS's rule for attribute characters, which fauxqs does not check, enforced in front of it.
const standardProxy = await sqsProxyForFile(standard, { enforceAttributeCharacters: true });
const fifoProxy = await sqsProxyForFile(fifo, { enforceAttributeCharacters: true });

/** One invocation of the relay (signing on, as the stack deploys it) on what the queue holds now, and Lambda's deletes after it. */
async function relayOnce(
  emulator: Emulator,
  proxy: SqsProxy,
  env: Record<string, string> = {},
): Promise<{ failures: number; lines: LogLine[] }> {
  const telemetry = capturedTelemetry();
  const handler = relayFor(
    { WEBHOOK_URL: webhook.url, SIGNING_SECRET: SECRET, ...env },
    { sqs: proxy.sqs, logger: telemetry.logger, metrics: telemetry.metrics },
  );
  const event = await emulator.receiveEvent();
  expect(event.Records.length).toBeGreaterThan(0);
  const response = await invoke(handler, event);
  await acknowledge(emulator.sqs, emulator.queue.url, event, response);
  return { failures: response.batchItemFailures.length, lines: telemetry.lines };
}

/** Every message of `queue`, received and deleted (a move out of the queue). */
async function drain(emulator: Emulator, queue: QueueRef): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const batch = await emulator.receive(queue, 10);
    if (batch.length === 0) return all;
    for (const message of batch)
      await emulator.sqs.send(new DeleteMessageCommand({ QueueUrl: queue.url, ReceiptHandle: message.ReceiptHandle }));
    all.push(...batch);
  }
}

/** Sends a message (a producer's, or a copy redriven by hand with its attributes, as a replay does) to the main queue. */
async function sendToQueue(emulator: Emulator, body: string, attributes?: Record<string, MessageAttributeValue>): Promise<string> {
  const fifoQueue = emulator.queue.name.endsWith(FIFO_SUFFIX);
  const { MessageId } = await emulator.sqs.send(
    new SendMessageCommand({
      QueueUrl: emulator.queue.url,
      MessageBody: body,
      MessageAttributes: attributes,
      ...(fifoQueue ? { MessageGroupId: 'g', MessageDeduplicationId: randomUUID() } : {}),
    }),
  );
  return MessageId ?? '';
}

function reasonOf(message: Message | undefined): Record<string, unknown> | undefined {
  const value = message?.MessageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue;
  return value === undefined ? undefined : (JSON.parse(value) as Record<string, unknown>);
}

/** The id the webhook saw on request `index`, after checking the signature covers it. */
function verifiedIdOf(index: number): string {
  const request = webhook.requests[index];
  const headers = signatureHeadersOf(request);
  new Webhook(SECRET).verify(request?.body.toString('utf8') ?? '', headers);
  expect(request?.headers['x-carrier-message-id']).toBe(headers['webhook-id']);
  return headers['webhook-id'];
}

describe('a FIFO dead letter redriven and refused again within the 5-minute deduplication window', () => {
  test('is dead-lettered again: one copy in the DLQ, nothing on the queue, the webhook saw one id both times', async () => {
    webhook.respondWith(() => ({ status: 404, body: 'no such order' }));
    const originalId = await sendToQueue(fifo, '{"order":7}', { tenant: { DataType: 'String', StringValue: 'acme' } });
    expect(await relayOnce(fifo, fifoProxy)).toMatchObject({ failures: 0 });
    const [firstCopy, ...noMore] = await drain(fifo, fifo.dlq);
    expect(noMore).toEqual([]);
    expect(reasonOf(firstCopy)).toMatchObject({ status: 404, originalMessageId: originalId });

    // Redriven by hand, at once: the copy with its attributes back on the queue, refused again.
    await sendToQueue(fifo, firstCopy?.Body ?? '', firstCopy?.MessageAttributes);
    expect(await relayOnce(fifo, fifoProxy)).toMatchObject({ failures: 0 });

    expect(webhook.requests.map((_, index) => verifiedIdOf(index))).toEqual([originalId, originalId]);
    expect(await drain(fifo, fifo.queue)).toEqual([]);
    const copies = await drain(fifo, fifo.dlq);
    expect(copies.map((copy) => copy.Body)).toEqual(['{"order":7}']);
    expect(copies[0]?.MessageAttributes?.tenant?.StringValue).toBe('acme');
    expect(reasonOf(copies[0])).toMatchObject({ status: 404, originalMessageId: originalId, receiveCount: 1 });
  });
});

describe('a message near the 1 MiB limit refused with 404', () => {
  test('the copy goes with its body and attributes intact, the reason cut to fit; the WARN says what was left out', async () => {
    webhook.respondWith(() => ({ status: 404, body: 'unknown tenant: '.padEnd(400, '.') }));
    const attributes = { tenant: { DataType: 'String', StringValue: 'acme' } };
    // 500 bytes left: room for the reason's fields, not for the whole excerpt.
    const body = 'x'.repeat(MAX_MESSAGE_BYTES - 500 - ('tenant'.length + 'String'.length + 'acme'.length));
    const id = await sendToQueue(standard, body, attributes);
    const { failures, lines } = await relayOnce(standard, standardProxy);
    expect(failures).toBe(0);
    expect(await drain(standard, standard.queue)).toEqual([]);
    const [copy, ...noMore] = await drain(standard, standard.dlq);
    expect(noMore).toEqual([]);
    expect(copy?.Body).toBe(body);
    expect(copy?.MessageAttributes?.tenant?.StringValue).toBe('acme');
    const reason = reasonOf(copy);
    expect(reason).toMatchObject({ status: 404, originalMessageId: id });
    expect(String(reason?.response)).toMatch(/^unknown tenant: \.*$/);
    expect(String(reason?.response).length).toBeLessThan(256);
    const warning = lines.find((line) => line.level === 'WARN' && /part of the reason left out/.test(line.message));
    expect(warning).toMatchObject({ messageId: id, responseCharactersCut: expect.any(Number) });
    expect(webhook.requests).toHaveLength(1);
  });

  test('a message of exactly 1 MiB: the copy goes without the reason attribute, which the WARN names', async () => {
    webhook.respondWith(() => ({ status: 410 }));
    const body = 'y'.repeat(MAX_MESSAGE_BYTES);
    const id = await sendToQueue(standard, body);
    const { failures, lines } = await relayOnce(standard, standardProxy);
    expect(failures).toBe(0);
    expect(await drain(standard, standard.queue)).toEqual([]);
    const [copy] = await drain(standard, standard.dlq);
    expect(copy?.Body).toBe(body);
    expect(copy?.MessageAttributes ?? {}).toEqual({});
    expect(lines.find((line) => line.level === 'WARN' && /part of the reason left out/.test(line.message))).toMatchObject({
      messageId: id,
      reasonDropped: expect.stringMatching(/1048576-byte/),
    });
  });
});

describe('an existing queue pair whose DLQ takes less than 1 MiB', () => {
  test('a message near the DLQ’s 256 KiB refused with 404: SQS refuses the copy with its reason, and it goes again without', async () => {
    const setSize = async (bytes: number): Promise<void> => {
      for (const queue of [standard.queue, standard.dlq])
        await standard.sqs.send(new SetQueueAttributesCommand({ QueueUrl: queue.url, Attributes: { MaximumMessageSize: String(bytes) } }));
    };
    await setSize(262_144);
    try {
      webhook.respondWith(() => ({ status: 404 }));
      const body = 'z'.repeat(262_144 - 100);
      const id = await sendToQueue(standard, body);
      const { failures, lines } = await relayOnce(standard, standardProxy);
      expect(failures).toBe(0);
      expect(await drain(standard, standard.queue)).toEqual([]);
      const copies = await drain(standard, standard.dlq);
      expect(copies.map((copy) => [copy.Body?.length, copy.MessageAttributes ?? {}])).toEqual([[body.length, {}]]);
      expect(lines.find((line) => /part of the reason left out/.test(line.message))).toMatchObject({
        level: 'WARN',
        messageId: id,
        reasonDropped: expect.stringMatching(/SQS refused the copy with it \(.*InvalidParameterValue/),
      });
    } finally {
      await setSize(MAX_MESSAGE_BYTES);
    }
  });
});

describe('a response excerpt holding characters SQS refuses in attribute values', () => {
  test('the stand-in for SQS refuses such a value as SQS does, so a copy that kept one could not pass', async () => {
    const attributes = { reason: { DataType: 'String', StringValue: 'bad\uFFFEinput' } };
    const send = (input: { MessageAttributes: Record<string, MessageAttributeValue> }) =>
      standardProxy.sqs.send(new SendMessageCommand({ QueueUrl: standard.dlq.url, MessageBody: '{}', ...input }));
    await expect(send({ MessageAttributes: attributes })).rejects.toMatchObject({ name: 'InvalidMessageContents' });
    expect(standardProxy.refusals.get('SendMessage')).toBe(1);
    await expect(send({ MessageAttributes: { reason: { DataType: 'String', StringValue: 'bad\uFFFDinput' } } })).resolves.toMatchObject({
      MessageId: expect.any(String),
    });
    expect(await drain(standard, standard.dlq)).toHaveLength(1);
  });

  test('U+FFFE and U+FFFF in a 404 body: the copy lands, those characters replaced by U+FFFD', async () => {
    webhook.respondWith(() => ({ status: 404, body: 'bad\uFFFEinput\uFFFF end' }));
    const id = await sendToQueue(standard, '{"payload":1}');
    const { failures } = await relayOnce(standard, standardProxy);
    expect(failures).toBe(0);
    expect(standardProxy.refusals.size).toBe(0);
    expect(await drain(standard, standard.queue)).toEqual([]);
    const [copy] = await drain(standard, standard.dlq);
    expect(copy?.Body).toBe('{"payload":1}');
    expect(reasonOf(copy)).toMatchObject({ status: 404, originalMessageId: id, response: 'bad\uFFFDinput\uFFFD end' });
  });
});

describe('a producer cannot choose the id the webhook sees', () => {
  test('a forged reason claiming another message’s id: the webhook sees the real id, and its dead letter is not deduplicated away', async () => {
    webhook.respondWith(() => ({ status: 404 }));
    const victimId = await sendToQueue(fifo, '{"victim":true}');
    await relayOnce(fifo, fifoProxy);
    // Copied from the victim's genuine dead letter onto another body, and made up outright.
    const [victimCopy] = await drain(fifo, fifo.dlq);
    const genuine = victimCopy?.MessageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE];
    const forgedIds = [
      await sendToQueue(fifo, '{"forged":"copied seal"}', genuine === undefined ? undefined : { [DEAD_LETTER_REASON_ATTRIBUTE]: genuine }),
      await sendToQueue(fifo, '{"forged":"no seal"}', {
        [DEAD_LETTER_REASON_ATTRIBUTE]: { DataType: 'String', StringValue: JSON.stringify({ originalMessageId: victimId }) },
      }),
    ];
    // fauxqs hands a FIFO group out one message per receive: one invocation each.
    const lines = [...(await relayOnce(fifo, fifoProxy)).lines, ...(await relayOnce(fifo, fifoProxy)).lines];

    expect(webhook.requests.map((_, index) => verifiedIdOf(index))).toEqual([victimId, ...forgedIds]);
    const ignored = lines.filter((line) => line.level === 'WARN' && /Claimed original message id ignored/.test(line.message));
    expect(ignored.map((line) => [line.messageId, line.claimedOriginalId])).toEqual(forgedIds.map((id) => [id, victimId]));
    // Both forged messages are in the DLQ under their own ids: neither was taken for the victim's copy.
    expect(await drain(fifo, fifo.queue)).toEqual([]);
    const copies = await drain(fifo, fifo.dlq);
    expect(copies.map((copy) => [copy.Body, reasonOf(copy)?.originalMessageId])).toEqual([
      ['{"forged":"copied seal"}', forgedIds[0]],
      ['{"forged":"no seal"}', forgedIds[1]],
    ]);
  });

  test('a genuine dead letter redriven: the webhook sees the original id, signed', async () => {
    webhook.respondWith(() => ({ status: 404 }));
    const originalId = await sendToQueue(standard, '{"genuine":true}');
    await relayOnce(standard, standardProxy);
    const [copy] = await drain(standard, standard.dlq);
    webhook.respondWith(() => ({ status: 200 }));
    const redrivenId = await sendToQueue(standard, copy?.Body ?? '', copy?.MessageAttributes);
    expect(redrivenId).not.toBe(originalId);
    expect(await relayOnce(standard, standardProxy)).toMatchObject({ failures: 0 });
    expect(webhook.requests.map((_, index) => verifiedIdOf(index))).toEqual([originalId, originalId]);
    expect(await drain(standard, standard.queue)).toEqual([]);
    expect(await drain(standard, standard.dlq)).toEqual([]);
  });

  test('after a signing key rotation (new key first, old one still listed) a copy sealed under the old key keeps its id', async () => {
    const rotated = `whsec_${Buffer.from('the next dead-letter key, 32 by.').toString('base64')}`;
    webhook.respondWith(() => ({ status: 404 }));
    const originalId = await sendToQueue(standard, '{"rotation":true}');
    await relayOnce(standard, standardProxy);
    const [copy] = await drain(standard, standard.dlq);
    webhook.respondWith(() => ({ status: 200 }));
    await sendToQueue(standard, copy?.Body ?? '', copy?.MessageAttributes);
    await relayOnce(standard, standardProxy, { SIGNING_SECRET: `${rotated} ${SECRET}` });
    expect(webhook.requests[1]?.headers['webhook-id']).toBe(originalId);
  });

  test('without signing the relay cannot vouch for an id: a redriven copy is presented under its new SQS id, with a WARN', async () => {
    webhook.respondWith(() => ({ status: 404 }));
    const originalId = await sendToQueue(standard, '{"unsigned":true}');
    await relayOnce(standard, standardProxy, { SIGNING_SECRET: '' });
    const [copy] = await drain(standard, standard.dlq);
    expect(reasonOf(copy)).toMatchObject({ originalMessageId: originalId });
    expect(reasonOf(copy)).not.toHaveProperty('originalMessageIdSeal');
    webhook.respondWith(() => ({ status: 200 }));
    const redrivenId = await sendToQueue(standard, copy?.Body ?? '', copy?.MessageAttributes);
    const { lines } = await relayOnce(standard, standardProxy, { SIGNING_SECRET: '' });
    expect(webhook.requests[1]?.headers['x-carrier-message-id']).toBe(redrivenId);
    expect(lines.find((line) => /Claimed original message id ignored/.test(line.message))).toMatchObject({
      level: 'WARN',
      claimedOriginalId: originalId,
      reason: expect.stringMatching(/no signing key/),
    });
  });
});

describe('the permissions the stack grants are all a dead-lettering needs', () => {
  test('with DLQ_URL (the stack sets it) the copy takes SendMessage alone: no GetQueueAttributes, no GetQueueUrl, which the role no longer allows', async () => {
    webhook.respondWith(() => ({ status: 404 }));
    await sendToQueue(standard, '{"gone":true}');
    standardProxy.reset();
    // As the role now stands: the DLQ grants SendMessage only, and the function never looks the queues up here.
    standardProxy.refused.add('GetQueueAttributes');
    standardProxy.refused.add('GetQueueUrl');
    const { failures } = await relayOnce(standard, standardProxy, { DLQ_URL: standard.dlq.url });
    expect(failures).toBe(0);
    expect(standardProxy.counts()).toEqual({ SendMessage: 1 });
    expect((await drain(standard, standard.dlq)).map((message) => message.Body)).toEqual(['{"gone":true}']);
  });
});
