/**
 * The `cause` dimension of `DeadLettered`: the relay publishes, per batch, how many records it
 * dead-lettered for each cause and how many go to the DLQ at SQS's backstop next, on the
 * emulator; and its dead-letter log lines are those the stack's Logs Insights query counts.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { CAUSE_DIMENSION, DEAD_LETTER_CAUSES } from '../../lambda/dead-letter-causes';
import { deadLettersByCause } from '../../lambda/dead-letter-metrics';
import type { RecordOutcome } from '../../lambda/record-outcome';
import { DEAD_LETTER_LINES } from '../../lib/webhook-relay/queries';
import { type Emulator, startEmulator } from '../../testkit/emulator';
import { sqsRecord } from '../../testkit/records';
import { startWebhook, type TestWebhook } from '../../testkit/webhook';
import { capturedTelemetry, invoke } from '../support/relay';
import { createRelayHandler } from '../../lambda/relay';
import { loadConfig } from '../../lambda/config';

let emulator: Emulator;
let webhook: TestWebhook;

beforeAll(async () => {
  emulator = await startEmulator({ keepEnvironment: true, maxReceiveCount: 5 });
  // The body says the answer: {"status": 404} and so on.
  webhook = await startWebhook((request) => ({ status: (JSON.parse(request.body.toString()) as { status: number }).status }));
});
afterAll(async () => {
  await webhook.close();
  await emulator.stop();
});

test('one metric line per cause, with the dimensions service and cause, beside the batch total', async () => {
  const telemetry = capturedTelemetry();
  // MAX_RECEIVE_COUNT 5 with the window off: a failure on the fifth receive is SQS's to move.
  const config = loadConfig({
    WEBHOOK_URL: webhook.url,
    RETRY_WINDOW_HOURS: '0',
    MAX_RECEIVE_COUNT: '5',
    BACKOFF_JITTER: 'false',
    OUTAGE_THRESHOLD: '0',
  });
  const relay = createRelayHandler(config, { sqs: emulator.sqs, logger: telemetry.logger, metrics: telemetry.metrics });
  for (const status of [404, 410, 422, 500, 500, 200]) await emulator.send(JSON.stringify({ status }));
  const event = await emulator.receiveEvent(10, 1);
  expect(event.Records).toHaveLength(6);
  // One of the two 500s is on its last receive.
  const last = event.Records.find((record) => record.body === '{"status":500}');
  if (last !== undefined) last.attributes.ApproximateReceiveCount = '5';
  await invoke(relay, event);

  const byCause = telemetry.emf.filter((line) => line[CAUSE_DIMENSION] !== undefined);
  expect(byCause.map((line) => ({ cause: line.cause, count: line.DeadLettered, service: line.service }))).toEqual([
    { cause: DEAD_LETTER_CAUSES.refused, count: 3, service: 'test' },
    { cause: DEAD_LETTER_CAUSES.backstop, count: 1, service: 'test' },
  ]);
  // Published under the dimensions service and cause.
  type Directive = { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  const directive = (byCause[0]?._aws as Directive | undefined)?.CloudWatchMetrics[0];
  expect(directive?.Dimensions).toEqual([['service', 'cause']]);
  expect(directive?.Metrics.map((metric) => metric.Name)).toEqual(['DeadLettered']);
  // The batch line keeps its service-only total.
  expect(telemetry.emf.find((line) => line.Delivered !== undefined)).toMatchObject({ Delivered: 1, DeadLettered: 3 });
  expect(telemetry.metricsWarnings).toEqual([]);

  // The lines the stack's query "dead letters by cause and status" counts: every dead letter and the last receive.
  const counted = telemetry.lines.filter((line) => DEAD_LETTER_LINES.test(line.message));
  expect(counted.map((line) => [line.message, line.status])).toEqual([
    ['Message dead-lettered: the webhook refused it permanently', 404],
    ['Message dead-lettered: the webhook refused it permanently', 410],
    ['Message dead-lettered: the webhook refused it permanently', 422],
    ['Message not delivered on its last receive: SQS moves it to the dead-letter queue next', 500],
  ]);
});

test('a batch with no dead letter publishes no cause line; the window exhausted is a cause of its own', () => {
  const delivered: RecordOutcome = { kind: 'delivered' } as RecordOutcome;
  expect(deadLettersByCause([sqsRecord(1)], [delivered], 5).size).toBe(0);
  const exhausted = { kind: 'dead-lettered', status: 503, response: '', cause: 'retry window exhausted' } as RecordOutcome;
  const retried = { kind: 'retry', status: 503 } as unknown as RecordOutcome;
  const records = [
    sqsRecord(1),
    sqsRecord(2, { attributes: { ApproximateReceiveCount: '4' } }),
    sqsRecord(3, { attributes: { ApproximateReceiveCount: '5' } }),
  ];
  expect(Object.fromEntries(deadLettersByCause(records, [exhausted, retried, retried], 5))).toEqual({
    [DEAD_LETTER_CAUSES.windowExhausted]: 1,
    [DEAD_LETTER_CAUSES.backstop]: 1,
  });
});
