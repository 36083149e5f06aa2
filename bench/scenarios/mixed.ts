/**
 * Mixed outcomes: 30 % of a batch received from the emulator (real receipt handles) answered `429` +
 * `Retry-After`; every SQS call counted at the proxy, the visibility of the refused ones checked. Pacing off.
 */
import { ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { RECEIVE_ALL_ATTRIBUTES, toSqsRecord } from '../../local/event-source';
import { BATCH, type Bench, DEADLINE_MS, log, QUICK, RELAY, scratchModule, startSide } from '../harness';
import { bodyOf, isRetryIndex, RETRY_AFTER_SECONDS } from '../records';
import type { MixedRun } from '../results';
import { scenario } from './scenario';

/** `workers` loops running `step` until it returns false. */
const loops = (workers: number, step: () => Promise<boolean>): Promise<unknown> =>
  Promise.all(
    Array.from({ length: workers }, async () => {
      while (await step());
    }),
  );

/** Fills the emulator's queue with the batch (16 sends in flight) and receives it all (8 receives), as the event source would. */
async function receiveBatch({ emulator }: Bench, count: number): Promise<SQSRecord[]> {
  const deadline = Date.now() + 120_000;
  let sent = 0;
  await loops(16, async () => {
    const start = sent;
    if (start >= count) return false;
    sent += 10;
    const Entries = Array.from({ length: Math.min(10, count - start) }, (_, offset) => ({
      Id: `m${offset}`,
      MessageBody: bodyOf(start + offset, isRetryIndex(start + offset)),
    }));
    const { Failed } = await emulator.sqs.send(new SendMessageBatchCommand({ QueueUrl: emulator.queue.url, Entries }));
    if ((Failed ?? []).length > 0) throw new Error(`SendMessageBatch failed for ${Failed?.length} entries`);
    return true;
  });
  const records: SQSRecord[] = [];
  const receive = {
    QueueUrl: emulator.queue.url,
    MaxNumberOfMessages: 10,
    WaitTimeSeconds: 0,
    VisibilityTimeout: 1_800,
    ...RECEIVE_ALL_ATTRIBUTES,
  };
  await loops(8, async () => {
    if (records.length >= count) return false;
    if (Date.now() > deadline) throw new Error(`received ${records.length} of ${count} messages in 120 s`);
    const { Messages = [] } = await emulator.sqs.send(new ReceiveMessageCommand(receive));
    records.push(...Messages.map((message) => toSqsRecord(message, emulator.queue.arn)));
    return true;
  });
  return records.slice(0, count);
}

/** Log lines by message: JSON lines by their `message` (EMF as one kind), the rest as Node warnings or other lines. */
function countLogLines(lines: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of lines.filter((text) => text.trim() !== '')) {
    let message: string;
    try {
      const parsed = JSON.parse(line) as { message?: string; _aws?: unknown };
      message = parsed._aws !== undefined ? 'EMF metrics' : (parsed.message ?? 'JSON line');
    } catch {
      const warning = line.startsWith('(node') || line.startsWith('(Use') || /SDK|node >=|upgrade|a\.co|^[A-Za-z ]+$/.test(line);
      message = warning ? 'Node warning' : 'non-JSON line';
    }
    counts[message] = (counts[message] ?? 0) + 1;
  }
  return counts;
}

export default scenario('mixed', async (bench) => {
  log(`mixed outcomes: ${BATCH} messages through the emulator`);
  const setupStarted = Date.now();
  const records = await receiveBatch(bench, BATCH);
  const setupMs = Date.now() - setupStarted;
  const expectedRetries = records.filter((record) => record.body.startsWith('{"retry"')).length;
  const eventFile = scratchModule('received-event.json', JSON.stringify({ Records: records }));
  // Pacing off: a webhook refusing 30 % of requests would (rightly) slow the relay right down; this
  // measures what mixed outcomes cost in SQS calls and time, the back-pressure scenario the pace.
  const client = await startSide(bench, RELAY, 10, true, { PACING: 'false' });
  try {
    const runs: MixedRun[] = [];
    let visibilityVerified = 0;
    let logLines: Record<string, number> = {};
    let peakMiB = 0;
    for (let round = 0; round < (QUICK ? 2 : 3); round += 1) {
      await bench.webhook.reset('mixed');
      bench.proxy.reset();
      const outputBefore = client.output().length;
      const result = await client.run({ eventFile, timeoutMs: DEADLINE_MS });
      runs.push({
        label: round === 0 ? 'first (fresh process: SDK loaded, queue URL looked up)' : `warm #${round}`,
        wallMs: result.wallMs,
        retried: result.failures,
        calls: bench.proxy.counts(),
        visibilityEntries: bench.proxy.visibilityEntries(),
      });
      if (round !== 0) continue;
      peakMiB = result.maxRssKiB / 1024;
      const now = Date.now();
      const inflight = bench.emulator.server.inspectQueue(bench.emulator.queue.name)?.messages.inflight ?? [];
      visibilityVerified = inflight.filter(
        ({ message, visibilityDeadline }) =>
          message.body.startsWith('{"retry"') && Math.abs(visibilityDeadline - now - RETRY_AFTER_SECONDS * 1000) < 60_000,
      ).length;
      await new Promise((resolve) => setTimeout(resolve, 200)); // let the last log lines arrive
      logLines = countLogLines(client.output().slice(outputBefore).split('\n'));
    }
    await bench.webhook.reset('ok');
    const allOk = await client.run({ eventFile, timeoutMs: DEADLINE_MS });
    if (allOk.failures > 0) bench.notes.push(`mixed: the all-200 baseline had ${allOk.failures} failures`);
    return { records: records.length, expectedRetries, setupMs, runs, allOkMs: allOk.wallMs, visibilityVerified, logLines, peakMiB };
  } finally {
    await client.stop();
  }
});
