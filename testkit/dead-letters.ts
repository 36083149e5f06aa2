/**
 * Dead letters made as in production, for the `dead-letters` tests and bench: the relay's own
 * handler, fed from the emulator's main queue, dead-letters what a webhook refuses (`refused
 * permanently`) and what fails past its retry window (`retry window exhausted`: the records' first
 * receive is set back 3 days, as a message that kept failing would have it), and SQS itself moves
 * what is received past the redrive policy's count without being deleted (the backstop).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { loadConfig } from '../lambda/config';
import { DEAD_LETTER_CAUSES, type DeadLetterCauseName } from '../lambda/dead-letter-causes';
import { createRelayHandler } from '../lambda/relay';
import { batchEntryId, sendInBatches } from '../lambda/sqs-util';
import { createLambdaContext } from '../local/event-source';
import type { Emulator } from './emulator';
import { startWebhook } from './webhook';

/** One message to dead-letter, and how. */
export interface DeadLetterSpec {
  readonly body: string;
  readonly cause: DeadLetterCauseName;
  /** The webhook's answer (refused: a 3xx/4xx; window exhausted: any failure, e.g. 500). Not for the backstop. */
  readonly status?: number;
  /** A FIFO queue's message group. */
  readonly groupId?: string;
  readonly attributes?: Record<string, { DataType: string; StringValue: string }>;
}

/** What the DLQ holds afterwards, by body: the id each message had on the main queue (the id its webhook saw). */
export type OriginalIds = Map<string, string>;

const THREE_DAYS_MS = 3 * 86_400_000;
/** Longer than this, and something other than the webhook's answers is keeping messages on the queue. */
const GIVE_UP_MS = 120_000;

/** Metrics that print nothing (their lines are CloudWatch's, not a test's). */
function silentMetrics(): Metrics {
  const metrics = new Metrics({ namespace: 'DeadLetters', serviceName: 'dead-letters' });
  Object.defineProperty(metrics, 'console', { value: { log: () => {} } });
  Object.defineProperty(metrics, 'singleMetric', { value: () => silentMetrics() });
  return metrics;
}

/**
 * Sends `specs` to the emulator's main queue and dead-letters each as it says; resolves once
 * every one is in the DLQ. Bodies must be distinct. The main queue is left empty.
 * @param env extra relay settings (e.g. `SIGNING_SECRET`, so that the reasons carry a seal)
 */
export async function fillDeadLetterQueue(
  emulator: Emulator,
  specs: readonly DeadLetterSpec[],
  env: Record<string, string> = {},
): Promise<OriginalIds> {
  const ids: OriginalIds = new Map();
  const { sqs, queue } = emulator;
  // SQS's own moves first, alone on the queue: received past the count, never deleted.
  const backstop = specs.filter((spec) => spec.cause === DEAD_LETTER_CAUSES.backstop);
  for (const spec of backstop) ids.set(spec.body, await emulator.send(spec.body, { attributes: spec.attributes, groupId: spec.groupId }));
  while (backstop.length > 0 && emulator.counts(queue).ready + emulator.counts(queue).inflight > 0) {
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
  }

  const byBody = new Map(specs.filter((spec) => spec.cause !== DEAD_LETTER_CAUSES.backstop).map((spec) => [spec.body, spec]));
  if (byBody.size === 0) return ids;
  const webhook = await startWebhook((request) => ({
    status: byBody.get(request.body.toString())?.status ?? 200,
    body: 'the webhook says no',
  }));
  try {
    const config = loadConfig({ WEBHOOK_URL: webhook.url, OUTAGE_THRESHOLD: '0', PACING: 'false', BACKOFF_JITTER: 'false', ...env });
    const relay = createRelayHandler(config, { sqs, logger: new Logger({ logLevel: 'SILENT' }), metrics: silentMetrics() });
    const giveUpAt = Date.now() + GIVE_UP_MS;
    for (const spec of byBody.values())
      ids.set(spec.body, await emulator.send(spec.body, { attributes: spec.attributes, groupId: spec.groupId }));
    let left = byBody.size;
    while (left > 0) {
      if (Date.now() > giveUpAt) throw new Error(`fillDeadLetterQueue: ${left} message(s) not dead-lettered after ${GIVE_UP_MS / 1000} s`);
      const event: SQSEvent = await emulator.receiveEvent(10, 1);
      for (const record of event.Records) {
        if (byBody.get(record.body)?.cause === DEAD_LETTER_CAUSES.windowExhausted)
          record.attributes.ApproximateFirstReceiveTimestamp = String(Date.now() - THREE_DAYS_MS);
      }
      const response = await relay(event, createLambdaContext(30_000));
      // What Lambda does with the answer: delete every record not reported as failed.
      const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
      const done = event.Records.filter((record) => !failed.has(record.messageId));
      const notDeleted = await sendInBatches(done, (chunk) =>
        sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queue.url,
            Entries: chunk.map((record, index) => ({ Id: batchEntryId(index), ReceiptHandle: record.receiptHandle })),
          }),
        ),
      );
      if (notDeleted.length > 0) throw new Error(`fillDeadLetterQueue: ${notDeleted[0]?.reason}`);
      left -= done.length;
    }
  } finally {
    await webhook.close();
  }
  return ids;
}
