/**
 * What Lambda's SQS event source mapping does between `ReceiveMessage` and the handler:
 * turning received messages into the exact `SQSEvent` shape Lambda delivers, and a Lambda-like
 * `Context` with a deadline. Shared by the local runner and the end-to-end tests, so both feed
 * the handler exactly what Lambda would.
 */
import { randomUUID } from 'node:crypto';
import type { Message, MessageAttributeValue, ReceiveMessageCommandInput, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSMessageAttribute, SQSRecord, SQSRecordAttributes } from 'aws-lambda';
import { parseQueueArn } from '../lambda/sqs-util';

/** The `ReceiveMessage` parameters that make SQS return everything Lambda puts in a record. */
export const RECEIVE_ALL_ATTRIBUTES: Pick<ReceiveMessageCommandInput, 'MessageSystemAttributeNames' | 'MessageAttributeNames'> = {
  MessageSystemAttributeNames: ['All'],
  MessageAttributeNames: ['All'],
};

/** An attribute as Lambda puts it in a record, or `undefined` for a value that is not one (see {@link keepProtoNamedAttributes}). */
function toRecordAttribute(value: MessageAttributeValue | undefined): SQSMessageAttribute | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  // Lambda sends binary values base64-encoded and always includes the two (reserved) list fields.
  return {
    stringValue: value.StringValue,
    binaryValue: value.BinaryValue === undefined ? undefined : Buffer.from(value.BinaryValue).toString('base64'),
    stringListValues: value.StringListValues ?? [],
    binaryListValues: (value.BinaryListValues ?? []).map((bytes) => Buffer.from(bytes).toString('base64')),
    dataType: value.DataType ?? 'String',
  };
}

/**
 * The producer's attributes as Lambda's record has them. `Object.fromEntries` defines each name
 * as an own property, `__proto__` and `constructor` included, as Lambda's JSON event does.
 */
function toRecordAttributes(attributes: Message['MessageAttributes']): SQSRecord['messageAttributes'] {
  const entries: [string, SQSMessageAttribute][] = [];
  for (const [name, value] of Object.entries(attributes ?? {})) {
    const attribute = toRecordAttribute(value);
    if (attribute !== undefined) entries.push([name, attribute]);
  }
  return Object.fromEntries(entries);
}

/**
 * The AWS SDK's JSON reader hands back a message attribute named `__proto__` (a name SQS accepts)
 * with its value lost: `undefined`. This puts the value back from the raw response, so that the
 * daemon relays such a message as Lambda does. Only a body containing `"__proto__"` is parsed again.
 */
export function keepProtoNamedAttributes(sqs: SQSClient): void {
  type RawMessage = { MessageId?: string; MessageAttributes?: Record<string, MessageAttributeValue> };
  // A call's raw values, by message id, between the two steps (keyed by the call's context).
  const rawValues = new WeakMap<object, Map<string, MessageAttributeValue>>();
  // Inside the SDK's reader: the raw response, before it is read.
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const response = result.response as { body?: unknown };
      const body = response.body;
      if (body === undefined || body instanceof Uint8Array || typeof (body as AsyncIterable<Buffer>)[Symbol.asyncIterator] !== 'function')
        return result;
      const chunks: Buffer[] = [];
      for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
      const bytes = Buffer.concat(chunks);
      response.body = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      if (!bytes.includes('"__proto__"')) return result;
      try {
        const raw = JSON.parse(bytes.toString('utf8')) as { Messages?: RawMessage[] };
        for (const message of raw.Messages ?? []) {
          // The own property JSON.parse defined, not the prototype accessor of the same name.
          const value = Object.getOwnPropertyDescriptor(message.MessageAttributes ?? {}, '__proto__')?.value as
            | MessageAttributeValue
            | undefined;
          if (message.MessageId === undefined || value === undefined) continue;
          const values = rawValues.get(context) ?? new Map<string, MessageAttributeValue>();
          values.set(message.MessageId, value);
          rawValues.set(context, values);
        }
      } catch {
        // Not JSON: the SDK's reader reports it.
      }
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'readRawProtoAttributes' },
  );
  // Outside it: the messages as read, their lost values put back.
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const found = rawValues.get(context);
      if (found === undefined) return result;
      for (const message of (result.output as { Messages?: Message[] }).Messages ?? []) {
        const value = message.MessageId === undefined ? undefined : found.get(message.MessageId);
        if (value !== undefined && message.MessageAttributes !== undefined)
          Object.defineProperty(message.MessageAttributes, '__proto__', { value, enumerable: true, writable: true, configurable: true });
      }
      return result;
    },
    { step: 'initialize', priority: 'high', name: 'restoreProtoAttributes' },
  );
}

/**
 * One received message as the record Lambda would put in the event.
 * @param message a message received with {@link RECEIVE_ALL_ATTRIBUTES}
 * @param queueArn the ARN of the queue it was received from
 */
export function toSqsRecord(message: Message, queueArn: string): SQSRecord {
  const system = message.Attributes ?? {};
  const attributes: SQSRecordAttributes = {
    ApproximateReceiveCount: system.ApproximateReceiveCount ?? '1',
    SentTimestamp: system.SentTimestamp ?? String(Date.now()),
    SenderId: system.SenderId ?? '000000000000',
    ApproximateFirstReceiveTimestamp: system.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
  };
  for (const name of [
    'AWSTraceHeader',
    'SequenceNumber',
    'MessageGroupId',
    'MessageDeduplicationId',
    'DeadLetterQueueSourceArn',
  ] as const) {
    const value = system[name];
    if (value !== undefined) attributes[name] = value;
  }
  const record: SQSRecord = {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes,
    messageAttributes: toRecordAttributes(message.MessageAttributes),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: parseQueueArn(queueArn).region,
  };
  if (message.MD5OfMessageAttributes !== undefined) record.md5OfMessageAttributes = message.MD5OfMessageAttributes;
  return record;
}

/** Received messages as the `SQSEvent` Lambda would invoke the handler with. */
export function toSqsEvent(messages: readonly Message[], queueArn: string): SQSEvent {
  return { Records: messages.map((message) => toSqsRecord(message, queueArn)) };
}

/**
 * A Lambda-like invocation context whose `getRemainingTimeInMillis()` counts down from
 * `timeoutMs`, as Lambda's does from the function timeout.
 */
export function createLambdaContext(timeoutMs: number, functionName = 'sqs-webhook-relay-local'): Context {
  const deadline = Date.now() + timeoutMs;
  const unsupported = (): never => {
    throw new Error('callback-style context methods are not supported');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}
