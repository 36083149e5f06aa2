/**
 * Unit tests of parseQueueArn (lambda/queues.ts): the queue a record came from, by its ARN.
 */
import { describe, expect, test } from 'vitest';
import { parseQueueArn } from '../../lambda/queues';

describe('valid SQS queue ARNs', () => {
  test.each([
    ['arn:aws:sqs:us-east-1:123456789012:orders', { region: 'us-east-1', account: '123456789012', name: 'orders' }],
    ['arn:aws:sqs:eu-west-1:123456789012:orders.fifo', { region: 'eu-west-1', account: '123456789012', name: 'orders.fifo' }],
    ['arn:aws:sqs:eu-west-1:123456789012:orders-dlq.fifo', { region: 'eu-west-1', account: '123456789012', name: 'orders-dlq.fifo' }],
    ['arn:aws-cn:sqs:cn-north-1:123456789012:payments', { region: 'cn-north-1', account: '123456789012', name: 'payments' }],
    ['arn:aws-us-gov:sqs:us-gov-west-1:123456789012:gov_queue', { region: 'us-gov-west-1', account: '123456789012', name: 'gov_queue' }],
    // fauxqs and LocalStack use the all-zero account
    ['arn:aws:sqs:us-east-1:000000000000:webhook-relay', { region: 'us-east-1', account: '000000000000', name: 'webhook-relay' }],
    [`arn:aws:sqs:ap-southeast-2:123456789012:${'q'.repeat(80)}`, { region: 'ap-southeast-2', account: '123456789012', name: 'q'.repeat(80) }],
  ])('%s', (arn, parts) => {
    expect(parseQueueArn(arn)).toEqual(parts);
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
