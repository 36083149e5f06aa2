/**
 * Dead-lettering a permanent failure (SPEC §2): a copy of the message goes to the DLQ with an
 * attribute saying why, and only once SQS has accepted the copy may the original be
 * acknowledged. A copy that fails leaves the original to be retried: nothing is lost.
 */
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { isFifoRecord } from './batch';
import type { QueueDirectory } from './queues';
import type { SqsGateway } from './sqs-gateway';
import { DEAD_LETTER_REASON_ATTRIBUTE, idempotencyKeyOf, queueNameOfArn } from './request';

export { DEAD_LETTER_REASON_ATTRIBUTE };
/** SQS's limit on message attributes per message. */
export const MAX_MESSAGE_ATTRIBUTES = 10;

/** Why a message was dead-lettered, as stored in {@link DEAD_LETTER_REASON_ATTRIBUTE}. */
export interface DeadLetterReason {
  /** The webhook's HTTP status. */
  readonly status: number;
  /** The start of the webhook's response body. */
  readonly response: string;
  /** The message id on the source queue (the DLQ copy gets a new one); for a copy redriven and refused again, the first message's. */
  readonly originalMessageId: string;
  readonly sourceQueue: string;
  readonly receiveCount: number;
  /** ISO-8601 time of the dead-lettering. */
  readonly deadLetteredAt: string;
}

/** The outcome of a dead-letter attempt. */
export type DeadLetterResult = { readonly ok: true; readonly reasonAttached: boolean } | { readonly ok: false; readonly error: string };

function copyAttributes(record: SQSRecord): Record<string, MessageAttributeValue> {
  const copied: Record<string, MessageAttributeValue> = {};
  for (const [name, attribute] of Object.entries(record.messageAttributes ?? {})) {
    if (attribute.dataType.startsWith('Binary')) {
      if (attribute.binaryValue !== undefined) copied[name] = { DataType: attribute.dataType, BinaryValue: Buffer.from(attribute.binaryValue, 'base64') };
    } else if (attribute.stringValue !== undefined) {
      copied[name] = { DataType: attribute.dataType, StringValue: attribute.stringValue };
    }
  }
  return copied;
}

/** Copies permanently failed messages to their dead-letter queue. */
export class DeadLetterWriter {
  constructor(
    private readonly sqs: SqsGateway,
    private readonly queues: QueueDirectory,
  ) {}

  /** Sends the copy; resolves (never rejects) with whether SQS accepted it. */
  async send(record: SQSRecord, status: number, responseExcerpt: string, now: Date = new Date()): Promise<DeadLetterResult> {
    try {
      const queueUrl = await this.queues.deadLetterUrlOf(record.eventSourceARN);
      // A copy of a copy replaces the earlier reason rather than adding a second one.
      const attributes = copyAttributes(record);
      delete attributes[DEAD_LETTER_REASON_ATTRIBUTE];
      const reason: DeadLetterReason = {
        status,
        response: responseExcerpt.slice(0, 256),
        originalMessageId: idempotencyKeyOf(record),
        sourceQueue: queueNameOfArn(record.eventSourceARN),
        receiveCount: Number(record.attributes.ApproximateReceiveCount),
        deadLetteredAt: now.toISOString(),
      };
      // The producer's own attributes come first: with all ten slots taken there is no room for
      // ours, and the reason is then only in the log line that reports the dead-lettering.
      const reasonAttached = Object.keys(attributes).length < MAX_MESSAGE_ATTRIBUTES;
      if (reasonAttached) attributes[DEAD_LETTER_REASON_ATTRIBUTE] = { DataType: 'String', StringValue: JSON.stringify(reason) };
      // Only a FIFO DLQ takes a deduplication id (a fair standard queue's group id stays behind).
      const groupId = isFifoRecord(record) ? record.attributes.MessageGroupId : undefined;
      await this.sqs.sendMessage({
        QueueUrl: queueUrl,
        MessageBody: record.body,
        MessageAttributes: attributes,
        // A FIFO DLQ needs the group; deduplicating on the original id makes a repeated copy harmless.
        ...(groupId === undefined ? {} : { MessageGroupId: groupId, MessageDeduplicationId: idempotencyKeyOf(record) }),
      });
      return { ok: true, reasonAttached };
    } catch (error) {
      return { ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  }
}
