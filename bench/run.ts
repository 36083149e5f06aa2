/**
 * `npm run bench`: the relay's performance against a bare HTTP client and the relay a user would
 * otherwise write (issue 6), side by side in one run, on this machine. Prints a table and writes
 * `BENCHMARKS.md` and the figures of docs/performance.md.
 *
 * Everything runs on 127.0.0.1 in processes of its own: the webhook, each client under test
 * (the relay's handler imported from the bundle `cdk synth` produces, with the template's
 * environment), the SQS emulator behind a counting proxy, and a stand-in Secrets Manager for
 * the signing key the stack creates. Loops are bounded; the run stops by itself.
 *
 * The children (the clients, the webhook, the cold starts) run on the Node.js release standing in
 * for Lambda's runtime (bin/lambda-node.ts): the figures are the deployed function's. The
 * orchestrator stays on the Node.js running npm.
 *
 * Options: `--quick` (fewer and smaller runs, for trying changes; figures not for publishing),
 * `--profile` (the relay's children write V8 CPU profiles to `.bench-tmp/profiles/`),
 * `--this-node` (the children on the Node.js running npm), `--node=<path>` (on another binary),
 * `--rounds=<n>` (rounds of the concurrency-10 throughput figures; default 9, 2 with `--quick`),
 * `--simulate-caches` (callgrind also simulates caches and branches, for estimated cycles beside
 * the instruction counts; the counts then spread much more: see instructions.ts). A run on a
 * Node.js of another major than Lambda's writes `BENCHMARKS.node<major>.md` and leaves docs/performance.md
 * alone; quick runs write their reports to `.bench-tmp/`.
 * `BENCH_ASSEMBLY=<dir>` reuses a cloud assembly from an earlier `cdk synth` instead of
 * synthesizing (the bundle must be current: for trying bench changes only). `--report-only`
 * rewrites the reports from the last run's `.bench-tmp/results.json`, measuring nothing.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { build } from 'esbuild';
import { RECEIVE_ALL_ATTRIBUTES, toSqsRecord } from '../local/event-source';
import { startEmulator, type Emulator } from '../testkit/emulator';
import { startSecretsManager, type FakeSecretsManager } from '../testkit/secrets-manager';
import { PROJECT_ROOT, readStack, synthesizeBundle, type SynthesizedBundle, templateQueues } from '../testkit/synth';
import { isLambdaNodeMajor, lambdaNodePath, lambdaNodeUnavailable, nodeMajor } from '../bin/lambda-node';
import { REQUIRE_BANNER } from '../lib/bundle';
import { weighAsset } from './bundle';
import { type ClientProcess, type CompiledChildren, compileChildren, SCRATCH_DIR, SPEED_NODE_FLAGS, startClientProcess, startWebhookProcess, type WebhookProcess } from './children';
import { type ComponentCost, RESULT_MARKER } from './components';
import { type CountedSide, countInstructions, type InstructionsSection } from './instructions';
import { functionEnvironment, lambdaEnvironment, lambdaHeapFlags, machineInfo, secretArnOf, templateSecrets } from './environment';
import type { ClientKind } from './protocol';
import { bodyOf, eventJson, isRetryIndex, RETRY_AFTER_SECONDS } from './records';
import { consoleTable, markdown, PERFORMANCE_DOC, performanceSection } from './report';
import type {
  BenchResults,
  ClientChoice,
  ColdStartSection,
  LatencyBoundRun,
  LatencySection,
  LatencySide,
  LoadTiming,
  MemoryRow,
  WarmMemoryRow,
  WarmMemorySection,
  MixedRun,
  MixedSection,
  SideSummary,
  ThroughputRun,
  ThroughputSection,
} from './results';
import { median, percentile } from './stats';
import { type SqsProxy, startSqsProxy } from '../testkit/sqs-proxy';

const QUICK = process.argv.includes('--quick');
/** {@link childNode}'s answer, once worked out. */
let childNodePath: string | undefined;

/**
 * The Node.js binary every child (the clients, the webhook, the cold starts) runs on, worked out
 * on first use (fetching Lambda's release takes `npm exec`; `--report-only` needs none).
 */
function childNode(): string {
  childNodePath ??= resolveChildNode();
  return childNodePath;
}

/** `--node=<path>`, else `--this-node`, else Lambda's release (this one where that cannot run here). */
function resolveChildNode(): string {
  const path = process.argv.find((arg) => arg.startsWith('--node='))?.slice('--node='.length);
  if (path !== undefined && path !== '') return path;
  if (process.argv.includes('--this-node')) return process.execPath;
  const unavailable = lambdaNodeUnavailable();
  if (unavailable === undefined) return lambdaNodePath();
  log(`the children run on this Node.js, ${process.version}: ${unavailable}`);
  return process.execPath;
}
const PROFILE = process.argv.includes('--profile');
const SIMULATE_CACHES = process.argv.includes('--simulate-caches');
/** Records of the big batch: the most Lambda hands one invocation. */
const BATCH = QUICK ? 2_000 : 10_000;
/**
 * Rounds of the concurrency-10 throughput figures, the goal's (`--rounds=<n>`): each adds three
 * pairs of runs per side and a few minutes, and narrows the 95 % interval of the median ratio.
 */
const ROUNDS = roundsOption() ?? (QUICK ? 2 : 9);

