/**
 * Instructions per record, counted by valgrind's callgrind: the one figure the machine's speed
 * does not move. Each side runs in its own client process under `valgrind --tool=callgrind
 * --instr-atstart=no` (same client, flags and environment as its throughput runs), one side at a
 * time, warms up uninstrumented, then counts the timed part of a few invocations; optionally
 * (`simulateCaches`) with estimated cycles, and always with OpenSSL's SHA-256 blocks counted apart.
 * Skipped, with the reason, where valgrind is not installed. BENCHMARKS.md's instruction section
 * says why each of these choices was made.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type ClientOptions, type ClientProcess, type CompiledChildren, SCRATCH_DIR, startClientProcess } from './children';
import type { RunRequest } from './protocol';

/** One side's counts. */
export interface InstructionCount {
  readonly side: string;
  /** Instructions per record of each counted invocation. */
  readonly perRecord: readonly number[];
  /**
   * Of those, the instructions in OpenSSL's SHA-256 block functions, per record of each counted
   * invocation. Absent from results written before it was counted, or where `callgrind_annotate`
   * could not read the dump.
   */
  readonly sha256PerRecord?: readonly number[];
  /** {@link estimatedCycles} per record of each counted invocation; absent from results written before it was counted. */
  readonly cyclesPerRecord?: readonly number[];
  /** Of those, OpenSSL's SHA-256 block functions', as {@link sha256PerRecord}. */
  readonly sha256CyclesPerRecord?: readonly number[];
}

/** The section's figures, or why there are none. */
export interface InstructionsSection {
  readonly concurrency: number;
  /** Records per invocation (valgrind runs a program about 50× slower: a smaller batch than the throughput runs'). */
  readonly records: number;
  readonly warmUpRuns: number;
  readonly sides: readonly InstructionCount[];
  readonly valgrind?: string;
  /** Whether this machine's CPU has the SHA extensions (`sha_ni`, or `sha2` on Arm) that valgrind's virtual CPU lacks. */
  readonly hostHasShaExtensions?: boolean;
  /** Set when the section did not run. */
  readonly skipped?: string;
}

/** A side to count: its name and how to start its client (node path, flags, environment). */
export interface CountedSide {
  readonly name: string;
  readonly client: ClientOptions & { readonly execPath: string };
}

/** Options of {@link countInstructions}. */
export interface CountOptions {
  readonly concurrency: number;
  readonly records: number;
  /** A file with the event of `records` records. */
  readonly eventFile: string;
  /** Uninstrumented invocations first: under valgrind V8 optimizes later than natively. */
  readonly warmUpRuns: number;
  readonly countedRuns: number;
  /** Simulate the caches and a branch predictor as well, for {@link estimatedCycles}. */
  readonly simulateCaches: boolean;
  readonly log: (line: string) => void;
}

/** valgrind's version line, or `undefined` when valgrind or callgrind_control is missing. */
export function valgrindVersion(): string | undefined {
  const version = spawnSync('valgrind', ['--version'], { encoding: 'utf8' });
  const control = spawnSync('callgrind_control', ['--version'], { encoding: 'utf8' });
  return version.status === 0 && control.status === 0 ? version.stdout.trim() : undefined;
}

/** Callgrind's newest dump of process `pid` in `dir`. */
function latestDump(dir: string, pid: number): string {
  const dumps = readdirSync(dir)
    .filter((name) => name.startsWith(`cg.${pid}.`))
    .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
  const newest = dumps.at(-1);
  if (newest === undefined) throw new Error(`callgrind wrote no dump for process ${pid} in ${dir}`);
  return join(dir, newest);
}

/** Callgrind's counts by event name (`Ir`, `I1mr`, `Bcm`, …); an event not collected is absent. */
export type EventCounts = Readonly<Record<string, number>>;

/** The `totals:` line of a callgrind dump, by the names of its `events:` line. */
export function totalsOf(dump: string): EventCounts {
  const names = /^events: (.+)$/m.exec(dump)?.[1]?.trim().split(/\s+/);
  const values = /^(?:totals|summary): (.+)$/m.exec(dump)?.[1]?.trim().split(/\s+/);
  if (names === undefined || values === undefined) throw new Error('no events or totals line in the callgrind dump');
  return Object.fromEntries(names.map((name, index) => [name, Number(values[index] ?? 0)]));
}

/**
 * Cycles estimated from simulated events, with the costs the cachegrind manual gives as typical
 * of a modern machine: an instruction 1, an L1 miss or a mispredicted branch 10, a last-level
 * miss 100. A model: it reads which side keeps the CPU busier, not how long either takes.
 * @returns NaN when the cache or branch events were not collected
 */
export function estimatedCycles(counts: EventCounts): number {
  const event = (name: string): number => counts[name] ?? Number.NaN;
  const l1Misses = event('I1mr') + event('D1mr') + event('D1mw');
  const lastLevelMisses = event('ILmr') + event('DLmr') + event('DLmw');
  const mispredicted = event('Bcm') + event('Bim');
  return event('Ir') + 10 * (l1Misses + mispredicted) + 100 * lastLevelMisses;
}

/**
 * The events of OpenSSL's SHA-256 block functions (`sha256_block_data_order` and its
 * CPU-specific variants), summed, from `callgrind_annotate --show-percs=no --show=<events>`'s
 * listing of a dump; 0 for each event when there are none.
 */
