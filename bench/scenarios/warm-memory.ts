/**
 * Peak RSS in a warm container as deployed: one process per side and batch size, with the heap
 * limits Lambda gives the template's memory size and no other flag, invocations back to back.
 */
import { readFileSync } from 'node:fs';
import { startClientProcess } from '../children';
import { lambdaHeapFlags } from '../environment';
import { BATCH, type Bench, DEADLINE_MS, eventFile, log, sideClient, withClients, SIDES } from '../harness';
import { eventJson } from '../records';
import type { WarmMemoryRow, WarmMemorySection } from '../results';

/** Lambda's cap on an invocation's payload: no SQS batch handed to the function is bigger. */
const MAX_INVOCATION_PAYLOAD_BYTES = 6 * 1024 * 1024;
/** Invocations in a row: the relay's RSS levels off within them. */
const INVOCATIONS = 6;

export async function warmMemory(bench: Bench): Promise<WarmMemorySection> {
  const heapFlags = lambdaHeapFlags(bench.bundle.memorySize);
  log(`memory: ${INVOCATIONS} invocations in a row, ${heapFlags.join(' ')}`);
  // The most records whose event fits in Lambda's invocation payload.
  let deliverable = Math.floor(MAX_INVOCATION_PAYLOAD_BYTES / (eventJson(1_000).length / 1_000));
  while (eventJson(deliverable).length > MAX_INVOCATION_PAYLOAD_BYTES) deliverable -= 1;
  const rows: WarmMemoryRow[] = [];
  for (const records of deliverable < BATCH ? [BATCH, deliverable] : [BATCH]) {
    const file = eventFile(records);
    for (const side of [SIDES.noop, SIDES.relay]) {
      const start = () => startClientProcess(bench.compiled, sideClient(bench, side, 10, heapFlags));
      const peakMiBByInvocation = await withClients([start], async ([client]) => {
        const peaks: number[] = [];
        for (let invocation = 0; invocation < INVOCATIONS; invocation += 1) {
          await bench.webhook.reset('ok');
          const result = await client.run({ eventFile: file, timeoutMs: DEADLINE_MS });
          const delivered = (await bench.webhook.stats()).requests;
          if (side !== SIDES.noop && (result.failures > 0 || delivered !== records))
            bench.notes.push(`warm memory ${side.name}: ${result.failures} failures, ${delivered} of ${records} delivered`);
          peaks.push(result.maxRssKiB / 1024);
        }
        return peaks;
      });
      rows.push({ side: side.name, records, eventBytes: readFileSync(file).length, peakMiBByInvocation });
    }
  }
  return { memorySizeMb: bench.bundle.memorySize, heapFlags, rows };
}
