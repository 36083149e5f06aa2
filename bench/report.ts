/**
 * One run's figures as text: the console table, `BENCHMARKS.md`, the figures of docs/performance.md, docs/operations.md and the README.
 * Each section is a function of the run's figures (bench/figures.ts) written as a template literal; the figures are
 * formatted by bench/format.ts.
 */
import { type BackPressureFigures, type BackPressureResults, backPressureFigures, figures, type ReportFigures } from './figures';
import {
  bullets,
  calls,
  deltaUs,
  each,
  f2,
  f3,
  fmt,
  int,
  ints,
  kb,
  kilo,
  mean,
  met,
  mib,
  ms,
  ratio,
  settings,
  share,
  span,
  us,
} from './format';
import type { BenchResults } from './results';
import { SMALL_WEBHOOK_CEILING_SHARE } from './scenarios/back-pressure';

/** The summary's throughput and CPU rows: the relay against each baseline, at each concurrency. */
function throughputRows(f: ReportFigures): string[] {
  return f.throughputSections.flatMap((section) =>
    section.comparisons.flatMap((c) => {
      const interval = c.interval ? `95 % interval ${ratio(c.interval.low)}–${ratio(c.interval.high)}; ` : '';
      const verdict = `${met(c.meetsGoal)}${c.spans ? ' (the interval spans 0.90)' : ''}${c.overOne ? " (over 1.00: this run's noise, as the relay does all the loop's work and more)" : ''}`;
      return [
        `| throughput, ${int(section.records)} records, concurrency ${section.concurrency}, ${c.label} | ${int(c.relay.recordsPerSecond)}/s | ${c.baseline.side} ${int(c.baseline.recordsPerSecond)}/s | **${ratio(c.relative)}** (${interval}of the medians: ${ratio(c.ofMedians)}) | ${c.goal ? '≥ 0.90' : ''} | ${c.goal ? verdict : ''} |`,
        `| CPU per record, concurrency ${section.concurrency}, ${c.label} | ${us(c.relay.cpuMicrosPerRecord)} | ${c.baseline.side} ${us(c.baseline.cpuMicrosPerRecord)} | ${ratio(c.cpuRatio)} (${deltaUs(c.cpuDelta)}) |  |  |`,
      ];
    }),
  );
}

/** The summary's instruction-count rows: each counted relay side against its limit, or why none were counted. */
function instructionRows(f: ReportFigures): string[] {
  const { instructions } = f;
  const rows = f.counts.map(
    (c) =>
      `| instructions per record (callgrind), concurrency ${instructions.concurrency}, ${c.label}: its limit's ÷ the relay's | ${kilo(c.relayPerRecord)} | ${c.baseline.side} ${kilo(c.baselinePerRecord)} | **${ratio(c.countRatio)}**${c.asides ? ` (${c.asides})` : ''} | ≥ 0.90 | ${c.spreadOut ? 'not read: counts spread over 3 % with the collections each invocation ran into' : met(c.meetsGoal)} |`,
  );
  if (instructions.skipped) rows.push(`| instructions per record (callgrind) | skipped: ${instructions.skipped} |  |  | ≥ 0.90 |  |`);
  return rows;
}

/** The summary's rows of the mixed batch: visibility calls, other SQS calls, time against all 200. */
function mixedRows({ mixed, mixedCalls }: ReportFigures): string[] {
  return [
    `| mixed, ${int(mixed.records)} records, 30 % \`429\`: ChangeMessageVisibilityBatch calls | ${mixedCalls.visibility} | ${int(mixedCalls.retried)} retries | ${mixedCalls.visibility} / ${mixedCalls.goal} | ⌈retries ÷ 10⌉ = ${mixedCalls.goal} | ${met(mixedCalls.visibilityMet)} |`,
    `| mixed: other SQS calls (first invocation) | ${calls(mixedCalls.others)} |  |  | GetQueueUrl × 1 | ${met(mixedCalls.othersMet)} |`,
    `| mixed: invocation time (warm) | ${ms(mixedCalls.warmMs)} | all 200: ${ms(mixed.allOkMs)} | ${ratio(mixedCalls.warmVsAllOk)} |  |  |`,
  ];
}

/** A side's median drain, dead letters and refused share, as the summary writes them. */
const medians = (side: BackPressureFigures['sides'][number]): string =>
  `${f3(side.medianDrain)} s, ${int(side.medianDeadLettered)} dead-lettered, ${share(side.medianRefused)} refused`;

