/** The shape of one benchmark run's figures: what the scenarios (bench/scenarios/) measure and `report.ts` writes. */
import type { InstructionsSection } from './instructions';
import type { MachineInfo } from './environment';

/** One invocation of one side. */
export interface ThroughputRun {
  readonly recordsPerSecond: number;
  readonly cpuMicrosPerRecord: number;
  /** Share of one core the client process used (may exceed 1: GC and libuv threads). */
  readonly clientCores: number;
  /** Share of one core the webhook process used: well under 1 means the webhook was not the limit. */
  readonly webhookCores: number;
  /** TCP connections the webhook accepted during the run (after the warm-up). */
  readonly newConnections: number;
  readonly failures: number;
  /** SQS API calls during the run (all-2xx batches should make none). */
  readonly sqsCalls: number;
  /** Bytes the process wrote to stdout/stderr during the run (logs and EMF metrics). */
  readonly outputBytes: number;
}

export interface SideSummary {
  readonly side: string;
  readonly description: string;
  readonly runs: readonly ThroughputRun[];
  readonly recordsPerSecond: number;
  readonly cpuMicrosPerRecord: number;
  readonly clientCores: number;
  readonly webhookCores: number;
}

export interface ThroughputSection {
  readonly concurrency: number;
  readonly records: number;
  /** Measured invocations of each side in a round, after its warm-ups (each side has rounds × this many runs). */
  readonly measuredRunsPerRound: number;
  readonly sides: readonly SideSummary[];
}

export interface LatencySide {
  readonly side: string;
  /** Median over runs of each run's percentile, µs. */
  readonly p50Micros: number;
  readonly p99Micros: number;
  readonly samples: number;
}

export interface LatencySection {
  readonly concurrency: number;
  readonly records: number;
  readonly runs: number;
  readonly relay: LatencySide;
  readonly bare: LatencySide;
}

/** Throughput against a webhook that takes `delayMs` to answer: the production regime. */
export interface LatencyBoundRun {
  readonly delayMs: number;
  readonly concurrency: number;
  readonly records: number;
  readonly recordsPerSecond: number;
  /** The bare node:http loop against the same delaying webhook. */
  readonly bareRecordsPerSecond: number;
  /** `concurrency × 1000 / delayMs`: the ceiling if the relay added nothing. */
  readonly modelRecordsPerSecond: number;
}

/**
 * One side in a warm container as deployed: back-to-back invocations in one process, with the heap
 * limits Lambda's Node.js runtime gives a function of the stack's memory size.
 */
export interface WarmMemoryRow {
  readonly side: string;
  readonly records: number;
  /** Bytes of the event's JSON, as Lambda hands it over. */
  readonly eventBytes: number;
  /** maxRSS after each invocation, MiB (a peak: it never falls). */
  readonly peakMiBByInvocation: readonly number[];
}

/** {@link WarmMemoryRow}s and the conditions they were measured in. */
export interface WarmMemorySection {
  /** The function's memory size in the synthesized template, MB. */
  readonly memorySizeMb: number;
  /** The V8 flags Lambda's runtime derives from it. */
  readonly heapFlags: readonly string[];
  readonly rows: readonly WarmMemoryRow[];
}

/** A fresh `node` process importing the bundle against one importing an empty module, medians over `runs` each, ms. */
export interface LoadTiming {
  readonly variant: string;
  readonly bundleProcessMs: number;
  readonly emptyProcessMs: number;
  /** The `import()` itself, timed inside the process. */
  readonly importMs: number;
  readonly runs: number;
}

/** The asset as a cold start sees it: what importing the handler module loads, and the whole. */
export interface AssetWeight {
  /** The handler module and every module it imports statically, entry first. */
  readonly atImport: { readonly files: readonly string[]; readonly bytes: number };
  readonly total: { readonly modules: number; readonly moduleBytes: number; readonly mapBytes: number };
}

export interface ColdStartSection {
  readonly weight: AssetWeight;
  /** The first is the function as deployed (its `NODE_OPTIONS`). */
  readonly loads: readonly LoadTiming[];
}

export interface MixedRun {
  readonly label: string;
  readonly wallMs: number;
  readonly retried: number;
  readonly calls: Readonly<Record<string, number>>;
  readonly visibilityEntries: readonly number[];
}

export interface MixedSection {
  readonly records: number;
  readonly expectedRetries: number;
  readonly runs: readonly MixedRun[];
  /** The same records all answered 200, same warm process, ms. */
  readonly allOkMs: number;
}

export interface BenchResults {
  readonly machine: MachineInfo;
  readonly quick: boolean;
  readonly durationSeconds: number;
  readonly relayConfig: Readonly<Record<string, string>>;
  readonly throughput: readonly ThroughputSection[];
  readonly instructions: InstructionsSection;
  readonly latency: readonly LatencySection[];
  readonly latencyBound: readonly LatencyBoundRun[];
  readonly warmMemory: WarmMemorySection;
  readonly coldStart: ColdStartSection;
  readonly mixed: MixedSection;
  readonly notes: readonly string[];
}

export type { InstructionCount, InstructionsSection } from './instructions';
export type { BackPressureRun, BackPressureSection } from './scenarios/back-pressure';
