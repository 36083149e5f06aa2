/**
 * The orchestrator's side of the child processes: compiling them (esbuild, so they run in plain `node`), starting them,
 * calling the functions they serve (protocol.ts) and stopping them. Every child also exits by itself when the orchestrator goes away.
 */
import { fork, type ForkOptions, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { PROJECT_ROOT } from '../testkit/synth';
import type { Answer, Call, ClientApi, ClientKind, RunRequest, WebhookApi, WebhookMode } from './protocol';

/** Where compiled children and scratch files go (git-ignored). */
export const SCRATCH_DIR = join(PROJECT_ROOT, '.bench-tmp');

/** The compiled children's files. */
export type CompiledChildren = Awaited<ReturnType<typeof compileChildren>>;

/** Compiles the child entry points; packages stay external (resolved from the project's node_modules). */
export async function compileChildren() {
  const entry = (name: string): string => join(PROJECT_ROOT, 'bench', `${name}-process.ts`);
  await build({
    entryPoints: { webhook: entry('webhook'), client: entry('client') },
    outdir: SCRATCH_DIR,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'silent',
  });
  return { webhook: join(SCRATCH_DIR, 'webhook.mjs'), client: join(SCRATCH_DIR, 'client.mjs') };
}

/**
 * The CPU each kind of child is held to, when the machine has two or more and `taskset` exists: every client on the first, the
 * webhook on the last, so each side of a comparison has a CPU of its own, as a function of up to 1,769 MB does in Lambda.
 */
export const CPU_PINNING: { readonly client: number; readonly webhook: number } | undefined =
  availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0 ? { client: 0, webhook: availableParallelism() - 1 } : undefined;

/** Node.js flags of client processes measured for speed: held to one CPU, V8's parallel scavenger slowed random processes. */
export const SPEED_NODE_FLAGS: readonly string[] = CPU_PINNING === undefined ? [] : ['--single-threaded-gc'];

/**
 * Forks `file`, holds it to `cpu` and waits up to a minute for it to be ready. Its functions are called one at a time; a call
 * rejects when the function throws, when the child exits first, or after `timeoutMs` (the child is then killed). `stop` asks the
 * child to exit (so a `--cpu-prof` profile gets written), then insists.
 */
async function startChild<Api extends { readonly [K in keyof Api]: (...args: never[]) => Promise<unknown> }, Ready = undefined>(
  what: string,
  file: string,
  { cpu, ...options }: ForkOptions & { readonly cpu: number | undefined },
) {
  const child = fork(file, [], { ...options, serialization: 'advanced' });
  let outputBytes = 0;
  for (const stream of [child.stdout, child.stderr]) stream?.on('data', (chunk: Buffer) => (outputBytes += chunk.length));
  let timedOut: string | undefined;
  const exit = once(child, 'exit');
  const exited = exit.then(([code, signal]) =>
    Promise.reject(new Error(`${what}: ${timedOut ?? `exited (code ${code}, signal ${signal})`}`)),
  );
  exited.catch(() => undefined); // an error only for a call waiting on it
  let previous: Promise<unknown> = Promise.resolve();
  /** Sends `call` (none: the start) once the previous answer is in, and waits for its answer. */
  const exchange = (label: string, call: Call | undefined, timeoutMs: number): Promise<unknown> => {
    const answered = previous.then(async () => {
      const timer = setTimeout(() => {
        timedOut = `no answer to ${label} within ${timeoutMs} ms`;
        child.kill('SIGKILL');
      }, timeoutMs);
      const next = Promise.race([once(child, 'message'), exited]).finally(() => clearTimeout(timer));
      if (call !== undefined && child.connected) child.send(call);
      const [answer] = (await next) as [Answer];
      if ('error' in answer) throw new Error(`${what} ${label}: ${answer.error}`);
      return answer.value;
    });
    previous = answered.catch(() => undefined);
    return answered;
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    if (child.connected) child.disconnect();
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
    const ready = (await exchange('start', undefined, 60_000)) as Ready;
    const call = <K extends keyof Api & string>(method: K, args: Parameters<Api[K]>, timeoutMs: number) =>
      exchange(method, { method, args }, timeoutMs) as ReturnType<Api[K]>;
    return { pid: child.pid ?? 0, ready, outputBytes: () => outputBytes, call, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The webhook process (webhook-process.ts). */
export type WebhookProcess = Awaited<ReturnType<typeof startWebhookProcess>>;

/** Starts the webhook, on its CPU. */
export async function startWebhookProcess(compiled: CompiledChildren, execPath = process.execPath) {
  const child = await startChild<WebhookApi, { port: number }>('webhook', compiled.webhook, {
    execPath,
    execArgv: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    cpu: CPU_PINNING?.webhook,
  });
  return {
    url: `http://127.0.0.1:${child.ready.port}/hook`,
    /** Clears counters, sets what it answers and how late (`delayMs`), and (`stampSize` > 0) records arrival times by record index. */
    reset: (mode: WebhookMode, { stampSize = 0, delayMs = 0 } = {}) => child.call('reset', [mode, stampSize, delayMs], 30_000),
    stats: () => child.call('stats', [], 30_000),
    stop: child.stop,
  };
}

/**
 * Options of {@link startClientProcess}: `env`, the whole environment (the function's for the relay, plus `BENCH_*`); `execPath`, the
 * Node.js binary (default: this one); `execArgv`, extra node flags (e.g. `--cpu-prof`); `pinned` (default), held to the clients' CPU.
 */
export interface ClientOptions {
  readonly kind: ClientKind;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly execPath?: string;
  readonly execArgv?: readonly string[];
  readonly pinned?: boolean;
}

/** A client process (client-process.ts), ready (the relay's bundle imported); `outputBytes`: what it wrote to stdout and stderr so far. */
export type ClientProcess = Awaited<ReturnType<typeof startClientProcess>>;

/** Starts a client of `options.kind`. */
export async function startClientProcess(compiled: CompiledChildren, options: ClientOptions) {
  const { kind, env, execArgv = [], pinned = true, ...forkOptions } = options;
  const child = await startChild<ClientApi>(kind, compiled.client, {
    ...forkOptions,
    env: { ...env, BENCH_KIND: kind },
    execArgv: [...execArgv],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    cpu: pinned ? CPU_PINNING?.client : undefined,
  });
  const { pid, outputBytes, stop } = child;
  return { pid, outputBytes, stop, run: (request: RunRequest, timeoutMs = 120_000) => child.call('run', [request], timeoutMs) };
}
