/**
 * Turning one run's figures into text: the console table, `BENCHMARKS.md`, and the figures of
 * docs/performance.md (written into it between its markers). Every number in them comes from the
 * run; only the explanations are fixed text.
 */
import { writeFileSync } from 'node:fs';
import type { BenchResults, LatencySection, SideSummary, ThroughputRun, ThroughputSection, WarmMemoryRow } from './results';
import type { InstructionCount, InstructionsSection } from './instructions';
import { isLambdaNodeMajor, LAMBDA_NODE, nodeMajor } from '../bin/lambda-node';
import { fmt, type MedianInterval, median, medianInterval, range, ratio } from './stats';

/** Lambda gives a function one vCPU at 1,769 MB of memory, and CPU in proportion below that. */
export const MB_PER_VCPU = 1_769;
/** The stack's default memory size and event source maximum concurrency (lib/webhook-relay.ts). */
const STACK_MEMORY_MB = 256;

/**
 * "Well inside" a 256 MB function (244 MiB): about four fifths of it at most, leaving room for
 * larger messages than the benchmark's and for a collection that comes late.
 */
const MEMORY_GOAL_MIB = 200;

const kb = (bytes: number): string => `${fmt(bytes / 1024, 3)} KB`;
const ms = (value: number): string => `${fmt(value, 3)} ms`;
const us = (value: number): string => `${fmt(value, 3)} µs`;
const mib = (value: number): string => `${fmt(value, 3)} MiB`;
const perSecond = (value: number): string => `${int(value)}/s`;
/** A whole number with thousands separators. */
const int = (value: number): string => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
/** A difference with its sign: "+61.2 µs", "−12.0 µs". */
const delta = (value: number, format: (value: number) => string): string => (value < 0 ? `−${format(-value)}` : `+${format(value)}`);

function side(section: ThroughputSection | undefined, name: string): SideSummary | undefined {
  return section?.sides.find((candidate) => candidate.side === name);
}

/** The bare loop that sends the same POSTs as each relay side does: its limit, and the goal's baseline. */
const LIMIT_OF: Readonly<Record<string, string>> = { relay: 'bare node:http, signing', 'relay, unsigned': 'bare node:http, unsigned' };

/** The side `name` is measured against: its own limit for a relay side, else the bare node:http loop. */
function limitOf(section: ThroughputSection | undefined, name: string): SideSummary | undefined {
  return side(section, LIMIT_OF[name] ?? 'bare node:http') ?? side(section, 'bare node:http');
}

/**
 * `a`'s figure ÷ `b`'s, as the median of the ratios of their runs made side by side: every round runs each side, one
 * after another, so a ratio within a round compares runs made seconds apart. On a shared machine
 * whose speed swings by a factor of two over minutes, that is steadier than a ratio of medians.
 * Sides from different comparisons (unequal run counts) fall back to the ratio of medians.
 */
function pairedRatio(a: SideSummary, b: SideSummary, figure: (run: ThroughputRun) => number): number {
  const ratios = pairedRatios(a, b, figure);
  return ratios === undefined ? median(a.runs.map(figure)) / median(b.runs.map(figure)) : median(ratios);
}
/** `a`'s figure ÷ `b`'s for each pair of runs made side by side; `undefined` for sides from different comparisons. */
function pairedRatios(a: SideSummary, b: SideSummary, figure: (run: ThroughputRun) => number): number[] | undefined {
  if (a.runs.length !== b.runs.length || a.runs.length === 0) return undefined;
  return a.runs.map((run, index) => figure(run) / figure(b.runs[index] as ThroughputRun));
}
const rateOf = (run: ThroughputRun): number => run.recordsPerSecond;
const cpuOf = (run: ThroughputRun): number => run.cpuMicrosPerRecord;
/** Throughput of `a` ÷ throughput of `b` (paired rounds). */
const speedup = (a: SideSummary, b: SideSummary): number => pairedRatio(a, b, rateOf);
/**
 * The 95 % interval of {@link speedup}'s median (see `medianInterval`): how far the run pairs
 * let the ratio be read. The pairs of one round share their processes, so they are not quite
 * independent draws: read the interval as a little optimistic.
 */
const speedupInterval = (a: SideSummary, b: SideSummary): MedianInterval | undefined => {
  const ratios = pairedRatios(a, b, rateOf);
  return ratios === undefined ? undefined : medianInterval(ratios);
};
/** "0.86–0.97". */
const bounds = (interval: MedianInterval): string => `${ratio(interval.low, 1)}–${ratio(interval.high, 1)}`;
/** "95 % interval 0.86–0.97", or nothing when the runs are too few for one. */
const intervalText = (interval: MedianInterval | undefined): string | undefined => (interval === undefined ? undefined : `95 % interval ${bounds(interval)}`);
/** The goal's verdict on a paired ratio: on its median, saying when the interval reaches across the line. */
function goalCheck(relative: number, interval: MedianInterval | undefined): string {
  const verdict = check(relative >= 0.9);
  return interval !== undefined && interval.low < 0.9 && interval.high >= 0.9 ? `${verdict} (the interval spans 0.90)` : verdict;
}
/** CPU per record of `a` ÷ that of `b` (paired rounds). */
const cpuRatio = (a: SideSummary, b: SideSummary): number => pairedRatio(a, b, cpuOf);

/** Headline figures, shared by all three outputs. */
export interface Headline {
  readonly relayRate: number;
  readonly relayCpu: number;
  /** The bare loop sending the relay's (signed) POSTs, signing each as it sends it. */
  readonly bareCpu: number;
  /** The bare loop with every signature computed before the clock started: the HTTP exchange alone. */
  readonly exchangeCpu: number;
  readonly unsignedCpu: number | undefined;
  /** Paired-round throughput ratios: the relay ÷ its limit, the unsigned relay ÷ its limit, the relay ÷ the HTTP exchange alone, the relay ÷ the peer. */
  readonly relayVsLimit: number;
  /** The 95 % interval of {@link relayVsLimit}, when the runs allow one. */
  readonly relayVsLimitInterval: MedianInterval | undefined;
  readonly unsignedVsLimit: number | undefined;
  readonly relayVsExchange: number;
  readonly relayVsPeer: number;
}

export function headline(results: BenchResults, concurrency = 10): Headline {
  const section = results.throughput.find((candidate) => candidate.concurrency === concurrency);
  return {
    relayRate: side(section, 'relay')?.recordsPerSecond ?? Number.NaN,
    relayCpu: side(section, 'relay')?.cpuMicrosPerRecord ?? Number.NaN,
    bareCpu: limitOf(section, 'relay')?.cpuMicrosPerRecord ?? Number.NaN,
    exchangeCpu: side(section, 'bare node:http')?.cpuMicrosPerRecord ?? Number.NaN,
    unsignedCpu: side(section, 'relay, unsigned')?.cpuMicrosPerRecord,
    relayVsLimit: ratioOf(section, 'relay', limitOf(section, 'relay')?.side),
    relayVsLimitInterval: intervalOf(section, 'relay', limitOf(section, 'relay')?.side),
    unsignedVsLimit: side(section, 'relay, unsigned') === undefined ? undefined : ratioOf(section, 'relay, unsigned', limitOf(section, 'relay, unsigned')?.side),
    relayVsExchange: ratioOf(section, 'relay', 'bare node:http'),
    relayVsPeer: ratioOf(section, 'relay', 'peer (Powertools + fetch)'),
  };
}

/** One comparison a throughput section makes; `goal` marks the relay sides measured against their limit. */
interface Comparison {
  readonly label: string;
  readonly relay: SideSummary;
  readonly baseline: SideSummary;
  readonly goal: boolean;
}

/** Each relay side against its limit (the goal), then the relay against the HTTP exchange alone and against the peer. */
function comparisonsOf(section: ThroughputSection): Comparison[] {
  const comparisons: Comparison[] = [];
  for (const [name, label] of [['relay', 'as deployed (signed)'], ['relay, unsigned', 'signing off']] as const) {
    const relay = side(section, name);
    const baseline = limitOf(section, name);
    if (relay !== undefined && baseline !== undefined) comparisons.push({ label, relay, baseline, goal: true });
  }
  const relay = side(section, 'relay');
  const others = [['vs signatures computed in advance', side(section, 'bare node:http')], ['vs the peer', side(section, 'peer (Powertools + fetch)')]] as const;
  for (const [label, baseline] of others) if (relay !== undefined && baseline !== undefined) comparisons.push({ label, relay, baseline, goal: false });
  return comparisons;
}

