/**
 * What every scenario shares: the run's options, the stand-ins (webhook, emulator, proxy, Secrets
 * Manager), the sides a scenario can start, and the timed all-200 invocation most of them are
 * made of. BENCHMARKS.md's method section says why each choice was made.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { lambdaNodePath, lambdaNodeUnavailable } from '../bin/lambda-node';
import type { Emulator } from '../testkit/emulator';
import type { FakeSecretsManager } from '../testkit/secrets-manager';
import type { SqsProxy } from '../testkit/sqs-proxy';
import { type SynthesizedBundle, templateQueues } from '../testkit/synth';
import {
  type ClientOptions,
  type ClientProcess,
  type CompiledChildren,
  SCRATCH_DIR,
  SPEED_NODE_FLAGS,
  startClientProcess,
  type WebhookProcess,
} from './children';
import { functionEnvironment, lambdaEnvironment } from './environment';
import type { ClientKind } from './protocol';
import { eventJson } from './records';
import type { SideSummary, ThroughputRun } from './results';
import { median } from './stats';

const flag = (name: string): boolean => process.argv.includes(name);
const option = (name: string): string | undefined => process.argv.find((arg) => arg.startsWith(`${name}=`))?.slice(name.length + 1);

/** `--quick`: fewer and smaller runs, for trying changes (figures not for publishing). */
export const QUICK = flag('--quick');
/** `--profile`: the relay's children write V8 CPU profiles to `.bench-tmp/profiles/`. */
const PROFILE = flag('--profile');
/** `--simulate-caches`: callgrind also simulates caches and branches (instructions.ts). */
export const SIMULATE_CACHES = flag('--simulate-caches');
/**
 * `--only=<names>`: run only these scenarios, comma-separated, each its key in kebab case
 * (`back-pressure`, `recovery`, `cold-start`…); their figures are printed, no report is written.
 */
export const ONLY = option('--only')?.split(',');
/** A scenario's name for `--only`: its key in kebab case. */
export const scenarioName = (key: string): string => key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
/** Records of the big batch: the most Lambda hands one invocation. */
export const BATCH = QUICK ? 2_000 : 10_000;
/** Records of each warm-up invocation (JIT, connections). */
const WARM_UP = QUICK ? 500 : 10_000;
/** Warm-up invocations before the measured ones: on Node.js 24 V8 still optimizes the relay during the third. */
const WARM_UP_RUNS = QUICK ? 1 : 4;
/** Measured invocations of each side per round: three triple the pairs for about 40 % more time. */
export const MEASURED_RUNS = QUICK ? 1 : 3;
export const DEADLINE_MS = 15 * 60_000;

/** `--rounds=<n>`: rounds of the concurrency-10 throughput figures (each narrows the ratio's interval). */
export const ROUNDS = ((): number => {
  const rounds = option('--rounds');
  if (rounds === undefined) return QUICK ? 2 : 9;
  if (/^[1-9]\d*$/.test(rounds)) return Number(rounds);
  // Bad options stop the run before it synthesizes anything, in one line.
  process.stderr.write(`npm run bench: --rounds=${rounds}: expected a whole number of rounds, at least 1\n`);
  process.exit(2);
})();

export function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

let childNodePath: string | undefined;
/** The Node.js of every child: `--node=<path>`, else `--this-node`, else Lambda's release (worked out on first use). */
export function childNode(): string {
  childNodePath ??= ((): string => {
    const path = option('--node');
    if (path !== undefined && path !== '') return path;
    if (flag('--this-node')) return process.execPath;
    const unavailable = lambdaNodeUnavailable();
    if (unavailable === undefined) return lambdaNodePath();
    log(`the children run on this Node.js, ${process.version}: ${unavailable}`);
    return process.execPath;
  })();
  return childNodePath;
}

/** Everything the scenarios share. */
export interface Bench {
  readonly bundle: SynthesizedBundle;
  readonly compiled: CompiledChildren;
  readonly webhook: WebhookProcess;
  readonly emulator: Emulator;
  readonly proxy: SqsProxy;
  readonly secrets: FakeSecretsManager;
  /** The signing key the fake Secrets Manager serves (48 letters and digits, as the stack generates). */
  readonly signingSecret: string;
  /** What went wrong without stopping the run, for the report. */
  readonly notes: string[];
}

/** A side of a comparison: which client, with which environment changes. */
export interface Side {
  readonly name: string;
  readonly description: string;
  readonly kind: ClientKind;
  /** Leave the template's signing secret out (the stack's `signing: false`); a bare loop then sends unsigned POSTs. */
  readonly unsigned?: boolean;
  /** A bare loop that signs each request inside the timing. */
  readonly signInLoop?: boolean;
}