/** The summary's back-pressure rows: one per scenario (one per side for the recovery). */
function backPressureRows({ pressure, capacity: capacities, perMessage, rateLimitHeaders, perKey, recovery }: ReportFigures): string[] {
  const rows: string[] = [];
  if (pressure) {
    const { paced, unpaced } = pressure;
    rows.push(
      `| back-pressure: ${int(pressure.messages)} messages to a webhook taking ${pressure.requestsPerSecond}/s, drain time | ${paced ? `${medians(paced)} (medians)` : ''} | ${unpaced ? `${unpaced.side} ${medians(unpaced)} (medians)` : ''} | ${unpaced ? ratio(pressure.pacedVsUnpaced) : ''} | ≤ ${f3(pressure.drainGoal)} s, all delivered, none dead-lettered, ≤ ${pressure.refusedGoal} % refused, every run | ${paced ? `${met(paced.met)} (${paced.metRuns} of ${paced.runs.length} runs)` : ''} |`,
    );
  }
  for (const s of capacities) {
    const { paced, unpaced, ceiling } = s;
    rows.push(
      `| capacity: ${int(s.messages)} messages to a token bucket of ${s.requestsPerSecond}/s, drain time | ${paced ? `${medians(paced)}${paced.several ? ' (medians)' : ''}` : ''} | ${unpaced ? `${unpaced.side} ${f3(unpaced.medianDrain)} s, ${share(unpaced.medianRefused)} refused` : ''} | ${unpaced ? ratio(s.pacedVsUnpaced) : ''} | ≤ ${f3(s.drainGoal)} s, all delivered, none dead-lettered, ≤ ${s.refusedGoal} % refused${paced?.several ? ', every run' : ''} | ${paced ? `${met(paced.met)}${paced.several ? ` (${paced.metRuns} of ${paced.runs.length} runs)` : ''}` : ''} |`,
    );
    if (ceiling)
      rows.push(
        `| capacity: ${int(s.messages)} messages to a token bucket of ${s.requestsPerSecond}/s with the operator's \`${ceiling.side}\`, drain time | ${medians(ceiling)}${ceiling.several ? ' (medians)' : ''} |  |  | ≤ ${f3(s.drainGoal)} s, all delivered, none dead-lettered, ≤ ${s.refusedGoal} % refused${ceiling.several ? ', every run' : ''} | ${met(ceiling.met)}${ceiling.several ? ` (${ceiling.metRuns} of ${ceiling.runs.length} runs)` : ''} |`,
      );
  }
  for (const s of perMessage) {
    const { paced, unpaced } = s;
    rows.push(
      `| per-message refusals: ${s.description}${s.answerAfterMs === undefined ? '' : `, answers in ${s.answerAfterMs} ms`}; the others' drain | ${paced ? `${f3(paced.medianRestDrain)} s, ${int(paced.medianDeadLettered)} dead-lettered (medians)` : ''} | ${unpaced ? `${unpaced.side} ${f3(unpaced.medianRestDrain)} s` : ''} | ${ratio(s.speed)} | ≥ ${s.speedGoal} × the speed of \`PACING=false\`, none dead-lettered | ${met(s.sectionMet)} |`,
    );
  }
  if (rateLimitHeaders) {
    const { paced, unpaced } = rateLimitHeaders;
    rows.push(
      `| rate-limit headers: ${int(rateLimitHeaders.messages)} messages to an announced ${rateLimitHeaders.requestsPerSecond}/s, drain time | ${paced ? `${f3(paced.medianDrain)} s, ${share(paced.medianRefused)} refused (medians)` : ''} | ${unpaced ? `${unpaced.side} ${f3(unpaced.medianDrain)} s, ${share(unpaced.medianRefused)} refused` : ''} | ${unpaced ? ratio(rateLimitHeaders.pacedVsUnpaced) : ''} | ≤ ${f3(rateLimitHeaders.drainGoal)} s, ≤ ${rateLimitHeaders.refusedGoal} % refused, every run | ${paced ? `${met(paced.met)} (${paced.metRuns} of ${paced.runs.length} runs)` : ''} |`,
    );
  }
  if (perKey) {
    const [keyed, , unpaced] = perKey.sides;
    rows.push(
      `| per-key: a tenant limited to 10/s, \`PACE_KEY=tenant\`; the others' drain | ${keyed ? `${f3(keyed.medianRestDrain)} s, ${int(keyed.medianDeadLettered)} dead-lettered (medians)` : ''} | PACING=false ${unpaced ? `${f3(unpaced.medianRestDrain)} s` : ''} | ${ratio(perKey.speed)} | ≥ ${perKey.speedGoal} × the speed of \`PACING=false\`, none dead-lettered | ${met(perKey.sectionMet)} |`,
    );
  }
  for (const side of recovery?.sides ?? []) {
    rows.push(
      `| recovery: ${int(recovery?.messages)} messages, webhook ${side.status} for ${recovery?.unavailableSeconds} s | drained ${f3(side.last?.drainSeconds)} s after the start, ${int(side.last?.delivered)} delivered, ${int(side.last?.deadLettered)} dead-lettered |  |  | ≤ ${recovery?.drainGoalSeconds} s, all delivered, none dead-lettered | ${met(side.met)} (${side.metRuns} of ${side.runs.length} runs) |`,
    );
  }
  return rows;
}

/** The summary's rows of the bundle, memory and latency goals. */
function deployedRows(f: ReportFigures): string[] {
  const { bundle } = f;
  return [
    `| bundle loaded at import (\`index.mjs\` and the chunks it imports) | ${kb(bundle.atImport.bytes)} | whole asset ${kb(bundle.total.moduleBytes)} (the rest, the SQS and Secrets Manager clients among it, loads on first use) |  | < 500 KB | ${met(bundle.atImportMet)} |`,
    `| load time: fresh process with the bundle − without | ${ms(bundle.load)} | import() alone ${ms(f.coldStart.loads[0]?.importMs)} |  | < 100 ms | ${met(bundle.loadMet)} |`,
    ...f.warmBatches.map(
      (batch) =>
        `| peak RSS, warm container as deployed: ${batch.relay.peakMiBByInvocation.length} invocations of ${int(batch.relay.records)} records${batch.largestDelivered ? ' (the largest batch Lambda delivers: 6 MB)' : ''} in a row, ${f.warmMemory.memorySizeMb} MB heap limits | ${mib(batch.relayPeak)} | no-op handler ${mib(batch.noopPeak)} |  | well inside 256 MB | ${met(batch.met)} |`,
    ),
    ...f.latency.map(
      (l) =>
        `| latency added, concurrency ${l.concurrency}, p50 / p99 | ${us(l.relay.p50Micros)} / ${us(l.relay.p99Micros)} | bare ${us(l.bare.p50Micros)} / ${us(l.bare.p99Micros)} | ${deltaUs(l.added50)} / ${deltaUs(l.added99)} |  |  |`,
    ),
  ];
}