/**
 * What the callgrind section counts per record: instructions, or cycles estimated from the
 * simulated caches and branch predictor (see `estimatedCycles` in instructions.ts).
 */
interface CountMeasure {
  /** As the report names it, e.g. "instructions". */
  readonly name: string;
  /** Its row's label in the table of docs/performance.md. */
  readonly readmeLabel: string;
  readonly perRecord: (count: InstructionCount) => readonly number[] | undefined;
  readonly sha256PerRecord: (count: InstructionCount) => readonly number[] | undefined;
}

const INSTRUCTIONS: CountMeasure = {
  name: 'instructions',
  readmeLabel: 'instructions per record (callgrind: independent of the machine\'s speed)',
  perRecord: (count) => count.perRecord,
  sha256PerRecord: (count) => count.sha256PerRecord,
};
const ESTIMATED_CYCLES: CountMeasure = {
  name: 'estimated cycles',
  readmeLabel: 'estimated cycles per record (callgrind\'s simulated caches and branch predictor: instructions, misses and mispredictions weighed by their usual cost)',
  perRecord: (count) => count.cyclesPerRecord,
  sha256PerRecord: (count) => count.sha256CyclesPerRecord,
};
const COUNT_MEASURES = [INSTRUCTIONS, ESTIMATED_CYCLES] as const;

/** A count of the relay compared with its limit's, in one {@link CountMeasure}: the relay signed and with signing off. */
interface CountComparison {
  readonly label: string;
  readonly measure: CountMeasure;
  readonly relay: InstructionCount;
  readonly baseline: InstructionCount;
  /** Per record (the mean of the counted invocations). */
  readonly relayPerRecord: number;
  readonly baselinePerRecord: number;
  /** Either side's counts spread over 3 % ({@link spread}): the ratio of means is then not read as the goal's. */
  readonly spreadOut: boolean;
  /**
   * The baseline's lowest count ÷ the relay's: each side's invocation with the least collection.
   * A major collection adds a third or more to one invocation's count: with a few of those on one
   * side only, the ratio of means says which side was unlucky, not which does more work.
   */
  readonly lowestRatio: number;
  /**
   * The ratio of means with each side's SHA-256 blocks left out, where both sides' were counted
   * and hashing is more than 1 % of either's count (signed sides). Under valgrind OpenSSL hashes
   * without the SHA extensions a real CPU has (see instructions.ts), so the plain ratio
   * overstates a cost both sides share; this one leaves it out: the two bracket the native ratio.
   */
  readonly sha256LeftOutRatio: number | undefined;
}

const meanOf = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;

/**
 * True when a side's counted invocations differ by more than 3 %. An invocation's count includes
 * the garbage collection it ran into, and V8's major collections fall in some invocations and not
 * others (with ten warm-ups instead of six, Node.js 20's counts went from repeating to within 1 %
 * to spreading 10-20 %); on Node.js 24 V8 also still optimizes a few functions in each invocation
 * after the warm-ups (with --trace-opt: once-per-invocation code, such as Powertools' metrics).
 * The mean over the counted invocations is then the figure, read to a few per cent.
 */
const spread = (perRecord: readonly number[]): boolean => Math.max(...perRecord) > Math.min(...perRecord) * 1.03;

/** Mean per record of a side's SHA-256 blocks in `measure`; `undefined` where they were not counted. */
function sha256Mean(count: InstructionCount, measure: CountMeasure): number | undefined {
  const hashing = measure.sha256PerRecord(count);
  return hashing === undefined ? undefined : meanOf(hashing);
}

/** See {@link CountComparison.sha256LeftOutRatio}. */
function sha256LeftOutRatio(relay: InstructionCount, baseline: InstructionCount, measure: CountMeasure, relayTotal: number, baselineTotal: number): number | undefined {
  const relayHashing = sha256Mean(relay, measure);
  const baselineHashing = sha256Mean(baseline, measure);
  if (relayHashing === undefined || baselineHashing === undefined) return undefined;
  if (relayHashing <= relayTotal / 100 && baselineHashing <= baselineTotal / 100) return undefined;
  return (baselineTotal - baselineHashing) / (relayTotal - relayHashing);
}

/** "SHA-256 left out: 0.93" where that ratio applies. */
const sha256LeftOutText = (count: CountComparison): string | undefined => (count.sha256LeftOutRatio === undefined ? undefined : `SHA-256 left out: ${ratio(count.sha256LeftOutRatio, 1)}`);

/** The counted relay sides against their limits (same pairs as the throughput goal), in `measure`; none where it was not counted. */
function countComparisons(section: InstructionsSection, measure: CountMeasure = INSTRUCTIONS): CountComparison[] {
  const comparisons: CountComparison[] = [];
  for (const [name, label] of [['relay', 'as deployed (signed)'], ['relay, unsigned', 'signing off']] as const) {
    const relay = section.sides.find((count) => count.side === name);
    const baseline = section.sides.find((count) => count.side === LIMIT_OF[name]);
    const relayCounts = relay === undefined ? undefined : measure.perRecord(relay);
    const baselineCounts = baseline === undefined ? undefined : measure.perRecord(baseline);
    if (relay === undefined || baseline === undefined || relayCounts === undefined || baselineCounts === undefined) continue;
    const relayPerRecord = meanOf(relayCounts);
    const baselinePerRecord = meanOf(baselineCounts);
    comparisons.push({
      label,
      measure,
      relay,
      baseline,
      relayPerRecord,
      baselinePerRecord,
      spreadOut: spread(relayCounts) || spread(baselineCounts),
      lowestRatio: Math.min(...baselineCounts) / Math.min(...relayCounts),
      sha256LeftOutRatio: sha256LeftOutRatio(relay, baseline, measure, relayPerRecord, baselinePerRecord),
    });
  }
  return comparisons;
}

/** A count in thousands, e.g. "243k". */
const kilo = (count: number): string => `${int(count / 1000)}k`;

/** {@link speedupInterval} of two sides of `section` by name; `undefined` when one is missing. */
function intervalOf(section: ThroughputSection | undefined, a: string, b: string | undefined): MedianInterval | undefined {
  const first = side(section, a);
  const second = b === undefined ? undefined : side(section, b);
  return first === undefined || second === undefined ? undefined : speedupInterval(first, second);
}

/** {@link speedup} of two sides of `section` by name; NaN when one is missing. */
function ratioOf(section: ThroughputSection | undefined, a: string, b: string | undefined): number {
  const first = side(section, a);
  const second = b === undefined ? undefined : side(section, b);
  return first === undefined || second === undefined ? Number.NaN : speedup(first, second);
}

/** Records in the benchmark's batch (10,000; fewer in a `--quick` run), as the labels give it. */
function batchRecords(results: BenchResults): string {
  return int(results.throughput[0]?.records ?? Number.NaN);
}

function loadOverhead(results: BenchResults): { asDeployed: number; importMs: number; withoutMaps: number | undefined } {
  const [deployed, noMaps] = results.coldStart.loads;
  return {
    asDeployed: (deployed?.bundleProcessMs ?? Number.NaN) - (deployed?.emptyProcessMs ?? Number.NaN),
    importMs: deployed?.importMs ?? Number.NaN,
    withoutMaps: noMaps === undefined ? undefined : noMaps.bundleProcessMs - noMaps.emptyProcessMs,
  };
}

/** The SQS calls of the first mixed invocation, with its batch size and retries, and the goal they are held to. */
function mixedCalls(results: BenchResults): { first: Record<string, number>; visibilityCalls: number; goal: number; records: number; retried: number } | undefined {
  const mixed = results.mixed;
  const first = mixed?.runs[0];
  if (mixed === undefined || first === undefined) return undefined;
  return { first: { ...first.calls }, visibilityCalls: first.calls.ChangeMessageVisibilityBatch ?? 0, goal: Math.ceil(first.retried / 10), records: mixed.records, retried: first.retried };
}

const check = (ok: boolean): string => (ok ? 'met' : 'NOT met');

/** A warm-container row's peak: the last invocation's maxRSS (it never falls); NaN for a row not measured. */
const warmPeakMiB = (row: WarmMemoryRow | undefined): number => row?.peakMiBByInvocation[row.peakMiBByInvocation.length - 1] ?? Number.NaN;

