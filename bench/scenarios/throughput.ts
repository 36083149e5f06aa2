/** Throughput and CPU per record: the relay, its limits and the peer, side by side in rounds (BENCHMARKS.md §1–2). */
import {
  BARE,
  BARE_SIGNING,
  BARE_UNSIGNED,
  BATCH,
  type Bench,
  compare,
  log,
  MEASURED_RUNS,
  PEER,
  QUICK,
  RELAY,
  RELAY_UNSIGNED,
  ROUNDS,
  type Side,
} from '../harness';
import type { ThroughputSection } from '../results';

async function section(bench: Bench, concurrency: number, sides: readonly Side[], rounds: number): Promise<ThroughputSection> {
  log(`throughput, ${BATCH} records, concurrency ${concurrency}: ${sides.map((side) => side.name).join(', ')}`);
  const summaries = await compare(bench, sides, concurrency, rounds);
  return { concurrency, records: BATCH, measuredRunsPerRound: MEASURED_RUNS, sides: summaries };
}

export async function throughput(bench: Bench): Promise<ThroughputSection[]> {
  return [
    await section(bench, 10, [RELAY, BARE_SIGNING, RELAY_UNSIGNED, BARE_UNSIGNED, BARE, PEER], ROUNDS),
    ...(QUICK ? [] : [await section(bench, 50, [RELAY, BARE_SIGNING, BARE, PEER], 7)]),
  ];
}
