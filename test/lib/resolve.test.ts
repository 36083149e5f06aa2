/**
 * `resolveSettings`: every check and derived value of the construct, called directly, without
 * a Stack (the construct tests cover what the template then says).
 */
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { backstopReceiveCount, retryWindowMarginSeconds } from '../../lambda/retry-window';
import { FUNCTION_SETTINGS } from '../../lambda/settings';
import { WebhookRelayConfigError, type WebhookRelayProps } from '../../lib/index';
import { resolveSettings } from '../../lib/webhook-relay/resolve';

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
  it('derives the defaults: a 24-hour retry window backed by 483 receives, visibility 6 × 30 s, 4 days retention, invoke at once', () => {
    const resolved = resolve();
    expect(resolved.name).toBe('Stack-Relay');
    expect(resolved.serviceName).toBe('Stack-Relay');
    expect(resolved.retryWindowSeconds).toBe(86_400);
    expect(resolved.maxReceiveCount).toBe(backstopReceiveCount(86_400, 180));
    expect(resolved.maxReceiveCount).toBe(483);
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
    expect(resolved.breaker).toEqual({ threshold: 5, probeIntervalSeconds: 10, maxHoldSeconds: 900 });
  });

  it('adds the batching window to the visibility timeout, and names FIFO queues', () => {
    expect(resolve({ timeout: Duration.seconds(60), maxBatchingWindow: Duration.seconds(5), batchSize: 100 }).queues).toMatchObject({
      visibilitySeconds: 365,
    });
    expect(resolve({ fifo: true, queueName: 'orders' }).queues).toMatchObject({
      fifo: true,
      names: { queue: 'orders.fifo', dlq: 'orders-dlq.fifo' },
    });
    // The suffix typed out is the same name.
    expect(resolve({ fifo: true, queueName: 'orders.fifo' }).queues).toMatchObject({
      names: { queue: 'orders.fifo', dlq: 'orders-dlq.fifo' },
    });
  });

  it('derives the backstop from the window over the visibility timeout, within 10 to 1,000', () => {
    expect(resolve({ retryWindow: Duration.hours(1) }).maxReceiveCount).toBe(23); // 3,600 / 180 + 3
    expect(resolve({ retryWindow: Duration.hours(2), timeout: Duration.seconds(60) }).maxReceiveCount).toBe(23); // 7,200 / 360 + 3
    expect(resolve({ retryWindow: Duration.minutes(5) }).maxReceiveCount).toBe(10);
    expect(resolve({ retryWindow: Duration.days(10), retentionPeriod: Duration.days(14) }).maxReceiveCount).toBe(1_000);
    expect(resolve({ retryWindow: Duration.minutes(90) }).retryWindowSeconds).toBe(5_400);
  });

  it("maxReceiveCount alone switches the window off (SQS's count semantics); both together are refused, naming both", () => {
    expect(resolve({ maxReceiveCount: 7 })).toMatchObject({ maxReceiveCount: 7, retryWindowSeconds: 0 });
    const both = rejection({ retryWindow: Duration.hours(24), maxReceiveCount: 10 });
    expect(both.prop).toBe('retryWindow');
    expect(both.message).toMatch(/^WebhookRelay: retryWindow and maxReceiveCount are two ways of giving up on a message; give one/);
  });

  it('refuses a window of 0 (the variable\'s "off") or one outside 1 minute to 323.95 hours, naming retryWindow', () => {
    expect(rejection({ retryWindow: Duration.seconds(0) }).message).toContain('cannot be 0');
    expect(rejection({ retryWindow: Duration.seconds(59) }).prop).toBe('retryWindow');
    expect(rejection({ retryWindow: Duration.days(15) }).prop).toBe('retryWindow');
    expect(rejection({ retryWindow: Duration.days(14) }).message).toContain(
      'must be from 1 minute to 13 days 11 hours 57 minutes (323.95 hours); got 14 days',
    );
    expect(rejection({ retryWindow: Duration.millis(60_500) }).message).toContain('whole number of seconds');
  });

  it('the longest window is what SQS keeps a message (14 days) less its margin: 323.95 hours with the defaults, less with a longer visibility timeout', () => {
    const longest = 14 * 86_400 - retryWindowMarginSeconds(180);
    expect(longest).toBe(323.95 * 3600);
    expect(FUNCTION_SETTINGS.RETRY_WINDOW_HOURS.max * 3600).toBe(longest); // the registry's bound, a literal, is this one
    expect(resolve({ retryWindow: Duration.seconds(longest), retentionPeriod: Duration.days(14) }).retryWindowSeconds).toBe(longest);
    // A 900 s function timeout: visibility 5,400 s, so the window may be 322.5 hours at most, and synth says so.
    const error = rejection({ retryWindow: Duration.seconds(longest), retentionPeriod: Duration.days(14), timeout: Duration.seconds(900) });
    expect(error.prop).toBe('retryWindow');
    expect(error.message).toContain('is longer than SQS keeps a message (14 days): at most 322 hours 30 minutes (322.5 hours)');
    expect(
      resolve({ retryWindow: Duration.minutes(322 * 60 + 30), retentionPeriod: Duration.days(14), timeout: Duration.seconds(900) })
        .retryWindowSeconds,
    ).toBe(322.5 * 3600);
  });

  it('refuses a retention shorter than the window plus its margin (12 hours + one visibility timeout)', () => {
    // 24 h + 12 h 3 min: 1 day 12 hours 3 minutes is the least that holds; 1 day 12 hours is not.
    expect(resolve({ retentionPeriod: Duration.minutes(36 * 60 + 3) }).retryWindowSeconds).toBe(86_400);
    const error = rejection({ retentionPeriod: Duration.hours(36) });
    expect(error.prop).toBe('retentionPeriod');
    expect(error.message).toContain(
      'is shorter than retryWindow (24 hours) plus its margin of 12 hours 3 minutes (a last Retry-After may park a message',
    );
    expect(error.message).toContain(
      'Raise retentionPeriod to at least 2 days (the whole days covering 1 day 12 hours 3 minutes; up to 14 days) or shorten retryWindow',
    );
    expect(24 * 3600 + retryWindowMarginSeconds(180)).toBe(36 * 3600 + 180);
  });

  it('with maxReceiveCount, refuses a retention shorter than the longest its receives can take', () => {
    const error = rejection({ backoff: 'schedule', maxReceiveCount: 10, retentionPeriod: Duration.days(1) });
    expect(error.prop).toBe('retentionPeriod');
    // Each receive parks a message for the longest of its delay (+25 % jitter at most), the breaker's longest interval (15 min)
    // and the visibility timeout (3 min), SQS's 12 h at most: 900 + 900 + 4,500 + 7 × 43,200 = 308,700 s.
    expect(error.message).toContain('shorter than the longest 10 receives can take with these settings (3 days 13 hours 45 minutes)');
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
