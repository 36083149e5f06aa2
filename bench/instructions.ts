/** Instructions per record, counted by valgrind's callgrind (scenarios/instructions.ts): the figures, and how a dump is read. */

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

/** The program's instructions and OpenSSL's SHA-256 block functions' (any CPU variant), from `callgrind_annotate --show=Ir`'s listing. */
export function annotatedCounts(listing: string): { readonly total: number; readonly sha256: number } {
  const count = (digits: string | undefined): number => Number(digits?.replaceAll(',', '') ?? Number.NaN);
  const total = count(/^\s*([\d,]+)\s+PROGRAM TOTALS/m.exec(listing)?.[1]);
  if (Number.isNaN(total)) throw new Error('no PROGRAM TOTALS line in the callgrind_annotate listing');
  const blocks = listing.matchAll(/^\s*([\d,]+)\s+\S*:sha256_block_data_order\w*\s/gm);
  return { total, sha256: [...blocks].reduce((sum, block) => sum + count(block[1]), 0) };
}
