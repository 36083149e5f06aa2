/**
 * Mixed outcomes: 30 % of a batch received from the emulator (real receipt handles) answered `429` +
 * `Retry-After`; every SQS call counted at the proxy, the visibility of the refused ones checked. Pacing off.
 */
import { ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { RECEIVE_ALL_ATTRIBUTES, toSqsRecord } from '../../local/event-source';
import { BATCH, type Bench, DEADLINE_MS, log, QUICK, RELAY, startSide } from '../harness';
import { bodyOf, isRetryIndex, RETRY_AFTER_SECONDS } from '../records';
import type { MixedRun } from '../results';
import { scenario } from './scenario';

/** Runs `task` over `items` with at most `limit` at once. */
async function inParallel<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await task(items[next++] as T);
    }),
  );
}

/** Fills the emulator's queue with the batch and receives it all, as the event source would. */
async function receiveBatch(bench: Bench, count: number): Promise<SQSRecord[]> {
  const { emulator } = bench;
  const deadline = Date.now() + 120_000;
  const chunks = Array.from({ length: Math.ceil(count / 10) }, (_, chunk) => chunk * 10);
  await inParallel(chunks, 16, async (start) => {
    const entries = Array.from({ length: Math.min(10, count - start) }, (_, offset) => ({
      Id: `m${offset}`,
      MessageBody: bodyOf(start + offset, isRetryIndex(start + offset)),
    }));
    const { Failed } = await emulator.sqs.send(new SendMessageBatchCommand({ QueueUrl: emulator.queue.url, Entries: entries }));
    if ((Failed ?? []).length > 0) throw new Error(`SendMessageBatch failed for ${Failed?.length} entries`);
  });
  const records: SQSRecord[] = [];
  const receive = {
    QueueUrl: emulator.queue.url,
    MaxNumberOfMessages: 10,
    WaitTimeSeconds: 0,
    VisibilityTimeout: 1_800,
    ...RECEIVE_ALL_ATTRIBUTES,
  };
  await inParallel(Array.from({ length: 8 }), 8, async () => {
    while (records.length < count) {
      if (Date.now() > deadline) throw new Error(`received ${records.length} of ${count} messages in 120 s`);
      const { Messages } = await emulator.sqs.send(new ReceiveMessageCommand(receive));
      for (const message of Messages ?? []) records.push(toSqsRecord(message, emulator.queue.arn));
    }
  });
  return records.slice(0, count);
}

/** Log lines by message: JSON lines by their `message` (EMF as one kind), the rest as Node warnings or other lines. */
function countLogLines(lines: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of lines) {
    let message: string;
    try {
      const parsed = JSON.parse(line) as { message?: string; _aws?: unknown };
      message = parsed._aws !== undefined ? 'EMF metrics' : (parsed.message ?? 'JSON line');
    } catch {
      message =
        line.startsWith('(node') || line.startsWith('(Use') || /SDK|node >=|upgrade|a\.co|^[A-Za-z ]+$/.test(line)
          ? 'Node warning'
          : 'non-JSON line';
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
  // Pacing off: a webhook refusing 30 % of requests would (rightly) slow the relay right down; this
  // measures what mixed outcomes cost in SQS calls and time, the back-pressure scenario the pace.
  const client = await startSide(bench, RELAY, 10, true, { PACING: 'false' });
  try {
    client.keepLogs = true;
    const runs: MixedRun[] = [];
    let visibilityVerified = 0;
    let logLines: Record<string, number> = {};
    let peakMiB = 0;
    for (let round = 0; round < (QUICK ? 2 : 3); round += 1) {
      await bench.webhook.reset('mixed');
      bench.proxy.reset();
      client.logs.length = 0;
      const result = await client.run({ event: { Records: records }, timeoutMs: DEADLINE_MS });
      const label = round === 0 ? 'first (fresh process: SDK loaded, queue URL looked up)' : `warm #${round}`;
      runs.push({
        label,
        wallMs: result.wallMs,
        retried: result.failures,
        calls: bench.proxy.counts(),
        visibilityEntries: bench.proxy.visibilityEntries(),
      });
      if (round !== 0) continue;
      peakMiB = result.maxRssKiB / 1024;
      const now = Date.now();
      const inflight = bench.emulator.server.inspectQueue(bench.emulator.queue.name)?.messages.inflight ?? [];
      const delayed = (entry: (typeof inflight)[number]): boolean =>
        Math.abs(entry.visibilityDeadline - now - RETRY_AFTER_SECONDS * 1000) < 60_000;
      visibilityVerified = inflight.filter((entry) => entry.message.body.startsWith('{"retry"') && delayed(entry)).length;
      await new Promise((resolve) => setTimeout(resolve, 200)); // let the last log lines arrive
      logLines = countLogLines(client.logs);
    }
    await bench.webhook.reset('ok');
    const allOk = await client.run({ event: { Records: records }, timeoutMs: DEADLINE_MS });
    if (allOk.failures > 0) bench.notes.push(`mixed: the all-200 baseline had ${allOk.failures} failures`);
    return { records: records.length, expectedRetries, setupMs, runs, allOkMs: allOk.wallMs, visibilityVerified, logLines, peakMiB };
  } finally {
    await client.stop();
  }
});
