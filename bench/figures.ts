/**
 * The figures a report writes: one run's `BenchResults` and the figures derived from them (ratios to each side's baseline,
 * goals met, the capacity-planning table); bench/report.ts writes them as text.
 */
import { isLambdaNodeMajor, LAMBDA_NODE } from '../bin/lambda-node';
import { nodeMajor } from '../bin/node-release';
import { meanOf, mib, ratio, sum } from './format';
import type {
  BackPressureKey,
  BackPressureSection,
  BenchResults,
  InstructionCount,
  InstructionsSection,
  SideSummary,
  ThroughputRun,
  ThroughputSection,
  WarmMemoryRow,
} from './results';
import {
  ANNOUNCED_DRAIN_GOAL_FACTOR,
  ANNOUNCED_REFUSED_GOAL,
  DRAIN_GOAL_FACTOR,
  goalMet,
  medianDrain,
  REFUSED_GOAL,
  SPEED_GOAL,
  speedOf,
} from './scenarios/back-pressure';
import { median, medianInterval } from './stats';

/** Lambda gives a function one vCPU at 1,769 MB of memory, and CPU in proportion below that. */
const MB_PER_VCPU = 1_769;
/** "Well inside" a 256 MB function (244 MiB): four fifths of it at most, room for larger messages and a late collection. */
const MEMORY_GOAL_MIB = 200;

/** The relay sides the goal is about, each against its limit (the bare loop sending its requests); then the relay against the others. */
const COMPARISONS = [
  { goal: true, relay: 'relay', baseline: 'bare node:http, signing', label: 'as deployed (signed)' },
  { goal: true, relay: 'relay, unsigned', baseline: 'bare node:http, unsigned', label: 'signing off' },
  { goal: false, relay: 'relay', baseline: 'bare node:http', label: 'vs signatures computed in advance' },
  { goal: false, relay: 'relay', baseline: 'peer (Powertools + fetch)', label: 'vs the peer' },
] as const;
/** The side a side's "÷ its baseline" divides by: its limit for a relay side the goal is about, else the bare loop. */
const limitOf = (name: string): string => COMPARISONS.find((pair) => pair.goal && pair.relay === name)?.baseline ?? 'bare node:http';

/** Sections of named sides: a throughput section, the instruction counts. */
interface Sides<Side extends { readonly side: string }> {
  readonly sides: readonly Side[];
}

function side<Side extends { readonly side: string }>(section: Sides<Side> | undefined, name: string): Side | undefined {
  return section?.sides.find((candidate) => candidate.side === name);
}

/** The {@link COMPARISONS} (with `goalOnly`, the goal's) of which `section` has both sides, with those sides. */
function pairsOf<Side extends { readonly side: string }>(section: Sides<Side> | undefined, goalOnly = false) {
  return COMPARISONS.flatMap((comparison) => {
    const [relay, baseline] = [side(section, comparison.relay), side(section, comparison.baseline)];
    return relay === undefined || baseline === undefined || (goalOnly && !comparison.goal) ? [] : [{ ...comparison, relay, baseline }];
  });
}

/** The median of `a`'s figure ÷ `b`'s over their pairs of runs, made side by side (BENCHMARKS.md says why), and its 95 % interval. */
function paired(a: SideSummary, b: SideSummary, figure = (run: ThroughputRun): number => run.recordsPerSecond) {
  const ratios = a.runs.map((run, index) => figure(run) / figure(b.runs[index] as ThroughputRun));
  return { relative: median(ratios), interval: medianInterval(ratios) };
}

/** A throughput section with each side's spread and ratio to its limit, and the {@link COMPARISONS} it has both sides of. */
function throughputFigures(section: ThroughputSection) {
  return {
    ...section,
    sides: section.sides.map((summary) => {
      const limit = side(section, limitOf(summary.side));
      const runs = (figure: (run: ThroughputRun) => number): number[] => summary.runs.map(figure);
      return {
        ...summary,
        slowest: Math.min(...runs((run) => run.recordsPerSecond)),
        fastest: Math.max(...runs((run) => run.recordsPerSecond)),
        limit: limit?.side,
        limitRatio: limit && paired(summary, limit).relative,
        connections: median(runs((run) => run.newConnections)),
        failures: sum(runs((run) => run.failures)),
        sqsCalls: sum(runs((run) => run.sqsCalls)),
        outputBytes: median(runs((run) => run.outputBytes)),
      };
    }),
    comparisons: pairsOf(section).map((pair) => {
      const { relative, interval } = paired(pair.relay, pair.baseline);
      return {
        ...pair,
        relative,
        interval,
        meetsGoal: relative >= 0.9,
        spans: interval !== undefined && interval.low < 0.9 && interval.high >= 0.9,
        // The relay does all the loop's work and more: a ratio over 1 is this run's noise, and says how much of it there was.
        overOne: pair.goal && relative > 1,
        ofMedians: pair.relay.recordsPerSecond / pair.baseline.recordsPerSecond,
        cpuRatio: paired(pair.relay, pair.baseline, (run) => run.cpuMicrosPerRecord).relative,
        cpuDelta: pair.relay.cpuMicrosPerRecord - pair.baseline.cpuMicrosPerRecord,
      };
    }),
  };
}

