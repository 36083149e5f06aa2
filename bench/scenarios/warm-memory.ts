/**
 * Peak RSS in a warm container as deployed: one process per side and batch size, with the heap
 * limits Lambda gives the template's memory size and no other flag, invocations back to back.
 */
import { readFileSync } from 'node:fs';
import { BATCH, type Bench, DEADLINE_MS, eventFile, log, SIDES, withSides } from '../harness';
import { eventJson } from '../records';

/** Lambda's cap on an invocation's payload: no SQS batch handed to the function is bigger. */
const MAX_INVOCATION_PAYLOAD_BYTES = 6 * 1024 * 1024;
/** Invocations in a row: the relay's RSS levels off within them. */
const INVOCATIONS = 6;

/** The V8 heap limits Lambda's runtime bootstrap derives from the memory size (integer arithmetic): a tenth young, half per semi-space. */
export function lambdaHeapFlags(memorySizeMb: number): string[] {
  const youngMb = Math.floor(memorySizeMb / 10);
  return [`--max-semi-space-size=${Math.floor(youngMb / 2)}`, `--max-old-space-size=${memorySizeMb - youngMb}`];
}

/** The no-op handler and the relay, at the big batch and at the most records Lambda delivers in one event. */
export async function warmMemory(bench: Bench) {
  const heapFlags = lambdaHeapFlags(bench.bundle.memorySize);
  log(`memory: ${INVOCATIONS} invocations in a row, ${heapFlags.join(' ')}`);
  // The most records whose event fits in Lambda's invocation payload.
  let deliverable = Math.floor(MAX_INVOCATION_PAYLOAD_BYTES / (eventJson(1_000).length / 1_000));
  while (eventJson(deliverable).length > MAX_INVOCATION_PAYLOAD_BYTES) deliverable -= 1;
  const rows = [];
  for (const records of deliverable < BATCH ? [BATCH, deliverable] : [BATCH]) {
    const file = eventFile(records);
    for (const side of [SIDES.noop, SIDES.relay]) {
      const peakMiBByInvocation = await withSides(bench, [side], { concurrency: 10, execArgv: heapFlags }, async ([client]) => {
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
      rows.push({
        side: side.name,
        records,
        /** Bytes of the event's JSON, as Lambda hands it over. */
        eventBytes: readFileSync(file).length,
        /** maxRSS after each invocation, MiB (a peak: it never falls). */
        peakMiBByInvocation,
      });
    }
  }
  return {
    /** The function's memory size in the synthesized template, MB. */
    memorySizeMb: bench.bundle.memorySize,
    /** The V8 flags Lambda's runtime derives from it. */
    heapFlags,
    rows,
  };
}
