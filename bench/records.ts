/** The benchmark's workload: SQS records as Lambda delivers them, with 1 KB bodies; the same index always gives the same record. */
import type { SQSEvent } from 'aws-lambda';
import { sqsRecord } from '../testkit/records';

/** The `Retry-After` the webhook gives a record it refuses (seconds): long enough that no handle expires mid-bench. */
export const RETRY_AFTER_SECONDS = 600;
/** Byte 2 of a body: `r` for a record the mixed webhook refuses. */
export const RETRY_MARKER_BYTE = 'r'.charCodeAt(0);

/** True for the 30 % of records the mixed-outcome webhook answers `429`: indexes with `index % 10 < 3`. */
export const isRetryIndex = (index: number): boolean => index % 10 < 3;

/** The index a record's message id carries (its last 12 digits), so the webhook can match a request to its record. */
export const indexOfMessageId = (messageId: string): number => Number.parseInt(messageId.slice(-12), 10);

/** A 1 KB JSON body; bodies to be refused begin `{"retry":true`, so the webhook tells them by their third byte, whoever sent them. */
export function bodyOf(index: number, retry = false): string {
  const head = retry ? `{"retry":true,"i":${index},"pad":"` : `{"i":${index},"pad":"`;
  return `${head}${'x'.repeat(1024 - head.length - 2)}"}`;
}

/** The event of `count` records as JSON text, which Lambda's runtime parses before calling the handler (parse it once per run). */
export function eventJson(count: number): string {
  const Records = Array.from({ length: count }, (_, index) =>
    sqsRecord(index, {
      messageId: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
      // Real receipt handles are a few hundred characters of base64.
      receiptHandle: `AQEB${Buffer.from(`handle-${index}-`.repeat(12)).toString('base64')}`,
      body: bodyOf(index),
      attributes: { SentTimestamp: '1700000000000', SenderId: 'AIDAIENQZJOLO23YVJ4VO', ApproximateFirstReceiveTimestamp: '1700000000500' },
      md5OfBody: '0'.repeat(32),
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:bench-relay',
    }),
  );
  return JSON.stringify({ Records } satisfies SQSEvent);
}