/** The summary table: every figure against its baseline and its goal (BENCHMARKS.md's, docs/performance.md's, the console's). */
function summary(f: ReportFigures): string {
  return [
    '| figure | relay | baseline | ratio | goal |  |',
    '|---|---|---|---|---|---|',
    ...throughputRows(f),
    `| SQS calls in the relay's throughput runs (every message answered 2xx) | ${int(f.allOk.calls)} |  |  | none | ${met(f.allOk.met)} |`,
    ...instructionRows(f),
    ...mixedRows(f),
    ...backPressureRows(f),
    ...deployedRows(f),
  ].join('\n');
}

/** What limits throughput in production: the latency-bound model and the capacity-planning table (BENCHMARKS.md, docs/performance.md). */
function capacity(f: ReportFigures): string {
  return `In production the webhook's latency, not the relay, sets the pace. One invocation keeps \`min(batchSize, MAX_CONCURRENCY)\` requests in flight, so it relays about \`in-flight × 1000 ÷ webhook latency (ms)\` records/s (measured against a webhook answering after 10 and 50 ms: ${ratio(f.modelLow)}–${ratio(f.modelHigh)}× this model, and at least ${ratio(f.worstVsBare)}× a bare HTTP client in the same conditions), until it runs out of CPU: Lambda gives a function CPU in proportion to its memory (one vCPU at 1,769 MB), and the relay needs ${us(f.relayCpu)} of CPU per record on this machine (plain HTTP; TLS adds to it). The event source mapping runs up to \`maxConcurrency\` invocations at once (the stack's default: 5), so the queue drains at up to that many times the figures below.

Records/s **per concurrent invocation** (in flight = \`min(batchSize, MAX_CONCURRENCY)\`; "(CPU)" where ${f.warmMemory.memorySizeMb} MB or one vCPU, at ${us(f.relayCpu)} per record, is the limit; multiply by the event source's \`maxConcurrency\` for the whole function):

| webhook latency |${each(f.columns, (column) => ` ${column.inFlight} in flight, ${column.memory} MB |`)}
|---|${each(f.columns, () => '---|')}
${each(f.capacityRows, (row) => `| ${row.latency} ms |${each(row.cells, (cell) => ` ${int(cell.rate)}${cell.cpuBound ? ' (CPU)' : ''} |`)}\n`)}
To go faster: raise \`maxConcurrency\` (more invocations; the webhook must take the load), raise \`batchSize\` with \`MAX_CONCURRENCY\` (more requests in flight per invocation; batches above 10 need a batching window), and give the function more memory when the table says CPU. With the default \`batchSize\` of 10, every invocation also pays Lambda's per-invocation overhead (polling, invoking, the batch's summary log and metrics) for only 10 records.`;
}

/** The relay's sides at a token bucket, in words: the defaults, `PACING=false`, and the operator's ceiling when measured. */
function tokenBucketSides(s: BackPressureFigures): string {
  return s.ceiling === undefined
    ? 'the relay with its defaults, and with `PACING=false`'
    : `the relay with its defaults, with \`PACING=false\`, and with \`${s.ceiling.side}\` (${100 * SMALL_WEBHOOK_CEILING_SHARE} % of the rate: the ceiling [webhook owners](docs/webhook-owners.md#back-pressure) are told to ask for at a webhook this small)`;
}

/** What a back-pressure scenario measured against and its goal, one paragraph. */
function backPressureIntro(s: BackPressureFigures): string {
  switch (s.kind) {
    case 'token-bucket':
      return `${int(s.messages)} messages to a webhook that takes ${s.requestsPerSecond} requests/s (a token bucket of ${s.burst}, a tenth of a second's worth) and answers \`429\` + \`Retry-After: 1\` above that; ${tokenBucketSides(s)}. Goal for every run: every message delivered, none dead-lettered, the drain within ${s.drainGoalFactor} × N ÷ R = ${f3(s.drainGoal)} s, at most ${s.refusedGoal} % of the requests refused.`;
    case 'rate-limit-headers':
      return `${int(s.messages)} messages to a webhook that takes ${s.requestsPerSecond} requests in each second of the clock and says so on every answer (\`RateLimit-Policy: "default";q=${s.requestsPerSecond};w=1\`, \`RateLimit: "default";r=<left>;t=<seconds to the window's end>\`), \`429\` with a \`Retry-After\` to the window's end past it. Goal for every run: every message delivered, none dead-lettered, the drain within ${s.drainGoalFactor} × N ÷ R = ${f3(s.drainGoal)} s, at most ${s.refusedGoal} % of the requests refused.`;
    case 'per-message':
      return `${int(s.messages)} messages to ${s.answerAfterMs === undefined ? 'a fast webhook' : `a webhook answering each request after ${s.answerAfterMs} ms`} (no limit) with ${s.description}. "The rest" are the messages it never refused: the drain in that column is from the first send to the last of them. Goal: nothing dead-lettered, and the rest as fast as with \`PACING=false\`, within ${s.speedGoal} ×: \`PACING=false\`'s median ÷ the defaults' = **${ratio(s.speed)}**, ${met(s.sectionMet)}.`;
    case 'per-key':
      return `${int(s.messages)} messages to a webhook with ${s.description}; the relay with \`PACE_KEY=tenant\` (the messages' attribute), with its defaults (no key), and with \`PACING=false\`. "The rest" are the other tenants' messages. Goal: nothing dead-lettered, and the rest as fast as with \`PACING=false\`, within ${s.speedGoal} ×: \`PACING=false\`'s median ÷ \`PACE_KEY\`'s = **${ratio(s.speed)}**, ${met(s.sectionMet)}.`;
    case 'recovery':
      return `${int(s.messages)} messages to a webhook that answers \`503\` (an outage sign to the circuit breaker) or \`500\` (server errors: the breaker opens once they have gone on for 5 s) without \`Retry-After\` for ${s.unavailableSeconds} s from its first request, then \`200\` with no limit. Goal: every message delivered, none dead-lettered, drained within ${s.drainGoalSeconds} s of the first send (the backlog draining within 10 s of the webhook's return: [operations](docs/operations.md#recovery-how-soon-and-what-it-costs)).`;
  }
}