/** The relay's and the no-op handler's warm-container rows, per batch size, largest batch first. */
function warmMemoryPairs(results: BenchResults): { relay: WarmMemoryRow; noop: WarmMemoryRow | undefined }[] {
  const rows = results.warmMemory?.rows ?? [];
  return rows
    .filter((row) => row.side === 'relay')
    .sort((a, b) => b.records - a.records)
    .map((relay) => ({ relay, noop: rows.find((row) => row.side === 'no-op handler' && row.records === relay.records) }));
}

/** How a warm-container figure was measured, for a row's label. */
function warmMemoryLabel(results: BenchResults, row: WarmMemoryRow): string {
  const invocations = row.peakMiBByInvocation.length;
  return `peak RSS, warm container as deployed: ${invocations} invocations of ${int(row.records)} records in a row, ${results.warmMemory?.memorySizeMb ?? STACK_MEMORY_MB} MB heap limits`;
}

/** The console summary: one line per figure, with its baseline and ratio. */
export function consoleTable(results: BenchResults): string {
  const rows: [string, string, string, string][] = [['figure', 'relay', 'baseline', 'ratio / goal']];
  for (const section of results.throughput) {
    for (const { label, relay, baseline, goal } of comparisonsOf(section)) {
      const relative = ratio(speedup(relay, baseline), 1);
      if (!goal) {
        rows.push([`  ${label} c=${section.concurrency}`, '', `${baseline.side} ${perSecond(baseline.recordsPerSecond)}`, `${relative}×`]);
        continue;
      }
      const interval = speedupInterval(relay, baseline);
      rows.push([`throughput c=${section.concurrency}, ${label}`, perSecond(relay.recordsPerSecond), `${baseline.side} ${perSecond(baseline.recordsPerSecond)}`, `${relative}${interval === undefined ? '' : ` [${bounds(interval)}]`} (goal ≥ 0.90)`]);
      rows.push([`CPU per record c=${section.concurrency}, ${label}`, us(relay.cpuMicrosPerRecord), `${baseline.side} ${us(baseline.cpuMicrosPerRecord)}`, delta(relay.cpuMicrosPerRecord - baseline.cpuMicrosPerRecord, us)]);
    }
  }
  for (const count of COUNT_MEASURES.flatMap((measure) => countComparisons(results.instructions, measure))) {
    rows.push([`${count.measure.name}/record c=${results.instructions.concurrency}, ${count.label}`, kilo(count.relayPerRecord), `${count.baseline.side} ${kilo(count.baselinePerRecord)}`, `${ratio(count.baselinePerRecord / count.relayPerRecord, 1)} (goal ≥ 0.90)`]);
  }
  if (results.instructions.skipped !== undefined) rows.push(['instructions per record', 'skipped', results.instructions.skipped, '']);
  for (const latency of results.latency) {
    rows.push([`latency added c=${latency.concurrency} p50`, us(latency.relay.p50Micros), `bare ${us(latency.bare.p50Micros)}`, delta(latency.relay.p50Micros - latency.bare.p50Micros, us)]);
    rows.push([`latency added c=${latency.concurrency} p99`, us(latency.relay.p99Micros), `bare ${us(latency.bare.p99Micros)}`, delta(latency.relay.p99Micros - latency.bare.p99Micros, us)]);
  }
  const calls = mixedCalls(results);
  if (calls !== undefined && results.mixed !== undefined) {
    const warm = median(results.mixed.runs.slice(1).map((run) => run.wallMs));
    rows.push(['mixed 30 % 429: visibility calls', String(calls.visibilityCalls), `⌈${results.mixed.runs[0]?.retried} ÷ 10⌉ = ${calls.goal}`, check(calls.visibilityCalls === calls.goal)]);
    rows.push(['mixed: other SQS calls', Object.entries(calls.first).filter(([name]) => name !== 'ChangeMessageVisibilityBatch').map(([name, count]) => `${name} ${count}`).join(', ') || 'none', 'GetQueueUrl 1', '']);
    rows.push(['mixed: time, warm', ms(warm), `all 200: ${ms(results.mixed.allOkMs)}`, ratio(warm, results.mixed.allOkMs)]);
  }
  const weight = results.coldStart.weight;
  const load = loadOverhead(results);
  rows.push([`bundle loaded at import (${weight.atImport.files.length} files)`, kb(weight.atImport.bytes), 'goal 500 KB', check(weight.atImport.bytes < 500 * 1024)]);
  rows.push(['  whole asset (JavaScript)', kb(weight.total.moduleBytes), '', `${weight.onFirstUse.length} chunks load on first use`]);
  rows.push(['load time (fresh process − empty)', ms(load.asDeployed), 'goal 100 ms', check(load.asDeployed < 100)]);
  const relayMemory = results.memory.find((row) => row.side === 'relay');
  const noop = results.memory.find((row) => row.side === 'no-op handler');
  if (relayMemory !== undefined) rows.push([`peak RSS, ${batchRecords(results)} records`, mib(relayMemory.peakMiB), `no-op ${mib(noop?.peakMiB ?? Number.NaN)}`, `${check(relayMemory.peakMiB < MEMORY_GOAL_MIB)} (256 MB function)`]);
  for (const pair of warmMemoryPairs(results)) {
    rows.push([`peak RSS, warm, Lambda heap limits, ${int(pair.relay.records)} records`, mib(warmPeakMiB(pair.relay)), `no-op ${mib(warmPeakMiB(pair.noop))}`, check(warmPeakMiB(pair.relay) < MEMORY_GOAL_MIB)]);
  }
  const widths = [0, 1, 2, 3].map((column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  const lines = rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd());
  lines.splice(1, 0, widths.map((width) => '-'.repeat(width)).join('  '));
  const notes = results.notes.length === 0 ? '' : `\nnotes:\n${results.notes.map((note) => `- ${note}`).join('\n')}`;
  return `${lines.join('\n')}${notes}`;
}

/** The three largest origins of a composition, with their bytes: "@smithy/core 112 KB, …". */
function topOrigins(composition: readonly { readonly origin: string; readonly bytes: number }[]): string {
  return composition.slice(0, 3).map((entry) => `${entry.origin} ${kb(entry.bytes)}`).join(', ');
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

function runRange(values: readonly number[], format: (value: number) => string): string {
  const { min, max } = range(values);
  return `${format(min)}–${format(max)}`;
}

function throughputMarkdown(section: ThroughputSection): string {
  const rows = section.sides.map((summary) => [
    `**${summary.side}**`,
    perSecond(summary.recordsPerSecond),
    runRange(summary.runs.map((run) => run.recordsPerSecond), int),
    ((bare) => (bare === undefined ? '' : `${ratio(speedup(summary, bare), 1)} (${bare.side})`))(limitOf(section, summary.side)),
    us(summary.cpuMicrosPerRecord),
    fmt(summary.clientCores, 2),
    fmt(summary.webhookCores, 2),
    String(median(summary.runs.map((run) => run.newConnections))),
    String(summary.runs.reduce((sum, run) => sum + run.failures, 0)),
    String(summary.runs.reduce((sum, run) => sum + run.sqsCalls, 0)),
    kb(median(summary.runs.map((run) => run.outputBytes))),
  ]);
  return table(
    ['side', 'records/s (median)', 'runs (min–max)', '÷ its baseline', 'CPU / record', 'client cores', 'webhook cores', 'new connections', 'failures', 'SQS calls', 'stdout / run'],
    rows,
  );
}

function latencyMarkdown(sections: readonly LatencySection[]): string {
  const rows = sections.flatMap((section) => [
    [`c=${section.concurrency}`, 'p50', us(section.relay.p50Micros), us(section.bare.p50Micros), delta(section.relay.p50Micros - section.bare.p50Micros, us)],
    [`c=${section.concurrency}`, 'p99', us(section.relay.p99Micros), us(section.bare.p99Micros), delta(section.relay.p99Micros - section.bare.p99Micros, us)],
  ]);
  return table(['concurrency', 'percentile', 'relay: start → webhook has it', 'bare: start → webhook has it', 'added by the relay'], rows);
}

/** Records/s one invocation can sustain: `inFlight` requests each taking `latencyMs`, capped by the CPU it is given. */
export function invocationRate(latencyMs: number, inFlight: number, cpuMicrosPerRecord: number, memoryMb: number): number {
  const latencyBound = (inFlight * 1000) / latencyMs;
  const cpuBound = (Math.min(1, memoryMb / MB_PER_VCPU) * 1e6) / cpuMicrosPerRecord;
  return Math.min(latencyBound, cpuBound);
}

function capacityTable(relayCpu: number): string {
  const latencies = [5, 20, 50, 100, 250, 1000];
  const inFlight = [10, 50, 100];
  const memories = [STACK_MEMORY_MB, MB_PER_VCPU];
  const header = ['webhook latency', ...memories.flatMap((memory) => inFlight.map((k) => `${k} in flight, ${memory} MB`))];
  const rows = latencies.map((latency) => [
    `${latency} ms`,
    ...memories.flatMap((memory) =>
      inFlight.map((k) => {
        const rate = invocationRate(latency, k, relayCpu, memory);
        const cpuBound = rate < (k * 1000) / latency;
        return `${int(rate)}${cpuBound ? ' (CPU)' : ''}`;
      }),
    ),
  ]);
  return table(header, rows);
}

/** `BENCHMARKS.md`. */
export function markdown(results: BenchResults): string {
  const { machine } = results;
  const h = headline(results);
  const load = loadOverhead(results);
  const weight = results.coldStart.weight;
  const calls = mixedCalls(results);
  const out: string[] = [];
  out.push('# Benchmarks');
  out.push('');
  const onLambdaNode = isLambdaNodeMajor(machine.node);
  out.push(
    `Generated by \`npm run bench${onLambdaNode ? '' : ' -- --this-node'}\` (bench/run.ts); do not edit by hand. Every figure is the median of several runs on the machine below; the baselines ran in the same run, interleaved with the relay. ` +
      (onLambdaNode
        ? `The clients ran on Node.js ${machine.node}, the major of the function's runtime (\`nodejs${nodeMajor(machine.node)}.x\`); \`npm run bench -- --this-node\` runs the same benchmarks on the Node.js that runs npm, into \`BENCHMARKS.node<major>.md\`.`
        : `The clients ran on Node.js ${machine.node}, not the major of the function's runtime (Node.js ${nodeMajor(LAMBDA_NODE)}): the deployed function's figures are in [BENCHMARKS.md](BENCHMARKS.md).`),
  );
  out.push('');
  out.push(
    table(
      ['machine', ''],
      [
        ['CPU', `${machine.cpu}, ${machine.cores} cores`],
        ['memory', `${machine.memoryGiB} GiB`],
        ['kernel', machine.kernel],
        ['Node.js', machine.node],
        ['date', machine.date],
        ['commit', machine.commit],
        ['processes', machine.placement ?? 'wherever the scheduler put them'],
        ['run took', `${Math.round(results.durationSeconds)} s${results.quick ? ' (`--quick`: not for publishing)' : ''}`],
      ],
    ),
  );
  out.push('');
  out.push('## Summary');
  out.push('');
  const rows: string[][] = [];
  for (const section of results.throughput) {
    for (const { label, relay, baseline, goal } of comparisonsOf(section)) {
      const relative = speedup(relay, baseline);
      if (!goal) {
        rows.push([`throughput ${label}, concurrency ${section.concurrency}`, perSecond(relay.recordsPerSecond), `${baseline.side} ${perSecond(baseline.recordsPerSecond)}`, `${ratio(relative, 1)}×`, '', '']);
        continue;
      }
      const interval = speedupInterval(relay, baseline);
      rows.push([
        `throughput, ${int(section.records)} records, concurrency ${section.concurrency}, ${label}`,
        perSecond(relay.recordsPerSecond),
        `${baseline.side} ${perSecond(baseline.recordsPerSecond)}`,
        `**${ratio(relative, 1)}** (${[intervalText(interval), `of the medians: ${ratio(relay.recordsPerSecond, baseline.recordsPerSecond)}`].filter((part) => part !== undefined).join('; ')})`,
        '≥ 0.90',
        goalCheck(relative, interval),
      ]);
      rows.push([`CPU per record, concurrency ${section.concurrency}, ${label}`, us(relay.cpuMicrosPerRecord), `${baseline.side} ${us(baseline.cpuMicrosPerRecord)}`, `${ratio(cpuRatio(relay, baseline), 1)} (${delta(relay.cpuMicrosPerRecord - baseline.cpuMicrosPerRecord, us)})`, '', '']);
    }
  }
  for (const count of COUNT_MEASURES.flatMap((measure) => countComparisons(results.instructions, measure))) {
    const workRatio = count.baselinePerRecord / count.relayPerRecord;
    const { spreadOut, lowestRatio } = count;
    const asides = [spreadOut ? `of the lowest counts: ${ratio(lowestRatio, 1)}` : undefined, sha256LeftOutText(count)].filter((aside) => aside !== undefined);
    rows.push([
      `${count.measure.name} per record (callgrind${count.measure === ESTIMATED_CYCLES ? ', from simulated caches and branches' : ''}), concurrency ${results.instructions.concurrency}, ${count.label}: its limit's ÷ the relay's`,
      kilo(count.relayPerRecord),
      `${count.baseline.side} ${kilo(count.baselinePerRecord)}`,
      `**${ratio(workRatio, 1)}**${asides.length === 0 ? '' : ` (${asides.join('; ')})`}`,
      '≥ 0.90',
      spreadOut ? 'not read: counts spread over 3 % (see below)' : check(workRatio >= 0.9),
    ]);
  }
  if (calls !== undefined && results.mixed !== undefined) {
    const warm = median(results.mixed.runs.slice(1).map((run) => run.wallMs));
    rows.push(['mixed 30 % `429`: ChangeMessageVisibilityBatch calls', String(calls.visibilityCalls), `${results.mixed.runs[0]?.retried} retries`, `${calls.visibilityCalls} / ${calls.goal}`, `⌈retries ÷ 10⌉ = ${calls.goal}`, check(calls.visibilityCalls === calls.goal)]);
    rows.push(['mixed: other SQS calls (first invocation)', Object.entries(calls.first).filter(([name]) => name !== 'ChangeMessageVisibilityBatch').map(([name, count]) => `${name} × ${count}`).join(', ') || 'none', '', '', 'GetQueueUrl × 1', check((calls.first.GetQueueUrl ?? 0) === 1 && Object.keys(calls.first).length === 2)]);
    rows.push(['mixed: invocation time (warm)', ms(warm), `all 200: ${ms(results.mixed.allOkMs)}`, ratio(warm, results.mixed.allOkMs), '', '']);
  }
  rows.push(['bundle loaded at import (`index.mjs` and the chunks it imports)', kb(weight.atImport.bytes), `whole asset ${kb(weight.total.moduleBytes)}`, '', '< 500 KB', check(weight.atImport.bytes < 500 * 1024)]);
  rows.push(['load time: fresh process with the bundle − without', ms(load.asDeployed), `import() alone ${ms(load.importMs)}`, '', '< 100 ms', check(load.asDeployed < 100)]);
  const relayMemory = results.memory.find((row) => row.side === 'relay');
  const noop = results.memory.find((row) => row.side === 'no-op handler');
  if (relayMemory !== undefined) rows.push([`peak RSS, one ${batchRecords(results)}-record invocation, fresh process, no heap limits`, mib(relayMemory.peakMiB), `no-op handler ${mib(noop?.peakMiB ?? Number.NaN)}`, '', 'well inside 256 MB', check(relayMemory.peakMiB < MEMORY_GOAL_MIB)]);
  for (const pair of warmMemoryPairs(results)) {
    rows.push([warmMemoryLabel(results, pair.relay), mib(warmPeakMiB(pair.relay)), `no-op handler ${mib(warmPeakMiB(pair.noop))}`, '', 'well inside 256 MB', check(warmPeakMiB(pair.relay) < MEMORY_GOAL_MIB)]);
  }
  for (const latency of results.latency) {
    rows.push([`latency added, concurrency ${latency.concurrency}, p50 / p99`, `${us(latency.relay.p50Micros)} / ${us(latency.relay.p99Micros)}`, `bare ${us(latency.bare.p50Micros)} / ${us(latency.bare.p99Micros)}`, `${delta(latency.relay.p50Micros - latency.bare.p50Micros, us)} / ${delta(latency.relay.p99Micros - latency.bare.p99Micros, us)}`, '', '']);
  }
  out.push(table(['figure', 'relay', 'baseline', 'ratio', 'goal', ''], rows));
  out.push('');
  out.push(`The relay ran as deployed: the bundle \`cdk synth\` produced, imported by a plain \`node\` process with the template's environment (${Object.entries(results.relayConfig).map(([name, value]) => `\`${name}=${value}\``).join(', ')}); only \`WEBHOOK_URL\` (this machine's webhook) and \`MAX_CONCURRENCY\` (the figure's) changed. The signing key came from a local stand-in for Secrets Manager, as the stack's secret would.`);
  out.push('');

  const perRound = results.throughput[0]?.measuredRunsPerRound ?? 1;
  const measuredRunsText = perRound === 1 ? 'one measured invocation' : `${perRound} measured invocations`;
  out.push('## 1. Throughput and 2. CPU per record');
  out.push('');
  out.push('One invocation over a batch of 1 KB records, against a webhook on 127.0.0.1 that answers `200` at once. Every round starts a fresh process for every side, runs four warm-up invocations in each (on Node.js 24 V8 is still optimizing the relay during the third), then ' + measuredRunsText + ' per side, at the same concurrency; the processes stop before the next round. Identical processes, on the same CPU with the same flags, were measured up to 20 % apart for their whole lives, and which one is lucky changes from start to start: a fresh draw every round makes that luck noise the median sees through, rather than one process\'s luck becoming a side\'s figure. In a round the sides run in pairs, the relay right next to its baseline, which of the two goes first alternating from one pair of runs to the next. Nothing is done between runs: a forced `gc()` before each run, as earlier versions of this benchmark did, throws away V8\'s optimized code of every hot function (its \"weak objects\" die) and so measured each run half cold, halving every side\'s throughput. Each client runs with `--single-threaded-gc`, the relay and the baselines alike: held to one CPU with V8\'s parallel scavenger\'s helper threads, a process picked at random took 15–20 ms per scavenge instead of 2–4 ms. The bare loops also run with the V8 setting the relay\'s handler module gives its own process (`lambda/v8-tuning.ts`): allocation-site pretenuring off. With it on, a major collection inside a batch can lead V8 to make node:http\'s per-request objects in the old generation, in whichever process it happens to, and every request is then promoted through it (`--trace-gc`: 100–300 ms of scavenges per 10,000 records instead of 10–70). The peer runs as Node.js starts it. The webhook is a separate process (a minimal HTTP/1.1 server on `node:net`, so it is never the limit: see its CPU column). CPU is `process.cpuUsage()` of the client process over the invocation (all its threads, GC included) ÷ records. Ratios (\"÷ its baseline\", and every ratio in the summary) are the median of the two sides\' ratios over their pairs of runs: for the relay and its baseline, runs a second apart, so the slower swings of this shared virtual machine (its speed changes by up to 2× within minutes) cancel out; the records/s columns are plain medians. One pair still varies by ±10 % or more (a ratio above 1.00, when the relay cannot do less work than a loop that only sends its requests, shows how far), so the goal\'s ratios come with a 95 % interval for their median: the order statistics the binomial distribution gives, assuming nothing about the shape of the noise (the pairs of one round share their processes, so read it as a little optimistic). The instruction counts below do not move with the machine\'s speed.');
  out.push('');
  for (const section of results.throughput) {
    out.push(`### Concurrency ${section.concurrency}`);
    out.push('');
    out.push(throughputMarkdown(section));
    out.push('');
    const bare = side(section, 'bare node:http');
    const transmitter = side(section, 'relay transmitter');
    const unsigned = side(section, 'relay, unsigned');
    const relay = side(section, 'relay');
    const bareSigning = side(section, 'bare node:http, signing');
    if (bare !== undefined && transmitter !== undefined && unsigned !== undefined && relay !== undefined) {
      out.push(
        `Where the relay's ${us(relay.cpuMicrosPerRecord)} of CPU per record go: the HTTP exchange itself (bare node:http) ${us(bare.cpuMicrosPerRecord)}; ` +
          `the relay's transmitter on top of it (timeout, response excerpt, error handling) ${delta(transmitter.cpuMicrosPerRecord - bare.cpuMicrosPerRecord, us)}; ` +
          `the rest of the relay without signing (building the request, breaker, classification, the latency metric, the batch loop, the batch's log line and metrics) ${delta(unsigned.cpuMicrosPerRecord - transmitter.cpuMicrosPerRecord, us)}; ` +
          `signing (reading the key, HMAC-SHA256, the signature headers) ${delta(relay.cpuMicrosPerRecord - unsigned.cpuMicrosPerRecord, us)}` +
          (bareSigning === undefined ? '' : ` (the bare loop signing as it sends: ${delta(bareSigning.cpuMicrosPerRecord - bare.cpuMicrosPerRecord, us)})`) +
          '. Differences of medians of separate runs: read them to a few µs.',
      );
      out.push('');
    }
  }
  out.push('Sides:');
  out.push('');
  for (const summary of results.throughput[0]?.sides ?? []) out.push(`- **${summary.side}**: ${summary.description}.`);
  out.push('');
  out.push('The bare clients send byte-for-byte the relay\'s requests (its headers, its Standard Webhooks signature; the unsigned one, the unsigned relay\'s), built before the clock starts. The goal\'s baseline for the relay as deployed is the bare loop that signs each request as it sends it: a Standard Webhooks signature covers the time of sending (receivers refuse stale timestamps), so no client sending these POSTs can compute it in advance; the loop with every signature precomputed is shown too, as the cost of the HTTP exchange alone. The peer is written the way the Powertools documentation shows, with `fetch` and a semaphore for the concurrency limit (`bench/peer.ts`); it sends three headers, signs nothing, and has no retry timing, dead-lettering or breaker.');
  out.push('');

  out.push(instructionsMarkdown(results.instructions));
  out.push('');

  if (results.clientChoice !== undefined) {
    const choice = results.clientChoice;
    out.push('## The HTTP client');
    out.push('');
    out.push(`The same bare loop with each client the transmitter could use (concurrency ${choice.concurrency}, ${int(results.throughput[0]?.records ?? 0)} records):`);
    out.push('');
    const http = choice.sides.find((candidate) => candidate.side === 'bare node:http');
    out.push(
      table(
        ['client', 'records/s', 'runs (min–max)', '÷ node:http', 'CPU / record', 'adds to the bundle', 'adds to the load time'],
        choice.sides.map((summary) => {
          const undici = summary.side === 'bare undici Pool';
          return [
            summary.side,
            perSecond(summary.recordsPerSecond),
            runRange(summary.runs.map((run) => run.recordsPerSecond), int),
            http === undefined ? '' : ratio(summary.recordsPerSecond, http.recordsPerSecond),
            us(summary.cpuMicrosPerRecord),
            undici ? kb(choice.undiciBundleBytes) : '0 (built in)',
            undici ? ms(choice.undiciLoadMs) : '0',
          ];
        }),
      ),
    );
    out.push('');
  }

  out.push('## 3. Mixed outcomes');
  out.push('');
  if (results.mixed === undefined) {
    out.push('Not run.');
  } else {
    const mixed = results.mixed;
    out.push(
      `${int(mixed.records)} messages sent to the SQS emulator (fauxqs) and received from it (real receipt handles; setup ${fmt(mixed.setupMs / 1000, 2)} s), then relayed in one invocation at concurrency 10; the webhook answered \`429\` with \`Retry-After: 600\` to ${mixed.expectedRetries} of them (30 %) and \`200\` to the rest. Every SQS call went through a counting proxy.`,
    );
    out.push('');
    out.push(
      table(
        ['invocation', 'time', 'retried', 'SQS calls', 'entries per visibility call'],
        mixed.runs.map((run) => {
          const entries = run.visibilityEntries;
          return [
            run.label,
            ms(run.wallMs),
            String(run.retried),
            Object.entries(run.calls).map(([name, count]) => `${name} × ${count}`).join(', ') || 'none',
            entries.length === 0 ? '' : `${Math.min(...entries)}–${Math.max(...entries)}`,
          ];
        }),
      ),
    );
    out.push('');
    out.push(`Baseline: the same records all answered \`200\`, same warm process: ${ms(mixed.allOkMs)}. After the first invocation, ${mixed.visibilityVerified} of the ${mixed.expectedRetries} refused messages were in flight with their visibility set to the webhook's 600 s. Peak RSS of that first invocation (fresh process, SQS client loaded): ${mib(mixed.peakMiB)}.`);
    out.push('');
    out.push('Log lines of the first mixed invocation:');
    out.push('');
    out.push(table(['line', 'count'], Object.entries(mixed.logLines).sort((a, b) => b[1] - a[1]).map(([message, count]) => [message, String(count)])));
  }
  out.push('');

  out.push('## 4. Cold start');
  out.push('');
  const atImport = weight.atImport;
  out.push(
    `The asset is split (lib/bundle.ts): importing \`index.mjs\` loads it and the ${atImport.files.length - 1 === 1 ? 'chunk' : `${atImport.files.length - 1} chunks`} it imports statically, **${kb(atImport.bytes)}** (gzip ${kb(atImport.gzipBytes)}): that is the figure the 500 KB goal is about. ` +
      `The whole asset is ${kb(weight.total.moduleBytes)} of JavaScript in ${weight.total.modules} modules, plus ${kb(weight.total.mapBytes)} of source maps (with \`--enable-source-maps\`, Node.js reads the map of every module it loads). ` +
      'The rest loads on first use, when code that ran calls `import()`:',
  );
  out.push('');
  out.push(
    table(
      ['loaded', 'what', 'modules', 'bytes', 'largest parts'],
      [
        ['at import', '`index.mjs` and its static imports', String(atImport.files.length), kb(atImport.bytes), topOrigins(atImport.composition)],
        ...weight.onFirstUse.map((set) => ['on first use', `${set.label} (\`${set.entry}\`)`, String(set.files.length), kb(set.bytes), topOrigins(set.composition)]),
        ['when the SDK needs them', 'credential providers (in Lambda only the environment one, `fromEnv`), nested STS/SSO clients, event streams', String(weight.rest.files.length), kb(weight.rest.bytes), topOrigins(weight.rest.composition)],
      ],
    ),
  );
  out.push('');
  out.push('Each first-use row counts everything that `import()` loads; two of them share the SDK core chunks, so whichever comes second loads less. The SQS client is needed by the first retry or dead letter, the Secrets Manager client by the first signature (signing is on in the template); the all-`200` runs above made no SQS call.');
  out.push('');
  out.push(`Load time: a fresh \`node\` process importing the bundle with the function's environment, against a fresh process importing an empty module, ${results.coldStart.loads[0]?.runs ?? 0} runs each, interleaved, median:`);
  out.push('');
  out.push(
    table(
      ['variant', 'fresh process + module', 'fresh process + empty module', 'difference', '`import()` inside the process'],
      results.coldStart.loads.map((load) => [load.variant, ms(load.bundleProcessMs), ms(load.emptyProcessMs), `**${ms(load.bundleProcessMs - load.emptyProcessMs)}**`, ms(load.importMs)]),
    ),
  );
  out.push('');
  const first = results.coldStart.firstInvocation;
  out.push(
    `A fresh \`node -e\` process has loaded none of the Node.js built-in modules the bundle imports at its top (${weight.builtinsAtImport.map((name) => `\`${name}\``).join(', ')}), so the difference above includes loading them; the last row is that part alone. Lambda's runtime may have loaded some of them already. The same import in a process that already holds node:http, node:crypto and node:fs (the benchmark's client process) is the "import" figure below.`,
  );
  out.push('');
  out.push(`First invocations, ${first.processes} fresh processes, median: import ${ms(first.importMs)}, first invocation of one record ${ms(first.firstMs)} (reads the signing key from Secrets Manager: loads that SDK client's chunks), second ${ms(first.secondMs)}.`);
  out.push('');
  out.push('What the code loaded at import is made of (bytes of minified code, from the source maps):');
  out.push('');
  const composition = atImport.composition;
  const shown = composition.slice(0, 12);
  const rest = composition.slice(12).reduce((sum, entry) => sum + entry.bytes, 0);
  out.push(table(['origin', 'bytes', 'share'], [...shown.map((entry) => [entry.origin, kb(entry.bytes), `${fmt((100 * entry.bytes) / atImport.bytes, 2)} %`]), ['everything else', kb(rest), `${fmt((100 * rest) / atImport.bytes, 2)} %`]]));
  out.push('');

  out.push('## 5. Memory');
  out.push('');
  const batch = batchRecords(results);
  out.push(`Peak RSS (\`process.resourceUsage().maxRSS\`) of a fresh process that imports the handler, reads the event as JSON text and parses it (as Lambda's runtime does), and runs one ${batch}-record invocation (concurrency 10), no forced GC. The event itself is in every row; the no-op handler shows what it costs alone. The bare loop holds all ${batch} requests prepared in advance; the relay builds each when it sends it; the peer starts all ${batch} records at once (the processor's \`Promise.all\`), each waiting on the semaphore.`);
  out.push('');
  out.push(table(['side', 'after import', 'peak'], results.memory.map((row) => [row.side, mib(row.initMiB), `**${mib(row.peakMiB)}**`])));
  out.push('');
  const warm = results.warmMemory;
  if (warm !== undefined && warm.rows.length > 0) {
    const invocations = warm.rows[0]?.peakMiBByInvocation.length ?? 0;
    const deliverable = Math.min(...warm.rows.map((row) => row.records));
    const batch = Math.max(...warm.rows.map((row) => row.records));
    out.push(
      `The figures above are one invocation in a process with no heap limits; a function's container runs invocation after invocation, under the heap limits Lambda sets. Below, a warm container as deployed: one process per row, started with no flag but the heap limits Lambda's Node.js runtime gives a ${warm.memorySizeMb} MB function (\`${warm.heapFlags.join(' ')}\`: a tenth of the memory for the young generation, the rest for the old), runs ${invocations} invocations in a row, as a busy function does, each with its event parsed afresh from JSON. The peak after each invocation shows what one batch leaves for the next; it levels off once V8's collections keep up.${batch === deliverable ? '' : ` Besides the benchmark's ${int(batch)}-record batch, which Lambda could not deliver (its event is over the 6 MB cap on an invocation's payload), the largest batch of these records that it can: ${int(deliverable)} records.`}`,
    );
    out.push('');
    out.push(
      table(
        ['side', 'records', 'event', ...Array.from({ length: invocations }, (_, index) => `after ${index + 1}`)],
        [...warm.rows]
          .sort((a, b) => b.records - a.records)
          .map((row) => [row.side, int(row.records), `${fmt(row.eventBytes / 1024 / 1024, 3)} MiB`, ...row.peakMiBByInvocation.map((peak, index) => (index === row.peakMiBByInvocation.length - 1 ? `**${mib(peak)}**` : mib(peak)))]),
      ),
    );
    out.push('');
  }

  out.push('## 6. Latency added');
  out.push('');
  out.push(`Per record: from the moment the client starts it to the moment the webhook has the complete request, \`process.hrtime.bigint()\` in both processes (CLOCK_MONOTONIC, one clock for all processes on Linux). For the relay, "starts" is its first read of the record (the first thing it does with one); for the bare client, the loop taking the next prepared request. ${results.latency[0]?.records ?? 0} records per run, ${results.latency[0]?.runs ?? 0} runs, median of each run's percentile.`);
  out.push('');
  out.push(latencyMarkdown(results.latency));
  out.push('');
  out.push('The p50 is the relay\'s own work before the request leaves (building, signing, the transmitter). The p99 of both sides is mostly this 2-vCPU virtual machine scheduling three busy processes (the client, the webhook, the benchmark): the slowest records of a relay run are spread through the batch, not at its garbage collections or metric flushes.');
  out.push('');

  out.push('## Where the relay\'s CPU goes');
  out.push('');
  out.push('Each per-record step of the relay outside the HTTP exchange, timed alone in a loop (`bench/components.ts`, TypeScript source, median of 5 rounds):');
  out.push('');
  out.push(table(['step', 'per', 'cost', 'where'], results.components.map((cost) => [cost.step, cost.per, us(cost.nanos / 1000), cost.where])));
  out.push('');
  const perRecord = results.components.filter((cost) => cost.per === 'record').reduce((sum, cost) => sum + cost.nanos / 1000, 0);
  out.push(`Together ${us(perRecord)} per record; the measured difference between the relay and the bare client with its signatures computed in advance is ${us(h.relayCpu - h.exchangeCpu)} per record${h.unsignedCpu === undefined ? '' : ` (${us(h.unsignedCpu - h.exchangeCpu)} unsigned, which also sends three headers fewer)`}. The rest is the relay's promise chain per record, its allocations (GC), and cache effects the loop above does not see.`);
  out.push('');

  out.push('## Latency-bound throughput: the production regime');
  out.push('');
  out.push(
    `The relay and the bare loop against a webhook that answers after a fixed delay: the production regime, where the webhook's latency sets the pace. Without a CPU limit one invocation sustains about \`in-flight requests × 1000 ÷ latency\` records/s; the webhook's timers fire a little late and every request also pays its own round trip, so even the bare loop stays below that model. The relay's CPU would cap it at about 1,000,000 µs ÷ ${us(h.relayCpu)} per record = ${perSecond(1e6 / h.relayCpu)} on this machine.`,
  );
  out.push('');
  out.push(
    table(
      ['webhook latency', 'concurrency', 'records', 'relay', 'bare node:http', 'relay ÷ bare', 'concurrency × 1000 ÷ latency', 'relay ÷ model'],
      results.latencyBound.map((run) => [
        ms(run.delayMs),
        String(run.concurrency),
        int(run.records),
        perSecond(run.recordsPerSecond),
        perSecond(run.bareRecordsPerSecond),
        ratio(run.recordsPerSecond, run.bareRecordsPerSecond),
        perSecond(run.modelRecordsPerSecond),
        ratio(run.recordsPerSecond, run.modelRecordsPerSecond),
      ]),
    ),
  );
  out.push('');
  out.push('## Capacity planning');
  out.push('');
  out.push(capacityText(results));
  out.push('');
  if (results.notes.length > 0) {
    out.push('## Notes from this run');
    out.push('');
    for (const note of results.notes) out.push(`- ${note}`);
    out.push('');
  }
  out.push('## Method');
  out.push('');
  out.push('- `npm run bench` runs `cdk synth` (the real CLI, offline), takes the function\'s bundle out of the cloud assembly, and loads it in plain `node` child processes (no TypeScript loader) with the template\'s environment, as Lambda\'s runtime would.');
  out.push('- All traffic stays on 127.0.0.1: the webhook (`bench/webhook-process.ts`), the SQS emulator (fauxqs) behind a counting proxy (`testkit/sqs-proxy.ts`), a Secrets Manager stand-in (`testkit/secrets-manager.ts`). Every loop is bounded; the run stops by itself.');
  out.push('- Throughput and CPU: medians over the runs of every round; in a round every side runs in a rotating order, its baseline right before or after it. Ranges show the spread between runs on this (virtualized, shared) machine.');
  out.push('- `npm run bench -- --profile` writes V8 CPU profiles of the relay\'s processes to `.bench-tmp/profiles/`; `npm run bench -- --quick` is a smaller run for trying changes, `npm run bench -- --node=<path>` runs every child on another Node.js (e.g. Lambda\'s major); both write their report to `.bench-tmp/`; `npm run bench -- --report-only` rewrites the reports from the last run\'s figures (`.bench-tmp/results.json`).');
  out.push('');
  return out.join('\n');
}

