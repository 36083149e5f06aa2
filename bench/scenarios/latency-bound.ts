/** The relay and the bare loop against a webhook that takes `delayMs` per request: measured against concurrency ÷ latency. */
import { type Bench, DEADLINE_MS, eventFile, log, QUICK, type Side, SIDES, withSides } from '../harness';

const CASES = QUICK
  ? [{ delayMs: 20, concurrency: 10 }]
  : [10, 50].flatMap((concurrency) => [10, 50].map((delayMs) => ({ delayMs, concurrency })));

/** Throughput against a webhook that takes `delayMs` to answer: the production regime. */
export async function latencyBound(bench: Bench) {
  log('latency-bound throughput (webhook answering after a delay)');
  const results = [];
  for (const { delayMs, concurrency } of CASES) {
    const modelRecordsPerSecond = (concurrency * 1000) / delayMs;
    const records = Math.max(200, Math.round(modelRecordsPerSecond)); // about one second of traffic at the model's rate
    const rate = (side: Side): Promise<number> =>
      withSides(bench, [side], { concurrency }, async ([client]) => {
        const run = async (count: number) => {
          await bench.webhook.reset('ok', { delayMs });
          return client.run({ eventFile: eventFile(count), timeoutMs: DEADLINE_MS });
        };
        await run(Math.min(records, 500)); // warm-up
        const result = await run(records);
        if (result.failures > 0)
          bench.notes.push(`latency-bound ${side.name}, ${delayMs} ms, c=${concurrency}: ${result.failures} failures`);
        return (result.records / result.wallMs) * 1000;
      });
    results.push({
      delayMs,
      concurrency,
      records,
      recordsPerSecond: await rate(SIDES.relay),
      /** The bare node:http loop against the same delaying webhook. */
      bareRecordsPerSecond: await rate(SIDES.bare),
      /** `concurrency × 1000 / delayMs`: the ceiling if the relay added nothing. */
      modelRecordsPerSecond,
    });
  }
  await bench.webhook.reset('ok');
  return results;
}
