/** Throughput and CPU per record: the relay, its limits and the peer, side by side in rounds (BENCHMARKS.md §1–2). */
import type { ClientProcess } from '../children';
import { BATCH, type Bench, log, QUICK, ROUNDS, roundOrder, type Side, SIDES, throughputRun, warmUp, withSides } from '../harness';
import type { ThroughputRun } from '../results';
import { median } from '../stats';

/** Measured invocations of each side per round: three triple the pairs for about 40 % more time. */
const MEASURED_RUNS = QUICK ? 1 : 3;

/** `rounds` rounds, each in fresh processes (a fresh draw of each one's luck): warm up, then {@link MEASURED_RUNS} in `roundOrder`. */
async function section(bench: Bench, concurrency: number, sides: readonly Side[], rounds: number) {
  log(`throughput, ${BATCH} records, concurrency ${concurrency}: ${sides.map((side) => side.name).join(', ')}`);
  const runs: ThroughputRun[][] = sides.map(() => []);
  for (let round = 0; round < rounds; round += 1) {
    await withSides(bench, sides, { concurrency }, async (clients) => {
      await warmUp(bench, clients);
      // Every side's n-th run sits at the same index of its runs: the pairs the ratios are made of.
      for (let repeat = 0; repeat < MEASURED_RUNS; repeat += 1) {
        for (const index of roundOrder(sides.length, round * MEASURED_RUNS + repeat)) {
          runs[index]?.push(await throughputRun(bench, clients[index] as ClientProcess, BATCH));
        }
      }
    });
    const rates = sides.map((side, index) => `${side.name} ${Math.round(runs[index]?.at(-1)?.recordsPerSecond ?? 0)}/s`);
    log(`  c=${concurrency} round ${round + 1}/${rounds}: ${rates.join(', ')}`);
  }
  const summaries = sides.map(({ name, description }, index) => {
    const own = runs[index] ?? [];
    const medianOf = (figure: keyof ThroughputRun): number => median(own.map((run) => run[figure]));
    return {
      side: name,
      description,
      runs: own,
      recordsPerSecond: medianOf('recordsPerSecond'),
      cpuMicrosPerRecord: medianOf('cpuMicrosPerRecord'),
      clientCores: medianOf('clientCores'),
      webhookCores: medianOf('webhookCores'),
    };
  });
  return {
    concurrency,
    records: BATCH,
    /** Measured invocations of each side in a round, after its warm-ups (each side has rounds × this many runs). */
    measuredRunsPerRound: MEASURED_RUNS,
    sides: summaries,
  };
}

/** Concurrency 10, every bare loop and the peer beside the relay; concurrency 50 (not with `--quick`), the signed ones and the peer. */
export async function throughput(bench: Bench) {
  return [
    await section(bench, 10, [SIDES.relay, SIDES.bareSigning, SIDES.relayUnsigned, SIDES.bareUnsigned, SIDES.bare, SIDES.peer], ROUNDS),
    ...(QUICK ? [] : [await section(bench, 50, [SIDES.relay, SIDES.bareSigning, SIDES.bare, SIDES.peer], 7)]),
  ];
}