/** The capacity-planning explanation and table, shared by BENCHMARKS.md and docs/performance.md. */
function capacityText(results: BenchResults): string {
  const h = headline(results);
  const bound = results.latencyBound;
  const worstVsBare = bound.length === 0 ? Number.NaN : Math.min(...bound.map((run) => run.recordsPerSecond / run.bareRecordsPerSecond));
  const modelRange = bound.map((run) => run.recordsPerSecond / run.modelRecordsPerSecond);
  return [
    'In production the webhook\'s latency, not the relay, sets the pace. One invocation keeps `min(batchSize, MAX_CONCURRENCY)` requests in flight, so it relays about `in-flight × 1000 ÷ webhook latency (ms)` records/s' +
      (bound.length === 0
        ? ''
        : ` (measured against a webhook answering after 10 and 50 ms: ${ratio(Math.min(...modelRange), 1)}–${ratio(Math.max(...modelRange), 1)}× this model, and at least ${ratio(worstVsBare, 1)}× a bare HTTP client in the same conditions)`) +
      ', until it runs out of CPU: Lambda gives a function CPU in proportion to its memory (one vCPU at 1,769 MB), and the relay needs ' +
      `${us(h.relayCpu)} of CPU per record on this machine (plain HTTP; TLS adds to it). The event source mapping runs up to \`maxConcurrency\` invocations at once (the stack's default: 5), so the queue drains at up to that many times the figures below.`,
    '',
    `Records/s **per concurrent invocation** (in flight = \`min(batchSize, MAX_CONCURRENCY)\`; "(CPU)" where ${STACK_MEMORY_MB} MB or one vCPU, at ${us(h.relayCpu)} per record, is the limit; multiply by the event source's \`maxConcurrency\` for the whole function):`,
    '',
    capacityTable(h.relayCpu),
    '',
    'To go faster: raise `maxConcurrency` (more invocations; the webhook must take the load), raise `batchSize` with `MAX_CONCURRENCY` (more requests in flight per invocation; batches above 10 need a batching window), and give the function more memory when the table says CPU. With the default `batchSize` of 10, every invocation also pays Lambda\'s per-invocation overhead (polling, invoking, the batch\'s summary log and metrics) for only 10 records.',
  ].join('\n');
}

