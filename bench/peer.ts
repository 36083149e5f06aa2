/**
 * The peer: the relay a user would otherwise write, as the Powertools docs show it. `BatchProcessor` + `processPartialResponse` for
 * the partial-batch response, global `fetch` for the POST, at most `concurrency` in flight (the processor starts every record at once).
 * A non-2xx throws, which the processor makes a `batchItemFailures` entry. No retry timing, dead-lettering, breaker, logs or metrics.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

/** The peer's Lambda handler for `webhookUrl`. */
export function createPeerHandler(
  webhookUrl: string,
  concurrency: number,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const processor = new BatchProcessor(EventType.SQS);
  let active = 0;
  const waiting: (() => void)[] = [];
  const recordHandler = async (record: SQSRecord): Promise<void> => {
    if (active >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else active += 1;
    try {
      const response = await fetch(webhookUrl, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-Carrier-Message-Id': record.messageId,
          'X-Carrier-Receive-Count': record.attributes.ApproximateReceiveCount,
        },
        body: record.body,
      });
      if (!response.ok) throw new Error(`webhook answered ${response.status}`);
    } finally {
      const next = waiting.shift();
      if (next === undefined) active -= 1;
      else next(); // the slot passes straight to the next record
    }
  };
  return (event, context) => processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
}