function roundsOption(): number | undefined {
  const option = process.argv.find((arg) => arg.startsWith('--rounds='));
  if (option === undefined) return undefined;
  const rounds = Number(option.slice('--rounds='.length));
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`${option}: expected a whole number of rounds, at least 1`);
  return rounds;
}
/** Records of each warm-up invocation a process runs first (JIT, connections). */
const WARM_UP = QUICK ? 500 : 10_000;
/**
 * Warm-up invocations before the measured one. With `--trace-opt`, on Node.js 20 V8 had stopped
 * optimizing the relay's hot functions by the third 10,000-record invocation of a fresh process;
 * on Node.js 24 it was still compiling about 30 of them during the third (among them node:http's
 * `addRequest` and `writeOrBuffer`, the timers' `Timeout` and the relay's `classify`), a handful
 * during the fourth and fifth, and none after. A warm container has run many invocations: the
 * fifth is its steady state, for every side alike.
 */
const WARM_UP_RUNS = QUICK ? 1 : 4;
/**
 * Measured invocations of each side per round of the goal's comparisons, after its warm-ups.
 * One run pair varies by ±10 % or more on this machine; three per round triple the pairs the
 * median and its interval rest on for about 40 % more time (the warm-ups dominate a round).
 */
const MEASURED_RUNS = QUICK ? 1 : 3;
const DEADLINE_MS = 15 * 60_000;

/** Everything the sections share. */
interface Bench {
  readonly bundle: SynthesizedBundle;
  readonly compiled: CompiledChildren;
  readonly webhook: WebhookProcess;
  readonly emulator: Emulator;
  readonly proxy: SqsProxy;
  readonly secrets: FakeSecretsManager;
  /** The signing key the fake Secrets Manager serves (48 letters and digits, as the stack generates). */
  readonly signingSecret: string;
  readonly notes: string[];
}

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** A side of a comparison: which client, with which environment changes. */
interface Side {
  readonly name: string;
  readonly description: string;
  readonly kind: ClientKind;
  /** Leave the template's signing secret out (the stack's `signing: false`); a bare loop then sends unsigned POSTs. */
  readonly unsigned?: boolean;
  /** A bare loop that signs each request inside the timing. */
  readonly signInLoop?: boolean;
}

const RELAY: Side = { name: 'relay', description: 'the relay: bundle from `cdk synth`, template environment (requests signed)', kind: 'relay' };
const RELAY_UNSIGNED: Side = { name: 'relay, unsigned', description: 'the relay, signing off (`signing: false`)', kind: 'relay', unsigned: true };
const BARE: Side = {
  name: 'bare node:http',
  description:
    "bare loop: node:http keep-alive Agent, the relay's signed POSTs with their signatures computed before the clock starts: the HTTP exchange alone (no real client can do this: a signature covers the time it is sent)",
  kind: 'bare-http',
};
const BARE_SIGNING: Side = {
  name: 'bare node:http, signing',
  description: "the same loop signing each request as it sends it (createHmac), as any client sending the relay's POSTs must: **the limit for the relay**",
  kind: 'bare-http',
  signInLoop: true,
};
const BARE_UNSIGNED: Side = {
  name: 'bare node:http, unsigned',
  description: 'the same loop sending the unsigned relay’s POSTs: the limit for the relay with signing off',
  kind: 'bare-http',
  unsigned: true,
};
const PEER: Side = { name: 'peer (Powertools + fetch)', description: 'Powertools BatchProcessor + processPartialResponse + fetch, same concurrency limit', kind: 'peer' };
const TRANSMITTER: Side = {
  name: 'relay transmitter',
  description: "the bare loop through the relay's own WebhookTransmitter (lambda/transmitter.ts): its cost over node:http",
  kind: 'transmitter',
};
const UNDICI: Side = { name: 'bare undici Pool', description: 'bare loop: undici 7 Pool.request', kind: 'bare-undici' };
const FETCH: Side = { name: 'bare fetch', description: 'bare loop: global fetch (Node’s bundled undici)', kind: 'bare-fetch' };
const NOOP: Side = { name: 'no-op handler', description: 'a handler that returns at once (the event alone)', kind: 'noop' };

function clientEnv(bench: Bench, side: Side, concurrency: number): NodeJS.ProcessEnv {
  const { bundle } = bench;
  const queues = templateQueues(bundle.template);
  const standIns = {
    region: bench.emulator.region,
    sqsEndpoint: bench.proxy.endpoint,
    secretsEndpoint: bench.secrets.endpoint,
    queueUrls: { [queues.queueLogicalId]: bench.emulator.queue.url, [queues.deadLetterQueueLogicalId]: bench.emulator.dlq.url },
    queueArns: { [queues.queueLogicalId]: bench.emulator.queue.arn, [queues.deadLetterQueueLogicalId]: bench.emulator.dlq.arn },
  };
  const functionEnv = functionEnvironment(bundle, standIns);
  const signed = side.unsigned !== true;
  if (!signed) delete functionEnv.SIGNING_SECRET_ARN;
  return {
    ...lambdaEnvironment(bundle, standIns, functionEnv),
    // The only values changed from the template: the webhook is this machine's, and the concurrency is the figure's.
    WEBHOOK_URL: bench.webhook.url,
    MAX_CONCURRENCY: String(concurrency),
    BENCH_HANDLER_FILE: bundle.handlerFile,
    BENCH_HANDLER_EXPORT: bundle.handlerExport,
    ...(signed && functionEnv.SIGNING_SECRET_ARN !== undefined ? { BENCH_SIGNING_SECRET: bench.signingSecret } : {}),
    ...(side.signInLoop === true ? { BENCH_SIGN_IN_LOOP: '1' } : {}),
  };
}

/**
 * A client process for `side`: with {@link SPEED_NODE_FLAGS} for the side-by-side speed figures,
 * or `asDeployed`, with no flags but the function's own (memory, cold start, mixed outcomes).
 */
