/** Instructions per record of the relay and its limits, counted by valgrind's callgrind (BENCHMARKS.md says why); how a dump is read. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SCRATCH_DIR } from '../children';
import { type Bench, eventFile, log, QUICK, SIDES, withSides } from '../harness';

/** One side's counts. */
export interface InstructionCount {
  readonly side: string;
  /** Instructions per record of each counted invocation. */
  readonly perRecord: readonly number[];
  /** Of those, OpenSSL's SHA-256 block functions'; absent from results written before they were counted. */
  readonly sha256PerRecord?: readonly number[];
}

/** The section's figures, or why there are none. */
export interface InstructionsSection {
  readonly concurrency: number;
  /** Records per invocation (smaller than the throughput runs': valgrind runs a program about 50× slower). */
  readonly records: number;
  readonly warmUpRuns: number;
  readonly sides: readonly InstructionCount[];
  readonly valgrind?: string;
  /** Whether this machine's CPU has the SHA extensions (`sha_ni`, or `sha2` on Arm) that valgrind's virtual CPU lacks. */
  readonly hostHasShaExtensions?: boolean;
  /** Set when the section did not run. */
  readonly skipped?: string;
}

/** Records per counted invocation under valgrind (about 50× slower than natively). */
const RECORDS = QUICK ? 500 : 2_000;
/** Uninstrumented invocations first: under valgrind V8 optimizes later; on Node.js 24 the counts settle from the tenth on. */
const WARM_UP_RUNS = QUICK ? 2 : 10;
const COUNTED_RUNS = QUICK ? 1 : 6;
const CONCURRENCY = 10;
const RUN_TIMEOUT_MS = 3_600_000;
const ANNOTATE_ARGS = ['--threshold=100', '--auto=no', '--show-percs=no', '--show=Ir'];
const ANNOTATE_OPTIONS = { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 } as const;

/** The program's instructions and OpenSSL's SHA-256 block functions' (any CPU variant), from `callgrind_annotate --show=Ir`'s listing. */
export function annotatedCounts(listing: string): { readonly total: number; readonly sha256: number } {
  const count = (digits: string | undefined): number => Number(digits?.replaceAll(',', '') ?? Number.NaN);
  const total = count(/^\s*([\d,]+)\s+PROGRAM TOTALS/m.exec(listing)?.[1]);
  if (Number.isNaN(total)) throw new Error('no PROGRAM TOTALS line in the callgrind_annotate listing');
  const blocks = listing.matchAll(/^\s*([\d,]+)\s+\S*:sha256_block_data_order\w*\s/gm);
  return { total, sha256: [...blocks].reduce((sum, block) => sum + count(block[1]), 0) };
}

/** The relay and its limits, signed and unsigned, one side at a time; skipped without valgrind. */
export async function instructions(bench: Bench): Promise<InstructionsSection> {
  const section = { concurrency: CONCURRENCY, records: RECORDS, warmUpRuns: WARM_UP_RUNS };
  // Found is enough: `callgrind_annotate --version` exits 255.
  const tools = ['valgrind', 'callgrind_control', 'callgrind_annotate'].map((tool) => spawnSync(tool, ['--version'], { encoding: 'utf8' }));
  const valgrind = tools.every((tool) => tool.error === undefined) ? tools[0]?.stdout.trim() : undefined;
  if (valgrind === undefined)
    return { ...section, sides: [], skipped: 'valgrind (with callgrind_control and callgrind_annotate) is not installed' };
  const sides = [SIDES.relay, SIDES.bareSigning, SIDES.relayUnsigned, SIDES.bareUnsigned];
  log(`instructions per record (callgrind), concurrency ${CONCURRENCY}: ${sides.map((side) => side.name).join(', ')}`);
  await bench.webhook.reset('ok');
  const dir = join(SCRATCH_DIR, 'callgrind');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const request = { eventFile: eventFile(RECORDS), timeoutMs: RUN_TIMEOUT_MS };
  const counts: InstructionCount[] = [];
  // One side at a time, each in a client process of its own under callgrind, same flags and environment as its throughput runs.
  for (const side of sides) {
    await withSides(bench, [side], { concurrency: CONCURRENCY, callgrindOutFile: join(dir, 'cg.%p') }, async ([client]) => {
      for (let run = 0; run < WARM_UP_RUNS; run += 1) await client.run(request, RUN_TIMEOUT_MS);
      const perRecord: number[] = [];
      const sha256PerRecord: number[] = [];
      for (let run = 1; run <= COUNTED_RUNS; run += 1) {
        const result = await client.run({ ...request, countInstructions: true }, RUN_TIMEOUT_MS);
        if (result.failures > 0) throw new Error(`${side.name}: ${result.failures} records failed under valgrind`);
        // Callgrind numbers a process's dumps from 1; the client dumps once per counted run.
        const file = join(dir, `cg.${client.pid}.${run}`);
        const annotated = spawnSync('callgrind_annotate', [...ANNOTATE_ARGS, file], ANNOTATE_OPTIONS);
        if (annotated.status !== 0) throw new Error(`callgrind_annotate ${file} failed: ${annotated.stderr}`);
        const { total, sha256 } = annotatedCounts(annotated.stdout);
        perRecord.push(total / result.records);
        sha256PerRecord.push(sha256 / result.records);
      }
      const text = (values: number[]): string => values.map((value) => Math.round(value).toLocaleString('en-US')).join(', ');
      log(`  instructions: ${side.name} ${text(perRecord)} per record (SHA-256 blocks: ${text(sha256PerRecord)})`);
      counts.push({ side: side.name, perRecord, sha256PerRecord });
    });
  }
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : undefined;
  const hostHasShaExtensions =
    cpuinfo === undefined ? {} : { hostHasShaExtensions: /^(?:flags|Features)\s*:.*\b(?:sha_ni|sha2)\b/m.test(cpuinfo) };
  return { ...section, sides: counts, valgrind, ...hostHasShaExtensions };
}
