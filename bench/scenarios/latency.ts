/**
 * The latency the relay adds per record: the client stamps `process.hrtime.bigint()` when it starts
 * a record, the webhook when the request is complete (CLOCK_MONOTONIC: one clock for all processes).
 */
import { type Bench, DEADLINE_MS, eventFile, log, QUICK, SIDES, warmUp, withSides } from '../harness';
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

export async function latency(bench: Bench) {
  return [await section(bench, 1), await section(bench, 10)];
}