/** True when a side's counted invocations differ by more than 3 % (garbage collection: see BENCHMARKS.md). */
const spread = (perRecord: readonly number[]): boolean => Math.max(...perRecord) > Math.min(...perRecord) * 1.03;
const sha256Mean = (count: InstructionCount): number | undefined =>
  count.sha256PerRecord === undefined ? undefined : meanOf(count.sha256PerRecord);

/** The counted relay sides against their limits (the throughput goal's pairs): instructions per record, the mean of the counted invocations. */
function countComparisons(section: InstructionsSection) {
  return pairsOf(section, true).map((pair) => {
    const { relay, baseline } = pair;
    const [relayPerRecord, baselinePerRecord] = [meanOf(relay.perRecord), meanOf(baseline.perRecord)];
    const [relayHashing, baselineHashing] = [sha256Mean(relay), sha256Mean(baseline)];
    // The ratio with both sides' SHA-256 blocks left out, where hashing is over 1 % of either count.
    const hashing =
      relayHashing !== undefined &&
      baselineHashing !== undefined &&
      (relayHashing > relayPerRecord / 100 || baselineHashing > baselinePerRecord / 100);
    const sha256LeftOut = hashing ? (baselinePerRecord - baselineHashing) / (relayPerRecord - relayHashing) : undefined;
    // Counts spread over 3 %: the ratio of means is not read as the goal's; each side's lowest (least collection) is shown.
    const spreadOut = spread(relay.perRecord) || spread(baseline.perRecord);
    const asides = [
      spreadOut && `of the lowest counts: ${ratio(Math.min(...baseline.perRecord) / Math.min(...relay.perRecord))}`,
      sha256LeftOut !== undefined && `SHA-256 left out: ${ratio(sha256LeftOut)}`,
    ];
    const countRatio = baselinePerRecord / relayPerRecord;
    return {
      ...pair,
      relayPerRecord,
      baselinePerRecord,
      countRatio,
      meetsGoal: countRatio >= 0.9,
      spreadOut,
      sha256LeftOut,
      asides: asides.filter((aside) => aside).join('; '),
    };
  });
}

/** A warm-container row's peak: the last invocation's maxRSS (it never falls); NaN for a row not measured. */
const warmPeakMiB = (row: WarmMemoryRow | undefined): number => row?.peakMiBByInvocation[row.peakMiBByInvocation.length - 1] ?? Number.NaN;

/** The warm-container rows, largest batch first; the relay's against the no-op handler's per batch size (the goal's). */
function warmFigures({ warmMemory: warm }: BenchResults) {
  const rows = [...warm.rows].sort((a, b) => b.records - a.records);
  const peaks = (row: WarmMemoryRow) =>
    row.peakMiBByInvocation.map((peak, index, all) => ({
      invocation: index + 1,
      peak: index === all.length - 1 ? `**${mib(peak)}**` : mib(peak),
    }));
  return {
    warmRows: rows.map((row) => ({ ...row, eventMiB: row.eventBytes / 1024 / 1024, peaks: peaks(row) })),
    warmBatches: rows
      .filter((row) => row.side === 'relay')
      .map((relay, index, all) => {
        const noop = rows.find((row) => row.side === 'no-op handler' && row.records === relay.records);
        const [relayPeak, noopPeak] = [warmPeakMiB(relay), warmPeakMiB(noop)];
        // The benchmark's batch first and, where Lambda could not deliver it, the largest batch it can last.
        const largestDelivered = index > 0 && index === all.length - 1;
        return { relay, relayPeak, noopPeak, met: relayPeak < MEMORY_GOAL_MIB, largestDelivered };
      }),
  };
}

