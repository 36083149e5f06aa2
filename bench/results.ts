/**
 * The scenarios (bench/scenarios/), in the order they run, and the shape of one run's figures: each field of `BenchResults` is what its
 * scenario returns, documented where the scenario computes it, and what `report.ts` writes.
 */
import type { MachineInfo } from './environment';
import type { throughputRun } from './harness';
import { backPressure, recovery } from './scenarios/back-pressure';
import { coldStart } from './scenarios/cold-start';
import { instructions } from './scenarios/instructions';
import { latency } from './scenarios/latency';
import { latencyBound } from './scenarios/latency-bound';
import { mixed } from './scenarios/mixed';
import { throughput } from './scenarios/throughput';
import { warmMemory } from './scenarios/warm-memory';

/** Every scenario by the figures it measures: a file in bench/scenarios/ and a line here (`--only` names it in kebab case). */
export const SCENARIOS = { throughput, instructions, latency, latencyBound, warmMemory, coldStart, mixed, backPressure, recovery };

/** The figures of every scenario. */
export type Figures = { readonly [K in keyof typeof SCENARIOS]: Awaited<ReturnType<(typeof SCENARIOS)[K]>> };

/** One run: its facts and its figures (the back-pressure ones absent from results written before they were measured). */
export type BenchResults = Omit<Figures, 'backPressure' | 'recovery'> &
  Partial<Pick<Figures, 'backPressure' | 'recovery'>> & {
    readonly machine: MachineInfo;
    readonly quick: boolean;
    readonly durationSeconds: number;
    /** The relay's settings the report names: the template's values the children ran with. */
    readonly relayConfig: Readonly<Record<string, string>>;
    /** What went wrong without stopping the run. */
    readonly notes: readonly string[];
  };

/** One invocation of one side. */
export type ThroughputRun = Awaited<ReturnType<typeof throughputRun>>;
export type ThroughputSection = Figures['throughput'][number];
export type SideSummary = ThroughputSection['sides'][number];
export type WarmMemoryRow = Figures['warmMemory']['rows'][number];
export type { BackPressureRun, BackPressureSection } from './scenarios/back-pressure';
export type { InstructionCount, InstructionsSection } from './scenarios/instructions';