async function startSide(bench: Bench, side: Side, concurrency: number, asDeployed = false): Promise<ClientProcess> {
  const profileDir = join(SCRATCH_DIR, 'profiles', `${side.name.replace(/[^a-z0-9]+/gi, '-')}-c${concurrency}`);
  const profile = PROFILE && side.kind === 'relay' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const options = sideClient(bench, side, concurrency, asDeployed);
  return startClientProcess(bench.compiled, { ...options, execArgv: [...options.execArgv, ...profile] });
}

/** How `side`'s client process is started: Node.js, flags, environment. */
function sideClient(bench: Bench, side: Side, concurrency: number, asDeployed = false): CountedSide['client'] & { execArgv: readonly string[] } {
  return {
    execPath: childNode(),
    kind: side.kind,
    env: clientEnv(bench, side, concurrency),
    cwd: bench.bundle.bundleDir,
    execArgv: asDeployed ? [] : SPEED_NODE_FLAGS,
  };
}

const eventFiles = new Map<number, string>();

/** A file with the event of `count` synthetic records as JSON (written once per size). */
function eventFile(count: number): string {
  let file = eventFiles.get(count);
  if (file === undefined) {
    file = join(SCRATCH_DIR, 'events', `event-${count}.json`);
    mkdirSync(join(SCRATCH_DIR, 'events'), { recursive: true });
    writeFileSync(file, eventJson(count));
    eventFiles.set(count, file);
  }
  return file;
}

function sqsCallCount(proxy: SqsProxy): number {
  return Object.values(proxy.counts()).reduce((sum, count) => sum + count, 0);
}

/** One all-200 invocation of `count` synthetic records, with the webhook's and SQS's view of it. */
async function throughputRun(bench: Bench, client: ClientProcess, count: number): Promise<ThroughputRun> {
  await bench.webhook.reset('ok');
  bench.proxy.reset();
  const outputBefore = client.outputBytes();
  const result = await client.run({ eventFile: eventFile(count), timeoutMs: DEADLINE_MS });
  const hook = await bench.webhook.stats();
  const failures = result.failures + Math.abs(hook.requests - count);
  return {
    recordsPerSecond: (result.records / result.wallMs) * 1000,
    cpuMicrosPerRecord: result.cpuMicros / result.records,
    clientCores: result.cpuMicros / 1000 / result.wallMs,
    webhookCores: hook.cpuMicros / 1000 / result.wallMs,
    newConnections: hook.connections,
    failures,
    sqsCalls: sqsCallCount(bench.proxy),
    outputBytes: client.outputBytes() - outputBefore,
  };
}

/** Runs the warm-up invocations of every client, in turn. */
async function warmUp(bench: Bench, clients: readonly ClientProcess[]): Promise<void> {
  for (let run = 0; run < WARM_UP_RUNS; run += 1) for (const client of clients) await throughputRun(bench, client, WARM_UP);
}

function summarize(side: Side, runs: ThroughputRun[]): SideSummary {
  return {
    side: side.name,
    description: side.description,
    runs,
    recordsPerSecond: median(runs.map((run) => run.recordsPerSecond)),
    cpuMicrosPerRecord: median(runs.map((run) => run.cpuMicrosPerRecord)),
    clientCores: median(runs.map((run) => run.clientCores)),
    webhookCores: median(runs.map((run) => run.webhookCores)),
  };
}

/**
 * The order of the sides in round `round`: sides go in pairs, (0, 1), (2, 3), …, a relay side
 * first and its baseline second, and a pair always runs back to back, so the ratio of a pair
 * within a round compares two runs a second apart. Which of the two goes first alternates from
 * round to round, and the pairs' order rotates, so neither drift nor position favours a side.
 */
function roundOrder(sideCount: number, round: number): number[] {
  const pairs = Math.ceil(sideCount / 2);
  const order: number[] = [];
  for (let step = 0; step < pairs; step += 1) {
    const first = ((round + step) % pairs) * 2;
    const pair = first + 1 < sideCount ? [first, first + 1] : [first];
    order.push(...(round % 2 === 0 ? pair : pair.reverse()));
  }
  return order;
}

/**
 * `rounds` rounds, each in fresh processes: every side starts a new process, warms it up and
 * runs `measuredRuns` times (each time in {@link roundOrder}), and the processes stop. Identical
 * processes of one side, held to the same CPU with the same flags, were measured up to 20 %
 * apart for their whole lives, and which process is the lucky one changes from start to start:
 * with processes kept across rounds, the luck of one or two processes became a side's figure;
 * with a fresh draw every round, the median over the rounds sees it as the noise it is.
 */
async function compare(bench: Bench, sides: readonly Side[], concurrency: number, rounds: number, measuredRuns: number, count: number): Promise<SideSummary[]> {
  const runs: ThroughputRun[][] = sides.map(() => []);
  for (let round = 0; round < rounds; round += 1) {
    const clients: ClientProcess[] = [];
    try {
      for (const side of sides) clients.push(await startSide(bench, side, concurrency));
      await warmUp(bench, clients);
      // Every side's n-th run of the round sits at the same index of its runs: the pairs the ratios are made of.
      for (let repeat = 0; repeat < measuredRuns; repeat += 1) {
        for (const index of roundOrder(sides.length, round * measuredRuns + repeat)) {
          (runs[index] as ThroughputRun[]).push(await throughputRun(bench, clients[index] as ClientProcess, count));
        }
      }
    } finally {
      await Promise.all(clients.map((client) => client.stop()));
    }
    log(`  c=${concurrency} round ${round + 1}/${rounds}: ${sides.map((side, index) => `${side.name} ${Math.round(runs[index]?.at(-1)?.recordsPerSecond ?? 0)}/s`).join(', ')}`);
  }
  return sides.map((side, index) => summarize(side, runs[index] as ThroughputRun[]));
}