/** One back-pressure scenario: what it measured and every run of every side, with the medians. */
function backPressureScenario(s: BackPressureFigures): string {
  const rest = (text: string): string => (s.restGoal ? text : '');
  return `
${backPressureIntro(s)}

| relay | run | drain (first send → last delivery) |${rest(' the rest |')} delivered | duplicates | dead-lettered | left on the queue | refused | goal |
|---|---|---|${rest('---|')}---|---|---|---|---|---|
${each(
  s.sides,
  (side) =>
    each(
      side.runs,
      (
        run,
      ) => `| ${side.side} | ${run.run} | ${f3(run.drainSeconds)} s |${rest(` ${f3(run.restDrainSeconds)} s |`)} ${int(run.delivered)} | ${int(run.duplicates)} | ${int(run.deadLettered)} | ${int(run.left)} | ${int(run.refused)} of ${int(run.requests)} (${share(run.refusedShare)}) | ${met(run.met)} |
`,
    ) +
    (side.several
      ? `| **${side.side}** | median | **${f3(side.medianDrain)} s** |${rest(` **${f3(side.medianRestDrain)} s** |`)}  |  |  |  |  | ${met(side.met)} (${side.metRuns} of ${side.runs.length} runs) |
`
      : ''),
)}`;
}

/** BENCHMARKS.md's back-pressure section (and what `--only=back-pressure,…` prints); undefined when none of its scenarios ran. */
export function backPressureText(results: BackPressureResults): string | undefined {
  const { env, backPressureSections } = backPressureFigures(results);
  if (backPressureSections.length === 0) return undefined;
  return `## Back-pressure: a webhook that asks the relay to slow down

The relay as a user runs it: \`npm start\` (local mode, its own SQS emulator; \`node --import tsx bin/local.ts\` on the Node.js running the bench) with ${settings(env)}, the stack's fan-out (5 concurrent invocations of 10 records, 10 requests in flight each); a fresh relay process and a fresh webhook for every run; the messages all sent at once, before the relay has received any. The webhook (\`testkit/rate-limited-webhook.ts\`) records when it first accepted each message id and which it ever refused, so duplicates and losses are counted, not inferred.
${each(backPressureSections, backPressureScenario)}`.trimEnd();
}

/** BENCHMARKS.md's dead-letters section (and what `--only=dead-letters` prints); undefined when it did not run. */
export function deadLettersText({ deadLetters: d }: Pick<BenchResults, 'deadLetters'>): string | undefined {
  if (d === undefined) return undefined;
  return `## Dead letters: summary and replay

\`sqs-webhook-relay dead-letters\` as an operator runs it (\`npm run dead-letters\`: its own process, \`node --import tsx bin/local.ts\`, on Node.js ${d.node}), against the SQS emulator (fauxqs) in the bench's process, on a queue URL on loopback, with its defaults (10 receives in parallel, \`--json\`). The dead letters are the relay's own: its handler, fed from the emulator, dead-lettered ${int(d.messages)} messages of about 250 bytes, 60 % refused with a \`404\`, 30 % with a \`422\`, 10 % still failing (\`500\`) when their retry window ran out. ${d.rounds} round(s), median; each round starts from the same ${int(d.messages)} dead letters. Every run includes starting the process (${ms(d.startupMs)} for one that prints its version and exits). Measured by \`npm run bench -- --only=dead-letters\` on ${d.date} (commit ${d.commit}), and by every full run.

| run | messages | time (median) | messages/s | runs |
|---|---|---|---|---|
${each(d.rows, (row) => `| ${row.label} | ${int(row.messages)} | ${ms(row.medianMs)} | ${int(row.perSecond)}/s | ${ints(row.runsMs)} ms |\n`)}
The emulator answers in the same process as the bench and serves one call at a time; real SQS answers each call in a few milliseconds over the network, in parallel, so these are a floor to compare changes with, not a forecast. The summary holds what it has read in flight until it is done, then makes it all visible again: its time includes one long poll (1 s) that finds nothing left. A replay sends and deletes in batches of 10, and a dead letter it skips is read all the same.`;
}

/** BENCHMARKS.md's heading, how it was made and on which machine. */
function header(f: ReportFigures): string {
  const { machine } = f;
  return `# Benchmarks

Generated by \`npm run bench${f.node.onLambda ? '' : ' -- --this-node'}\` (bench/run.ts, its text from bench/report.ts); do not edit by hand. Every figure is the median of several runs on the machine below; the baselines ran in the same run, interleaved with the relay. ${
    f.node.onLambda
      ? `The clients ran on Node.js ${machine.node}, the major of the function's runtime (\`nodejs${f.node.major}.x\`); \`npm run bench -- --this-node\` runs the same benchmarks on the Node.js that runs npm, into \`.bench-tmp/BENCHMARKS.node<major>.md\`.`
      : `The clients ran on Node.js ${machine.node}, not the major of the function's runtime (Node.js ${f.node.lambda}): the deployed function's figures are in [BENCHMARKS.md](BENCHMARKS.md).`
  }

| machine |  |
|---|---|
| CPU | ${machine.cpu}, ${machine.cores} cores |
| memory | ${machine.memoryGiB} GiB |
| kernel | ${machine.kernel} |
| Node.js | ${machine.node} |
| date | ${machine.date} |
| commit | ${machine.commit} |
| processes | ${machine.placement ? machine.placement : 'wherever the scheduler put them'} |
| run took | ${f.seconds} s${f.quick ? ' (`--quick`: not for publishing)' : ''} |

