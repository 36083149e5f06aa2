/**
 * Synthetic SQS records, shaped exactly as Lambda's event source delivers them, for tests whose
 * records need not come from a queue. Everything can be overridden.
 */
import type { SQSRecord, SQSRecordAttributes } from 'aws-lambda';

/** What a test may set; `attributes` are merged over the defaults. */
export type RecordOverrides = Partial<Omit<SQSRecord, 'attributes'>> & { readonly attributes?: Partial<SQSRecordAttributes> };

/** Record number `index`: a unique message id, body `String(index)` unless overridden. */
export function sqsRecord(index: number, overrides: RecordOverrides = {}): SQSRecord {
  const { attributes, ...rest } = overrides;
  const eventSourceARN = rest.eventSourceARN ?? 'arn:aws:sqs:us-east-1:000000000000:relay-test';
  return {
    messageId: `5b2c9f6e-0000-4000-8000-${String(index).padStart(12, '0')}`,
    receiptHandle: `handle-${index}`,
    body: String(index),
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    awsRegion: eventSourceARN.split(':')[3] ?? 'us-east-1',
    ...rest,
    eventSourceARN,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '1700000000000',
      SenderId: 'AIDTEST',
      ApproximateFirstReceiveTimestamp: '1700000000000',
      ...attributes,
    },
  };
}

let freshIndex = 0;

/**
 * `count` records of the queue `eventSourceARN`, each with an id of its own across the test file, received just now: well
 * inside their retry window (the default 2023 timestamps would be past it).
 */
export function freshRecords(count: number, eventSourceARN: string): SQSRecord[] {
  return Array.from({ length: count }, () => {
    freshIndex += 1;
    const now = String(Date.now());
    return sqsRecord(freshIndex, {
      body: `{"n":${freshIndex}}`,
      eventSourceARN,
      attributes: { SentTimestamp: now, ApproximateFirstReceiveTimestamp: now },
    });
  });
}