/**
 * Uninstrumented invocations before the counted ones (see instructions.ts). On Node.js 24, after
 * six, the relay's first three counted invocations were still 50-100 % above its steady count
 * (429k, 376k, 340k instructions per record, then 229k, 225k, 218k), with or without V8's
 * background compilation turned off; from the tenth invocation on they had settled.
 */
const INSTRUCTION_WARM_UP_RUNS = 10;
/** Records per counted invocation under valgrind (about 50× slower than natively). */
const COUNTED_RECORDS = QUICK ? 500 : 2_000;

/** Instructions per record of the relay and its limits (callgrind): see instructions.ts. */
async function instructionsSection(bench: Bench, concurrency: number, sides: readonly Side[]): Promise<InstructionsSection> {
  log(`instructions per record (callgrind), concurrency ${concurrency}: ${sides.map((side) => side.name).join(', ')}`);
  await bench.webhook.reset('ok');
  return countInstructions(
    bench.compiled,
    sides.map((side) => ({ name: side.name, client: sideClient(bench, side, concurrency) })),
    { concurrency, records: COUNTED_RECORDS, eventFile: eventFile(COUNTED_RECORDS), warmUpRuns: QUICK ? 2 : INSTRUCTION_WARM_UP_RUNS, countedRuns: QUICK ? 1 : 6, simulateCaches: SIMULATE_CACHES, log },
  );
}

async function throughputSection(bench: Bench, concurrency: number, sides: readonly Side[], rounds: number): Promise<ThroughputSection> {
  log(`throughput, ${BATCH} records, concurrency ${concurrency}: ${sides.map((side) => side.name).join(', ')}`);
  return { concurrency, records: BATCH, measuredRunsPerRound: MEASURED_RUNS, sides: await compare(bench, sides, concurrency, rounds, MEASURED_RUNS, BATCH) };
}

/** A bundled, minified undici `Pool` as a handler file would carry it: its bytes, and its load time in a fresh process. */
async function undiciWeight(): Promise<{ bytes: number; loadMs: number }> {
  const result = await build({
    stdin: { contents: "import { Pool } from 'undici'; export const pool = (origin) => new Pool(origin);", resolveDir: PROJECT_ROOT, loader: 'js' },
    banner: { js: REQUIRE_BANNER },
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'esm',
    write: false,
    logLevel: 'silent',
  });
  const contents = result.outputFiles[0]?.contents ?? new Uint8Array();
  const file = join(SCRATCH_DIR, 'undici-pool.mjs');
  writeFileSync(file, contents);
  const empty = emptyModule();
  const runs = QUICK ? 3 : 9;
  const withUndici: number[] = [];
  const without: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    without.push((await timeImport(empty, { PATH: process.env.PATH }, SCRATCH_DIR)).processMs);
    withUndici.push((await timeImport(file, { PATH: process.env.PATH }, SCRATCH_DIR)).processMs);
  }
  return { bytes: contents.length, loadMs: median(withUndici) - median(without) };
}

async function clientChoiceSection(bench: Bench, concurrency: number, bareHttp: SideSummary | undefined): Promise<ClientChoice> {
  log(`HTTP client candidates, concurrency ${concurrency}`);
  const rounds = QUICK ? 2 : 3;
  const sides = await compare(bench, [UNDICI, FETCH], concurrency, rounds, 1, BATCH);
  const undici = await undiciWeight();
  return { concurrency, sides: bareHttp === undefined ? sides : [bareHttp, ...sides], undiciBundleBytes: undici.bytes, undiciLoadMs: undici.loadMs };
}

function latencySide(side: string, perRun: { p50: number; p99: number; samples: number }[]): LatencySide {
  return {
    side,
    p50Micros: median(perRun.map((run) => run.p50)),
    p99Micros: median(perRun.map((run) => run.p99)),
    samples: perRun.reduce((sum, run) => sum + run.samples, 0),
  };
}

/**
 * Start-to-receive time per record: the client stamps `process.hrtime.bigint()` when it starts a
 * record (the relay: its first read of the record's attributes, the first thing `attempt` does),
 * the webhook when the request is complete; CLOCK_MONOTONIC is one clock for all processes.
 */
async function latencySection(bench: Bench, concurrency: number): Promise<LatencySection> {
  const records = QUICK ? 500 : 2_000;
  const runs = QUICK ? 2 : 3;
  log(`latency, concurrency ${concurrency}`);
  const sides = [RELAY, BARE];
  const clients = [await startSide(bench, RELAY, concurrency), await startSide(bench, BARE, concurrency)];
  try {
    const perRun: { p50: number; p99: number; samples: number }[][] = [[], []];
    await warmUp(bench, clients);
    for (let round = 0; round < runs; round += 1) {
      for (const [index, client] of clients.entries()) {
        await bench.webhook.reset('ok', { stampSize: records });
        const result = await client.run({ eventFile: eventFile(records), stamp: true, timeoutMs: DEADLINE_MS });
        const { received } = await bench.webhook.stats();
        const deltas: number[] = [];
        for (let record = 0; record < records; record += 1) {
          const start = result.started?.[record] ?? 0n;
          const end = received?.[record] ?? 0n;
          if (start > 0n && end > 0n) deltas.push(Number(end - start) / 1000);
        }
        if (deltas.length !== records) bench.notes.push(`latency c=${concurrency} ${sides[index]?.name}: ${deltas.length} of ${records} records matched`);
        perRun[index]?.push({ p50: percentile(deltas, 50), p99: percentile(deltas, 99), samples: deltas.length });
      }
    }
    return { concurrency, records, runs, relay: latencySide(RELAY.name, perRun[0] ?? []), bare: latencySide(BARE.name, perRun[1] ?? []) };
  } finally {
    await Promise.all(clients.map((client) => client.stop()));
  }
}

