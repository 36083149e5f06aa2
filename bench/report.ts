/**
 * One run's figures as text: the console table, `BENCHMARKS.md` and the figures of
 * docs/performance.md. The words are Markdown templates in bench/templates/ with `{{placeholders}}`;
 * this module computes what goes into them (every number comes from the run).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isLambdaNodeMajor, LAMBDA_NODE, nodeMajor } from '../bin/lambda-node';
import type { InstructionCount, InstructionsSection } from './instructions';
import type {
  BenchResults,
  ClientChoice,
  LatencySection,
  MixedSection,
  SideSummary,
  ThroughputRun,
  ThroughputSection,
  WarmMemoryRow,
} from './results';
import {
  type BackPressureRun,
  type BackPressureSection,
  type BackPressureSide,
  DRAIN_GOAL_FACTOR,
  goalMet,
  medianDrain,
  REFUSED_GOAL,
} from './scenarios/back-pressure';
import { fmt, type MedianInterval, median, medianInterval, range, ratio } from './stats';

/** Lambda gives a function one vCPU at 1,769 MB of memory, and CPU in proportion below that. */
export const MB_PER_VCPU = 1_769;
/** The stack's default memory size (lib/webhook-relay.ts). */
const STACK_MEMORY_MB = 256;
/** "Well inside" a 256 MB function (244 MiB): four fifths of it at most, room for larger messages and a late collection. */
const MEMORY_GOAL_MIB = 200;

/** Where the figures of {@link performanceSection} go: a file of the repository, between these markers. */
export const PERFORMANCE_DOC = {
  path: 'docs/performance.md',
  start: '<!-- performance:start (written by npm run bench) -->',
  end: '<!-- performance:end -->',
} as const;

type Values = Readonly<Record<string, string | boolean | undefined>>;

/**
 * Template `name` (bench/templates/<name>.md) filled with `values`: `{{x}}` is x's text;
 * `{{#x}}…{{/x}}` is kept where x is set (not undefined, '' or false), `{{^x}}…{{/x}}` where it is not.
 * @throws for a `{{x}}` left with no text (a template and this module out of step)
 */
