/**
 * Every scenario, in the order they run (later ones may read what earlier ones measured).
 * A new scenario is a file in this folder and a line here. Its figures are a field of
 * `BenchResults`: in results.ts, or declared in the scenario's own file
 * (`declare module '../results' { interface BenchResults { backPressure: … } }`); the report shows
 * them once bench/templates/ and report.ts give them a place.
 */
import backPressure, { recovery } from './back-pressure';
import clientChoice from './client-choice';
import coldStart from './cold-start';
import components from './components';
import instructions from './instructions';
import latency from './latency';
import latencyBound from './latency-bound';
import memory from './memory';
import mixed from './mixed';
import type { Scenario } from './scenario';
import throughput from './throughput';
import warmMemory from './warm-memory';

export const SCENARIOS: readonly Scenario[] = [
  throughput,
  instructions,
  clientChoice,
  latency,
  latencyBound,
  memory,
  warmMemory,
  coldStart,
  mixed,
  components,
  backPressure,
  recovery,
];