/** The relay against a webhook that takes `delayMs` per request: measured vs concurrency ÷ latency. */
async function latencyBoundSection(bench: Bench): Promise<LatencyBoundRun[]> {
  log('latency-bound throughput (webhook answering after a delay)');
  const cases = QUICK
    ? [{ delayMs: 20, concurrency: 10 }]
    : [
        { delayMs: 10, concurrency: 10 },
        { delayMs: 50, concurrency: 10 },
        { delayMs: 10, concurrency: 50 },
        { delayMs: 50, concurrency: 50 },
      ];
  const results: LatencyBoundRun[] = [];
  for (const { delayMs, concurrency } of cases) {
    const model = (concurrency * 1000) / delayMs;
    // About one second of traffic at the model's rate.
    const records = Math.max(200, Math.round(model));
    const rates: number[] = [];
    for (const side of [RELAY, BARE]) {
      const client = await startSide(bench, side, concurrency);
      try {
        await bench.webhook.reset('ok', { delayMs });
        await client.run({ eventFile: eventFile(Math.min(records, 500)), timeoutMs: DEADLINE_MS });
        await bench.webhook.reset('ok', { delayMs });
        const result = await client.run({ eventFile: eventFile(records), timeoutMs: DEADLINE_MS });
        rates.push((result.records / result.wallMs) * 1000);
      } finally {
        await client.stop();
      }
    }
    results.push({ delayMs, concurrency, records, recordsPerSecond: rates[0] ?? Number.NaN, bareRecordsPerSecond: rates[1] ?? Number.NaN, modelRecordsPerSecond: model });
  }
  await bench.webhook.reset('ok');
  return results;
}

/** Peak RSS of one 10,000-record invocation, each side in a fresh process. */
async function memorySection(bench: Bench): Promise<MemoryRow[]> {
  log('memory: one batch in a fresh process per side');
  const rows: MemoryRow[] = [];
  for (const side of [NOOP, BARE, RELAY, PEER]) {
    const client = await startSide(bench, side, 10, true);
    try {
      const run = await throughputRun(bench, client, BATCH);
      if (run.failures > 0 && side.kind !== 'noop') bench.notes.push(`memory ${side.name}: ${run.failures} failures`);
      const final = await client.run({ eventFile: eventFile(1), timeoutMs: DEADLINE_MS });
      rows.push({ side: side.name, description: side.description, initMiB: client.initRssKiB / 1024, peakMiB: final.maxRssKiB / 1024 });
    } finally {
      await client.stop();
    }
  }
  return rows;
}

/** Lambda's cap on an invocation's payload: no SQS batch handed to the function is bigger. */
const MAX_INVOCATION_PAYLOAD_BYTES = 6 * 1024 * 1024;
/** Invocations in a row for the warm-container memory figures: the relay's RSS levels off within them. */
const WARM_MEMORY_INVOCATIONS = 6;

/** The most benchmark records whose event fits in Lambda's invocation payload. */
function largestDeliverableBatch(): number {
  const perRecord = eventJson(1_000).length / 1_000;
  let count = Math.floor(MAX_INVOCATION_PAYLOAD_BYTES / perRecord);
  while (eventJson(count).length > MAX_INVOCATION_PAYLOAD_BYTES) count -= 1;
  return count;
}

/**
 * Peak RSS in a warm container as deployed: one process per side and batch size, started with the
 * heap limits Lambda gives a function of the template's memory size and no other flag, running
 * invocations back to back, as a busy function does. The heap limits make V8 collect sooner than
 * it does in a process with none; back-to-back batches show what one batch leaves for the next.
 */
async function warmMemorySection(bench: Bench): Promise<WarmMemorySection> {
  const heapFlags = lambdaHeapFlags(bench.bundle.memorySize);
  log(`memory: ${WARM_MEMORY_INVOCATIONS} invocations in a row, ${heapFlags.join(' ')}`);
  const rows: WarmMemoryRow[] = [];
  const deliverable = largestDeliverableBatch();
  for (const records of deliverable < BATCH ? [BATCH, deliverable] : [BATCH]) {
    const file = eventFile(records);
    const eventBytes = readFileSync(file).length;
    for (const side of [NOOP, RELAY]) {
      const client = await startClientProcess(bench.compiled, { ...sideClient(bench, side, 10, true), execArgv: heapFlags });
      try {
        const peakMiBByInvocation: number[] = [];
        for (let invocation = 0; invocation < WARM_MEMORY_INVOCATIONS; invocation += 1) {
          await bench.webhook.reset('ok');
          const result = await client.run({ eventFile: file, timeoutMs: DEADLINE_MS });
          const delivered = (await bench.webhook.stats()).requests;
          if (side.kind !== 'noop' && (result.failures > 0 || delivered !== records)) bench.notes.push(`warm memory ${side.name}: ${result.failures} failures, ${delivered} of ${records} delivered`);
          peakMiBByInvocation.push(result.maxRssKiB / 1024);
        }
        rows.push({ side: side.name, records, eventBytes, peakMiBByInvocation });
      } finally {
        await client.stop();
      }
    }
  }
  return { memorySizeMb: bench.bundle.memorySize, heapFlags, rows };
}

/** An empty ES module: what a fresh process that loads nothing imports. */
function emptyModule(): string {
  const file = join(SCRATCH_DIR, 'empty.mjs');
  writeFileSync(file, 'export {};\n');
  return file;
}

/** A module that imports only `builtins` (`node:http`, …), as the bundle's top does. */
function builtinsModule(builtins: readonly string[]): string {
  const file = join(SCRATCH_DIR, 'builtins.mjs');
  writeFileSync(file, builtins.map((name) => `import ${JSON.stringify(name)};\n`).join(''));
  return file;
}

