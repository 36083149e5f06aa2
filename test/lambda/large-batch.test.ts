/**
 * A batch of 10,000 records, the most Lambda hands over: every record delivered once, never
 * more than MAX_CONCURRENCY requests open at the webhook, and one metric line for the batch.
 */
import { expect, test } from 'vitest';
import { sqsRecord } from '../../testkit/records';
import { webhookForFile } from '../support/fixtures';
import { capturedTelemetry, invoke, relayFor, sleep, unreachableSqs } from '../support/relay';

const webhook = await webhookForFile();

test('10,000 records: each delivered exactly once, at most MAX_CONCURRENCY in flight', async () => {
  let open = 0;
  let mostOpen = 0;
  webhook.respondWith(async () => {
    open += 1;
    mostOpen = Math.max(mostOpen, open);
    await sleep(0);
    open -= 1;
    return { status: 200 };
  });
  const records = Array.from({ length: 10_000 }, (_, index) => sqsRecord(index, { body: JSON.stringify({ index }) }));
  const telemetry = capturedTelemetry();
  const response = await invoke(
    relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '8' }, { ...telemetry, sqs: unreachableSqs() }),
    { Records: records },
    120_000,
  );
  expect(response.batchItemFailures).toEqual([]);
  const seen = webhook.requests.map((request) => (JSON.parse(request.body.toString()) as { index: number }).index);
  expect(seen).toHaveLength(10_000);
  expect(new Set(seen).size).toBe(10_000);
  expect(mostOpen).toBeLessThanOrEqual(8);
  expect(mostOpen).toBeGreaterThan(1);
  // One EMF line: the counters and 99 order statistics of the 10,000 latencies, not 100 lines of
  // them, and no "No application metrics to publish" warning from a second, empty flush.
  expect(telemetry.emf).toHaveLength(1);
  expect(telemetry.emf[0]).toMatchObject({ Delivered: 10_000, Retried: 0, DeadLettered: 0 });
  expect(telemetry.metricsWarnings).toEqual([]);
  const latencies = telemetry.emf[0]?.WebhookLatency as number[];
  expect(latencies).toHaveLength(99);
  expect(latencies).toEqual([...latencies].sort((a, b) => a - b));
}, 120_000);

test('visibility changes SQS refuses for a whole batch: one ERROR line for the batch, not one per record', async () => {
  webhook.respondWith(() => ({ status: 500 }));
  const records = Array.from({ length: 100 }, (_, index) => sqsRecord(index));
  const telemetry = capturedTelemetry();
  const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url, OUTAGE_THRESHOLD: '0' }, { ...telemetry, sqs: unreachableSqs() }), {
    Records: records,
  });
  expect(response.batchItemFailures).toHaveLength(100);
  const errors = telemetry.lines.filter((line) => line.level === 'ERROR');
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatchObject({ message: 'Visibility change failed; SQS will use the queue default', failed: 100 });
  // Each record's own line still says what became of its change.
  const returned = telemetry.lines.filter((line) => line.outcome === 'retry');
  expect(returned).toHaveLength(100);
  for (const line of returned) expect(line.visibilityError).toEqual(expect.any(String));
});