## Summary

${summary(f)}

The relay ran as deployed: the bundle \`cdk synth\` produced, imported by a plain \`node\` process with the template's environment (${settings(f.relayConfig)}); only \`WEBHOOK_URL\` (this machine's webhook) and \`MAX_CONCURRENCY\` (the figure's) changed. The signing key came from a local stand-in for Secrets Manager, as the stack's secret would.`;
}

/** Sections 1 and 2: throughput and CPU per record against the baselines, at each concurrency. */
function throughputText(f: ReportFigures): string {
  return `## 1. Throughput and 2. CPU per record

One invocation over a batch of 1 KB records, against a webhook on 127.0.0.1 that answers \`200\` at once. Every round starts a fresh process for every side, runs four warm-up invocations in each (on Node.js 24 V8 is still optimizing the relay during the third), then ${f.oneRun ? 'one measured invocation' : `${f.throughput[0]?.measuredRunsPerRound} measured invocations`} per side, at the same concurrency; the processes stop before the next round. Identical processes, on the same CPU with the same flags, were measured up to 20 % apart for their whole lives, and which one is lucky changes from start to start: a fresh draw every round makes that luck noise the median sees through, rather than one process's luck becoming a side's figure. In a round the sides run in pairs, the relay right next to its baseline, which of the two goes first alternating from one pair of runs to the next. Nothing is done between runs: a forced \`gc()\` before each run, as earlier versions of this benchmark did, throws away V8's optimized code of every hot function (its "weak objects" die) and so measured each run half cold, halving every side's throughput. Each client runs with \`--single-threaded-gc\`, the relay and the baselines alike: held to one CPU with V8's parallel scavenger's helper threads, a process picked at random took 15–20 ms per scavenge instead of 2–4 ms. The bare loops also run with the V8 setting the relay's handler module gives its own process (\`lambda/v8-tuning.ts\`): allocation-site pretenuring off. With it on, a major collection inside a batch can lead V8 to make node:http's per-request objects in the old generation, in whichever process it happens to, and every request is then promoted through it (\`--trace-gc\`: 100–300 ms of scavenges per 10,000 records instead of 10–70). The peer runs as Node.js starts it. The webhook is a separate process (a minimal HTTP/1.1 server on \`node:net\`, so it is never the limit: see its CPU column). CPU is \`process.cpuUsage()\` of the client process over the invocation (all its threads, GC included) ÷ records. Ratios ("÷ its baseline", and every ratio in the summary) are the median of the two sides' ratios over their pairs of runs: for the relay and its baseline, runs a second apart, so the slower swings of this shared virtual machine (its speed changes by up to 2× within minutes) cancel out; the records/s columns are plain medians. One pair still varies by ±10 % or more (a ratio above 1.00, when the relay cannot do less work than a loop that only sends its requests, shows how far), so the goal's ratios come with a 95 % interval for their median: the order statistics the binomial distribution gives, assuming nothing about the shape of the noise (the pairs of one round share their processes, so read it as a little optimistic). The instruction counts below do not move with the machine's speed.

${each(
  f.throughputSections,
  (section) => `### Concurrency ${section.concurrency}

| side | records/s (median) | runs (min–max) | ÷ its baseline | CPU / record | client cores | webhook cores | new connections | failures | SQS calls | stdout / run |
|---|---|---|---|---|---|---|---|---|---|---|
${each(
  section.sides,
  (
    side,
  ) => `| **${side.side}** | ${int(side.recordsPerSecond)}/s | ${int(side.slowest)}–${int(side.fastest)} | ${side.limit ? `${ratio(side.limitRatio)} (${side.limit})` : ''} | ${us(side.cpuMicrosPerRecord)} | ${f2(side.clientCores)} | ${f2(side.webhookCores)} | ${side.connections} | ${side.failures} | ${side.sqsCalls} | ${kb(side.outputBytes)} |
`,
)}
`,
)}Sides:

${each(f.throughput[0]?.sides, (side) => `- **${side.side}**: ${side.description}.\n`)}
The bare clients send byte-for-byte the relay's requests (its headers, its Standard Webhooks signature; the unsigned one, the unsigned relay's), built before the clock starts. The goal's baseline for the relay as deployed is the bare loop that signs each request as it sends it: a Standard Webhooks signature covers the time of sending (receivers refuse stale timestamps), so no client sending these POSTs can compute it in advance; the loop with every signature precomputed is shown too, as the cost of the HTTP exchange alone. The peer is written the way the Powertools documentation shows, with \`fetch\` and a semaphore for the concurrency limit (\`bench/peer.ts\`); it sends three headers, signs nothing, and has no retry timing, dead-lettering or breaker.`;
}

