/**
 * An SQS client for tests that run the relay with no SQS at all: it answers GetQueueUrl and records the relay's
 * ChangeMessageVisibilityBatch calls, so a test can read how long each record was sent back for.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  type ChangeMessageVisibilityBatchCommandInput,
  type ChangeMessageVisibilityBatchCommandOutput,
  GetQueueUrlCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { sqsRecord } from '../../testkit/records';

/** An SQS client that answers GetQueueUrl and records every ChangeMessageVisibilityBatch; handles in `invalid` (as it is then) fail as SQS fails them. */
export function recordingSqs(invalid: ReadonlySet<string> = new Set()): {
  sqs: SQSClient;
  visibilityCalls: ChangeMessageVisibilityBatchCommandInput[];
} {
  const visibilityCalls: ChangeMessageVisibilityBatchCommandInput[] = [];
  const send = async (command: unknown): Promise<unknown> => {
    if (command instanceof GetQueueUrlCommand)
      return { QueueUrl: `https://sqs.us-east-1.amazonaws.com/000000000000/${command.input.QueueName}` };
    if (command instanceof ChangeMessageVisibilityBatchCommand) {
      visibilityCalls.push(command.input);
      const entries = command.input.Entries ?? [];
      const output: Partial<ChangeMessageVisibilityBatchCommandOutput> = {
        Successful: entries.filter((entry) => !invalid.has(entry.ReceiptHandle ?? '')).map((entry) => ({ Id: entry.Id })),
        Failed: entries
          .filter((entry) => invalid.has(entry.ReceiptHandle ?? ''))
          .map((entry) => ({
            Id: entry.Id,
            Code: 'ReceiptHandleIsInvalid',
            Message: 'The input receipt handle is invalid.',
            SenderFault: true,
          })),
      };
      return output;
    }
    throw new Error(`unexpected SQS call ${(command as object).constructor.name}`);
  };
  return { sqs: { send } as unknown as SQSClient, visibilityCalls };
}

/** Message `index` of `queueArn`, received (first) now, or `firstReceivedMsAgo`, with the given handle. */
export function recordOf(index: number, queueArn: string, receiptHandle: string, firstReceivedMsAgo = 0, receiveCount = 1): SQSRecord {
  const first = String(Date.now() - firstReceivedMsAgo);
  return sqsRecord(index, {
    eventSourceARN: queueArn,
    receiptHandle,
    attributes: { SentTimestamp: first, ApproximateFirstReceiveTimestamp: first, ApproximateReceiveCount: String(receiveCount) },
  });
}

/** An event of `records`, as Lambda delivers a batch. */
export const batchOf = (records: SQSRecord[]): SQSEvent => ({ Records: records });
/** The whole numbers from `from` up to, not including, `to`. */
export const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, offset) => from + offset);
/** The handles the calls set to visibility `seconds`, per queue URL's name. */
export function handlesSetTo(calls: readonly ChangeMessageVisibilityBatchCommandInput[], seconds: number): Record<string, string[]> {
  const byQueue: Record<string, string[]> = {};
  for (const call of calls) {
    const entries = (call.Entries ?? []).filter((entry) => entry.VisibilityTimeout === seconds);
    if (entries.length === 0) continue;
    const name = call.QueueUrl?.split('/').pop() ?? '';
    byQueue[name] = [...(byQueue[name] ?? []), ...entries.map((entry) => entry.ReceiptHandle ?? '')].sort();
  }
  return byQueue;
}
