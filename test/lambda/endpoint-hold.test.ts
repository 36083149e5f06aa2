/**
 * The records a long endpoint hold keeps from starting, through the relay (a real webhook, a recording SQS client): how long
 * each goes back to the queue for. The hold's own rules (when it begins, its probes) are unit-tested in pacer.test.ts.
 */
import { afterEach, expect, test, vi } from 'vitest';
import { LONG_HOLD_SECONDS } from '../../lambda/pace';
import { HOLD_EVIDENCE_MESSAGES } from '../../lambda/refusal-run';
import { webhookForFile } from '../support/fixtures';
import { batchOf, handlesSetTo, range, recordingSqs, recordOf } from '../support/recording-sqs';
import { invoke, relayFor } from '../support/relay';

const QUEUE = 'arn:aws:sqs:us-east-1:000000000000:orders';
const webhook = await webhookForFile();

afterEach(() => {
  vi.useRealTimers();
});

test('a record a long hold keeps back again and again goes back for longer each time from its third receive, never past the hold', async () => {
  // The clock stands still: the hold's first probe (250 ms in) never comes due, and its end is exactly 6 s away.
  vi.useFakeTimers({ toFake: ['Date'] });
  const { sqs, visibilityCalls } = recordingSqs();
  const handler = relayFor({ WEBHOOK_URL: webhook.url }, { sqs });
  webhook.respondWith(() => ({ status: 429, headers: { 'Retry-After': '3600' } }));
  // Different messages received for the first time, all refused for an hour: the evidence a long hold needs.
  for (let first = 0; first < HOLD_EVIDENCE_MESSAGES; first += 10)
    await invoke(handler, batchOf(range(first, first + 10).map((i) => recordOf(i, QUEUE, `refused-${i}`))));
  const requests = webhook.requests.length;
  // Records received before (kept back or refused already: no probe's), during the hold: none goes, each back for its time.
  const counts = [2, 3, 4, 5];
  const batch = counts.map((receiveCount, i) => recordOf(1_000 + i, QUEUE, `kept-${receiveCount}`, 0, receiveCount));
  const response = await invoke(handler, batchOf(batch));
  expect(webhook.requests).toHaveLength(requests);
  expect(response.batchItemFailures).toHaveLength(counts.length);
  const keptFor = Object.fromEntries(
    [1, 2, 4, LONG_HOLD_SECONDS].flatMap((seconds) =>
      (handlesSetTo(visibilityCalls, seconds).orders ?? []).map((handle) => [handle, seconds]),
    ),
  );
  expect(keptFor).toEqual({ 'kept-2': 1, 'kept-3': 2, 'kept-4': 4, 'kept-5': LONG_HOLD_SECONDS });
});
