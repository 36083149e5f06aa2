/**
 * Every scenario, in the order they run (later ones may read what earlier ones measured).
 * A new scenario is a file in this folder and a line here; its figures get a field in results.ts.
 */
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

export const SCENARIOS: readonly Scenario[] = [throughput, instructions, clientChoice, latency, latencyBound, memory, warmMemory, coldStart, mixed, components];