/** The instruction counts under callgrind, which do not move with the machine's speed. */
function instructionsText(f: ReportFigures): string {
  const { instructions } = f;
  const counted = `| side | instructions per record (each counted invocation) | mean | of which SHA-256 blocks | its limit's ÷ this: instructions |
|---|---|---|---|---|
${each(
  f.countedSides,
  (
    count,
  ) => `| **${count.side}** | ${ints(count.perRecord)}${count.spread ? ' (spread over 3 %)' : ''} | ${mean(count.perRecord)} | ${mean(count.sha256PerRecord)} | ${count.limit ? `${ratio(count.limit.countRatio)}${count.limit.sha256LeftOut ? ` (SHA-256 left out: ${ratio(count.limit.sha256LeftOut)})` : ''} (${count.limit.baseline.side})` : ''} |
`,
)}
${instructions.valgrind}; one side at a time (V8 compiles on background threads: a process sharing its CPU with another ran more of each counted invocation before its optimized code was ready).${
    f.counting.spreadNote
      ? " **Counts spread over 3 %:** an invocation's count includes the garbage collection it ran into, and V8's major collections fall in some invocations and not others (on Node.js 24 V8 also still optimizes a few functions in each invocation after the warm-ups: once-per-invocation code such as Powertools' metrics, which `--trace-opt` shows reaching its thresholds late). The mean over the counted invocations is the figure, and the ratio of each side's lowest count (its invocation with the least collection) is shown beside it; neither reads the goal: a few major collections on one side only move the ratio of means by 10-30 %."
      : ''
  }${
    f.counting.shaNote
      ? ` **SHA-256 under valgrind:** valgrind's virtual CPU has no SHA extensions, so OpenSSL hashes with its AVX2 code there (the "SHA-256 blocks" column: the signature's HMAC over each 1 KB body)${instructions.hostHasShaExtensions ? "; this machine's CPU has them, and natively the same hashing takes a small fraction of those instructions." : '.'} Both signed sides hash the same bytes, so these instructions pull their ratio towards 1; "SHA-256 left out" is the ratio without them. The ratio a native count would give lies between the two.`
      : ''
  }`;
  return `### Instructions per record (callgrind)

The throughput runs above time a shared virtual machine whose speed changes by up to 2× within a minute: more than the difference the goal asks about, so a ratio of two runs, even a second apart, is read to ±10 % at best. The number of instructions a side executes per record does not depend on the machine's speed: here each side ran in a client process under \`valgrind --tool=callgrind\`, with the same Node.js flags and environment as its throughput runs, ${instructions.warmUpRuns} uninstrumented warm-up invocations of ${int(instructions.records)} records (under valgrind, V8 optimizes later than natively), then counted invocations of ${int(instructions.records)} records at concurrency ${instructions.concurrency}, counting exactly the part the throughput runs time (\`callgrind_control\` zeroes and dumps the counters around it). An invocation's count includes the garbage collection it ran into, so counts of one side spread by a few per cent from invocation to invocation; the figure is their mean over the ${f.counting.runs} counted. "Its limit's ÷ the relay's" is the throughput ratio the relay would have if every instruction took the same time: it leaves out what counts do not see (cache misses, system-call time, the webhook), which the timed runs include.

${instructions.skipped ? `Not measured in this run: ${instructions.skipped}.` : counted}`;
}

/** Section 3: a batch with 30 % of its records refused, and the SQS calls that cost. */
function mixedText(f: ReportFigures): string {
  return `## 3. Mixed outcomes

${int(f.mixed.records)} messages sent to the SQS emulator (fauxqs) and received from it (real receipt handles), then relayed in one invocation at concurrency 10 with pacing off (what pacing does is the back-pressure section); the webhook answered \`429\` with \`Retry-After: 600\` to ${f.mixed.expectedRetries} of them (30 %) and \`200\` to the rest. Every SQS call went through a counting proxy.

| invocation | time | retried | SQS calls | entries per visibility call |
|---|---|---|---|---|
${each(f.mixed.runs, (run) => `| ${run.label} | ${ms(run.wallMs)} | ${run.retried} | ${calls(run.calls)} | ${span(run.visibilityEntries)} |\n`)}
Baseline: the same records all answered \`200\`, same warm process: ${ms(f.mixed.allOkMs)}.`;
}

/** Section 4: the bundle's weight and load time. */
function coldStartText(f: ReportFigures): string {
  const { bundle } = f;
  return `## 4. Cold start

The asset is split (lib/bundle.ts): importing \`index.mjs\` loads it and the ${bundle.oneChunk ? 'chunk' : `${bundle.chunks} chunks`} it imports statically, **${kb(bundle.atImport.bytes)}**: that is the figure the 500 KB goal is about. The whole asset is ${kb(bundle.total.moduleBytes)} of JavaScript in ${bundle.total.modules} modules, plus ${kb(bundle.total.mapBytes)} of source maps (with \`--enable-source-maps\`, Node.js reads the map of every module it loads); the rest loads on first use, when code that ran calls \`import()\` (the SQS and Secrets Manager clients), or only when the SDK needs it (credential providers other than the environment's, nested STS/SSO clients).

Load time: a fresh \`node\` process importing the bundle with the function's environment, against a fresh process importing an empty module, ${f.coldStart.loads[0]?.runs} runs each, interleaved, median:

| variant | fresh process + module | fresh process + empty module | difference | \`import()\` inside the process |
|---|---|---|---|---|
${each(f.loads, (load) => `| ${load.variant} | ${ms(load.bundleProcessMs)} | ${ms(load.emptyProcessMs)} | **${ms(load.difference)}** | ${ms(load.importMs)} |\n`)}
A fresh \`node -e\` process has loaded none of the Node.js built-ins the bundle imports at its top, so the difference includes loading them; Lambda's runtime may have loaded some of them already.`;
}

/** Section 5: peak RSS in a warm container, invocation after invocation. */
function memoryText(f: ReportFigures): string {
  const [first] = f.warmRows;
  return `## 5. Memory

Peak RSS (\`process.resourceUsage().maxRSS\`) in a warm container as deployed: one process per row, started with no flag but the heap limits Lambda's Node.js runtime gives a ${f.warmMemory.memorySizeMb} MB function (\`${f.warmMemory.heapFlags.join(' ')}\`: a tenth of the memory for the young generation, the rest for the old), runs ${first?.peaks.length} invocations in a row, as a busy function does, each with its event parsed afresh from JSON (as Lambda's runtime does; the no-op handler shows what the event costs alone). The peak after each invocation shows what one batch leaves for the next; it levels off once V8's collections keep up.${each(
    f.warmBatches,
    (batch) =>
      batch.largestDelivered
        ? ` Besides the benchmark's ${int(first?.records)}-record batch, which Lambda could not deliver (its event is over the 6 MB cap on an invocation's payload), the largest batch of these records that it can: ${int(batch.relay.records)} records.`
        : '',
  )}

| side | records | event |${each(first?.peaks, (peak) => ` after ${peak.invocation} |`)}
|---|---|---|${each(first?.peaks, () => '---|')}
${each(f.warmRows, (row) => `| ${row.side} | ${int(row.records)} | ${mib(row.eventMiB)} |${each(row.peaks, (peak) => ` ${peak.peak} |`)}\n`)}`;
}

