/**
 * The orchestrator's side of the child processes: compiling them (esbuild, into `.bench-tmp/`,
 * so they run in plain `node` with no TypeScript loader), starting them, talking to them, and
 * stopping them. Every child also exits by itself when the orchestrator goes away.
 */
import { type ChildProcess, fork, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { PROJECT_ROOT } from '../testkit/synth';
import type { ClientKind, FromClient, FromWebhook, RunRequest, RunResult, ToWebhook, WebhookMode, WebhookStats } from './protocol';

/** Where compiled children and scratch files go (git-ignored). */
export const SCRATCH_DIR = join(PROJECT_ROOT, '.bench-tmp');

export interface CompiledChildren {
  readonly webhook: string;
  readonly client: string;
}

/** Compiles the child entry points; packages stay external (resolved from the project's node_modules). */
export async function compileChildren(): Promise<CompiledChildren> {
  mkdirSync(SCRATCH_DIR, { recursive: true });
  const entries = { webhook: 'webhook-process.ts', client: 'client-process.ts' } as const;
  const out: Record<string, string> = {};
  for (const [name, file] of Object.entries(entries)) {
    out[name] = join(SCRATCH_DIR, `${name}.mjs`);
    await build({
      entryPoints: [join(PROJECT_ROOT, 'bench', file)],
      outfile: out[name],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      logLevel: 'silent',
    });
  }
  return out as unknown as CompiledChildren;
}

/** Settles when `child` sends a message that `accept` takes, or rejects when the child exits first or time runs out. */
function awaitMessage<M, R>(child: ChildProcess, accept: (message: M) => R | undefined, timeoutMs: number, what: string): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    const onMessage = (raw: unknown): void => {
      const value = accept(raw as M);
      if (value === undefined) return;
      cleanUp();
      resolve(value);
    };
    const onExit = (code: number | null, signal: string | null): void => {
      cleanUp();
      reject(new Error(`${what}: the child exited (code ${code}, signal ${signal})`));
    };
    const timer = setTimeout(() => {
      cleanUp();
      reject(new Error(`${what}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const cleanUp = (): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/** Asks the child to exit (so a `--cpu-prof` profile gets written), then insists. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.connected) child.send({ type: 'exit' });
  const term = setTimeout(() => child.kill('SIGTERM'), 5_000);
  const kill = setTimeout(() => child.kill('SIGKILL'), 8_000);
  await gone;
  clearTimeout(term);
  clearTimeout(kill);
}

/** The webhook process. */
export interface WebhookProcess {
  readonly url: string;
  readonly pid: number;
  /**
   * Clears counters, sets what it answers and how late (`delayMs`), and (`stampSize` > 0)
   * records arrival times by record index.
   */
  reset(mode: WebhookMode, options?: { stampSize?: number; delayMs?: number }): Promise<void>;
  stats(): Promise<WebhookStats>;
  stop(): Promise<void>;
}

let nextId = 1;

/**
 * The CPU each kind of child is held to, when the machine has two or more and `taskset` exists:
 * every client on the first, the webhook on the last. Left to the scheduler, a client that
 * happens to share a CPU with the webhook for its whole life runs 15 % slower than one that
 * does not, and the sides of a comparison each live in one process: their ratio then measured
 * where the kernel put them. Held, every side runs on one CPU of its own, as a function of up
 * to 1,769 MB does in Lambda.
 */
export const CPU_PINNING: { readonly client: number; readonly webhook: number } | undefined =
  availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0 ? { client: 0, webhook: availableParallelism() - 1 } : undefined;

/**
 * Node.js flags of client processes measured for speed, the relay's and the baselines' alike.
 * V8's parallel scavenger hands work to helper threads; held with them to one CPU, some processes
 * (a different one each run, the same code in each) took 15–20 ms per scavenge instead of 2–4 ms,
 * which made a relay process 30 % slower than its identical twin. On the main thread alone the
 * GC costs every process the same. (Memory is measured without it, as deployed.)
 */
export const SPEED_NODE_FLAGS: readonly string[] = CPU_PINNING === undefined ? [] : ['--single-threaded-gc'];

/** Holds every thread of process `pid` to `cpu` (no-op without {@link CPU_PINNING}). */
function pin(pid: number | undefined, cpu: number | undefined): void {
  if (pid === undefined || cpu === undefined) return;
  const result = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`taskset could not hold process ${pid} to CPU ${cpu}`);
}

export async function startWebhookProcess(compiled: CompiledChildren, execPath = process.execPath): Promise<WebhookProcess> {
  const child = fork(compiled.webhook, [], {
    execPath,
    execArgv: [],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  pin(child.pid, CPU_PINNING?.webhook);
  const port = await awaitMessage<FromWebhook, number>(
    child,
    (m) => (m.type === 'listening' ? m.port : undefined),
    10_000,
    'webhook start',
  );
  const ask = <R>(message: Exclude<ToWebhook, { type: 'exit' }>, pick: (m: FromWebhook) => R | undefined): Promise<R> => {
    const answer = awaitMessage<FromWebhook, R>(
      child,
      (m) => (m.type === 'done' && m.id === message.id ? pick(m) : undefined),
      30_000,
      `webhook ${message.type}`,
    );
    child.send(message);
    return answer;
  };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    pid: child.pid ?? 0,
    reset: (mode, options = {}) =>
      ask({ type: 'reset', id: nextId++, mode, stampSize: options.stampSize ?? 0, delayMs: options.delayMs ?? 0 }, () => true).then(
        () => undefined,
      ),
    stats: () => ask({ type: 'stats', id: nextId++ }, (m) => (m.type === 'done' ? m.stats : undefined)),
    stop: () => stopChild(child),
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
  readonly kind: ClientKind;
  readonly pid: number;
  /** The handler module's import time in the child, ms (0 for the bare clients). */
  readonly importMs: number;
  /** `maxRSS` right after initialisation, KiB. */
  readonly initRssKiB: number;
  /** Lines the child wrote to stdout/stderr (the relay's logs), kept only when `keepLogs` is on. */
  readonly logs: string[];
  keepLogs: boolean;
  /** Bytes the child wrote to stdout/stderr. */
  readonly outputBytes: () => number;
  run(request: Omit<RunRequest, 'type' | 'id'>, timeoutMs?: number): Promise<RunResult>;
  stop(): Promise<void>;
}

export async function startClientProcess(compiled: CompiledChildren, options: ClientOptions): Promise<ClientProcess> {
  const env = { ...options.env, BENCH_KIND: options.kind };
  const child = fork(compiled.client, [], {
    execPath: options.execPath ?? process.execPath,
    cwd: options.cwd,
    env,
    execArgv: [...(options.execArgv ?? [])],
    serialization: 'advanced',
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  if (options.pinned !== false) pin(child.pid, CPU_PINNING?.client);
  let bytes = 0;
  let partial = '';
  const logs: string[] = [];
  const state = { keepLogs: false };
  const onOutput = (chunk: Buffer): void => {
    bytes += chunk.length;
    if (!state.keepLogs) return;
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') logs.push(line);
  };
  child.stdout?.on('data', onOutput);
  child.stderr?.on('data', onOutput);
  const ready = await awaitMessage<FromClient, { importMs: number; maxRssKiB: number } | Error>(
    child,
    (m) => (m.type === 'ready' ? m : m.type === 'init-error' ? new Error(`${options.kind} failed to initialise: ${m.error}`) : undefined),
    60_000,
    `${options.kind} start`,
  ).catch((error: Error) => error);
  if (ready instanceof Error) {
    await stopChild(child);
    throw new Error(`${ready.message}\n${logs.join('\n')}`);
  }
  const handle: ClientProcess = {
    kind: options.kind,
    pid: child.pid ?? 0,
    importMs: ready.importMs,
    initRssKiB: ready.maxRssKiB,
    logs,
    get keepLogs() {
      return state.keepLogs;
    },
    set keepLogs(value: boolean) {
      state.keepLogs = value;
    },
    outputBytes: () => bytes,
    async run(request, timeoutMs = 120_000) {
      const id = nextId++;
      const answer = awaitMessage<FromClient, RunResult>(
        child,
        (m) => (m.type === 'result' && m.id === id ? m : undefined),
        timeoutMs,
        `${options.kind} run`,
      );
      child.send({ ...request, type: 'run', id });
      const result = await answer;
      if (result.error !== undefined) throw new Error(`${options.kind} run failed: ${result.error}`);
      return result;
    },
    stop: () => stopChild(child),
  };
  return handle;
}
