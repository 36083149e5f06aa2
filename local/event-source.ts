/**
 * What Lambda's SQS event source mapping does between `ReceiveMessage` and the handler:
 * turning received messages into the exact `SQSEvent` shape Lambda delivers, and a Lambda-like
 * `Context` with a deadline. Shared by the local runner and the end-to-end tests, so both feed
 * the handler exactly what Lambda would.
 */
import { randomUUID } from 'node:crypto';
import type { Message, MessageAttributeValue, ReceiveMessageCommandInput } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSMessageAttribute, SQSRecord, SQSRecordAttributes } from 'aws-lambda';
import { parseQueueArn } from '../lambda/sqs-util';

/** The `ReceiveMessage` parameters that make SQS return everything Lambda puts in a record. */
export const RECEIVE_ALL_ATTRIBUTES: Pick<ReceiveMessageCommandInput, 'MessageSystemAttributeNames' | 'MessageAttributeNames'> = {
  MessageSystemAttributeNames: ['All'],
  MessageAttributeNames: ['All'],
};

function toRecordAttribute(value: MessageAttributeValue): SQSMessageAttribute {
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
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, toRecordAttribute(value)]),
    ),
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