/** Section 6: the latency the relay adds per record, and the latency-bound runs. */
function latencyText(f: ReportFigures): string {
  return `## 6. Latency added

Per record: from the moment the client starts it to the moment the webhook has the complete request, \`process.hrtime.bigint()\` in both processes (CLOCK_MONOTONIC, one clock for all processes on Linux). For the relay, "starts" is its first read of the record (the first thing it does with one); for the bare client, the loop taking the next prepared request. ${f.latency[0]?.records} records per run, ${f.latency[0]?.runs} runs, median of each run's percentile.

| concurrency | percentile | relay: start → webhook has it | bare: start → webhook has it | added by the relay |
|---|---|---|---|---|
${each(
  f.latency,
  (l) => `| c=${l.concurrency} | p50 | ${us(l.relay.p50Micros)} | ${us(l.bare.p50Micros)} | ${deltaUs(l.added50)} |
| c=${l.concurrency} | p99 | ${us(l.relay.p99Micros)} | ${us(l.bare.p99Micros)} | ${deltaUs(l.added99)} |
`,
)}
The p50 is the relay's own work before the request leaves (building, signing, the transmitter). The p99 of both sides is mostly this 2-vCPU virtual machine scheduling three busy processes (the client, the webhook, the benchmark): the slowest records of a relay run are spread through the batch, not at its garbage collections or metric flushes.

## Latency-bound throughput: the production regime

The relay and the bare loop against a webhook that answers after a fixed delay: the production regime, where the webhook's latency sets the pace. Without a CPU limit one invocation sustains about \`in-flight requests × 1000 ÷ latency\` records/s; the webhook's timers fire a little late and every request also pays its own round trip, so even the bare loop stays below that model. The relay's CPU would cap it at about 1,000,000 µs ÷ ${us(f.relayCpu)} per record = ${int(f.cpuCap)}/s on this machine.

| webhook latency | concurrency | records | relay | bare node:http | relay ÷ bare | concurrency × 1000 ÷ latency | relay ÷ model |
|---|---|---|---|---|---|---|---|
${each(
  f.latencyBound,
  (run) =>
    `| ${ms(run.delayMs)} | ${run.concurrency} | ${int(run.records)} | ${int(run.recordsPerSecond)}/s | ${int(run.bareRecordsPerSecond)}/s | ${ratio(run.vsBare)} | ${int(run.modelRecordsPerSecond)}/s | ${ratio(run.vsModel)} |\n`,
)}`;
}

/** How the benchmark runs, and its options. */
const METHOD = `## Method

- \`npm run bench\` runs \`cdk synth\` (the real CLI, offline), takes the function's bundle out of the cloud assembly, and loads it in plain \`node\` child processes (no TypeScript loader) with the template's environment, as Lambda's runtime would.
- All traffic stays on 127.0.0.1: the webhook (\`bench/webhook-process.ts\`), the SQS emulator (fauxqs) behind a counting proxy (\`testkit/sqs-proxy.ts\`), a Secrets Manager stand-in (\`testkit/secrets-manager.ts\`). Every loop is bounded; the run stops by itself.
- Throughput and CPU: medians over the runs of every round; in a round every side runs in a rotating order, its baseline right before or after it. Ranges show the spread between runs on this (virtualized, shared) machine.
- \`npm run bench -- --profile\` writes V8 CPU profiles of the relay's processes to \`.bench-tmp/profiles/\`; \`npm run bench -- --quick\` is a smaller run for trying changes, \`npm run bench -- --node=<path>\` runs every child on another Node.js (e.g. Lambda's major); both write their report to \`.bench-tmp/\`; \`npm run bench -- --report-only\` rewrites the reports from the last run's figures (\`.bench-tmp/results.json\`; a quick run keeps its own, \`results.quick.json\`).`;

/** "none dead-lettered", or how many were. */
const deadLettered = (count: number): string => (count === 0 ? 'none dead-lettered' : `${int(count)} dead-lettered`);
/** " with the stack's fan-out (5 × 10 in flight)", from the relay's settings in a back-pressure scenario. */
const fanOut = (env: Readonly<Record<string, string>>): string =>
  env.POLLERS && env.MAX_CONCURRENCY ? ` with the stack's fan-out (${env.POLLERS} × ${env.MAX_CONCURRENCY} in flight)` : '';

/** The token-bucket scenario in words: the defaults' median drain and refusals, against `PACING=false`'s. */
function pressureWords({ pressure }: ReportFigures): string | undefined {
  if (!pressure?.paced) return undefined;
  const { paced, unpaced, messages, requestsPerSecond = Number.NaN } = pressure;
  const unpacedRefused = unpaced ? ` (${share(unpaced.medianRefused)} refused with \`PACING=false\`)` : '';
  return `${int(messages)} messages at once to a webhook taking ${requestsPerSecond} requests/s, through \`npm start\`${fanOut(pressure.relayEnv)}, drain in ${f3(paced.medianDrain)} s (the ideal is ${f3(messages / requestsPerSecond)} s), with ${share(paced.medianRefused)} of requests refused and ${deadLettered(paced.medianDeadLettered)}${unpacedRefused}`;
}