const sideOf = (name: string, kind: ClientKind, description: string, extra: Partial<Side> = {}): Side => ({
  name,
  kind,
  description,
  ...extra,
});
export const RELAY = sideOf('relay', 'relay', 'the relay: bundle from `cdk synth`, template environment (requests signed)');
export const RELAY_UNSIGNED = sideOf('relay, unsigned', 'relay', 'the relay, signing off (`signing: false`)', { unsigned: true });
export const BARE = sideOf(
  'bare node:http',
  'bare-http',
  "bare loop: node:http keep-alive Agent, the relay's signed POSTs with their signatures computed before the clock starts: the HTTP exchange alone (no real client can do this: a signature covers the time it is sent)",
);
export const BARE_SIGNING = sideOf(
  'bare node:http, signing',
  'bare-http',
  "the same loop signing each request as it sends it (createHmac), as any client sending the relay's POSTs must: **the limit for the relay**",
  { signInLoop: true },
);
export const BARE_UNSIGNED = sideOf(
  'bare node:http, unsigned',
  'bare-http',
  'the same loop sending the unsigned relay’s POSTs: the limit for the relay with signing off',
  { unsigned: true },
);
export const PEER = sideOf(
  'peer (Powertools + fetch)',
  'peer',
  'Powertools BatchProcessor + processPartialResponse + fetch, same concurrency limit',
);
export const TRANSMITTER = sideOf(
  'relay transmitter',
  'transmitter',
  "the bare loop through the relay's own WebhookTransmitter (lambda/transmitter.ts): its cost over node:http",
);
export const UNDICI = sideOf('bare undici Pool', 'bare-undici', 'bare loop: undici 7 Pool.request');
export const FETCH = sideOf('bare fetch', 'bare-fetch', 'bare loop: global fetch (Node’s bundled undici)');
export const NOOP = sideOf('no-op handler', 'noop', 'a handler that returns at once (the event alone)');

/** The deployed function's environment for `side`; only the webhook (this machine's) and the concurrency (the figure's) change. */
export function clientEnv(bench: Bench, side: Side, concurrency: number): NodeJS.ProcessEnv {
  const { bundle, emulator } = bench;
  const queues = templateQueues(bundle.template);
  const standIns = {
    region: emulator.region,
    sqsEndpoint: bench.proxy.endpoint,
    secretsEndpoint: bench.secrets.endpoint,
    queueUrls: { [queues.queueLogicalId]: emulator.queue.url, [queues.deadLetterQueueLogicalId]: emulator.dlq.url },
    queueArns: { [queues.queueLogicalId]: emulator.queue.arn, [queues.deadLetterQueueLogicalId]: emulator.dlq.arn },
  };
  const functionEnv = functionEnvironment(bundle, standIns);
  const signed = side.unsigned !== true;
  if (!signed) delete functionEnv.SIGNING_SECRET_ARN;
  return {
    ...lambdaEnvironment(bundle, standIns, functionEnv),
    WEBHOOK_URL: bench.webhook.url,
    MAX_CONCURRENCY: String(concurrency),
    BENCH_HANDLER_FILE: bundle.handlerFile,
    BENCH_HANDLER_EXPORT: bundle.handlerExport,
    ...(signed && functionEnv.SIGNING_SECRET_ARN !== undefined ? { BENCH_SIGNING_SECRET: bench.signingSecret } : {}),
    ...(side.signInLoop === true ? { BENCH_SIGN_IN_LOOP: '1' } : {}),
  };
}

/** How `side`'s client starts: with {@link SPEED_NODE_FLAGS} for speed figures, or `asDeployed` with the function's flags only. */
export function sideClient(
  bench: Bench,
  side: Side,
  concurrency: number,
  asDeployed = false,
): ClientOptions & { execPath: string; execArgv: readonly string[] } {
  return {
    execPath: childNode(),
    kind: side.kind,
    env: clientEnv(bench, side, concurrency),
    cwd: bench.bundle.bundleDir,
    execArgv: asDeployed ? [] : SPEED_NODE_FLAGS,
  };
}

/** A client process for `side` (see {@link sideClient}); with `--profile`, the relay's write CPU profiles. */
export function startSide(
  bench: Bench,
  side: Side,
  concurrency: number,
  asDeployed = false,
  env: Readonly<Record<string, string>> = {},
): Promise<ClientProcess> {
  const profileDir = join(SCRATCH_DIR, 'profiles', `${side.name.replace(/[^a-z0-9]+/gi, '-')}-c${concurrency}`);
  const profile = PROFILE && side.kind === 'relay' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const options = sideClient(bench, side, concurrency, asDeployed);
  return startClientProcess(bench.compiled, { ...options, env: { ...options.env, ...env }, execArgv: [...options.execArgv, ...profile] });
}

