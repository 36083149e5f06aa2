/** The shape of a scenario: it measures one part of the results, given the stand-ins and what ran before it. */
import type { Bench } from '../harness';
import type { BenchResults } from '../results';

/** The figures the scenarios measure: everything in the results but the run's own facts. */
export type Figures = Omit<BenchResults, 'machine' | 'quick' | 'durationSeconds' | 'relayConfig' | 'notes'>;

/** Measures `Figures[key]`; `earlier` holds what the scenarios listed before it measured. */
export interface Scenario<K extends keyof Figures = keyof Figures> {
  readonly key: K;
  run(bench: Bench, earlier: Partial<Figures>): Promise<Figures[K]>;
}

/** A {@link Scenario}, with its key's type checked against its figures. */
export const scenario = <K extends keyof Figures>(key: K, run: Scenario<K>['run']): Scenario<K> => ({ key, run });
