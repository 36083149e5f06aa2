/** What every scenario shares: the run's options, the stand-ins, the sides, and the timed all-200 invocation (BENCHMARKS.md says why). */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lambdaNodePath, lambdaNodeUnavailable } from '../bin/lambda-node';
import { deployedEnvironment, startTemplateEmulator } from '../testkit/deployed';
import { startSecretsManager } from '../testkit/secrets-manager';
import { startSqsProxy } from '../testkit/sqs-proxy';
import { lambdaRuntimeEnvironment, type SynthesizedBundle, templateQueues } from '../testkit/synth';
import { type ClientProcess, compileChildren, SCRATCH_DIR, SPEED_NODE_FLAGS, startClientProcess, startWebhookProcess } from './children';
import type { ClientKind } from './protocol';
import { eventJson } from './records';

const option = (name: string): string | undefined => process.argv.find((arg) => arg.startsWith(`${name}=`))?.slice(name.length + 1);

/** Stops the run on a bad option, in one line, before it synthesizes anything. */
export function badOption(message: string): never {
  process.stderr.write(`npm run bench: ${message}\n`);
  process.exit(2);
}

/** `--quick`: fewer and smaller runs, for trying changes (figures not for publishing). */
export const QUICK = process.argv.includes('--quick');
/** `--only=<names>`: only these scenarios (see {@link scenarioName}); figures printed, no report written. */
export const ONLY = option('--only')?.split(',');
/** A scenario's name for `--only`: its key in kebab case (`back-pressure`, `cold-start`…). */
export const scenarioName = (key: string): string => key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
/** Records of the big batch: the most Lambda hands one invocation. */
export const BATCH = QUICK ? 2_000 : 10_000;
const WARM_UP = QUICK ? 500 : 10_000;
/** On Node.js 24 V8 still optimizes the relay during the third warm-up invocation. */
const WARM_UP_RUNS = QUICK ? 1 : 4;
/** How long an invocation may take before the run fails. */
export const DEADLINE_MS = 15 * 60_000;
/** `--rounds=<n>`: rounds of the concurrency-10 throughput figures. */
export const ROUNDS = ((rounds = option('--rounds')): number => {
  if (rounds === undefined) return QUICK ? 2 : 9;
  return /^[1-9]\d*$/.test(rounds) ? Number(rounds) : badOption(`--rounds=${rounds}: expected a whole number of rounds, at least 1`);
})();

/** A line on stderr, with the time. */
export function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

let childNodePath: string | undefined;
/** The Node.js of every child: `--node=<path>`, else `--this-node`, else Lambda's release (worked out on first use). */
export function childNode(): string {
  childNodePath ??= ((path = option('--node')): string => {
    if (path !== undefined && path !== '') return path;
    if (process.argv.includes('--this-node')) return process.execPath;
    const unavailable = lambdaNodeUnavailable();
    if (unavailable === undefined) return lambdaNodePath();
    log(`the children run on this Node.js, ${process.version}: ${unavailable}`);
    return process.execPath;
  })();
  return childNodePath;
}

/** The ARN the template's signing secret resolves to here. */
const SIGNING_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:relay-signing-secret-bench';

/**
 * Everything the scenarios share, started: the compiled children, the template's emulator behind a proxy counting its calls, a fake
 * Secrets Manager serving the signing key, and the webhook process; each adds its stop to `cleanUps`.
 */
