/** The relay and the bare loop against a webhook that takes `delayMs` per request: measured against concurrency ÷ latency. */
import { BARE, DEADLINE_MS, eventFile, log, QUICK, RELAY, startSide } from '../harness';
import type { LatencyBoundRun } from '../results';
import { scenario } from './scenario';

const CASES = QUICK
  ? [{ delayMs: 20, concurrency: 10 }]
  : [
      { delayMs: 10, concurrency: 10 },
      { delayMs: 50, concurrency: 10 },
      { delayMs: 10, concurrency: 50 },
      { delayMs: 50, concurrency: 50 },
    ];

export default scenario('latencyBound', async (bench) => {
  log('latency-bound throughput (webhook answering after a delay)');
  const results: LatencyBoundRun[] = [];
  for (const { delayMs, concurrency } of CASES) {
    const model = (concurrency * 1000) / delayMs;
    const records = Math.max(200, Math.round(model)); // about one second of traffic at the model's rate
    const rates: number[] = [];
    for (const side of [RELAY, BARE]) {
      const client = await startSide(bench, side, concurrency);
      try {
        await bench.webhook.reset('ok', { delayMs });
        await client.run({ eventFile: eventFile(Math.min(records, 500)), timeoutMs: DEADLINE_MS });
        await bench.webhook.reset('ok', { delayMs });
        const result = await client.run({ eventFile: eventFile(records), timeoutMs: DEADLINE_MS });
        rates.push((result.records / result.wallMs) * 1000);
      } finally {
        await client.stop();
      }
    }
    results.push({
      delayMs,
      concurrency,
      records,
      recordsPerSecond: rates[0] ?? Number.NaN,
      bareRecordsPerSecond: rates[1] ?? Number.NaN,
      modelRecordsPerSecond: model,
    });
  }
  await bench.webhook.reset('ok');
  return results;
});
