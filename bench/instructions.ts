/** Instructions per record, counted by valgrind's callgrind (scenarios/instructions.ts): the figures, and what is read from valgrind. */
import { spawnSync } from 'node:child_process';

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

/** valgrind's version line, or `undefined` when valgrind, `callgrind_control` or `callgrind_annotate` is missing. */
export function valgrindVersion(): string | undefined {
  // Found is enough: `callgrind_annotate --version` exits 255.
  const versions = ['valgrind', 'callgrind_control', 'callgrind_annotate'].map((tool) =>
    spawnSync(tool, ['--version'], { encoding: 'utf8' }),
  );
  return versions.every((version) => version.error === undefined) ? versions[0]?.stdout.trim() : undefined;
}

/** The program's instructions and OpenSSL's SHA-256 block functions' (any CPU variant), from `callgrind_annotate --show=Ir`'s listing. */
export function annotatedCounts(listing: string): { readonly total: number; readonly sha256: number } {
  const count = (digits: string | undefined): number => Number(digits?.replaceAll(',', '') ?? Number.NaN);
  const total = count(/^\s*([\d,]+)\s+PROGRAM TOTALS/m.exec(listing)?.[1]);
  if (Number.isNaN(total)) throw new Error('no PROGRAM TOTALS line in the callgrind_annotate listing');
  const blocks = listing.matchAll(/^\s*([\d,]+)\s+\S*:sha256_block_data_order\w*\s/gm);
  return { total, sha256: [...blocks].reduce((sum, block) => sum + count(block[1]), 0) };
}

/** {@link annotatedCounts} of callgrind's dump `file`. */
export function dumpCounts(file: string): { readonly total: number; readonly sha256: number } {
  const args = ['--threshold=100', '--auto=no', '--show-percs=no', '--show=Ir', file];
  const annotated = spawnSync('callgrind_annotate', args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (annotated.status !== 0) throw new Error(`callgrind_annotate ${file} failed: ${annotated.stderr}`);
  return annotatedCounts(annotated.stdout);
}