/**
 * The latency-bound runs against the model and the bare loop, and the capacity-planning table (BENCHMARKS.md and docs/performance.md):
 * records/s per invocation at the function's memory (the synthesized template's) and at one vCPU, capped by its CPU.
 */
function capacityFigures({ latencyBound, warmMemory }: BenchResults, relayCpu: number) {
  const runs = latencyBound.map((run) => ({
    ...run,
    vsBare: run.recordsPerSecond / run.bareRecordsPerSecond,
    vsModel: run.recordsPerSecond / run.modelRecordsPerSecond,
  }));
  const columns = [warmMemory.memorySizeMb, MB_PER_VCPU].flatMap((memory) => [10, 50, 100].map((inFlight) => ({ memory, inFlight })));
  return {
    latencyBound: runs,
    modelLow: Math.min(...runs.map((run) => run.vsModel)),
    modelHigh: Math.max(...runs.map((run) => run.vsModel)),
    worstVsBare: Math.min(...runs.map((run) => run.vsBare)),
    columns,
    capacityRows: [5, 20, 50, 100, 250, 1000].map((latency) => ({
      latency,
      cells: columns.map(({ memory, inFlight }) => {
        const latencyBound = (inFlight * 1000) / latency;
        const rate = Math.min(latencyBound, (Math.min(1, memory / MB_PER_VCPU) * 1e6) / relayCpu);
        return { rate, cpuBound: rate < latencyBound };
      }),
    })),
  };
}

/** The back-pressure scenarios' figures of a run, the sections each scenario measured in the order they ran. */
export type BackPressureResults = Pick<BenchResults, BackPressureKey>;

/** The back-pressure scenarios' sections with each side's medians and goals, in the order they ran, and the relay's settings there. */
export function backPressureFigures(results: BackPressureResults) {
  const { backPressure, recovery } = results;
  const withSides = (section: BackPressureSection) => {
    const kind = section.kind ?? (section.requestsPerSecond === undefined ? 'recovery' : 'token-bucket');
    const announced = kind === 'rate-limit-headers';
    const rate = section.requestsPerSecond ?? Number.POSITIVE_INFINITY;
    const sides = section.sides.map((summary) => {
      const runs = summary.runs.map((run, index) => ({
        ...run,
        run: index + 1,
        refusedShare: run.refused / run.requests,
        met: goalMet(section, run),
      }));
      const metRuns = runs.filter((run) => run.met).length;
      return {
        ...summary,
        runs,
        last: runs[runs.length - 1],
        several: runs.length > 1,
        metRuns,
        met: metRuns === runs.length && metRuns > 0,
        // A drain is only worth reading beside where the messages went: a relay that dead-letters half of them drains fast.
        medianDrain: medianDrain(summary),
        medianRestDrain: median(runs.map((run) => run.restDrainSeconds ?? Number.NaN)),
        medianDeadLettered: median(runs.map((run) => run.deadLettered)),
        medianRefused: median(runs.map((run) => run.refusedShare)),
      };
    });
    const [paced, unpaced] = sides;
    // A token bucket measured also with the operator's ceiling (a small one): that side's figures.
    const ceiling = sides.find((side) => side.env.MAX_REQUESTS_PER_SECOND !== undefined);
    const restGoal = kind === 'per-message' || kind === 'per-key';
    const speed = restGoal ? speedOf(section) : Number.NaN;
    return {
      ...section,
      kind,
      tokenBucket: kind === 'token-bucket',
      isRecovery: kind === 'recovery',
      perMessage: kind === 'per-message',
      announced,
      perKey: kind === 'per-key',
      restGoal,
      sides,
      paced,
      unpaced,
      ceiling,
      pacedVsUnpaced: paced && unpaced && paced.medianDrain / unpaced.medianDrain,
      drainGoal: ((announced ? ANNOUNCED_DRAIN_GOAL_FACTOR : DRAIN_GOAL_FACTOR) * section.messages) / rate,
      drainGoalFactor: announced ? ANNOUNCED_DRAIN_GOAL_FACTOR : DRAIN_GOAL_FACTOR,
      refusedGoal: 100 * (announced ? ANNOUNCED_REFUSED_GOAL : REFUSED_GOAL),
      speed,
      speedGoal: SPEED_GOAL,
      // The first side's goal: every run's, and per-message and per-key the speed of the rest against PACING=false.
      sectionMet: (paced?.met ?? false) && (!restGoal || speed >= SPEED_GOAL),
    };
  };
  const pressure = backPressure && withSides(backPressure);
  const sections = {
    pressure,
    capacity: (results.capacity ?? []).map(withSides),
    perMessage: (results.perMessage ?? []).map(withSides),
    rateLimitHeaders: results.rateLimitHeaders && withSides(results.rateLimitHeaders),
    perKey: results.perKey && withSides(results.perKey),
    recovery: recovery && withSides(recovery),
  };
  const backPressureSections = [
    sections.pressure,
    ...sections.capacity,
    ...sections.perMessage,
    sections.rateLimitHeaders,
    sections.perKey,
    sections.recovery,
  ].filter((section) => section !== undefined);
  const env = [backPressure, recovery, results.rateLimitHeaders, results.perKey, ...(results.capacity ?? [])].find(Boolean)?.relayEnv ?? {};
  return { ...sections, env, backPressureSections };
}