const eventFiles = new Map<number, string>();
/** A file with the event of `count` synthetic records as JSON (written once per size). */
export function eventFile(count: number): string {
  let file = eventFiles.get(count);
  if (file === undefined) {
    file = join(SCRATCH_DIR, 'events', `event-${count}.json`);
    mkdirSync(join(SCRATCH_DIR, 'events'), { recursive: true });
    writeFileSync(file, eventJson(count));
    eventFiles.set(count, file);
  }
  return file;
}

/** One all-200 invocation of `count` synthetic records, with the webhook's and SQS's view of it. */
export async function throughputRun(bench: Bench, client: ClientProcess, count: number): Promise<ThroughputRun> {
  await bench.webhook.reset('ok');
  bench.proxy.reset();
  const outputBefore = client.outputBytes();
  const result = await client.run({ eventFile: eventFile(count), timeoutMs: DEADLINE_MS });
  const hook = await bench.webhook.stats();
  return {
    recordsPerSecond: (result.records / result.wallMs) * 1000,
    cpuMicrosPerRecord: result.cpuMicros / result.records,
    clientCores: result.cpuMicros / 1000 / result.wallMs,
    webhookCores: hook.cpuMicros / 1000 / result.wallMs,
    newConnections: hook.connections,
    failures: result.failures + Math.abs(hook.requests - count),
    sqsCalls: Object.values(bench.proxy.counts()).reduce((sum, calls) => sum + calls, 0),
    outputBytes: client.outputBytes() - outputBefore,
  };
}

/** Runs the warm-up invocations of every client, in turn. */
export async function warmUp(bench: Bench, clients: readonly ClientProcess[]): Promise<void> {
  for (let run = 0; run < WARM_UP_RUNS; run += 1) for (const client of clients) await throughputRun(bench, client, WARM_UP);
}

/**
 * The order of the sides in round `round`: pairs (0, 1), (2, 3), … run back to back, which of a
 * pair goes first alternates and the pairs' order rotates, so neither drift nor position favours a side.
 */
export function roundOrder(sideCount: number, round: number): number[] {
  const pairs = Math.ceil(sideCount / 2);
  const order: number[] = [];
  for (let step = 0; step < pairs; step += 1) {
    const first = ((round + step) % pairs) * 2;
    const pair = first + 1 < sideCount ? [first, first + 1] : [first];
    order.push(...(round % 2 === 0 ? pair : pair.reverse()));
  }
  return order;
}

/** `rounds` rounds, each in fresh processes (a fresh draw of each process's luck): warm up, then `measuredRuns` in {@link roundOrder}. */
export async function compare(
  bench: Bench,
  sides: readonly Side[],
  concurrency: number,
  rounds: number,
  measuredRuns: number,
  count: number,
): Promise<SideSummary[]> {
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
    log(
      `  c=${concurrency} round ${round + 1}/${rounds}: ${sides.map((side, index) => `${side.name} ${Math.round(runs[index]?.at(-1)?.recordsPerSecond ?? 0)}/s`).join(', ')}`,
    );
  }
  return sides.map((side, index) => {
    const own = runs[index] as ThroughputRun[];
    const medianOf = (figure: (run: ThroughputRun) => number): number => median(own.map(figure));
    return {
      side: side.name,
      description: side.description,
      runs: own,
      recordsPerSecond: medianOf((run) => run.recordsPerSecond),
      cpuMicrosPerRecord: medianOf((run) => run.cpuMicrosPerRecord),
      clientCores: medianOf((run) => run.clientCores),
      webhookCores: medianOf((run) => run.webhookCores),
    };
  });
}

/** Runs `node args…` on {@link childNode} to its end: its stdout and wall time; rejects on a non-zero exit or after `timeoutMs`. */
export function runNode(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  timeoutMs: number,
): Promise<{ out: string; wallMs: number }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(childNode(), args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.length > 1e6) out = out.slice(-1e5); // only the last lines are read
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
      if (code !== 0) reject(new Error(`node ${args.join(' ').slice(0, 200)} exited ${code}: ${err.slice(-2000)}`));
      else resolve({ out, wallMs });
    });
  });
}

/** Wall time of a fresh `node` importing `file`, and the import's own time as the process saw it. */
export async function timeImport(file: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ processMs: number; importMs: number }> {
  const script =
    'const t = performance.now(); await import(process.argv[1]); const ms = performance.now() - t; process.stdout.write(String(ms), () => process.exit(0));';
  const { out, wallMs } = await runNode(['--input-type=module', '-e', script, pathToFileURL(file).href], env, cwd, 30_000);
  return { processMs: wallMs, importMs: Number(out) };
}

/** A scratch file with `contents` (an empty module, a module of built-ins…). */
export function scratchModule(name: string, contents: string | Uint8Array): string {
  const file = join(SCRATCH_DIR, name);
  writeFileSync(file, contents);
  return file;
}
