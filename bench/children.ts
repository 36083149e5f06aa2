/**
 * The orchestrator's side of the child processes: compiling them (esbuild, into `.bench-tmp/`, so
 * they run in plain `node` with no TypeScript loader), starting them, calling the functions they
 * serve (protocol.ts), and stopping them. Every child also exits by itself when the orchestrator goes away.
 */
import { type ChildProcess, fork, type ForkOptions, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { PROJECT_ROOT } from '../testkit/synth';
import type {
  Answer,
  Call,
  ClientApi,
  ClientKind,
  ClientReady,
  RunRequest,
  RunResult,
  WebhookApi,
  WebhookMode,
  WebhookStats,
} from './protocol';

/** Where compiled children and scratch files go (git-ignored). */
export const SCRATCH_DIR = join(PROJECT_ROOT, '.bench-tmp');

export interface CompiledChildren {
  readonly webhook: string;
  readonly client: string;
}

/** Compiles the child entry points; packages stay external (resolved from the project's node_modules). */
export async function compileChildren(): Promise<CompiledChildren> {
  mkdirSync(SCRATCH_DIR, { recursive: true });
  const compile = async (name: string): Promise<string> => {
    const outfile = join(SCRATCH_DIR, `${name}.mjs`);
    const entryPoints = [join(PROJECT_ROOT, 'bench', `${name}-process.ts`)];
    await build({
      entryPoints,
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      logLevel: 'silent',
    });
    return outfile;
  };
  return { webhook: await compile('webhook'), client: await compile('client') };
}

/**
 * The CPU each kind of child is held to, when the machine has two or more and `taskset` exists:
 * every client on the first, the webhook on the last. Left to the scheduler, a client sharing a CPU
 * with the webhook for its whole life runs slower than one that does not, and each side of a
 * comparison lives in one process; held, each has a CPU of its own, as a function of up to 1,769 MB does in Lambda.
 */
export const CPU_PINNING: { readonly client: number; readonly webhook: number } | undefined =
  availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0 ? { client: 0, webhook: availableParallelism() - 1 } : undefined;

/**
 * Node.js flags of client processes measured for speed (memory is measured as deployed): held to one
 * CPU with its helper threads, V8's parallel scavenger slowed processes picked at random (BENCHMARKS.md's method).
 */
export const SPEED_NODE_FLAGS: readonly string[] = CPU_PINNING === undefined ? [] : ['--single-threaded-gc'];

type Functions<Api> = { readonly [K in keyof Api]: (...args: never[]) => Promise<unknown> };

/** A child serving `Api` (protocol.ts): what it was ready with, and its functions, called one at a time. */
interface Child<Api extends Functions<Api>, Ready> {
  readonly process: ChildProcess;
  readonly ready: Ready;
  /** Rejects when the function throws, when the child exits first, or after `timeoutMs` (the child is then killed). */
  call<K extends keyof Api & string>(method: K, args: Parameters<Api[K]>, timeoutMs: number): ReturnType<Api[K]>;
  /** Asks the child to exit (so a `--cpu-prof` profile gets written), then insists. */
  stop(): Promise<void>;
}

/** Forks `file`, holds it to `cpu`, hands its output (when piped) to `onOutput`, and waits up to a minute for it to be ready. */
async function startChild<Api extends Functions<Api>, Ready>(
  what: string,
  file: string,
  options: ForkOptions & { readonly cpu: number | undefined; readonly onOutput?: (chunk: Buffer) => void },
): Promise<Child<Api, Ready>> {
  const { cpu, onOutput, ...forkOptions } = options;
  const child = fork(file, [], { ...forkOptions, serialization: 'advanced' });
  if (onOutput !== undefined) for (const stream of [child.stdout, child.stderr]) stream?.on('data', onOutput);
  let timedOut: string | undefined;
  const exit = once(child, 'exit');
  const exited = exit.then(([code, signal]) =>
    Promise.reject(new Error(`${what}: ${timedOut ?? `exited (code ${code}, signal ${signal})`}`)),
  );
  exited.catch(() => undefined); // an error only for a call waiting on it
  const nextAnswer = async (label: string, timeoutMs: number): Promise<unknown> => {
    const timer = setTimeout(() => {
      timedOut = `no answer to ${label} within ${timeoutMs} ms`;
      child.kill('SIGKILL');
    }, timeoutMs);
    try {
      const [answer] = (await Promise.race([once(child, 'message'), exited])) as [Answer];
      if ('error' in answer) throw new Error(`${what} ${label}: ${answer.error}`);
      return answer.value;
    } finally {
      clearTimeout(timer);
    }
  };
  let previous: Promise<unknown> = Promise.resolve();
  const call = <K extends keyof Api & string>(method: K, args: Parameters<Api[K]>, timeoutMs: number): ReturnType<Api[K]> => {
    const answer = previous.then(() => {
      const next = nextAnswer(method, timeoutMs);
      if (child.connected) child.send({ method, args } satisfies Call);
      return next;
    });
    previous = answer.catch(() => undefined);
    return answer as ReturnType<Api[K]>;
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    if (child.connected) child.send('exit' satisfies Call);
    const term = setTimeout(() => child.kill('SIGTERM'), 5_000);
    const kill = setTimeout(() => child.kill('SIGKILL'), 8_000);
    await exit.catch(() => undefined);
    clearTimeout(term);
    clearTimeout(kill);
  };
  try {
    if (cpu !== undefined && child.pid !== undefined) {
      const taskset = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(child.pid)], { stdio: 'ignore' });
      if (taskset.status !== 0) throw new Error(`taskset could not hold ${what} (process ${child.pid}) to CPU ${cpu}`);
    }
    return { process: child, ready: (await nextAnswer('start', 60_000)) as Ready, call, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The webhook process. */
export interface WebhookProcess {
  readonly url: string;
  /** Clears counters, sets what it answers and how late (`delayMs`), and (`stampSize` > 0) records arrival times by record index. */
  reset(mode: WebhookMode, options?: { stampSize?: number; delayMs?: number }): Promise<void>;
  stats(): Promise<WebhookStats>;
  stop(): Promise<void>;
}

export async function startWebhookProcess(compiled: CompiledChildren, execPath = process.execPath): Promise<WebhookProcess> {
  const child = await startChild<WebhookApi, { port: number }>('webhook', compiled.webhook, {
    execPath,
    execArgv: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    cpu: CPU_PINNING?.webhook,
  });
  return {
    url: `http://127.0.0.1:${child.ready.port}/hook`,
    reset: (mode, { stampSize = 0, delayMs = 0 } = {}) => child.call('reset', [mode, stampSize, delayMs], 30_000),
    stats: () => child.call('stats', [], 30_000),
    stop: child.stop,
  };
}

/** Options of {@link startClientProcess}. */
export interface ClientOptions {
  readonly kind: ClientKind;
  /** The full environment: the function's (template) environment for the relay, plus `BENCH_*`. */
  readonly env: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** The Node.js binary. @default this process's */
  readonly execPath?: string;
  /** Extra node flags (e.g. `--cpu-prof` to profile a client). */
  readonly execArgv?: readonly string[];
  /** Hold the process to the clients' CPU ({@link CPU_PINNING}). @default true */
  readonly pinned?: boolean;
}

/** A client process, initialised (the relay's bundle imported). */
export interface ClientProcess {
  readonly pid: number;
  /** The client's initialisation in the child (the handler module's import), ms. */
  readonly importMs: number;
  /** `maxRSS` right after initialisation, KiB. */
  readonly initRssKiB: number;
  /** What the child wrote to stdout and stderr so far (the relay's logs), and its bytes. */
  output(): string;
  outputBytes(): number;
  run(request: RunRequest, timeoutMs?: number): Promise<RunResult>;
  stop(): Promise<void>;
}

export async function startClientProcess(compiled: CompiledChildren, options: ClientOptions): Promise<ClientProcess> {
  const { kind, env, cwd, execPath = process.execPath, execArgv = [], pinned = true } = options;
  let output = '';
  let bytes = 0;
  const child = await startChild<ClientApi, ClientReady>(kind, compiled.client, {
    execPath,
    cwd,
    env: { ...env, BENCH_KIND: kind },
    execArgv: [...execArgv],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    cpu: pinned ? CPU_PINNING?.client : undefined,
    onOutput: (chunk) => {
      output += chunk.toString();
      bytes += chunk.length;
    },
  });
  return {
    pid: child.process.pid ?? 0,
    importMs: child.ready.importMs,
    initRssKiB: child.ready.maxRssKiB,
    output: () => output,
    outputBytes: () => bytes,
    run: (request, timeoutMs = 120_000) => child.call('run', [request], timeoutMs),
    stop: child.stop,
  };
}