/** Where the figures of `performanceSection` go: a file of the repository, between these markers. */
export const PERFORMANCE_DOC = {
  path: 'docs/performance.md',
  start: '<!-- performance:start (written by npm run bench) -->',
  end: '<!-- performance:end -->',
} as const;

/** The figures of docs/performance.md (links relative to docs/). */
export function performanceSection(results: BenchResults): string {
  const h = headline(results);
  const load = loadOverhead(results);
  const weight = results.coldStart.weight;
  const calls = mixedCalls(results);
  const relayMemory = results.memory.find((row) => row.side === 'relay');
  const c10 = results.latency.find((latency) => latency.concurrency === 10);
  const out: string[] = [];
  out.push('## The figures');
  out.push('');
  out.push(
    `Measured with \`npm run bench\` on ${results.machine.cpu} (${results.machine.cores} cores), with the clients on Node.js ${results.machine.node}, the major of the function's runtime; all figures and the method are in [BENCHMARKS.md](../BENCHMARKS.md). The relay is the deployable bundle from \`cdk synth\` with the template's settings (requests signed), against a webhook on 127.0.0.1 over plain HTTP: the figures show what the relay itself costs, not what a network adds.`,
  );
  out.push('');
  const lines: string[][] = [];
  lines.push([
    `throughput, ${batchRecords(results)} records, concurrency 10, webhook answering at once`,
    `${perSecond(h.relayRate)}: **${ratio(h.relayVsLimit, 1)}×**${h.relayVsLimitInterval === undefined ? '' : ` (${intervalText(h.relayVsLimitInterval)})`} a bare \`node:http\` loop sending the same signed requests (signing each as it sends it)` +
      (h.unsignedVsLimit === undefined ? '' : `; with signing off, ${ratio(h.unsignedVsLimit, 1)}× the same loop sending unsigned requests`) +
      `; ${ratio(h.relayVsExchange, 1)}× the loop with its signatures computed in advance (the HTTP exchange alone)` +
      `; **${ratio(h.relayVsPeer, 1)}×** a Powertools \`BatchProcessor\` + \`fetch\` relay` +
      // The relay does all the loop's work and more: a ratio over 1 is this run's noise, and says how much of it there was.
      (Math.max(h.relayVsLimit, h.unsignedVsLimit ?? 0) > 1 ? ' (a ratio over 1.00 is this run\'s noise, not a result: the relay does all the loop\'s work and more)' : ''),
  ]);
  for (const measure of COUNT_MEASURES) {
    const counts = countComparisons(results.instructions, measure);
    if (counts.length === 0) continue;
    lines.push([
      measure.readmeLabel,
      counts
        .map((count) => {
          const lowest = count.spreadOut ? `; counts spread over 3 % with the collections each invocation ran into, their lowest give ${ratio(count.lowestRatio, 1)}` : '';
          const hashing = sha256LeftOutText(count);
          return `${count.label}: ${kilo(count.relayPerRecord)}, against ${kilo(count.baselinePerRecord)} for the bare loop sending the same requests (**${ratio(count.baselinePerRecord / count.relayPerRecord, 1)}**${lowest}${hashing === undefined ? '' : `; ${hashing}`})`;
        })
        .join('; '),
    ]);
  }
  lines.push(['CPU per record', `${us(h.relayCpu)} (bare client signing as it sends: ${us(h.bareCpu)}; the HTTP exchange alone: ${us(h.exchangeCpu)}${h.unsignedCpu === undefined ? '' : `; relay with signing off: ${us(h.unsignedCpu)}`})`]);
  if (c10 !== undefined) lines.push(['latency the relay adds before a request leaves (p50, concurrency 10)', delta(c10.relay.p50Micros - c10.bare.p50Micros, us)]);
  if (calls !== undefined) lines.push([`SQS calls for ${int(calls.retried)} retries in a ${int(calls.records)}-record batch`, `${calls.visibilityCalls} \`ChangeMessageVisibilityBatch\` (10 entries each) + ${calls.first.GetQueueUrl ?? 0} \`GetQueueUrl\`; none for an all-2xx batch`]);
  lines.push([
    'bundle, load time',
    `${kb(weight.atImport.bytes)} loaded at import (the whole asset, ${kb(weight.total.moduleBytes)}, holds the SQS and Secrets Manager clients, loaded on first use); ${ms(load.asDeployed)} to load in a fresh process`,
  ]);
  const warmPairs = warmMemoryPairs(results);
  const warmLargest = warmPairs[0]?.relay;
  const warmDeliverable = warmPairs[warmPairs.length - 1]?.relay;
  if (warmLargest !== undefined && warmDeliverable !== undefined && warmDeliverable !== warmLargest) {
    lines.push([
      'peak memory (RSS) in a warm container, as deployed',
      `${mib(warmPeakMiB(warmLargest))} with ${int(warmLargest.records)}-record batches back to back, ${mib(warmPeakMiB(warmDeliverable))} with the largest batch Lambda delivers (${int(warmDeliverable.records)} such records in 6 MB), under the heap limits of the function's ${results.warmMemory?.memorySizeMb ?? STACK_MEMORY_MB} MB`,
    ]);
  } else if (relayMemory !== undefined) {
    lines.push([`peak memory, ${batchRecords(results)}-record batch`, `${mib(relayMemory.peakMiB)} RSS (the function has 256 MB)`]);
  }
  out.push(table(['', ''], lines));
  out.push('');
  out.push('### What limits throughput in production');
  out.push('');
  out.push(capacityText(results));
  out.push('');
  return out.join('\n');
}