/** The run's figures and those derived from them, as the report writes them. */
export function figures(results: BenchResults) {
  const { machine, throughput, instructions, mixed, coldStart } = results;
  const tens = throughput.find((section) => section.concurrency === 10);
  const relayCpu = side(tens, 'relay')?.cpuMicrosPerRecord ?? Number.NaN;
  // Every message of the throughput runs is answered 2xx: the relay sides must make no SQS call there.
  const relaySides = throughput.flatMap(({ sides }) => sides.filter((summary) => COMPARISONS.some((pair) => pair.relay === summary.side)));
  const allOkCalls = sum(relaySides.flatMap(({ runs }) => runs.map((run) => run.sqsCalls)));
  const counts = countComparisons(instructions);
  const calls = mixed.runs[0]?.calls ?? {};
  const { ChangeMessageVisibilityBatch: visibility = 0, ...others } = calls;
  const retried = mixed.runs[0]?.retried ?? Number.NaN;
  // One ChangeMessageVisibilityBatch call per 10 retried messages, the most a call takes.
  const visibilityGoal = Math.ceil(retried / 10);
  const warmMs = median(mixed.runs.slice(1).map((run) => run.wallMs));
  const { weight, loads } = coldStart;
  const load = (loads[0]?.bundleProcessMs ?? Number.NaN) - (loads[0]?.emptyProcessMs ?? Number.NaN);
  return {
    ...results,
    node: { onLambda: isLambdaNodeMajor(machine.node), major: nodeMajor(machine.node), lambda: nodeMajor(LAMBDA_NODE) },
    seconds: Math.round(results.durationSeconds),
    oneRun: throughput[0]?.measuredRunsPerRound === 1,
    throughputSections: throughput.map(throughputFigures),
    relayCpu,
    cpuCap: 1e6 / relayCpu,
    allOk: { calls: allOkCalls, met: allOkCalls === 0 },
    counting: {
      runs: instructions.sides[0]?.perRecord.length ?? 0,
      spreadNote: instructions.sides.some((count) => spread(count.perRecord)),
      shaNote: instructions.sides.some((count) => (sha256Mean(count) ?? 0) > 0),
    },
    countedSides: instructions.sides.map((count) => ({
      ...count,
      spread: spread(count.perRecord),
      limit: counts.find((comparison) => comparison.relay === count),
    })),
    counts,
    mixedCalls: {
      retried,
      visibility,
      goal: visibilityGoal,
      visibilityMet: visibility === visibilityGoal,
      others,
      othersMet: others.GetQueueUrl === 1 && Object.keys(calls).length === 2,
      warmMs,
      warmVsAllOk: warmMs / mixed.allOkMs,
    },
    bundle: {
      ...weight,
      chunks: weight.atImport.files.length - 1,
      oneChunk: weight.atImport.files.length === 2,
      atImportMet: weight.atImport.bytes < 500 * 1024,
      load,
      loadMet: load < 100,
    },
    loads: loads.map((timing) => ({ ...timing, difference: timing.bundleProcessMs - timing.emptyProcessMs })),
    ...warmFigures(results),
    latency: results.latency.map((section) => ({
      ...section,
      added50: section.relay.p50Micros - section.bare.p50Micros,
      added99: section.relay.p99Micros - section.bare.p99Micros,
    })),
    ...capacityFigures(results, relayCpu),
    ...backPressureFigures(results),
  };
}

/** A run's figures as the report writes them. */
export type ReportFigures = ReturnType<typeof figures>;
/** One back-pressure scenario's section with its sides' medians and goals. */
export type BackPressureFigures = ReportFigures['backPressureSections'][number];
