/**
 * Peak RSS in a warm container as deployed: one process per side and batch size, with the heap
 * limits Lambda gives the template's memory size and no other flag, invocations back to back.
 */
import { readFileSync } from 'node:fs';
import { type ClientProcess, startClientProcess } from '../children';
import { lambdaHeapFlags } from '../environment';
import { BATCH, DEADLINE_MS, eventFile, log, NOOP, RELAY, sideClient, withClients } from '../harness';
import { eventJson } from '../records';
import type { WarmMemoryRow } from '../results';
import { scenario } from './scenario';

/** Lambda's cap on an invocation's payload: no SQS batch handed to the function is bigger. */
const MAX_INVOCATION_PAYLOAD_BYTES = 6 * 1024 * 1024;
/** Invocations in a row: the relay's RSS levels off within them. */
const INVOCATIONS = 6;

/** The most benchmark records whose event fits in Lambda's invocation payload. */
function largestDeliverableBatch(): number {
  let count = Math.floor(MAX_INVOCATION_PAYLOAD_BYTES / (eventJson(1_000).length / 1_000));
  while (eventJson(count).length > MAX_INVOCATION_PAYLOAD_BYTES) count -= 1;
  return count;
}

export default scenario('warmMemory', async (bench) => {
  const heapFlags = lambdaHeapFlags(bench.bundle.memorySize);
  log(`memory: ${INVOCATIONS} invocations in a row, ${heapFlags.join(' ')}`);
  const rows: WarmMemoryRow[] = [];
  const deliverable = largestDeliverableBatch();
  for (const records of deliverable < BATCH ? [BATCH, deliverable] : [BATCH]) {
    const file = eventFile(records);
    const eventBytes = readFileSync(file).length;
    for (const side of [NOOP, RELAY]) {
      const start = (): Promise<ClientProcess> =>
        startClientProcess(bench.compiled, { ...sideClient(bench, side, 10, true), execArgv: heapFlags });
      const peakMiBByInvocation = await withClients([start], async ([client]) => {
        const peaks: number[] = [];
        for (let invocation = 0; invocation < INVOCATIONS; invocation += 1) {
          await bench.webhook.reset('ok');
          const result = await client.run({ eventFile: file, timeoutMs: DEADLINE_MS });
          const delivered = (await bench.webhook.stats()).requests;
          if (side.kind !== 'noop' && (result.failures > 0 || delivered !== records))
            bench.notes.push(`warm memory ${side.name}: ${result.failures} failures, ${delivered} of ${records} delivered`);
          peaks.push(result.maxRssKiB / 1024);
        }
        return peaks;
      });
      rows.push({ side: side.name, records, eventBytes, peakMiBByInvocation });
    }
  }
  return { memorySizeMb: bench.bundle.memorySize, heapFlags, rows };
});
