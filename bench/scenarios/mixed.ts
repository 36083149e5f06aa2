/**
 * Mixed outcomes: 30 % of a batch received from the emulator (real receipt handles) answered `429` +
 * `Retry-After`, every SQS call counted at the proxy. Pacing off.
 */
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { RECEIVE_ALL_ATTRIBUTES, toSqsRecord } from '../../local/event-source';
import { sendMessages } from '../../testkit/relay-process';
import { BATCH, type Bench, DEADLINE_MS, log, QUICK, SIDES, scratchFile, withSides } from '../harness';
import { bodyOf, isRetryIndex } from '../records';

/** Fills the emulator's queue with the batch and receives it all (8 receives in flight), as the event source would. */
async function receiveBatch({ emulator: { sqs, queue } }: Bench, count: number): Promise<SQSRecord[]> {
  await sendMessages(sqs, queue.url, count, (index) => bodyOf(index, isRetryIndex(index)));
  const records: SQSRecord[] = [];
  const deadline = Date.now() + 120_000;
  const receive = async (): Promise<void> => {
    while (records.length < count) {
      if (Date.now() > deadline) throw new Error(`received ${records.length} of ${count} messages in 120 s`);
      // Invisible for the whole scenario: its runs reuse these receipt handles.
      const input = {
        QueueUrl: queue.url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 1_800,
        ...RECEIVE_ALL_ATTRIBUTES,
      };
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand(input));
      records.push(...Messages.map((message) => toSqsRecord(message, queue.arn)));
    }
  };
  await Promise.all(Array.from({ length: 8 }, receive));
  return records.slice(0, count);
}

/** The received batch through one relay process, 3 times (`--quick`: 2) with 30 % refused, then all answered 200. */
export async function mixed(bench: Bench) {
  log(`mixed outcomes: ${BATCH} messages through the emulator`);
  const records = await receiveBatch(bench, BATCH);
  const expectedRetries = records.filter((record) => record.body.startsWith('{"retry"')).length;
  const eventFile = scratchFile('received-event.json', JSON.stringify({ Records: records }));
  // Pacing off: a webhook refusing 30 % of requests would (rightly) slow the relay right down; this
  // measures what mixed outcomes cost in SQS calls and time, the back-pressure scenario the pace.
  return withSides(bench, [SIDES.relay], { concurrency: 10, execArgv: [], env: { PACING: 'false' } }, async ([client]) => {
    const runs = [];
    for (let round = 0; round < (QUICK ? 2 : 3); round += 1) {
      await bench.webhook.reset('mixed');
      bench.proxy.reset();
      const result = await client.run({ eventFile, timeoutMs: DEADLINE_MS });
      runs.push({
        label: round === 0 ? 'first (fresh process: SDK loaded, queue URL looked up)' : `warm #${round}`,
        wallMs: result.wallMs,
        retried: result.failures,
        calls: bench.proxy.counts(),
        visibilityEntries: bench.proxy.visibilityEntries(),
      });
    }
    await bench.webhook.reset('ok');
    const allOk = await client.run({ eventFile, timeoutMs: DEADLINE_MS });
    if (allOk.failures > 0) bench.notes.push(`mixed: the all-200 baseline had ${allOk.failures} failures`);
    return {
      records: records.length,
      expectedRetries,
      runs,
      /** The same records all answered 200, same warm process, ms. */
      allOkMs: allOk.wallMs,
    };
  });
}
