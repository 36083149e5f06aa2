/** The relay and the bare loop against a webhook that takes `delayMs` per request: measured against concurrency ÷ latency. */
import { BARE, DEADLINE_MS, eventFile, log, QUICK, RELAY, startSide, withClients } from '../harness';
import type { ClientProcess } from '../children';
import type { RunResult } from '../protocol';
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
      const run = async (client: ClientProcess, count: number): Promise<RunResult> => {
        await bench.webhook.reset('ok', { delayMs });
        return client.run({ eventFile: eventFile(count), timeoutMs: DEADLINE_MS });
      };
      const result = await withClients([() => startSide(bench, side, concurrency)], async ([client]) => {
        await run(client, Math.min(records, 500)); // warm-up
        return run(client, records);
      });
      rates.push((result.records / result.wallMs) * 1000);
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
