/**
 * `resolveSettings`: every check and derived value of the construct, called directly, without
 * a Stack (the construct tests cover what the template then says).
 */
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { resolveSettings, WebhookRelayConfigError, type WebhookRelayProps } from '../../lib/webhook-relay';

const URL_ = 'https://hooks.example.com/relay';

function resolve(props: Partial<WebhookRelayProps> = {}) {
  return resolveSettings({ webhookUrl: URL_, ...props }, 'Stack-Relay');
}

function rejection(props: Partial<WebhookRelayProps>): WebhookRelayConfigError {
  try {
    resolve(props);
  } catch (error) {
    if (error instanceof WebhookRelayConfigError) return error;
    throw error;
  }
  throw new Error('expected a WebhookRelayConfigError');
}

describe('resolveSettings', () => {
  it('derives the defaults: 5 receives, visibility 6 × 30 s, 4 days retention, invoke at once', () => {
    const resolved = resolve();
    expect(resolved.name).toBe('Stack-Relay');
    expect(resolved.serviceName).toBe('Stack-Relay');
    expect(resolved.maxReceiveCount).toBe(5);
    expect(resolved.queues).toMatchObject({ kind: 'create', fifo: false, names: undefined, visibilitySeconds: 180 });
    expect(resolved.queues.kind === 'create' && resolved.queues.retention.toDays()).toBe(4);
    expect(resolved).toMatchObject({
      timeoutSeconds: 30,
      memorySize: 256,
      batchSize: 10,
      windowSeconds: 0,
      maxConcurrency: 5,
      signing: true,
      warnings: [],
    });
    expect(resolved.breaker).toEqual({ threshold: 5, initialIntervalSeconds: 30, maxIntervalSeconds: 900 });
  });

  it('adds the batching window to the visibility timeout, and names FIFO queues', () => {
    expect(resolve({ timeout: Duration.seconds(60), maxBatchingWindow: Duration.seconds(5), batchSize: 100 }).queues).toMatchObject({
      visibilitySeconds: 365,
    });
    expect(resolve({ fifo: true, queueName: 'orders' }).queues).toMatchObject({
      fifo: true,
      names: { queue: 'orders.fifo', dlq: 'orders-dlq.fifo' },
    });
  });

  it('derives maxReceiveCount from outageTolerance, and refuses a smaller explicit one', () => {
    expect(resolve({ outageTolerance: Duration.hours(24), retentionPeriod: Duration.days(14) }).maxReceiveCount).toBe(101);
    expect(rejection({ outageTolerance: Duration.hours(24), maxReceiveCount: 10 }).prop).toBe('maxReceiveCount');
    expect(rejection({ outageTolerance: Duration.hours(1), outageThreshold: 0 }).prop).toBe('outageTolerance');
  });

  it('refuses a retention shorter than the retry window these settings allow', () => {
    const error = rejection({ backoff: 'schedule', maxReceiveCount: 10, retentionPeriod: Duration.days(1) });
    expect(error.prop).toBe('retentionPeriod');
    expect(error.message).toMatch(/shorter than the longest retry window these settings allow \(\d+ hours for 10 receives\)/);
  });

  it('refuses what SQS or Lambda would: a low visibility timeout, FIFO batches above 10, a window on FIFO, a big batch without a window', () => {
    expect(rejection({ visibilityTimeout: Duration.seconds(60) }).prop).toBe('visibilityTimeout');
    expect(rejection({ fifo: true, batchSize: 11 }).message).toContain('at most 10 for a FIFO queue');
    expect(rejection({ fifo: true, maxBatchingWindow: Duration.seconds(1) }).prop).toBe('maxBatchingWindow');
    expect(rejection({ batchSize: 50 }).message).toContain('needs a maxBatchingWindow of at least 1 second');
    expect(rejection({ timeout: Duration.minutes(16) }).prop).toBe('timeout');
    expect(rejection({ deadlineMargin: Duration.seconds(30) }).prop).toBe('deadlineMargin');
    expect(rejection({ name: 'has space' }).prop).toBe('name');
    expect(rejection({ deadLetterQueue: {} as never }).prop).toBe('deadLetterQueue');
  });

  it('warns, rather than refuses, when a request may be cut short by the deadline', () => {
    const { warnings } = resolve({ requestTimeout: Duration.seconds(30) });
    expect(warnings.map((warning) => warning.id)).toEqual(['sqs-webhook-relay:requestTimeoutCut']);
  });

  it('signs by default, not when told not to, and refuses a secret with signing off', () => {
    expect(resolve({ signing: false }).signing).toBe(false);
    expect(rejection({ signing: false, signingSecret: {} as never }).prop).toBe('signing');
  });
});
