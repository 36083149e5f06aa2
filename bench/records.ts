/**
 * The benchmark's workload: SQS records shaped exactly as Lambda delivers them, with 1 KB bodies.
 * Deterministic: the same index always gives the same record.
 */
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { sqsRecord } from '../testkit/records';

/** Bytes of every message body. */
export const BODY_BYTES = 1024;
/** The queue the synthetic records claim to come from. */
export const BENCH_QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:bench-relay';
/** Share of records the mixed-outcome webhook answers `429`: indexes with `index % 10 < 3`. */
export const RETRY_SHARE = 0.3;
/** The `Retry-After` the webhook gives a record it refuses (seconds): long enough that no handle expires mid-bench. */
export const RETRY_AFTER_SECONDS = 600;

/** True for the records the mixed-outcome webhook answers `429`. */
export function isRetryIndex(index: number): boolean {
  return index % 10 < RETRY_SHARE * 10;
}

/** A message id that carries its index, so the webhook can match a request to its record. */
export function messageIdOf(index: number): string {
  return `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;
}

/** The index a {@link messageIdOf} id carries (the last 12 digits). */
export function indexOfMessageId(messageId: string): number {
  return Number.parseInt(messageId.slice(-12), 10);
}

/**
 * A 1 KB JSON body. Bodies of records to be refused begin `{"retry":true`, so the webhook can
 * tell them apart from the third byte alone, whoever sent them (the relay or a test through SQS).
 */
export function bodyOf(index: number, retry = false): string {
  const head = retry ? `{"retry":true,"i":${index},"pad":"` : `{"i":${index},"pad":"`;
  const tail = '"}';
  return head + 'x'.repeat(BODY_BYTES - head.length - tail.length) + tail;
}

/** Byte 2 of a body: `r` for a record the mixed webhook refuses. */
export const RETRY_MARKER_BYTE = 'r'.charCodeAt(0);

const SENT = '1700000000000';
const FIRST_RECEIVE = '1700000000500';

/** One record as Lambda's SQS event source delivers it. */
export function recordOf(index: number, retry = false): SQSRecord {
  return sqsRecord(index, {
    messageId: messageIdOf(index),
    // Real receipt handles are a few hundred characters of base64.
    receiptHandle: `AQEB${Buffer.from(`handle-${index}-`.repeat(12)).toString('base64')}`,
    body: bodyOf(index, retry),
    attributes: { SentTimestamp: SENT, SenderId: 'AIDAIENQZJOLO23YVJ4VO', ApproximateFirstReceiveTimestamp: FIRST_RECEIVE },
    md5OfBody: '0'.repeat(32),
    eventSourceARN: BENCH_QUEUE_ARN,
  });
}

/**
 * The event for `count` records as JSON text: what Lambda's runtime parses before calling the
 * handler. Parse it once per run so every run gets fresh objects, as every invocation does.
 */
export function eventJson(count: number): string {
  const event: SQSEvent = { Records: Array.from({ length: count }, (_, index) => recordOf(index)) };
  return JSON.stringify(event);
}