export function sha256BlockCounts(annotated: string, events: readonly string[]): EventCounts {
  const sums = Object.fromEntries(events.map((name) => [name, 0]));
  for (const line of annotated.split('\n')) {
    const match = /^\s*((?:[\d,.]+\s+)+)\S*:sha256_block_data_order\w*\s/.exec(line);
    if (match === null) continue;
    // One column per event, in the order asked for; callgrind_annotate writes a zero as ".".
    const values = (match[1] as string).trim().split(/\s+/);
    events.forEach((name, index) => {
      const value = values[index] ?? '.';
      sums[name] = (sums[name] ?? 0) + (value === '.' ? 0 : Number(value.replaceAll(',', '')));
    });
  }
  return sums;
}

/** {@link sha256BlockCounts} of a dump; `undefined` when `callgrind_annotate` cannot read it. */
function sha256Of(dumpFile: string, events: readonly string[]): EventCounts | undefined {
  const annotated = spawnSync(
    'callgrind_annotate',
    ['--threshold=100', '--auto=no', '--show-percs=no', `--show=${events.join(',')}`, dumpFile],
    {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return annotated.status === 0 ? sha256BlockCounts(annotated.stdout, events) : undefined;
}

/** Whether this machine's CPU has SHA extensions (x86 `sha_ni`, Arm `sha2`), per /proc/cpuinfo; `undefined` where it cannot tell. */
function hostHasShaExtensions(): boolean | undefined {
  try {
    return /^(?:flags|Features)\s*:.*\b(?:sha_ni|sha2)\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return undefined;
  }
}

async function countSide(compiled: CompiledChildren, side: CountedSide, dir: string, options: CountOptions): Promise<InstructionCount> {
  const { execPath, execArgv = [] } = side.client;
  const client: ClientProcess = await startClientProcess(compiled, {
    ...side.client,
    execPath: 'valgrind',
    execArgv: [
      '--tool=callgrind',
      '--instr-atstart=no',
      ...(options.simulateCaches ? ['--cache-sim=yes', '--branch-sim=yes'] : []),
      `--callgrind-out-file=${join(dir, 'cg.%p')}`,
      execPath,
      ...execArgv,
    ],
    pinned: false,
  });
  try {
    const request: Omit<RunRequest, 'type' | 'id'> = { eventFile: options.eventFile, timeoutMs: 3_600_000 };
    const runTimeoutMs = 3_600_000;
    for (let run = 0; run < options.warmUpRuns; run += 1) await client.run(request, runTimeoutMs);
    const perRecord: number[] = [];
    const cyclesPerRecord: number[] = [];
    const sha256PerRecord: number[] = [];
    const sha256CyclesPerRecord: number[] = [];
    for (let run = 0; run < options.countedRuns; run += 1) {
      const result = await client.run({ ...request, countInstructions: true }, runTimeoutMs);
      if (result.failures > 0) throw new Error(`${side.name}: ${result.failures} records failed under valgrind`);
      const dumpFile = latestDump(dir, client.pid);
      const totals = totalsOf(readFileSync(dumpFile, 'utf8'));
      perRecord.push((totals.Ir ?? Number.NaN) / result.records);
      if (options.simulateCaches) cyclesPerRecord.push(estimatedCycles(totals) / result.records);
      const sha256 = sha256Of(dumpFile, Object.keys(totals));
      if (sha256 !== undefined) {
        sha256PerRecord.push((sha256.Ir ?? Number.NaN) / result.records);
        if (options.simulateCaches) sha256CyclesPerRecord.push(estimatedCycles(sha256) / result.records);
      }
    }
    const perRecordText = (counts: readonly number[]): string =>
      counts.map((count) => Math.round(count).toLocaleString('en-US')).join(', ');
    const cyclesText = options.simulateCaches ? `; estimated cycles ${perRecordText(cyclesPerRecord)}` : '';
    options.log(
      `  instructions: ${side.name} ${perRecordText(perRecord)} per record (SHA-256 blocks: ${perRecordText(sha256PerRecord)})${cyclesText}`,
    );
    // The SHA-256 figures only where callgrind_annotate read every counted dump.
    const hashing =
      sha256PerRecord.length === perRecord.length ? { sha256PerRecord, ...(options.simulateCaches ? { sha256CyclesPerRecord } : {}) } : {};
    return { side: side.name, perRecord, ...(options.simulateCaches ? { cyclesPerRecord } : {}), ...hashing };
  } finally {
    await client.stop();
  }
}

/**
 * Counts each side's instructions per record, one side at a time, against a webhook answering 200.
 * @returns the counts, in the order of `sides`
 */
export async function countInstructions(
  compiled: CompiledChildren,
  sides: readonly CountedSide[],
  options: CountOptions,
): Promise<InstructionsSection> {
  const base = { concurrency: options.concurrency, records: options.records, warmUpRuns: options.warmUpRuns };
  const valgrind = valgrindVersion();
  if (valgrind === undefined) return { ...base, sides: [], skipped: 'valgrind (with callgrind_control) is not installed' };
  const dir = join(SCRATCH_DIR, 'callgrind');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const counts: InstructionCount[] = [];
  for (const side of sides) counts.push(await countSide(compiled, side, dir, options));
  const hasSha = hostHasShaExtensions();
  return { ...base, sides: counts, valgrind, ...(hasSha === undefined ? {} : { hostHasShaExtensions: hasSha }) };
}