export async function startBench(bundle: SynthesizedBundle, cleanUps: (() => Promise<void> | void)[]) {
  const compiled = await compileChildren();
  const queues = templateQueues(bundle.template);
  const emulator = await startTemplateEmulator(queues);
  cleanUps.push(() => emulator.stop());
  const proxy = await startSqsProxy(emulator.endpoint, emulator.region);
  cleanUps.push(() => proxy.close());
  const secrets = await startSecretsManager();
  cleanUps.push(() => secrets.close());
  const webhook = await startWebhookProcess(compiled, childNode());
  cleanUps.push(() => webhook.stop());
  // The key as Secrets Manager generates it for the stack: 48 letters and digits (valid base64).
  const base64 = randomBytes(96).toString('base64');
  const signingSecret = base64.replace(/[^A-Za-z0-9]/g, '').slice(0, 48);
  secrets.secrets.set(SIGNING_SECRET_ARN, signingSecret);
  const place = { taskRoot: bundle.bundleDir, handlerFile: bundle.handlerFile, functionName: bundle.stackName, region: emulator.region };
  return {
    bundle,
    /**
     * The deployed function's environment here: what Lambda's runtime sets, and the template's own variables resolved to the stand-ins
     * (the secret: an ARN the fake Secrets Manager answers for), the SDK's endpoints pointed at them, the webhook this machine's.
     */
    relayEnv: {
      ...lambdaRuntimeEnvironment(bundle, place),
      ...deployedEnvironment(bundle, queues, emulator, SIGNING_SECRET_ARN, {
        WEBHOOK_URL: webhook.url,
        AWS_ENDPOINT_URL_SQS: proxy.endpoint,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint,
      }),
    } as NodeJS.ProcessEnv,
    compiled,
    webhook,
    emulator,
    proxy,
    signingSecret,
    /** What went wrong without stopping the run, for the report. */
    notes: [] as string[],
  };
}

/** Everything the scenarios share. */
export type Bench = Awaited<ReturnType<typeof startBench>>;

/** A side of a comparison: which client, with which environment changes. */
export interface Side {
  readonly name: string;
  readonly description: string;
  readonly kind: ClientKind;
  /** Without the template's signing secret (the stack's `signing: false`); a bare loop then sends unsigned POSTs. */
  readonly unsigned?: boolean;
  /** A bare loop that signs each request inside the timing. */
  readonly signInLoop?: boolean;
}

/** The sides the scenarios compare, by the names the report knows them by. */
export const SIDES = {
  relay: { name: 'relay', kind: 'relay', description: 'the relay: bundle from `cdk synth`, template environment (requests signed)' },
  relayUnsigned: { name: 'relay, unsigned', kind: 'relay', description: 'the relay, signing off (`signing: false`)', unsigned: true },
  bare: {
    name: 'bare node:http',
    kind: 'bare-http',
    description:
      'the node:http loop with each signature computed before the clock starts: the HTTP exchange alone (no real client can sign in advance: a signature covers its time)',
  },
  bareSigning: {
    name: 'bare node:http, signing',
    kind: 'bare-http',
    description: "a node:http keep-alive loop sending the relay's POSTs, signing each as it sends it: **the limit for the relay**",
    signInLoop: true,
  },
  bareUnsigned: {
    name: 'bare node:http, unsigned',
    kind: 'bare-http',
    description: "that loop sending the unsigned relay's POSTs: the limit for the relay with signing off",
    unsigned: true,
  },
  peer: { name: 'peer (Powertools + fetch)', kind: 'peer', description: 'Powertools BatchProcessor + processPartialResponse + fetch' },
  noop: { name: 'no-op handler', kind: 'noop', description: 'a handler that returns at once (the event alone)' },
} satisfies Record<string, Side>;

/**
 * Starts a client process for each of `sides`, one after another, runs `use` with them, and stops every one started, whatever happens.
 * Each runs with the deployed function's environment, only `MAX_CONCURRENCY` (`concurrency`) and `env`'s variables changed, and
 * `execArgv`: {@link SPEED_NODE_FLAGS} (the default) for speed figures, else the function's own (none, or its heap limits). With
 * `callgrindOutFile`, under callgrind writing there, unpinned; else, with `--profile`, relays write CPU profiles to `.bench-tmp/profiles/`.
 */