export function fill(name: string, values: Values): string {
  let text = readFileSync(join(import.meta.dirname, 'templates', `${name}.md`), 'utf8').replace(/\n$/, '');
  const set = (key: string): boolean => values[key] !== undefined && values[key] !== '' && values[key] !== false;
  for (let before = ''; before !== text; ) {
    before = text;
    text = text.replace(/\{\{([#^])(\w+)\}\}([\s\S]*?)\{\{\/\2\}\}/g, (_, kind: string, key: string, body: string) =>
      set(key) === (kind === '#') ? body : '',
    );
  }
  return text.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = values[key];
    if (typeof value !== 'string') throw new Error(`bench/templates/${name}.md: no text for {{${key}}}`);
    return value;
  });
}

const kb = (bytes: number): string => `${fmt(bytes / 1024, 3)} KB`;
const ms = (value: number): string => `${fmt(value, 3)} ms`;
const us = (value: number): string => `${fmt(value, 3)} µs`;
const mib = (value: number): string => `${fmt(value, 3)} MiB`;
/** A whole number with thousands separators. */
const int = (value: number): string => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
const perSecond = (value: number): string => `${int(value)}/s`;
/** A count in thousands, e.g. "243k". */
const kilo = (count: number): string => `${int(count / 1000)}k`;
/** A difference with its sign: "+61.2 µs", "−12.0 µs". */
const delta = (value: number, format: (value: number) => string): string => (value < 0 ? `−${format(-value)}` : `+${format(value)}`);
const check = (ok: boolean): string => (ok ? 'met' : 'NOT met');
const meanOf = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
const runRange = (values: readonly number[], format: (value: number) => string): string =>
  `${format(range(values).min)}–${format(range(values).max)}`;

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

function side(section: ThroughputSection | undefined, name: string): SideSummary | undefined {
  return section?.sides.find((candidate) => candidate.side === name);
}

/** The bare loop that sends the same POSTs as each relay side does: its limit, and the goal's baseline. */
const LIMIT_OF: Readonly<Record<string, string>> = { relay: 'bare node:http, signing', 'relay, unsigned': 'bare node:http, unsigned' };

/** The side `name` is measured against: its own limit for a relay side, else the bare node:http loop. */
function limitOf(section: ThroughputSection | undefined, name: string): SideSummary | undefined {
  return side(section, LIMIT_OF[name] ?? 'bare node:http') ?? side(section, 'bare node:http');
}

/** `a`'s figure ÷ `b`'s for each pair of runs made side by side; `undefined` for sides from different comparisons. */
function pairedRatios(a: SideSummary, b: SideSummary, figure: (run: ThroughputRun) => number): number[] | undefined {
  if (a.runs.length !== b.runs.length || a.runs.length === 0) return undefined;
  return a.runs.map((run, index) => figure(run) / figure(b.runs[index] as ThroughputRun));
}
/** The median of the paired ratios (BENCHMARKS.md says why), or the ratio of medians for sides of different comparisons. */
function pairedRatio(a: SideSummary, b: SideSummary, figure: (run: ThroughputRun) => number): number {
  const ratios = pairedRatios(a, b, figure);
  return ratios === undefined ? median(a.runs.map(figure)) / median(b.runs.map(figure)) : median(ratios);
}
const rateOf = (run: ThroughputRun): number => run.recordsPerSecond;
/** Throughput of `a` ÷ throughput of `b` (paired rounds). */
const speedup = (a: SideSummary, b: SideSummary): number => pairedRatio(a, b, rateOf);
/** The 95 % interval of {@link speedup}'s median, where the runs allow one. */
function speedupInterval(a: SideSummary, b: SideSummary): MedianInterval | undefined {
  const ratios = pairedRatios(a, b, rateOf);
  return ratios === undefined ? undefined : medianInterval(ratios);
}
/** "0.86–0.97". */
const bounds = (interval: MedianInterval): string => `${ratio(interval.low, 1)}–${ratio(interval.high, 1)}`;
const intervalText = (interval: MedianInterval | undefined): string | undefined =>
  interval === undefined ? undefined : `95 % interval ${bounds(interval)}`;
/** The goal's verdict on a paired ratio: on its median, saying when the interval reaches across the line. */
function goalCheck(relative: number, interval: MedianInterval | undefined): string {
  const verdict = check(relative >= 0.9);
  return interval !== undefined && interval.low < 0.9 && interval.high >= 0.9 ? `${verdict} (the interval spans 0.90)` : verdict;
}

/** {@link speedup} and {@link speedupInterval} of two sides of `section` by name (NaN / undefined when one is missing). */
function compared(
  section: ThroughputSection | undefined,
  a: string,
  b: string | undefined,
): { ratio: number; interval: MedianInterval | undefined } {
  const first = side(section, a);
  const second = b === undefined ? undefined : side(section, b);
  if (first === undefined || second === undefined) return { ratio: Number.NaN, interval: undefined };
  return { ratio: speedup(first, second), interval: speedupInterval(first, second) };
}

/** Headline figures, shared by all three outputs. */
interface Headline {
  readonly relayRate: number;
  readonly relayCpu: number;
  /** The bare loop signing each request as it sends it: the relay's limit. */
  readonly bareCpu: number;
  /** The bare loop with every signature computed in advance: the HTTP exchange alone. */
  readonly exchangeCpu: number;
  readonly unsignedCpu: number | undefined;
  readonly relayVsLimit: { ratio: number; interval: MedianInterval | undefined };
  readonly unsignedVsLimit: number | undefined;
  readonly relayVsExchange: number;
  readonly relayVsPeer: number;
}

function headline(results: BenchResults, concurrency = 10): Headline {
  const section = results.throughput.find((candidate) => candidate.concurrency === concurrency);
  const unsigned = side(section, 'relay, unsigned');
  return {
    relayRate: side(section, 'relay')?.recordsPerSecond ?? Number.NaN,
    relayCpu: side(section, 'relay')?.cpuMicrosPerRecord ?? Number.NaN,
    bareCpu: limitOf(section, 'relay')?.cpuMicrosPerRecord ?? Number.NaN,
    exchangeCpu: side(section, 'bare node:http')?.cpuMicrosPerRecord ?? Number.NaN,
    unsignedCpu: unsigned?.cpuMicrosPerRecord,
    relayVsLimit: compared(section, 'relay', limitOf(section, 'relay')?.side),
    unsignedVsLimit:
      unsigned === undefined ? undefined : compared(section, 'relay, unsigned', limitOf(section, 'relay, unsigned')?.side).ratio,
    relayVsExchange: compared(section, 'relay', 'bare node:http').ratio,
    relayVsPeer: compared(section, 'relay', 'peer (Powertools + fetch)').ratio,
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
  for (const [name, label] of [
    ['relay', 'as deployed (signed)'],
    ['relay, unsigned', 'signing off'],
  ] as const) {
    const relay = side(section, name);
    const baseline = limitOf(section, name);
    if (relay !== undefined && baseline !== undefined) comparisons.push({ label, relay, baseline, goal: true });
  }
  const relay = side(section, 'relay');
  const others = [
    ['vs signatures computed in advance', side(section, 'bare node:http')],
    ['vs the peer', side(section, 'peer (Powertools + fetch)')],
  ] as const;
  for (const [label, baseline] of others)
    if (relay !== undefined && baseline !== undefined) comparisons.push({ label, relay, baseline, goal: false });
  return comparisons;
}

/** What the callgrind section counts per record: instructions, or cycles estimated from simulated caches (instructions.ts). */
interface CountMeasure {
  readonly name: string;
  /** Its row's label in the table of docs/performance.md. */
  readonly readmeLabel: string;
  readonly perRecord: (count: InstructionCount) => readonly number[] | undefined;
  readonly sha256PerRecord: (count: InstructionCount) => readonly number[] | undefined;
}
const INSTRUCTIONS: CountMeasure = {
  name: 'instructions',
  readmeLabel: "instructions per record (callgrind: independent of the machine's speed)",
  perRecord: (count) => count.perRecord,
  sha256PerRecord: (count) => count.sha256PerRecord,
};
const ESTIMATED_CYCLES: CountMeasure = {
  name: 'estimated cycles',
  readmeLabel:
    "estimated cycles per record (callgrind's simulated caches and branch predictor: instructions, misses and mispredictions weighed by their usual cost)",
  perRecord: (count) => count.cyclesPerRecord,
  sha256PerRecord: (count) => count.sha256CyclesPerRecord,
};
const COUNT_MEASURES = [INSTRUCTIONS, ESTIMATED_CYCLES] as const;

/** A relay side's count against its limit's in one measure (per record: the mean of the counted invocations). */
interface CountComparison {
  readonly label: string;
  readonly measure: CountMeasure;
  readonly relay: InstructionCount;
  readonly baseline: InstructionCount;
  readonly relayPerRecord: number;
  readonly baselinePerRecord: number;
  /** Either side's counts spread over 3 %: the ratio of means is then not read as the goal's. */
  readonly spreadOut: boolean;
  /** The baseline's lowest count ÷ the relay's: each side's invocation with the least collection. */
  readonly lowestRatio: number;
  /** The ratio of means with both sides' SHA-256 blocks left out, where hashing is over 1 % of either count. */
  readonly sha256LeftOutRatio: number | undefined;
}

/** True when a side's counted invocations differ by more than 3 % (garbage collection: see BENCHMARKS.md). */
const spread = (perRecord: readonly number[]): boolean => Math.max(...perRecord) > Math.min(...perRecord) * 1.03;

/** Mean per record of a side's SHA-256 blocks in `measure`; `undefined` where they were not counted. */
function sha256Mean(count: InstructionCount, measure: CountMeasure): number | undefined {
  const hashing = measure.sha256PerRecord(count);
  return hashing === undefined ? undefined : meanOf(hashing);
}

/** The counted relay sides against their limits (same pairs as the throughput goal), in `measure`. */
function countComparisons(section: InstructionsSection, measure: CountMeasure = INSTRUCTIONS): CountComparison[] {
  const comparisons: CountComparison[] = [];
  for (const [name, label] of [
    ['relay', 'as deployed (signed)'],
    ['relay, unsigned', 'signing off'],
  ] as const) {
    const relay = section.sides.find((count) => count.side === name);
    const baseline = section.sides.find((count) => count.side === LIMIT_OF[name]);
    const relayCounts = relay === undefined ? undefined : measure.perRecord(relay);
    const baselineCounts = baseline === undefined ? undefined : measure.perRecord(baseline);
    if (relay === undefined || baseline === undefined || relayCounts === undefined || baselineCounts === undefined) continue;
    const relayPerRecord = meanOf(relayCounts);
    const baselinePerRecord = meanOf(baselineCounts);
    const relayHashing = sha256Mean(relay, measure);
    const baselineHashing = sha256Mean(baseline, measure);
    const hashingCounts =
      relayHashing !== undefined &&
      baselineHashing !== undefined &&
      (relayHashing > relayPerRecord / 100 || baselineHashing > baselinePerRecord / 100);
    comparisons.push({
      label,
      measure,
      relay,
      baseline,
      relayPerRecord,
      baselinePerRecord,
      spreadOut: spread(relayCounts) || spread(baselineCounts),
      lowestRatio: Math.min(...baselineCounts) / Math.min(...relayCounts),
      sha256LeftOutRatio: hashingCounts ? (baselinePerRecord - baselineHashing) / (relayPerRecord - relayHashing) : undefined,
    });
  }
  return comparisons;
}
const allCountComparisons = (results: BenchResults): CountComparison[] =>
  COUNT_MEASURES.flatMap((measure) => countComparisons(results.instructions, measure));

/** "SHA-256 left out: 0.93" where that ratio applies. */
const sha256LeftOutText = (count: CountComparison): string | undefined =>
  count.sha256LeftOutRatio === undefined ? undefined : `SHA-256 left out: ${ratio(count.sha256LeftOutRatio, 1)}`;

/** Records in the benchmark's batch (10,000; fewer in a `--quick` run). */
const batchRecords = (results: BenchResults): string => int(results.throughput[0]?.records ?? Number.NaN);

/** Fresh process with the bundle − without, as deployed. */
function loadOverhead(results: BenchResults): number {
  const deployed = results.coldStart.loads[0];
  return (deployed?.bundleProcessMs ?? Number.NaN) - (deployed?.emptyProcessMs ?? Number.NaN);
}

/** The SQS calls of the first mixed invocation, and the goal they are held to. */
function mixedCalls(
  mixed: MixedSection | undefined,
): { first: Record<string, number>; visibilityCalls: number; goal: number; retried: number; warmMs: number } | undefined {
  const first = mixed?.runs[0];
  if (mixed === undefined || first === undefined) return undefined;
  const warmMs = median(mixed.runs.slice(1).map((run) => run.wallMs));
  return {
    first: { ...first.calls },
    visibilityCalls: first.calls.ChangeMessageVisibilityBatch ?? 0,
    goal: Math.ceil(first.retried / 10),
    retried: first.retried,
    warmMs,
  };
}
/** "GetQueueUrl × 1, …": the first mixed invocation's calls other than the visibility changes. */
const otherCalls = (calls: Record<string, number>, times: string): string =>
  Object.entries(calls)
    .filter(([name]) => name !== 'ChangeMessageVisibilityBatch')
    .map(([name, count]) => `${name}${times}${count}`)
    .join(', ') || 'none';

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

const latencyRows = (latency: LatencySection, figure: 'p50Micros' | 'p99Micros'): [string, string, string] => [
  us(latency.relay[figure]),
  us(latency.bare[figure]),
  delta(latency.relay[figure] - latency.bare[figure], us),
];

/** The console summary: BENCHMARKS.md's summary table as plain text, and the run's notes. */
export function consoleTable(results: BenchResults): string {
  const rows = [['figure', 'relay', 'baseline', 'ratio', 'goal', ''], ...summaryRows(results)].map((row) =>
    row.map((cell) => cell.replace(/\*\*|`/g, '')),
  );
  if (results.instructions.skipped !== undefined)
    rows.push(['instructions per record', 'skipped', results.instructions.skipped, '', '', '']);
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  const lines = rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
  lines.splice(1, 0, widths.map((width) => '-'.repeat(width)).join('  '));
  const notes = results.notes.length === 0 ? '' : `\nnotes:\n${results.notes.map((note) => `- ${note}`).join('\n')}`;
  return `${lines.join('\n')}${notes}`;
}

/** The rows of BENCHMARKS.md's summary table. */
function summaryRows(results: BenchResults): string[][] {
  const rows: string[][] = [];
  for (const section of results.throughput) {
    const c = section.concurrency;
    for (const { label, relay, baseline, goal } of comparisonsOf(section)) {
      const relative = speedup(relay, baseline);
      if (!goal) {
        rows.push([
          `throughput ${label}, concurrency ${c}`,
          perSecond(relay.recordsPerSecond),
          `${baseline.side} ${perSecond(baseline.recordsPerSecond)}`,
          `${ratio(relative, 1)}×`,
          '',
          '',
        ]);
        continue;
      }
      const interval = speedupInterval(relay, baseline);
      const asides = [intervalText(interval), `of the medians: ${ratio(relay.recordsPerSecond, baseline.recordsPerSecond)}`].filter(
        (part) => part !== undefined,
      );
      rows.push([
        `throughput, ${int(section.records)} records, concurrency ${c}, ${label}`,
        perSecond(relay.recordsPerSecond),
        `${baseline.side} ${perSecond(baseline.recordsPerSecond)}`,
        `**${ratio(relative, 1)}** (${asides.join('; ')})`,
        '≥ 0.90',
        goalCheck(relative, interval),
      ]);
      const cpu = `${ratio(
        pairedRatio(relay, baseline, (run) => run.cpuMicrosPerRecord),
        1,
      )} (${delta(relay.cpuMicrosPerRecord - baseline.cpuMicrosPerRecord, us)})`;
      rows.push([
        `CPU per record, concurrency ${c}, ${label}`,
        us(relay.cpuMicrosPerRecord),
        `${baseline.side} ${us(baseline.cpuMicrosPerRecord)}`,
        cpu,
        '',
        '',
      ]);
    }
  }
  for (const count of allCountComparisons(results)) {
    const workRatio = count.baselinePerRecord / count.relayPerRecord;
    const asides = [count.spreadOut ? `of the lowest counts: ${ratio(count.lowestRatio, 1)}` : undefined, sha256LeftOutText(count)].filter(
      (aside) => aside !== undefined,
    );
    const what = `${count.measure.name} per record (callgrind${count.measure === ESTIMATED_CYCLES ? ', from simulated caches and branches' : ''})`;
    rows.push([
      `${what}, concurrency ${results.instructions.concurrency}, ${count.label}: its limit's ÷ the relay's`,
      kilo(count.relayPerRecord),
      `${count.baseline.side} ${kilo(count.baselinePerRecord)}`,
      `**${ratio(workRatio, 1)}**${asides.length === 0 ? '' : ` (${asides.join('; ')})`}`,
      '≥ 0.90',
      count.spreadOut ? 'not read: counts spread over 3 % (see below)' : check(workRatio >= 0.9),
    ]);
  }
  const calls = mixedCalls(results.mixed);
  if (calls !== undefined && results.mixed !== undefined) {
    const { visibilityCalls, goal, first } = calls;
    rows.push([
      'mixed 30 % `429`: ChangeMessageVisibilityBatch calls',
      String(visibilityCalls),
      `${calls.retried} retries`,
      `${visibilityCalls} / ${goal}`,
      `⌈retries ÷ 10⌉ = ${goal}`,
      check(visibilityCalls === goal),
    ]);
    rows.push([
      'mixed: other SQS calls (first invocation)',
      otherCalls(first, ' × '),
      '',
      '',
      'GetQueueUrl × 1',
      check((first.GetQueueUrl ?? 0) === 1 && Object.keys(first).length === 2),
    ]);
    rows.push([
      'mixed: invocation time (warm)',
      ms(calls.warmMs),
      `all 200: ${ms(results.mixed.allOkMs)}`,
      ratio(calls.warmMs, results.mixed.allOkMs),
      '',
      '',
    ]);
  }
  rows.push(...backPressureRows(results));
  const weight = results.coldStart.weight;
  const load = loadOverhead(results);
  rows.push([
    'bundle loaded at import (`index.mjs` and the chunks it imports)',
    kb(weight.atImport.bytes),
    `whole asset ${kb(weight.total.moduleBytes)}`,
    '',
    '< 500 KB',
    check(weight.atImport.bytes < 500 * 1024),
  ]);
  rows.push([
    'load time: fresh process with the bundle − without',
    ms(load),
    `import() alone ${ms(results.coldStart.loads[0]?.importMs ?? Number.NaN)}`,
    '',
    '< 100 ms',
    check(load < 100),
  ]);
  const relayMemory = results.memory.find((row) => row.side === 'relay');
  const noop = results.memory.find((row) => row.side === 'no-op handler');
  if (relayMemory !== undefined) {
    rows.push([
      `peak RSS, one ${batchRecords(results)}-record invocation, fresh process, no heap limits`,
      mib(relayMemory.peakMiB),
      `no-op handler ${mib(noop?.peakMiB ?? Number.NaN)}`,
      '',
      'well inside 256 MB',
      check(relayMemory.peakMiB < MEMORY_GOAL_MIB),
    ]);
  }
  for (const { relay, noop: warmNoop } of warmMemoryPairs(results)) {
    const label = `peak RSS, warm container as deployed: ${relay.peakMiBByInvocation.length} invocations of ${int(relay.records)} records in a row, ${results.warmMemory?.memorySizeMb ?? STACK_MEMORY_MB} MB heap limits`;
    rows.push([
      label,
      mib(warmPeakMiB(relay)),
      `no-op handler ${mib(warmPeakMiB(warmNoop))}`,
      '',
      'well inside 256 MB',
      check(warmPeakMiB(relay) < MEMORY_GOAL_MIB),
    ]);
  }
  for (const latency of results.latency) {
    const [relay50, bare50, added50] = latencyRows(latency, 'p50Micros');
    const [relay99, bare99, added99] = latencyRows(latency, 'p99Micros');
    rows.push([
      `latency added, concurrency ${latency.concurrency}, p50 / p99`,
      `${relay50} / ${relay99}`,
      `bare ${bare50} / ${bare99}`,
      `${added50} / ${added99}`,
      '',
      '',
    ]);
  }
  return rows;
}

/** One concurrency's throughput table, and where the relay's CPU goes when every side of that was measured. */
function throughputMarkdown(section: ThroughputSection): string {
  const rows = section.sides.map((summary) => {
    const bare = limitOf(section, summary.side);
    return [
      `**${summary.side}**`,
      perSecond(summary.recordsPerSecond),
      runRange(
        summary.runs.map((run) => run.recordsPerSecond),
        int,
      ),
      bare === undefined ? '' : `${ratio(speedup(summary, bare), 1)} (${bare.side})`,
      us(summary.cpuMicrosPerRecord),
      fmt(summary.clientCores, 2),
      fmt(summary.webhookCores, 2),
      String(median(summary.runs.map((run) => run.newConnections))),
      String(summary.runs.reduce((sum, run) => sum + run.failures, 0)),
      String(summary.runs.reduce((sum, run) => sum + run.sqsCalls, 0)),
      kb(median(summary.runs.map((run) => run.outputBytes))),
    ];
  });
  const header = [
    'side',
    'records/s (median)',
    'runs (min–max)',
    '÷ its baseline',
    'CPU / record',
    'client cores',
    'webhook cores',
    'new connections',
    'failures',
    'SQS calls',
    'stdout / run',
  ];
  const [bare, transmitter, unsigned, relay, bareSigning] = [
    'bare node:http',
    'relay transmitter',
    'relay, unsigned',
    'relay',
    'bare node:http, signing',
  ].map((name) => side(section, name)?.cpuMicrosPerRecord);
  const breakdown =
    bare === undefined || transmitter === undefined || unsigned === undefined || relay === undefined
      ? ''
      : `${fill('cpu-breakdown', {
          relayCpu: us(relay),
          bareCpu: us(bare),
          transmitterDelta: delta(transmitter - bare, us),
          restDelta: delta(unsigned - transmitter, us),
          signingDelta: delta(relay - unsigned, us),
          bareSigningDelta: bareSigning === undefined ? undefined : delta(bareSigning - bare, us),
        })}\n\n`;
  return `### Concurrency ${section.concurrency}\n\n${table(header, rows)}\n\n${breakdown}`;
}

/** The instruction counts of each side, and the relay's ratios to its limits. */
function instructionsTable(section: InstructionsSection): string {
  // The estimated-cycle columns only where the caches were simulated (--simulate-caches).
  const measures = COUNT_MEASURES.filter((measure) => section.sides.some((count) => measure.perRecord(count) !== undefined));
  const cycles = measures.includes(ESTIMATED_CYCLES);
  const limits = measures.map((measure) => new Map(countComparisons(section, measure).map((count) => [count.relay.side, count])));
  const limitText = (limit: CountComparison | undefined): string => {
    if (limit === undefined) return 'not counted';
    const hashing = sha256LeftOutText(limit);
    return `${ratio(limit.baselinePerRecord / limit.relayPerRecord, 1)}${hashing === undefined ? '' : ` (${hashing})`}`;
  };
  const counted = (values: readonly number[] | undefined, flag = false): string =>
    values === undefined ? 'not counted' : `${int(meanOf(values))}${flag && spread(values) ? ' (spread over 3 %)' : ''}`;
  const header = ['side', 'instructions per record (each counted invocation)', 'mean', 'of which SHA-256 blocks'];
  if (cycles) header.push('estimated cycles per record (mean)', 'of which SHA-256 blocks');
  header.push(`its limit's ÷ this: ${measures.map((measure) => measure.name).join('; ')}`);
  const rows = section.sides.map((count) => {
    const sideLimits = limits.map((byRelay) => byRelay.get(count.side));
    const baseline = sideLimits[0]?.baseline.side;
    return [
      `**${count.side}**`,
      `${count.perRecord.map((value) => int(value)).join(', ')}${spread(count.perRecord) ? ' (spread over 3 %)' : ''}`,
      int(meanOf(count.perRecord)),
      counted(count.sha256PerRecord),
      ...(cycles ? [counted(count.cyclesPerRecord, true), counted(count.sha256CyclesPerRecord)] : []),
      baseline === undefined ? '' : `${sideLimits.map(limitText).join('; ')} (${baseline})`,
    ];
  });
  return table(header, rows);
}

function clientTable(choice: ClientChoice): string {
  const http = choice.sides.find((candidate) => candidate.side === 'bare node:http');
  const header = ['client', 'records/s', 'runs (min–max)', '÷ node:http', 'CPU / record', 'adds to the bundle', 'adds to the load time'];
  return table(
    header,
    choice.sides.map((summary) => {
      const undici = summary.side === 'bare undici Pool';
      return [
        summary.side,
        perSecond(summary.recordsPerSecond),
        runRange(
          summary.runs.map((run) => run.recordsPerSecond),
          int,
        ),
        http === undefined ? '' : ratio(summary.recordsPerSecond, http.recordsPerSecond),
        us(summary.cpuMicrosPerRecord),
        undici ? kb(choice.undiciBundleBytes) : '0 (built in)',
        undici ? ms(choice.undiciLoadMs) : '0',
      ];
    }),
  );
}

function mixedValues(mixed: MixedSection | undefined): Values {
  if (mixed === undefined) return {};
  const entriesRange = (entries: readonly number[]): string =>
    entries.length === 0 ? '' : `${Math.min(...entries)}–${Math.max(...entries)}`;
  const calls = (run: MixedSection['runs'][number]): string =>
    Object.entries(run.calls)
      .map(([name, count]) => `${name} × ${count}`)
      .join(', ') || 'none';
  return {
    mixedRecords: int(mixed.records),
    mixedSetup: fmt(mixed.setupMs / 1000, 2),
    expectedRetries: String(mixed.expectedRetries),
    mixedTable: table(
      ['invocation', 'time', 'retried', 'SQS calls', 'entries per visibility call'],
      mixed.runs.map((run) => [run.label, ms(run.wallMs), String(run.retried), calls(run), entriesRange(run.visibilityEntries)]),
    ),
    allOkMs: ms(mixed.allOkMs),
    visibilityVerified: String(mixed.visibilityVerified),
    mixedPeak: mib(mixed.peakMiB),
    logLines: table(
      ['line', 'count'],
      Object.entries(mixed.logLines)
        .sort((a, b) => b[1] - a[1])
        .map(([message, count]) => [message, String(count)]),
    ),
  };
}

/** How a side's runs met issue 21's goal: "met (3 of 3 runs)". */
const runsMet = (section: BackPressureSection, runs: readonly BackPressureRun[]): string => {
  const met = runs.filter((run) => goalMet(section, run)).length;
  return `${check(met === runs.length && met > 0)} (${met} of ${runs.length} runs)`;
};
const share = (part: number, whole: number): string => (whole === 0 ? 'n/a' : `${fmt((100 * part) / whole, 2)} %`);
/** The drain goal of the back-pressure scenario, s. */
const drainGoal = (section: BackPressureSection): number =>
  (DRAIN_GOAL_FACTOR * section.messages) / (section.requestsPerSecond ?? Number.POSITIVE_INFINITY);

/** The summary's rows for the back-pressure scenarios: the defaults against issue 21's goal. */
function backPressureRows(results: Pick<BenchResults, 'backPressure' | 'recovery'>): string[][] {
  const rows: string[][] = [];
  const pressure = results.backPressure;
  const [paced, unpaced] = pressure?.sides ?? [];
  if (pressure !== undefined && paced !== undefined) {
    // A drain is only worth reading beside where the messages went: a relay that dead-letters half of them drains fast.
    const medians = (side: BackPressureSide): string => {
      const of = (figure: (run: BackPressureRun) => number): number => median(side.runs.map(figure));
      return `${fmt(medianDrain(side), 3)} s, ${int(of((run) => run.deadLettered))} dead-lettered, ${share(
        of((run) => run.refused / run.requests),
        1,
      )} refused (medians)`;
    };
    rows.push([
      `back-pressure: ${int(pressure.messages)} messages to a webhook taking ${pressure.requestsPerSecond}/s, drain time`,
      medians(paced),
      unpaced === undefined ? '' : `${unpaced.side} ${medians(unpaced)}`,
      unpaced === undefined ? '' : ratio(medianDrain(paced), medianDrain(unpaced)),
      `≤ ${fmt(drainGoal(pressure), 3)} s, all delivered, none dead-lettered, ≤ ${100 * REFUSED_GOAL} % refused, every run`,
      runsMet(pressure, paced.runs),
    ]);
  }
  for (const side of results.recovery?.sides ?? []) {
    const section = results.recovery as BackPressureSection;
    const last = side.runs[side.runs.length - 1];
    rows.push([
      `recovery: ${int(section.messages)} messages, webhook ${side.status} for ${section.unavailableSeconds} s`,
      last === undefined ? 'n/a' : `${int(last.delivered)} delivered, ${int(last.deadLettered)} dead-lettered`,
      '',
      '',
      'all delivered, none dead-lettered',
      runsMet(section, side.runs),
    ]);
  }
  return rows;
}

/** BENCHMARKS.md's back-pressure section (and what `--only=back-pressure,recovery` prints); undefined when neither ran. */
export function backPressureText(results: Pick<BenchResults, 'backPressure' | 'recovery'>): string | undefined {
  const { backPressure: pressure, recovery } = results;
  if (pressure === undefined && recovery === undefined) return undefined;
  const header = [
    'relay',
    'run',
    'drain (first send → last delivery)',
    'delivered',
    'duplicates',
    'dead-lettered',
    'left on the queue',
    'refused',
    'goal',
  ];
  const rowsOf = (section: BackPressureSection): string[][] =>
    section.sides.flatMap((side) => [
      ...side.runs.map((run, index) => [
        side.side,
        String(index + 1),
        `${fmt(run.drainSeconds, 3)} s`,
        int(run.delivered),
        int(run.duplicates),
        int(run.deadLettered),
        int(run.left),
        `${int(run.refused)} of ${int(run.requests)} (${share(run.refused, run.requests)})`,
        check(goalMet(section, run)),
      ]),
      ...(side.runs.length > 1
        ? [[`**${side.side}**`, 'median', `**${fmt(medianDrain(side), 3)} s**`, '', '', '', '', '', runsMet(section, side.runs)]]
        : []),
    ]);
  return fill('back-pressure', {
    env: Object.entries((pressure ?? recovery)?.relayEnv ?? {})
      .map(([name, value]) => `${name}=${value}`)
      .join(' '),
    messages: pressure === undefined ? undefined : int(pressure.messages),
    rate: String(pressure?.requestsPerSecond),
    burst: String(pressure?.burst),
    drainGoal: pressure === undefined ? undefined : fmt(drainGoal(pressure), 3),
    refusedGoal: String(100 * REFUSED_GOAL),
    pressureTable: pressure === undefined ? undefined : table(header, rowsOf(pressure)),
    recoveryMessages: recovery === undefined ? undefined : int(recovery.messages),
    unavailableSeconds: String(recovery?.unavailableSeconds),
    recoveryTable: recovery === undefined ? undefined : table(header, rowsOf(recovery)),
  });
}

/** The three largest origins of a composition, with their bytes: "@smithy/core 112 KB, …". */
const topOrigins = (composition: readonly { readonly origin: string; readonly bytes: number }[]): string =>
  composition
    .slice(0, 3)
    .map((entry) => `${entry.origin} ${kb(entry.bytes)}`)
    .join(', ');

function coldStartValues(results: BenchResults): Values {
  const { weight, loads, firstInvocation: first } = results.coldStart;
  const atImport = weight.atImport;
  const rest = atImport.composition.slice(12).reduce((sum, entry) => sum + entry.bytes, 0);
  const share = (bytes: number): string => `${fmt((100 * bytes) / atImport.bytes, 2)} %`;
  return {
    chunks: atImport.files.length - 1 === 1 ? 'chunk' : `${atImport.files.length - 1} chunks`,
    atImport: kb(atImport.bytes),
    atImportGzip: kb(atImport.gzipBytes),
    assetBytes: kb(weight.total.moduleBytes),
    assetModules: String(weight.total.modules),
    mapBytes: kb(weight.total.mapBytes),
    assetTable: table(
      ['loaded', 'what', 'modules', 'bytes', 'largest parts'],
      [
        [
          'at import',
          '`index.mjs` and its static imports',
          String(atImport.files.length),
          kb(atImport.bytes),
          topOrigins(atImport.composition),
        ],
        ...weight.onFirstUse.map((set) => [
          'on first use',
          `${set.label} (\`${set.entry}\`)`,
          String(set.files.length),
          kb(set.bytes),
          topOrigins(set.composition),
        ]),
        [
          'when the SDK needs them',
          'credential providers (in Lambda only the environment one, `fromEnv`), nested STS/SSO clients, event streams',
          String(weight.rest.files.length),
          kb(weight.rest.bytes),
          topOrigins(weight.rest.composition),
        ],
      ],
    ),
    loadRuns: String(loads[0]?.runs ?? 0),
    loadTable: table(
      ['variant', 'fresh process + module', 'fresh process + empty module', 'difference', '`import()` inside the process'],
      loads.map((load) => [
        load.variant,
        ms(load.bundleProcessMs),
        ms(load.emptyProcessMs),
        `**${ms(load.bundleProcessMs - load.emptyProcessMs)}**`,
        ms(load.importMs),
      ]),
    ),
    builtins: weight.builtinsAtImport.map((name) => `\`${name}\``).join(', '),
    firstProcesses: String(first.processes),
    firstImport: ms(first.importMs),
    firstMs: ms(first.firstMs),
    secondMs: ms(first.secondMs),
    compositionTable: table(
      ['origin', 'bytes', 'share'],
      [
        ...atImport.composition.slice(0, 12).map((entry) => [entry.origin, kb(entry.bytes), share(entry.bytes)]),
        ['everything else', kb(rest), share(rest)],
      ],
    ),
  };
}

function memoryValues(results: BenchResults): Values {
  const values = {
    batch: batchRecords(results),
    memoryTable: table(
      ['side', 'after import', 'peak'],
      results.memory.map((row) => [row.side, mib(row.initMiB), `**${mib(row.peakMiB)}**`]),
    ),
  };
  const warm = results.warmMemory;
  if (warm === undefined || warm.rows.length === 0) return values;
  const invocations = warm.rows[0]?.peakMiBByInvocation.length ?? 0;
  const deliverable = Math.min(...warm.rows.map((row) => row.records));
  const batch = Math.max(...warm.rows.map((row) => row.records));
  const peaks = (row: WarmMemoryRow): string[] =>
    row.peakMiBByInvocation.map((peak, index) => (index === row.peakMiBByInvocation.length - 1 ? `**${mib(peak)}**` : mib(peak)));
  return {
    ...values,
    memorySizeMb: String(warm.memorySizeMb),
    heapFlags: warm.heapFlags.join(' '),
    invocations: String(invocations),
    warmBatch: int(batch),
    deliverable: batch === deliverable ? undefined : int(deliverable),
    warmTable: table(
      ['side', 'records', 'event', ...Array.from({ length: invocations }, (_, index) => `after ${index + 1}`)],
      [...warm.rows]
        .sort((a, b) => b.records - a.records)
        .map((row) => [row.side, int(row.records), `${fmt(row.eventBytes / 1024 / 1024, 3)} MiB`, ...peaks(row)]),
    ),
  };
}

/** `BENCHMARKS.md`. */
export function markdown(results: BenchResults): string {
  const { machine, instructions, clientChoice: choice } = results;
  const h = headline(results);
  const perRound = results.throughput[0]?.measuredRunsPerRound ?? 1;
  const componentsTotal = results.components.filter((cost) => cost.per === 'record').reduce((sum, cost) => sum + cost.nanos / 1000, 0);
  const machineRows = [
    ['CPU', `${machine.cpu}, ${machine.cores} cores`],
    ['memory', `${machine.memoryGiB} GiB`],
    ['kernel', machine.kernel],
    ['Node.js', machine.node],
    ['date', machine.date],
    ['commit', machine.commit],
    ['processes', machine.placement ?? 'wherever the scheduler put them'],
    ['run took', `${Math.round(results.durationSeconds)} s${results.quick ? ' (`--quick`: not for publishing)' : ''}`],
  ];
  const latencyTable = table(
    ['concurrency', 'percentile', 'relay: start → webhook has it', 'bare: start → webhook has it', 'added by the relay'],
    results.latency.flatMap((latency) =>
      (['p50Micros', 'p99Micros'] as const).map((figure) => [
        `c=${latency.concurrency}`,
        figure.slice(0, 3),
        ...latencyRows(latency, figure),
      ]),
    ),
  );
  const latencyBoundTable = table(
    [
      'webhook latency',
      'concurrency',
      'records',
      'relay',
      'bare node:http',
      'relay ÷ bare',
      'concurrency × 1000 ÷ latency',
      'relay ÷ model',
    ],
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
  );
  const text = fill('BENCHMARKS', {
    onLambdaNode: isLambdaNodeMajor(machine.node),
    thisNodeFlag: isLambdaNodeMajor(machine.node) ? '' : ' -- --this-node',
    node: machine.node,
    major: String(nodeMajor(machine.node)),
    lambdaMajor: String(nodeMajor(LAMBDA_NODE)),
    machineTable: table(['machine', ''], machineRows),
    summaryTable: table(['figure', 'relay', 'baseline', 'ratio', 'goal', ''], summaryRows(results)),
    relayConfig: Object.entries(results.relayConfig)
      .map(([name, value]) => `\`${name}=${value}\``)
      .join(', '),
    measuredRuns: perRound === 1 ? 'one measured invocation' : `${perRound} measured invocations`,
    throughputSections: results.throughput.map(throughputMarkdown).join(''),
    sides: (results.throughput[0]?.sides ?? []).map((summary) => `- **${summary.side}**: ${summary.description}.`).join('\n'),
    warmUpRuns: String(instructions.warmUpRuns),
    countedRecords: int(instructions.records),
    countedConcurrency: String(instructions.concurrency),
    countedRuns: String(instructions.sides[0]?.perRecord.length ?? 0),
    skipped: instructions.skipped,
    instructionsTable: instructions.skipped === undefined ? instructionsTable(instructions) : undefined,
    valgrind: instructions.valgrind ?? 'valgrind',
    spreadNote: instructions.sides.some((count) => spread(count.perRecord)),
    shaNote: instructions.sides.some((count) => (sha256Mean(count, INSTRUCTIONS) ?? 0) > 0),
    shaExtensions: instructions.hostHasShaExtensions === true,
    cyclesNote: instructions.sides.some((count) => count.cyclesPerRecord !== undefined),
    clientChoice: choice === undefined ? undefined : clientTable(choice),
    choiceConcurrency: String(choice?.concurrency),
    choiceRecords: int(results.throughput[0]?.records ?? 0),
    ...mixedValues(results.mixed),
    ...coldStartValues(results),
    ...memoryValues(results),
    latencyRecords: String(results.latency[0]?.records ?? 0),
    latencyRuns: String(results.latency[0]?.runs ?? 0),
    latencyTable,
    componentsTable: table(
      ['step', 'per', 'cost', 'where'],
      results.components.map((cost) => [cost.step, cost.per, us(cost.nanos / 1000), cost.where]),
    ),
    componentsTotal: us(componentsTotal),
    relayOverExchange: us(h.relayCpu - h.exchangeCpu),
    unsignedOverExchange: h.unsignedCpu === undefined ? undefined : us(h.unsignedCpu - h.exchangeCpu),
    relayCpu: us(h.relayCpu),
    cpuCap: perSecond(1e6 / h.relayCpu),
    latencyBoundTable,
    backPressure: backPressureText(results),
    capacity: capacityText(results),
    notes: results.notes.map((note) => `- ${note}`).join('\n'),
  });
  return `${text}\n`;
}

/** Records/s one invocation can sustain: `inFlight` requests each taking `latencyMs`, capped by the CPU it is given. */
export function invocationRate(latencyMs: number, inFlight: number, cpuMicrosPerRecord: number, memoryMb: number): number {
  const latencyBound = (inFlight * 1000) / latencyMs;
  const cpuBound = (Math.min(1, memoryMb / MB_PER_VCPU) * 1e6) / cpuMicrosPerRecord;
  return Math.min(latencyBound, cpuBound);
}

/** The capacity-planning text and table, shared by BENCHMARKS.md and docs/performance.md. */
function capacityText(results: BenchResults): string {
  const relayCpu = headline(results).relayCpu;
  const bound = results.latencyBound;
  const modelRange = bound.map((run) => run.recordsPerSecond / run.modelRecordsPerSecond);
  const inFlight = [10, 50, 100];
  const memories = [STACK_MEMORY_MB, MB_PER_VCPU];
  const rows = [5, 20, 50, 100, 250, 1000].map((latency) => [
    `${latency} ms`,
    ...memories.flatMap((memory) =>
      inFlight.map((k) => {
        const rate = invocationRate(latency, k, relayCpu, memory);
        return `${int(rate)}${rate < (k * 1000) / latency ? ' (CPU)' : ''}`;
      }),
    ),
  ]);
  return fill('capacity', {
    modelLow: bound.length === 0 ? undefined : ratio(Math.min(...modelRange), 1),
    modelHigh: ratio(Math.max(...modelRange), 1),
    worstVsBare: ratio(Math.min(...bound.map((run) => run.recordsPerSecond / run.bareRecordsPerSecond)), 1),
    relayCpu: us(relayCpu),
    stackMemory: String(STACK_MEMORY_MB),
    capacityTable: table(['webhook latency', ...memories.flatMap((memory) => inFlight.map((k) => `${k} in flight, ${memory} MB`))], rows),
  });
}

/** The figures of docs/performance.md (links relative to docs/). */
export function performanceSection(results: BenchResults): string {
  const h = headline(results);
  const weight = results.coldStart.weight;
  const calls = mixedCalls(results.mixed);
  const relayMemory = results.memory.find((row) => row.side === 'relay');
  const c10 = results.latency.find((latency) => latency.concurrency === 10);
  const countRows = COUNT_MEASURES.map((measure) => {
    const counts = countComparisons(results.instructions, measure).map((count) => {
      const lowest = count.spreadOut
        ? `; counts spread over 3 % with the collections each invocation ran into, their lowest give ${ratio(count.lowestRatio, 1)}`
        : '';
      const hashing = sha256LeftOutText(count);
      return `${count.label}: ${kilo(count.relayPerRecord)}, against ${kilo(count.baselinePerRecord)} for the bare loop sending the same requests (**${ratio(count.baselinePerRecord / count.relayPerRecord, 1)}**${lowest}${hashing === undefined ? '' : `; ${hashing}`})`;
    });
    return counts.length === 0 ? '' : `| ${measure.readmeLabel} | ${counts.join('; ')} |\n`;
  });
  const warmPairs = warmMemoryPairs(results);
  const largest = warmPairs[0]?.relay;
  const deliverable = warmPairs[warmPairs.length - 1]?.relay;
  const warm = largest !== undefined && deliverable !== undefined && deliverable !== largest;
  const text = fill('performance', {
    cpu: results.machine.cpu,
    cores: String(results.machine.cores),
    node: results.machine.node,
    batch: batchRecords(results),
    relayRate: perSecond(h.relayRate),
    vsLimit: ratio(h.relayVsLimit.ratio, 1),
    vsLimitInterval: intervalText(h.relayVsLimit.interval),
    unsignedVsLimit: h.unsignedVsLimit === undefined ? undefined : ratio(h.unsignedVsLimit, 1),
    vsExchange: ratio(h.relayVsExchange, 1),
    vsPeer: ratio(h.relayVsPeer, 1),
    // The relay does all the loop's work and more: a ratio over 1 is this run's noise, and says how much of it there was.
    overOne: Math.max(h.relayVsLimit.ratio, h.unsignedVsLimit ?? 0) > 1,
    countRows: countRows.join(''),
    relayCpu: us(h.relayCpu),
    bareCpu: us(h.bareCpu),
    exchangeCpu: us(h.exchangeCpu),
    unsignedCpu: h.unsignedCpu === undefined ? undefined : us(h.unsignedCpu),
    latencyAdded: c10 === undefined ? undefined : delta(c10.relay.p50Micros - c10.bare.p50Micros, us),
    visibilityCalls: calls === undefined ? undefined : String(calls.visibilityCalls),
    retried: int(calls?.retried ?? Number.NaN),
    mixedRecords: int(results.mixed?.records ?? Number.NaN),
    getQueueUrl: String(calls?.first.GetQueueUrl ?? 0),
    atImport: kb(weight.atImport.bytes),
    assetBytes: kb(weight.total.moduleBytes),
    loadMs: ms(loadOverhead(results)),
    warmLargest: warm ? mib(warmPeakMiB(largest)) : undefined,
    largestRecords: int(largest?.records ?? Number.NaN),
    warmDeliverable: mib(warmPeakMiB(deliverable)),
    deliverableRecords: int(deliverable?.records ?? Number.NaN),
    memorySize: String(results.warmMemory?.memorySizeMb ?? STACK_MEMORY_MB),
    peakMemory: !warm && relayMemory !== undefined ? mib(relayMemory.peakMiB) : undefined,
    capacity: capacityText(results),
  });
  return `${text}\n`;
}
