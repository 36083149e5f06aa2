/** The shape of one benchmark run's figures: what the scenarios (bench/scenarios/) measure and `report.ts` writes. */
import type { AssetWeight } from './bundle';
import type { ComponentCost } from './components';
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

export interface MemoryRow {
  readonly side: string;
  readonly description: string;
  /** maxRSS after initialisation (the handler imported), MiB. */
  readonly initMiB: number;
  /** maxRSS after the 10,000-record invocation, MiB. */
  readonly peakMiB: number;
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

export interface LoadTiming {
  readonly variant: string;
  /** Median wall time of a fresh `node` process importing the bundle, ms. */
  readonly bundleProcessMs: number;
  /** Median wall time of a fresh `node` process importing an empty module, ms. */
  readonly emptyProcessMs: number;
  /** Median time of the `import()` itself, measured inside the process, ms. */
  readonly importMs: number;
  readonly runs: number;
}

export interface ColdStartSection {
  readonly weight: AssetWeight;
  readonly loads: readonly LoadTiming[];
  /** Fresh processes: the import, then the first and second invocation (1 record), medians, ms. */
  readonly firstInvocation: { readonly importMs: number; readonly firstMs: number; readonly secondMs: number; readonly processes: number };
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
  readonly setupMs: number;
  readonly runs: readonly MixedRun[];
  /** The same records all answered 200, same warm process, ms. */
  readonly allOkMs: number;
  /** Retried messages found in flight with the webhook's delay, after the first run. */
  readonly visibilityVerified: number;
  /** Log lines the first mixed run wrote, by message. */
  readonly logLines: Readonly<Record<string, number>>;
  readonly peakMiB: number;
}

/** Alternatives for the transmitter's HTTP client, bare loops at one concurrency. */
export interface ClientChoice {
  readonly concurrency: number;
  readonly sides: readonly SideSummary[];
  /** Bytes a minified, bundled `Pool` from undici adds to the handler file. */
  readonly undiciBundleBytes: number;
  /** What loading that file adds to a fresh process, ms. */
  readonly undiciLoadMs: number;
}

export interface BenchResults {
  readonly machine: MachineInfo;
  readonly quick: boolean;
  readonly durationSeconds: number;
  readonly relayConfig: Readonly<Record<string, string>>;
  readonly throughput: readonly ThroughputSection[];
  readonly instructions: InstructionsSection;
  readonly clientChoice: ClientChoice;
  readonly latency: readonly LatencySection[];
  readonly latencyBound: readonly LatencyBoundRun[];
  readonly memory: readonly MemoryRow[];
  readonly warmMemory: WarmMemorySection;
  readonly coldStart: ColdStartSection;
  readonly mixed: MixedSection;
  readonly components: readonly ComponentCost[];
  readonly notes: readonly string[];
}