/** Wall time of a fresh `node` importing `file`, and the import's own time as the process saw it. */
function timeImport(file: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ processMs: number; importMs: number }> {
  const script =
    'const t = performance.now(); await import(process.argv[1]); const ms = performance.now() - t; process.stdout.write(String(ms), () => process.exit(0));';
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(childNode(), ['--input-type=module', '-e', script, pathToFileURL(file).href], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const processMs = Number(process.hrtime.bigint() - started) / 1e6;
      if (code !== 0) reject(new Error(`importing ${file} exited ${code}: ${err.slice(-2000)}`));
      else resolve({ processMs, importMs: Number(out) });
    });
  });
}

async function coldStartSection(bench: Bench): Promise<ColdStartSection> {
  log('cold start: asset weight, load time in fresh processes');
  const weight = await weighAsset(bench.bundle.bundleDir, relative(bench.bundle.bundleDir, bench.bundle.handlerFile));
  const empty = emptyModule();
  const env = clientEnv(bench, RELAY, 10);
  const runs = QUICK ? 5 : 15;
  const variants: { name: string; env: NodeJS.ProcessEnv; file: string; dir: string }[] = [
    { name: `as deployed (\`NODE_OPTIONS=${env.NODE_OPTIONS ?? ''}\`)`, env, file: bench.bundle.handlerFile, dir: bench.bundle.bundleDir },
    { name: 'as deployed, without `--enable-source-maps`', env: { ...env, NODE_OPTIONS: '' }, file: bench.bundle.handlerFile, dir: bench.bundle.bundleDir },
    // How much of the difference is Node.js loading its own modules rather than reading the relay.
    { name: 'not the bundle: only the Node.js built-ins it imports at load', env, file: builtinsModule(weight.builtinsAtImport), dir: SCRATCH_DIR },
  ];
  const loads: LoadTiming[] = [];
  for (const variant of variants) {
    const bundleRuns: { processMs: number; importMs: number }[] = [];
    const emptyRuns: number[] = [];
    for (let run = 0; run < runs; run += 1) {
      emptyRuns.push((await timeImport(empty, variant.env, SCRATCH_DIR)).processMs);
      bundleRuns.push(await timeImport(variant.file, variant.env, variant.dir));
    }
    loads.push({
      variant: variant.name,
      bundleProcessMs: median(bundleRuns.map((run) => run.processMs)),
      emptyProcessMs: median(emptyRuns),
      importMs: median(bundleRuns.map((run) => run.importMs)),
      runs,
    });
  }
  log('cold start: first invocations in fresh processes');
  const first: { importMs: number; firstMs: number; secondMs: number }[] = [];
  for (let run = 0; run < (QUICK ? 2 : 5); run += 1) {
    const client = await startSide(bench, RELAY, 10, true);
    try {
      await bench.webhook.reset('ok');
      const one = await client.run({ eventFile: eventFile(1), timeoutMs: DEADLINE_MS });
      const two = await client.run({ eventFile: eventFile(1), timeoutMs: DEADLINE_MS });
      if (one.failures + two.failures > 0) bench.notes.push('cold start: a first invocation failed');
      first.push({ importMs: client.importMs, firstMs: one.wallMs, secondMs: two.wallMs });
    } finally {
      await client.stop();
    }
  }
  return {
    weight,
    loads,
    firstInvocation: {
      importMs: median(first.map((run) => run.importMs)),
      firstMs: median(first.map((run) => run.firstMs)),
      secondMs: median(first.map((run) => run.secondMs)),
      processes: first.length,
    },
  };
}

/** Runs `task` over `items` with at most `limit` at once. */
async function inParallel<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await task(items[next++] as T);
    }),
  );
}

/** Fills the emulator's queue with the batch and receives it all, as the event source would. */
async function receiveBatchFromEmulator(bench: Bench, count: number): Promise<SQSRecord[]> {
  const { emulator } = bench;
  const deadline = Date.now() + 120_000;
  const chunks = Array.from({ length: Math.ceil(count / 10) }, (_, chunk) => chunk * 10);
  await inParallel(chunks, 16, async (start) => {
    const entries = Array.from({ length: Math.min(10, count - start) }, (_, offset) => ({ Id: `m${offset}`, MessageBody: bodyOf(start + offset, isRetryIndex(start + offset)) }));
    const { Failed } = await emulator.sqs.send(new SendMessageBatchCommand({ QueueUrl: emulator.queue.url, Entries: entries }));
    if ((Failed ?? []).length > 0) throw new Error(`SendMessageBatch failed for ${Failed?.length} entries`);
  });
  const records: SQSRecord[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (records.length < count) {
        if (Date.now() > deadline) throw new Error(`received ${records.length} of ${count} messages in 120 s`);
        const { Messages } = await emulator.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: emulator.queue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 1_800, ...RECEIVE_ALL_ATTRIBUTES }),
        );
        for (const message of Messages ?? []) records.push(toSqsRecord(message, emulator.queue.arn));
      }
    }),
  );
  return records.slice(0, count);
}

/**
 * 30 % of the batch answered `429` + `Retry-After` by the webhook, records received from the
 * emulator (real receipt handles), every SQS call counted at the proxy.
 */
