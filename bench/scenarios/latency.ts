/**
 * `latency`: what the relay adds per record; the client stamps `process.hrtime.bigint()` when it starts a record, the webhook when
 * the request is complete (CLOCK_MONOTONIC: one clock for all processes). `latencyBound`: the relay and the bare loop against a
 * webhook that takes `delayMs` per request, measured against concurrency ÷ latency.
 */
import { type Bench, DEADLINE_MS, eventFile, log, QUICK, type Side, SIDES, warmUp, withSides } from '../harness';
import { median, percentile } from '../stats';

async function section(bench: Bench, concurrency: number) {
  const [records, runs] = QUICK ? [500, 2] : [2_000, 3];
  log(`latency, concurrency ${concurrency}`);
  const sides = [SIDES.relay, SIDES.bare];
  const perRun = sides.map(() => [] as { p50: number; p99: number; samples: number }[]);
  await withSides(bench, sides, { concurrency }, async (clients) => {
    await warmUp(bench, clients);
    for (let run = 0; run < runs; run += 1) {
      for (const [index, client] of clients.entries()) {
        await bench.webhook.reset('ok', { stampSize: records });
        const { started } = await client.run({ eventFile: eventFile(records), stamp: true, timeoutMs: DEADLINE_MS });
        const { received } = await bench.webhook.stats();
        const deltas: number[] = [];
        for (let record = 0; record < records; record += 1) {
          const [start = 0n, end = 0n] = [started?.[record], received?.[record]];
          if (start > 0n && end > 0n) deltas.push(Number(end - start) / 1000);
        }
        if (deltas.length !== records)
          bench.notes.push(`latency c=${concurrency} ${sides[index]?.name}: ${deltas.length} of ${records} records matched`);
        perRun[index]?.push({ p50: percentile(deltas, 50), p99: percentile(deltas, 99), samples: deltas.length });
      }
    }
  });
  const summary = (index: number) => {
    const own = perRun[index] ?? [];
    const samples = own.reduce((sum, run) => sum + run.samples, 0);
    return {
      side: sides[index]?.name ?? '',
      /** Median over runs of each run's percentile, µs. */
      p50Micros: median(own.map((run) => run.p50)),
      p99Micros: median(own.map((run) => run.p99)),
      samples,
    };
  };
  return { concurrency, records, runs, relay: summary(0), bare: summary(1) };
}

/** At concurrency 1 and 10, the relay and the bare loop. */
export async function latency(bench: Bench) {
  return [await section(bench, 1), await section(bench, 10)];
}

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
  return results;
}