export async function withSides<const Sides extends readonly Side[], T>(
  bench: Bench,
  sides: Sides,
  setup: { concurrency: number; env?: NodeJS.ProcessEnv; execArgv?: readonly string[]; callgrindOutFile?: string },
  use: (clients: { -readonly [K in keyof Sides]: ClientProcess }) => Promise<T>,
): Promise<T> {
  const { concurrency, execArgv = SPEED_NODE_FLAGS, callgrindOutFile } = setup;
  const { SIGNING_SECRET_ARN, ...unsigned } = bench.relayEnv;
  const start = (side: Side): Promise<ClientProcess> => {
    const signed = side.unsigned !== true && SIGNING_SECRET_ARN !== undefined;
    const env = {
      ...(signed ? bench.relayEnv : unsigned),
      MAX_CONCURRENCY: String(concurrency),
      BENCH_HANDLER_FILE: bench.bundle.handlerFile,
      BENCH_HANDLER_EXPORT: bench.bundle.handlerExport,
      ...(signed ? { BENCH_SIGNING_SECRET: bench.signingSecret } : {}),
      ...(side.signInLoop === true ? { BENCH_SIGN_IN_LOOP: '1' } : {}),
      ...setup.env,
    };
    const options = { kind: side.kind, cwd: bench.bundle.bundleDir, env };
    if (callgrindOutFile !== undefined) {
      const callgrind = ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${callgrindOutFile}`, childNode(), ...execArgv];
      return startClientProcess(bench.compiled, { ...options, execPath: 'valgrind', execArgv: callgrind, pinned: false });
    }
    const profileDir = join(SCRATCH_DIR, 'profiles', `${side.name.replace(/[^a-z0-9]+/gi, '-')}-c${concurrency}`);
    const profile = process.argv.includes('--profile') && side.kind === 'relay' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    return startClientProcess(bench.compiled, { ...options, execPath: childNode(), execArgv: [...execArgv, ...profile] });
  };
  const clients: ClientProcess[] = [];
  try {
    for (const side of sides) clients.push(await start(side));
    return await use(clients as { -readonly [K in keyof Sides]: ClientProcess });
  } finally {
    await Promise.all(clients.map((client) => client.stop()));
  }
}

/** Writes `contents` to `name` in the scratch directory; the file's path. */
export function scratchFile(name: string, contents: string): string {
  mkdirSync(SCRATCH_DIR, { recursive: true });
  const file = join(SCRATCH_DIR, name);
  writeFileSync(file, contents);
  return file;
}

const eventFiles = new Map<number, string>();
/** A file with the event of `count` synthetic records as JSON (written once per size). */
export function eventFile(count: number): string {
  const file = eventFiles.get(count) ?? scratchFile(`event-${count}.json`, eventJson(count));
  eventFiles.set(count, file);
  return file;
}

/** One all-200 invocation of `count` synthetic records, with the webhook's and SQS's view of it. */
export async function throughputRun(bench: Bench, client: ClientProcess, count: number) {
  await bench.webhook.reset('ok');
  bench.proxy.reset();
  const outputBefore = client.outputBytes();
  const result = await client.run({ eventFile: eventFile(count), timeoutMs: DEADLINE_MS });
  const hook = await bench.webhook.stats();
  return {
    recordsPerSecond: (result.records / result.wallMs) * 1000,
    cpuMicrosPerRecord: result.cpuMicros / result.records,
    /** Share of one core the client process used (may exceed 1: GC and libuv threads). */
    clientCores: result.cpuMicros / 1000 / result.wallMs,
    /** Share of one core the webhook process used: well under 1 means the webhook was not the limit. */
    webhookCores: hook.cpuMicros / 1000 / result.wallMs,
    /** TCP connections the webhook accepted during the run (after the warm-up). */
    newConnections: hook.connections,
    failures: result.failures + Math.abs(hook.requests - count),
    /** SQS API calls during the run (all-2xx batches should make none). */
    sqsCalls: Object.values(bench.proxy.counts()).reduce((sum, calls) => sum + calls, 0),
    /** Bytes the process wrote to stdout/stderr during the run (logs and EMF metrics). */
    outputBytes: client.outputBytes() - outputBefore,
  };
}

/** Runs the warm-up invocations of every client, in turn. */
export async function warmUp(bench: Bench, clients: readonly ClientProcess[]): Promise<void> {
  for (let run = 0; run < WARM_UP_RUNS; run += 1) for (const client of clients) await throughputRun(bench, client, WARM_UP);
}

/**
 * The sides' order in round `round`: pairs (0, 1), (2, 3), … back to back, which of a pair goes first
 * alternating and the pairs' order rotating, so neither drift nor position favours a side.
 */
export function roundOrder(sideCount: number, round: number): number[] {
  const pairs = Math.ceil(sideCount / 2);
  return Array.from({ length: pairs }, (_, step) => {
    const first = ((round + step) % pairs) * 2;
    const pair = first + 1 < sideCount ? [first, first + 1] : [first];
    return round % 2 === 0 ? pair : pair.reverse();
  }).flat();
}