async function mixedSection(bench: Bench): Promise<MixedSection> {
  log(`mixed outcomes: ${BATCH} messages through the emulator`);
  const setupStarted = Date.now();
  const records = await receiveBatchFromEmulator(bench, BATCH);
  const setupMs = Date.now() - setupStarted;
  const expectedRetries = records.filter((record) => record.body.startsWith('{"retry"')).length;
  const client = await startSide(bench, RELAY, 10, true);
  try {
    client.keepLogs = true;
    const runs: MixedRun[] = [];
    let visibilityVerified = 0;
    let logLines: Record<string, number> = {};
    let peakMiB = 0;
    for (let round = 0; round < (QUICK ? 2 : 3); round += 1) {
      await bench.webhook.reset('mixed');
      bench.proxy.reset();
      client.logs.length = 0;
      const result = await client.run({ event: { Records: records }, timeoutMs: DEADLINE_MS });
      runs.push({
        label: round === 0 ? 'first (fresh process: SDK loaded, queue URL looked up)' : `warm #${round}`,
        wallMs: result.wallMs,
        retried: result.failures,
        calls: bench.proxy.counts(),
        visibilityEntries: bench.proxy.visibilityEntries(),
      });
      if (round === 0) {
        peakMiB = result.maxRssKiB / 1024;
        const now = Date.now();
        const state = bench.emulator.server.inspectQueue(bench.emulator.queue.name);
        visibilityVerified = (state?.messages.inflight ?? []).filter(
          (entry) => entry.message.body.startsWith('{"retry"') && Math.abs(entry.visibilityDeadline - now - RETRY_AFTER_SECONDS * 1000) < 60_000,
        ).length;
        await new Promise((resolve) => setTimeout(resolve, 200)); // let the last log lines arrive
        logLines = {};
        for (const line of client.logs) {
          let message = 'non-JSON line';
          try {
            const parsed = JSON.parse(line) as { message?: string; _aws?: unknown };
            message = parsed._aws !== undefined ? 'EMF metrics' : (parsed.message ?? 'JSON line');
          } catch {
            message = line.startsWith('(node') || line.startsWith('(Use') || /SDK|node >=|upgrade|a\.co|^[A-Za-z ]+$/.test(line) ? 'Node warning' : 'non-JSON line';
          }
          logLines[message] = (logLines[message] ?? 0) + 1;
        }
      }
    }
    await bench.webhook.reset('ok');
    const allOk = await client.run({ event: { Records: records }, timeoutMs: DEADLINE_MS });
    if (allOk.failures > 0) bench.notes.push(`mixed: the all-200 baseline had ${allOk.failures} failures`);
    return { records: records.length, expectedRetries, setupMs, runs, allOkMs: allOk.wallMs, visibilityVerified, logLines, peakMiB };
  } finally {
    await client.stop();
  }
}

/** The component microbenchmark, in a process of its own (its steps print EMF and log lines). */
function componentsSection(): Promise<ComponentCost[]> {
  log('components: per-record steps timed alone');
  return new Promise((resolve, reject) => {
    const child = spawn(childNode(), ['--import', 'tsx', join(PROJECT_ROOT, 'bench', 'components.ts'), '--json'], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'INFO', AWS_LAMBDA_FUNCTION_NAME: 'bench' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.length > 1e6) out = out.slice(-1e5); // the EMF lines are not needed
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const line = out.split('\n').find((candidate) => candidate.startsWith(RESULT_MARKER));
      if (code !== 0 || line === undefined) reject(new Error(`components exited ${code}: ${err.slice(-2000)}`));
      else resolve(JSON.parse(line.slice(RESULT_MARKER.length)) as ComponentCost[]);
    });
  });
}

/** The signing key as Secrets Manager would generate it for the stack: letters and digits, valid base64. */
function generatedSigningKey(): string {
  let key = '';
  while (key.length < 48) key += randomBytes(48).toString('base64').replace(/[^A-Za-z0-9]/g, '');
  return key.slice(0, 48);
}

async function loadBundle(): Promise<SynthesizedBundle> {
  const reuse = process.env.BENCH_ASSEMBLY;
  if (reuse === undefined || reuse === '') return synthesizeBundle();
  // Same lookup as synthesizeBundle, on an existing assembly.
  const { stackName, template } = readStack(reuse);
  const [functionLogicalId, fn] = Object.entries(template.Resources).find(([, resource]) => resource.Type === 'AWS::Lambda::Function') ?? [];
  if (fn === undefined || functionLogicalId === undefined) throw new Error(`no function in ${reuse}`);
  const properties = fn.Properties ?? {};
  const key = String((properties.Code as { S3Key?: string }).S3Key).replace(/\.zip$/, '');
  const assets = JSON.parse(readFileSync(join(reuse, `${stackName}.assets.json`), 'utf8')) as { files: Record<string, { source: { path: string } }> };
  const bundleDir = join(reuse, assets.files[key]?.source.path ?? '');
  return {
    assemblyDir: reuse,
    stackName,
    template,
    functionLogicalId,
    bundleDir,
    handlerFile: join(bundleDir, 'index.mjs'),
    handlerExport: String(properties.Handler).split('.').pop() ?? 'handler',
    runtime: String(properties.Runtime),
    timeoutSeconds: Number(properties.Timeout ?? 3),
    memorySize: Number(properties.MemorySize ?? 128),
    environment: (properties.Environment as { Variables?: SynthesizedBundle['environment'] } | undefined)?.Variables ?? {},
    output: '',
  };
}

/**
 * Where a run's reports go: a run on Lambda's Node.js major to `BENCHMARKS.md` and docs/performance.md; a
 * run on another major to a report of its own beside it; quick runs to the scratch directory.
 */
function reportFiles(results: Pick<BenchResults, 'quick' | 'machine'>): { markdownFile: string; sectionFile: string | undefined } {
  if (results.quick) return { markdownFile: join(SCRATCH_DIR, 'BENCHMARKS.quick.md'), sectionFile: join(SCRATCH_DIR, 'README-performance.quick.md') };
  if (isLambdaNodeMajor(results.machine.node)) return { markdownFile: join(PROJECT_ROOT, 'BENCHMARKS.md'), sectionFile: undefined };
  const major = nodeMajor(results.machine.node);
  return { markdownFile: join(PROJECT_ROOT, `BENCHMARKS.node${major}.md`), sectionFile: join(SCRATCH_DIR, `README-performance.node${major}.md`) };
}

