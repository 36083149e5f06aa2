/**
 * Unit tests of the shared SQS helpers (lambda/sqs-util.ts): the queue a record came from, by
 * its ARN; DLQ names; batch calls of ten with their per-entry failures; errors as text.
 */
import { describe, expect, test } from 'vitest';
import { MAX_BATCH_CALL_ENTRIES } from '../../lambda/aws-limits';
import {
  type BatchCallOutput,
  batchEntryId,
  deadLetterQueueName,
  errorText,
  parseQueueArn,
  queueNameOfArn,
  sendInBatches,
} from '../../lambda/sqs-util';

describe('valid SQS queue ARNs', () => {
  test.each([
    ['arn:aws:sqs:us-east-1:123456789012:orders', { region: 'us-east-1', account: '123456789012', name: 'orders' }],
    ['arn:aws:sqs:eu-west-1:123456789012:orders.fifo', { region: 'eu-west-1', account: '123456789012', name: 'orders.fifo' }],
    ['arn:aws:sqs:eu-west-1:123456789012:orders-dlq.fifo', { region: 'eu-west-1', account: '123456789012', name: 'orders-dlq.fifo' }],
    ['arn:aws-cn:sqs:cn-north-1:123456789012:payments', { region: 'cn-north-1', account: '123456789012', name: 'payments' }],
    ['arn:aws-us-gov:sqs:us-gov-west-1:123456789012:gov_queue', { region: 'us-gov-west-1', account: '123456789012', name: 'gov_queue' }],
    // fauxqs and LocalStack use the all-zero account
    ['arn:aws:sqs:us-east-1:000000000000:webhook-relay', { region: 'us-east-1', account: '000000000000', name: 'webhook-relay' }],
    [
      `arn:aws:sqs:ap-southeast-2:123456789012:${'q'.repeat(80)}`,
      { region: 'ap-southeast-2', account: '123456789012', name: 'q'.repeat(80) },
    ],
  ])('%s', (arn, parts) => {
    expect(parseQueueArn(arn)).toEqual(parts);
    // The hot path's cheap cut agrees with the full parse on every valid ARN.
    expect(queueNameOfArn(arn)).toBe(parts.name);
  });
});

describe('anything else throws, naming the input', () => {
  test.each([
    '',
    'orders',
    'https://sqs.us-east-1.amazonaws.com/123456789012/orders',
    'arn:aws:sns:us-east-1:123456789012:topic',
    'arn:aws:lambda:us-east-1:123456789012:function',
    'arn:aws:sqs:us-east-1:123456789012', // no name
    'arn:aws:sqs:us-east-1:123456789012:', // empty name
    'arn:aws:sqs::123456789012:orders', // no region
    'arn:aws:sqs:us-east-1::orders', // no account
    'arn:aws:sqs:us-east-1:123456789012:orders:extra',
    'ARN:aws:sqs:us-east-1:123456789012:orders',
    'xarn:aws:sqs:us-east-1:123456789012:orders',
    'arn:aws:SQS:us-east-1:123456789012:orders',
  ])('%j', (arn) => {
    expect(() => parseQueueArn(arn)).toThrow(/not an SQS queue ARN/);
    expect(() => parseQueueArn(arn)).toThrow(JSON.stringify(arn));
  });
});

test('the DLQ is <name>-dlq, and stays FIFO', () => {
  expect(deadLetterQueueName('webhook-relay')).toBe('webhook-relay-dlq');
  expect(deadLetterQueueName('orders.fifo')).toBe('orders-dlq.fifo');
});

test('an error is one line: its name and message, or the value as text', () => {
  const refused = new Error('queue does not exist');
  refused.name = 'QueueDoesNotExist';
  expect(errorText(refused)).toBe('QueueDoesNotExist: queue does not exist');
  expect(errorText('plain text')).toBe('plain text');
  expect(errorText(undefined)).toBe('undefined');
});

describe('sendInBatches', () => {
  /** A batch call that records its chunks and answers with `answer(chunk)` once every call has started. */
  function recordingCall(answer: (chunk: readonly number[]) => BatchCallOutput | Error) {
    const chunks: number[][] = [];
    let started!: () => void;
    const allStarted = new Promise<void>((resolve) => (started = resolve));
    const expected = { calls: 0 };
    const call = async (chunk: readonly number[]): Promise<BatchCallOutput> => {
      chunks.push([...chunk]);
      if (chunks.length === expected.calls) started();
      await allStarted; // answers only once all calls are under way: they run in parallel
      const output = answer(chunk);
      if (output instanceof Error) throw output;
      return output;
    };
    return { chunks, call, expectCalls: (calls: number) => (expected.calls = calls) };
  }

  test('sends at most ten entries a call, every call at once, and reports nothing when all succeed', async () => {
    const items = Array.from({ length: 23 }, (_, index) => index);
    const recorder = recordingCall(() => ({}));
    recorder.expectCalls(3);
    expect(await sendInBatches(items, recorder.call)).toEqual([]);
    expect(recorder.chunks.map((chunk) => chunk.length)).toEqual([MAX_BATCH_CALL_ENTRIES, MAX_BATCH_CALL_ENTRIES, 3]);
    expect(recorder.chunks.flat()).toEqual(items);
  });

  test("maps each Failed entry back to its item by the chunk's entry id, and fails every item of a call that failed", async () => {
    const items = Array.from({ length: 25 }, (_, index) => index);
    const recorder = recordingCall((chunk) => {
      if (chunk[0] === 10) return Object.assign(new Error('connection reset'), { name: 'NetworkingError' });
      if (chunk[0] === 0) {
        return {
          Failed: [
            { Id: batchEntryId(3), Code: 'ReceiptHandleIsInvalid', Message: 'expired' },
            { Id: batchEntryId(7) },
            { Id: 'not-one-of-ours' },
          ],
        };
      }
      return { Failed: [{ Id: batchEntryId(4), Code: 'InvalidParameterValue', Message: 'too long' }] };
    });
    recorder.expectCalls(3);
    const failed = await sendInBatches(items, recorder.call);
    expect(failed).toEqual([
      { item: 3, reason: 'ReceiptHandleIsInvalid: expired' },
      { item: 7, reason: 'error: no message' },
      ...Array.from({ length: 10 }, (_, index) => ({ item: 10 + index, reason: 'NetworkingError: connection reset' })),
      { item: 24, reason: 'InvalidParameterValue: too long' },
    ]);
  });

  test('no items, no call', async () => {
    let calls = 0;
    expect(
      await sendInBatches([], async () => {
        calls += 1;
        return {};
      }),
    ).toEqual([]);
    expect(calls).toBe(0);
  });
});