/** The recovery scenario in words: what was lost, each side's median drain, and whether that met the goal. */
function recoveryWords({ recovery }: ReportFigures): string | undefined {
  if (recovery === undefined || recovery.sides.length === 0) return undefined;
  const { sides, messages } = recovery;
  const runs = sides.flatMap((side) => side.runs);
  const lost = runs.every((run) => run.delivered === messages && run.deadLettered === 0)
    ? 'loses none'
    : `delivers ${int(Math.min(...runs.map((run) => run.delivered)))}`;
  const goal = sides.every((side) => side.met)
    ? ' (within about 10 s of its return)'
    : ` (the goal, ${recovery.drainGoalSeconds} s: not met)`;
  return `a webhook answering ${sides.map((side) => `\`${side.status}\``).join(' or ')} for ${recovery.unavailableSeconds} s ${lost} of ${int(messages)} messages, drained ${sides.map((side) => `${f3(side.medianDrain)} s`).join(' and ')} after the first send${goal}`;
}

/** BENCHMARKS.md's back-pressure section's anchor. */
const BACK_PRESSURE_ANCHOR = 'BENCHMARKS.md#back-pressure-a-webhook-that-asks-the-relay-to-slow-down';

/**
 * The README's figures: the back-pressure and recovery scenarios in a sentence, from the same figures as BENCHMARKS.md's
 * (the medians of the relay with its defaults and of `PACING=false`; each recovery side's median drain).
 */
export function readmeFigures(results: BenchResults): string {
  const f = figures(results);
  const parts = [pressureWords(f), recoveryWords(f)].filter((part) => part !== undefined);
  if (parts.length === 0) return 'No back-pressure figures in this run: [BENCHMARKS.md](BENCHMARKS.md) has the others.';
  return `Measured on a ${f.machine.cores}-core machine ([BENCHMARKS.md](${BACK_PRESSURE_ANCHOR})): ${parts.join('; ')}.`;
}

/** docs/operations.md's recovery figures (links relative to docs/). */
export function recoveryFigures(results: BenchResults): string {
  const f = figures(results);
  const words = recoveryWords(f);
  if (words === undefined || f.recovery === undefined) return 'No recovery figures in this run: [BENCHMARKS.md](../BENCHMARKS.md).';
  return `Measured through \`npm start\`${fanOut(f.recovery.relayEnv)} on a ${f.machine.cores}-core machine ([BENCHMARKS.md](../${BACK_PRESSURE_ANCHOR})): ${words}.`;
}

/** docs/operations.md's dead-letter figures: the summary's and the first replay's time (links relative to docs/). */
export function deadLetterFigures({ deadLetters, machine }: BenchResults): string {
  // The scenario's rows: the summary of every dead letter, then a replay of some of them (`replay --status 404: …`).
  const [summaryRow, replayRow] = deadLetters?.rows ?? [];
  if (summaryRow === undefined || replayRow === undefined) return 'No dead-letter figures in this run: [BENCHMARKS.md](../BENCHMARKS.md).';
  const command = (label: string): string => label.split(':')[0] as string;
  const took = (row: typeof summaryRow): string => `${fmt(row.medianMs / 1000, 2)} s (${int(row.perSecond)} a second)`;
  return `Measured on the emulator, on a shared ${machine.cores}-core machine ([BENCHMARKS.md](../BENCHMARKS.md#dead-letters-summary-and-replay)): a \`${command(summaryRow.label)}\` of ${int(summaryRow.messages)} dead letters took ${took(summaryRow)}, a \`${command(replayRow.label)}\` of ${int(replayRow.messages)} of them (the other ${int(summaryRow.messages - replayRow.messages)} read and left) ${took(replayRow)}, process start included.`;
}

/** What the run prints: the summary table (BENCHMARKS.md's and docs/performance.md's), and the run's notes. */
export function consoleTable(results: BenchResults): string {
  const notes = results.notes.length === 0 ? '' : `\nnotes:\n${bullets(results.notes)}`;
  return `${summary(figures(results))}${notes}`;
}

/** `BENCHMARKS.md`. */
export function markdown(results: BenchResults): string {
  const f = figures(results);
  const backPressure = backPressureText(results);
  const deadLetters = deadLettersText(results);
  return `${header(f)}

${throughputText(f)}

${instructionsText(f)}

${mixedText(f)}

${coldStartText(f)}

${memoryText(f)}
${latencyText(f)}
${backPressure === undefined ? '' : `${backPressure}\n\n`}${deadLetters === undefined ? '' : `${deadLetters}\n\n`}## Capacity planning

${capacity(f)}

${f.notes.length === 0 ? '' : `## Notes from this run\n\n${bullets(f.notes)}\n\n`}${METHOD}
`;
}

/** The figures of docs/performance.md (links relative to docs/). */
export function performanceSection(results: BenchResults): string {
  const f = figures(results);
  return `## The figures

Measured with \`npm run bench\` on ${f.machine.cpu} (${f.machine.cores} cores), with the clients on Node.js ${f.machine.node}, the major of the function's runtime; all figures and the method are in [BENCHMARKS.md](../BENCHMARKS.md). The relay is the deployable bundle from \`cdk synth\` with the template's settings (requests signed), against a webhook on 127.0.0.1 over plain HTTP, answering at once in the throughput runs: the figures show what the relay itself costs, not what a network adds. Its baselines: loops on bare \`node:http\` sending the relay's own requests (\`signing\`: signing each as it sends it, as any client of a Standard Webhooks receiver must; \`unsigned\`: the unsigned relay's requests; plain: every signature computed in advance, the HTTP exchange alone), and the peer, a Powertools \`BatchProcessor\` + \`fetch\` relay. The throughput and CPU ratios are medians over pairs of runs made side by side.

${summary(f)}

### What limits throughput in production

${capacity(f)}
`;
}
