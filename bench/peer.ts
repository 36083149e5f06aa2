/**
 * The peer: the relay a user would otherwise write by hand, the way the Powertools docs show it.
 * `BatchProcessor` + `processPartialResponse` for the partial-batch response, global `fetch`
 * for the POST, and a small semaphore so no more than `concurrency` requests are in flight (the
 * processor itself starts every record of the batch at once). A non-2xx throws, which the
 * processor turns into a `batchItemFailures` entry. No retry timing, no dead-lettering, no
 * breaker, no logs or metrics per record: only what it takes to be correct on the happy path.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

/** At most `concurrency` of the functions given to it run at once; the rest wait in order. */
export function createLimiter(concurrency: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (active >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else active += 1;
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next === undefined) active -= 1;
      else next(); // the slot passes straight to the next task
    }
  };
}

/** The peer's Lambda handler for `webhookUrl`. */
export function createPeerHandler(
  webhookUrl: string,
  concurrency: number,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const processor = new BatchProcessor(EventType.SQS);
  const limit = createLimiter(concurrency);
  const recordHandler = (record: SQSRecord): Promise<void> =>
    limit(async () => {
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
    });
  return (event, context) => processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
}
