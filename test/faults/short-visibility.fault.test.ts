/**
 * Fault: a standalone relay on an existing queue whose visibility timeout is shorter than a batch
 * takes, with a webhook that answers 200 well within its request timeout but after the
 * visibility timeout has run out. Without care another poller receives the batch again while it
 * is still being sent, and the first delete, made with a receipt handle SQS has since replaced,
 * deletes nothing: each message is delivered again and again, every time answered 200, until
 * SQS's redrive count moves the delivered message to the DLQ.
 *
 * What the operator must see: every message delivered exactly once, both queues empty.
 */
import { describe, expect, test } from 'vitest';
import { queueCounts, settle } from '../../testkit/relay-process';
import type { ReceivedRequest } from '../../testkit/webhook';
import { emulatorForTest, localRelayForTest, webhookForTest } from '../support/fixtures';

/** How long the webhook takes to answer 200: longer than the queues' visibility timeouts below, shorter than any timeout of the relay. */
const ANSWER_AFTER_MS = 3_000;
/** How long a message may take to settle: a few of the webhook's answers. */
const SETTLE_WITHIN_MS = 20_000;

const messageId = (request: ReceivedRequest): string => String(request.headers['x-carrier-message-id']);

/** Runs the daemon with `env` on a queue of `visibilityTimeout` seconds, sends `count` messages, and returns how often each was sent. */
async function relayThroughShortVisibility(visibilityTimeout: number, env: Record<string, string>, count: number) {
  const emulator = await emulatorForTest({ keepEnvironment: true, visibilityTimeout, maxReceiveCount: 10 });
  const webhook = await webhookForTest(() => ({ status: 200, delayMs: ANSWER_AFTER_MS }));
  const { sqs } = await localRelayForTest({
    QUEUE_URL: emulator.queue.url,
    AWS_ENDPOINT_URL_SQS: emulator.endpoint,
    WEBHOOK_URL: webhook.url,
    LOG_FORMAT: 'json',
    ...env,
  });
  const ids = await Promise.all(Array.from({ length: count }, (_, n) => emulator.send(`{"n":${n}}`)));
  const delivered = (): number => new Set(webhook.requests.map(messageId)).size;
  const settled = await settle(
    sqs,
    { queueUrl: emulator.queue.url, dlqUrl: emulator.dlq.url },
    count,
    delivered,
    Date.now() + SETTLE_WITHIN_MS,
  );
  const sent = ids.map((id) => webhook.requests.filter((request) => messageId(request) === id).length);
  return { settled, sent, dlq: await queueCounts(sqs, emulator.dlq.url) };
}

describe('a webhook answering after the queue visibility timeout', () => {
  test('a queue visibility timeout shorter than the function timeout: each message delivered once, not again and again', async () => {
    // Three pollers of one message each: one is idle, ready to receive what becomes visible again.
    const { settled, sent, dlq } = await relayThroughShortVisibility(
      2,
      { FUNCTION_TIMEOUT_SECONDS: '6', POLLERS: '3', BATCH_SIZE: '1' },
      2,
    );
    expect(sent).toEqual([1, 1]);
    expect(settled).toEqual({ settled: true, deadLettered: 0, left: 0 });
    expect(dlq).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  }, 60_000);

  test('a batching window on a queue whose visibility timeout equals the function timeout: each message delivered once', async () => {
    // No warning at start for this one: the window spends part of the visibility timeout before the batch is invoked.
    const { settled, sent, dlq } = await relayThroughShortVisibility(
      5,
      { FUNCTION_TIMEOUT_SECONDS: '5', MAX_BATCHING_WINDOW_SECONDS: '3', BATCH_SIZE: '20', POLLERS: '2', MAX_CONCURRENCY: '2' },
      2,
    );
    expect(sent).toEqual([1, 1]);
    expect(settled).toEqual({ settled: true, deadLettered: 0, left: 0 });
    expect(dlq).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  }, 60_000);
});
