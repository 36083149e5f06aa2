/** The relay and the bare loop against a webhook that takes `delayMs` per request: measured against concurrency ÷ latency. */
import { DEADLINE_MS, eventFile, log, QUICK, type Side, type Bench, startSide, withClients, SIDES } from '../harness';
import type { LatencyBoundRun } from '../results';

const CASES = QUICK
  ? [{ delayMs: 20, concurrency: 10 }]
  : [10, 50].flatMap((concurrency) => [10, 50].map((delayMs) => ({ delayMs, concurrency })));

export async function latencyBound(bench: Bench): Promise<LatencyBoundRun[]> {
  log('latency-bound throughput (webhook answering after a delay)');
  const results: LatencyBoundRun[] = [];
  for (const { delayMs, concurrency } of CASES) {
    const modelRecordsPerSecond = (concurrency * 1000) / delayMs;
    const records = Math.max(200, Math.round(modelRecordsPerSecond)); // about one second of traffic at the model's rate
    const rate = (side: Side): Promise<number> =>
      withClients([() => startSide(bench, side, concurrency)], async ([client]) => {
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
      bareRecordsPerSecond: await rate(SIDES.bare),
      modelRecordsPerSecond,
    });
  }
  await bench.webhook.reset('ok');
  return results;
}
