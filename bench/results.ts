/**
 * The scenarios (bench/scenarios/), in the order they run, and the shape of one run's figures: each field of `BenchResults` is what its
 * scenario returns, documented where the scenario computes it, and what `report.ts` writes; and the machine they come from.
 */
import { execFileSync } from 'node:child_process';
import { cpus, release, totalmem } from 'node:os';
import { PROJECT_ROOT } from '../testkit/synth';
import { CPU_PINNING, SPEED_NODE_FLAGS } from './children';
import type { throughputRun } from './harness';
import { backPressure, capacity, perKey, perMessage, rateLimitHeaders, recovery } from './scenarios/back-pressure';
import { coldStart } from './scenarios/cold-start';
import { deadLetters } from './scenarios/dead-letters';
import { instructions } from './scenarios/instructions';
import { latency, latencyBound } from './scenarios/latency';
import { mixed } from './scenarios/mixed';
import { throughput } from './scenarios/throughput';
import { warmMemory } from './scenarios/warm-memory';

/** Every scenario by the figures it measures (`--only` names it in kebab case): a function of bench/scenarios/ and a line here. */
export const SCENARIOS = {
  throughput,
  instructions,
  latency,
  latencyBound,
  warmMemory,
  coldStart,
  mixed,
  backPressure,
  capacity,
  perMessage,
  rateLimitHeaders,
  perKey,
  recovery,
  deadLetters,
};

/** `T` read-only all the way down: figures are read back, never changed. */
type ReadOnly<T> = T extends readonly (infer E)[]
  ? readonly ReadOnly<E>[]
  : T extends object
    ? { readonly [K in keyof T]: ReadOnly<T[K]> }
    : T;

/** The figures of every scenario. */
export type Figures = ReadOnly<{ [K in keyof typeof SCENARIOS]: Awaited<ReturnType<(typeof SCENARIOS)[K]>> }>;

/** The machine the figures come from. @param node the Node.js binary the children run on */
export function machineInfo(node: string) {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
  let commit = 'unknown'; // not a git checkout
  try {
    const dirty = git('status', '--porcelain', '--', 'lambda', 'lib', 'bin', 'package.json') !== '';
    commit = `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes' : ''}`;
  } catch {}
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: node === process.execPath ? process.version : execFileSync(node, ['-p', 'process.version'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit,
    /** Where the children ran (CPU pinning). */
    placement:
      CPU_PINNING === undefined
        ? 'wherever the scheduler put them (no taskset, or one CPU)'
        : `each client held to CPU ${CPU_PINNING.client} (with ${SPEED_NODE_FLAGS.join(' ')}), the webhook to CPU ${CPU_PINNING.webhook} (taskset)`,
  };
}

/** The back-pressure scenarios' figures: results written before each was measured lack it. */
export type BackPressureKey = 'backPressure' | 'capacity' | 'perMessage' | 'rateLimitHeaders' | 'perKey' | 'recovery';

/** `T` with the fields `K` optional: results written before those were measured lack them. */
type WithOptional<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** One run: its facts and its figures. */
export type BenchResults = WithOptional<Figures, BackPressureKey | 'deadLetters'> & {
  readonly machine: ReadOnly<WithOptional<ReturnType<typeof machineInfo>, 'placement'>>;
  readonly quick: boolean;
  readonly durationSeconds: number;
  /** The relay's settings the report names: the template's values the children ran with. */
  readonly relayConfig: Readonly<Record<string, string>>;
  /** What went wrong without stopping the run. */
  readonly notes: readonly string[];
};

/** One invocation of one side. */
export type ThroughputRun = ReadOnly<Awaited<ReturnType<typeof throughputRun>>>;
/** The sides measured at one concurrency. */
export type ThroughputSection = Figures['throughput'][number];
/** One side's runs and their medians. */
export type SideSummary = ThroughputSection['sides'][number];
/** One side at one batch size, in a warm container as deployed. */
export type WarmMemoryRow = Figures['warmMemory']['rows'][number];
export type { BackPressureKind, BackPressureRun, BackPressureSection } from './scenarios/back-pressure';
export type { InstructionCount, InstructionsSection } from './scenarios/instructions';