/** Rewrites the figures between the markers of docs/performance.md; the text around them is written by hand. */
function writePerformanceDoc(section: string): string {
  const file = join(PROJECT_ROOT, PERFORMANCE_DOC.path);
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(PERFORMANCE_DOC.start);
  const end = text.indexOf(PERFORMANCE_DOC.end);
  if (start < 0 || end < start) throw new Error(`${PERFORMANCE_DOC.path} has no ${PERFORMANCE_DOC.start} … ${PERFORMANCE_DOC.end} markers`);
  writeFileSync(file, `${text.slice(0, start + PERFORMANCE_DOC.start.length)}\n${section.trim()}\n${text.slice(end)}`);
  return file;
}

function writeReports(results: BenchResults): void {
  const { markdownFile, sectionFile } = reportFiles(results);
  writeFileSync(markdownFile, markdown(results));
  const section = performanceSection(results);
  let sectionTarget: string;
  if (sectionFile === undefined) sectionTarget = writePerformanceDoc(section);
  else {
    writeFileSync(sectionFile, section);
    sectionTarget = sectionFile;
  }
  log(`wrote ${markdownFile} and ${sectionTarget}`);
}

async function main(): Promise<void> {
  if (process.argv.includes('--report-only')) {
    // The text again from the last run's figures (after changing report.ts), measuring nothing.
    const results = JSON.parse(readFileSync(join(SCRATCH_DIR, 'results.json'), 'utf8')) as BenchResults;
    process.stdout.write(`${consoleTable(results)}\n`);
    writeReports(results);
    return;
  }
  const started = Date.now();
  const machine = machineInfo(childNode());
  log(`${machine.cpu}, ${machine.cores} cores, Node ${machine.node}${QUICK ? ' (quick)' : ''}`);
  log(process.env.BENCH_ASSEMBLY ? `reusing the assembly in ${process.env.BENCH_ASSEMBLY}` : 'cdk synth (the deployable bundle)…');
  const bundle = await loadBundle();
  const cleanUps: (() => Promise<void> | void)[] = [];
  if (!process.env.BENCH_ASSEMBLY) cleanUps.push(() => rmSync(bundle.assemblyDir, { recursive: true, force: true }));
  try {
    rmSync(join(SCRATCH_DIR, 'profiles'), { recursive: true, force: true });
    mkdirSync(SCRATCH_DIR, { recursive: true });
    const compiled = await compileChildren();
    const queues = templateQueues(bundle.template);
    const emulator = await startEmulator({ keepEnvironment: true, visibilityTimeout: queues.visibilityTimeout, maxReceiveCount: queues.maxReceiveCount });
    cleanUps.push(() => emulator.stop());
    const proxy = await startSqsProxy(emulator.endpoint, emulator.region);
    cleanUps.push(() => proxy.close());
    const secrets = await startSecretsManager();
    cleanUps.push(() => secrets.close());
    const signingSecret = generatedSigningKey();
    for (const logicalId of templateSecrets(bundle)) secrets.secrets.set(secretArnOf(logicalId), signingSecret);
    const webhook = await startWebhookProcess(compiled, childNode());
    cleanUps.push(() => webhook.stop());
    const bench: Bench = { bundle, compiled, webhook, emulator, proxy, secrets, signingSecret, notes: [] };

    const throughput: ThroughputSection[] = [];
    throughput.push(await throughputSection(bench, 10, [RELAY, BARE_SIGNING, RELAY_UNSIGNED, BARE_UNSIGNED, TRANSMITTER, BARE, PEER], ROUNDS));
    if (!QUICK) throughput.push(await throughputSection(bench, 50, [RELAY, BARE_SIGNING, BARE, PEER], 7));
    const instructions = await instructionsSection(bench, 10, [RELAY, BARE_SIGNING, RELAY_UNSIGNED, BARE_UNSIGNED]);
    const clientChoice = await clientChoiceSection(bench, 10, throughput[0]?.sides.find((side) => side.side === BARE.name));
    const latency = [await latencySection(bench, 1), await latencySection(bench, 10)];
    const latencyBound = await latencyBoundSection(bench);
    const memory = await memorySection(bench);
    const warmMemory = await warmMemorySection(bench);
    const coldStart = await coldStartSection(bench);
    const mixed = await mixedSection(bench);
    const components = await componentsSection();

    const relayConfig = Object.fromEntries(
      Object.entries(clientEnv(bench, RELAY, 10)).filter(([name]) => /^(MAX_CONCURRENCY|REQUEST_TIMEOUT_MS|SIGNING_SECRET_ARN|POWERTOOLS_LOG_LEVEL|NODE_OPTIONS|BACKOFF|DLQ_URL|OUTAGE_THRESHOLD)$/.test(name)),
    ) as Record<string, string>;
    const results: BenchResults = {
      machine,
      quick: QUICK,
      durationSeconds: (Date.now() - started) / 1000,
      relayConfig,
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
      notes: bench.notes,
    };
    writeFileSync(join(SCRATCH_DIR, 'results.json'), JSON.stringify(results, null, 2));
    process.stdout.write(`${consoleTable(results)}\n`);
    // A quick run's figures are not for publishing, and the published ones are Lambda's Node.js.
    writeReports(results);
    log(`done in ${Math.round(results.durationSeconds)} s`);
  } finally {
    for (const cleanUp of cleanUps.reverse()) {
      try {
        await cleanUp();
      } catch (error) {
        log(`clean-up: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