/** The instruction-count section: why it is there, each side's counts, and the ratios. */
function instructionsMarkdown(section: InstructionsSection): string {
  const out: string[] = ['### Instructions per record (callgrind)', ''];
  const countedRuns = section.sides[0]?.perRecord.length ?? 0;
  out.push(
    'The throughput runs above time a shared virtual machine whose speed changes by up to 2× within a minute: more than the difference the goal asks about, so a ratio of ' +
      'two runs, even a second apart, is read to ±10 % at best. The number of instructions a side executes per record does not depend on the machine\'s speed: here each side ' +
      `ran in a client process under \`valgrind --tool=callgrind\`, with the same Node.js flags and environment as its throughput runs, ${section.warmUpRuns} uninstrumented ` +
      `warm-up invocations of ${int(section.records)} records (under valgrind, V8 optimizes later than natively), then counted invocations of ${int(section.records)} records at ` +
      `concurrency ${section.concurrency}, counting exactly the part the throughput runs time (\`callgrind_control\` zeroes and dumps the counters around it). An invocation\'s count ` +
      `includes the garbage collection it ran into, so counts of one side spread by a few per cent from invocation to invocation; the figure is their mean over the ${countedRuns} counted. "Its limit's ÷ the relay's" is the throughput ratio the relay would have if every instruction took the same time: ` +
      'it leaves out what counts do not see (cache misses, system-call time, the webhook), which the timed runs include.',
  );
  out.push('');
  if (section.skipped !== undefined) {
    out.push(`Not measured in this run: ${section.skipped}.`);
    return out.join('\n');
  }
  // The estimated-cycle columns only where the caches were simulated (--simulate-caches).
  const measures = COUNT_MEASURES.filter((measure) => section.sides.some((count) => measure.perRecord(count) !== undefined));
  const limits = measures.map((measure) => new Map(countComparisons(section, measure).map((count) => [count.relay.side, count])));
  /** "0.94 (SHA-256 left out: 0.93)": the relay's ratio to its limit in one measure. */
  const limitText = (limit: CountComparison): string => {
    const hashing = sha256LeftOutText(limit);
    return `${ratio(limit.baselinePerRecord / limit.relayPerRecord, 1)}${hashing === undefined ? '' : ` (${hashing})`}`;
  };
  const notCounted = (value: number | undefined): string => (value === undefined ? 'not counted' : int(value));
  out.push(
    table(
      [
        'side',
        'instructions per record (each counted invocation)',
        'mean',
        'of which SHA-256 blocks',
        ...(measures.includes(ESTIMATED_CYCLES) ? ['estimated cycles per record (mean)', 'of which SHA-256 blocks'] : []),
        `its limit's ÷ this: ${measures.map((measure) => measure.name).join('; ')}`,
      ],
      section.sides.map((count) => {
        const cycles = count.cyclesPerRecord;
        const sideLimits = limits.map((byRelay) => byRelay.get(count.side));
        const baseline = sideLimits[0]?.baseline.side;
        return [
          `**${count.side}**`,
          `${count.perRecord.map((value) => int(value)).join(', ')}${spread(count.perRecord) ? ' (spread over 3 %)' : ''}`,
          int(meanOf(count.perRecord)),
          notCounted(sha256Mean(count, INSTRUCTIONS)),
          ...(measures.includes(ESTIMATED_CYCLES)
            ? [cycles === undefined ? 'not counted' : `${int(meanOf(cycles))}${spread(cycles) ? ' (spread over 3 %)' : ''}`, notCounted(sha256Mean(count, ESTIMATED_CYCLES))]
            : []),
          baseline === undefined ? '' : `${sideLimits.map((limit) => (limit === undefined ? 'not counted' : limitText(limit))).join('; ')} (${baseline})`,
        ];
      }),
    ),
  );
  out.push('');
  out.push(`${section.valgrind ?? 'valgrind'}; one side at a time (V8 compiles on background threads: a process sharing its CPU with another ran more of each counted invocation before its optimized code was ready).` +
      (section.sides.some((count) => spread(count.perRecord))
        ? ' **Counts spread over 3 %:** an invocation\'s count includes the garbage collection it ran into, and V8\'s major collections fall in some invocations and not others (on Node.js 24 V8 also still optimizes a few functions in each invocation after the warm-ups: once-per-invocation code such as Powertools\' metrics, which `--trace-opt` shows reaching its thresholds late). The mean over the counted invocations is the figure, and the ratio of each side\'s lowest count (its invocation with the least collection) is shown beside it; neither reads the goal: a few major collections on one side only move the ratio of means by 10-30 %.'
        : '') +
      (section.sides.some((count) => (sha256Mean(count, INSTRUCTIONS) ?? 0) > 0)
        ? ' **SHA-256 under valgrind:** valgrind\'s virtual CPU has no SHA extensions, so OpenSSL hashes with its AVX2 code there (the "SHA-256 blocks" column: the signature\'s HMAC over each 1 KB body)' +
          (section.hostHasShaExtensions === true ? '; this machine\'s CPU has them, and natively the same hashing takes a small fraction of those instructions.' : '.') +
          ' Both signed sides hash the same bytes, so these instructions pull their ratio towards 1; "SHA-256 left out" is the ratio without them. The ratio a native count would give lies between the two.'
        : '') +
      (section.sides.some((count) => count.cyclesPerRecord !== undefined)
        ? ' **Estimated cycles:** instructions do not all cost the same. While counting, callgrind also simulated this machine\'s caches and a branch predictor (`--cache-sim=yes --branch-sim=yes`); the estimate adds 10 cycles for each L1 miss and each mispredicted branch and 100 for each last-level miss to the instructions, the costs the cachegrind manual gives as typical. It is a model, not a timing: it leaves out TLB misses, the prefetchers and how many instructions a core retires at once. It counts what instructions alone cannot: code that misses the caches or mispredicts more often per instruction costs more per instruction. The simulation (`--simulate-caches`) slows valgrind down about twice as much again, and the counts then spread far more than without it, up to 2× between invocations of one side: read the ratio of the lowest counts.'
        : ''));
  return out.join('\n');
}

export function writeMarkdown(file: string, results: BenchResults): void {
  writeFileSync(file, markdown(results));
}
