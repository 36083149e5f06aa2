/**
 * What crosses between the orchestrator (children.ts) and its children, the webhook and the clients, which each serve a few async
 * functions ({@link serveParent}). Children are forked with `serialization: 'advanced'`: bigints and typed arrays cross as they are.
 */

/** What the webhook answers: `ok`, `200` to everything; `mixed`, `429` + `Retry-After` to bodies marked for retry (records.ts). */
export type WebhookMode = 'ok' | 'mixed';

/** The webhook's counts since its reset: CPU in µs (user + system); `received`, per record index, when its request was complete. */
export interface WebhookStats {
  readonly requests: number;
  /** TCP connections accepted (keep-alive reuse shows as few). */
  readonly connections: number;
  readonly cpuMicros: number;
  readonly received?: BigInt64Array;
}

/** The webhook's functions; it is ready with the port it listens on. */
export interface WebhookApi {
  reset(mode: WebhookMode, stampSize: number, delayMs: number): Promise<void>;
  stats(): Promise<WebhookStats>;
}

/**
 * What a client process runs: `relay`, the handler from the synthesized bundle; `peer`, Powertools' BatchProcessor + fetch
 * (peer.ts); `noop`, a handler that returns at once; `bare-http`, a loop sending the relay's POSTs with node:http and nothing else.
 */
export type ClientKind = 'relay' | 'peer' | 'noop' | 'bare-http';

/** One invocation: its event (a JSON file, parsed for every run as Lambda's runtime does), its deadline, and what else to record. */
export interface RunRequest {
  readonly eventFile: string;
  readonly timeoutMs: number;
  /** Record when each record is started (latency runs). */
  readonly stamp?: boolean;
  /** Count instructions (the client runs under `valgrind --tool=callgrind --instr-atstart=no`) over exactly the part `wallMs` times. */
  readonly countInstructions?: boolean;
}

/**
 * One invocation's measures: CPU of the process in µs (user + system); records the handler reported failed (non-2xx for the bare loop);
 * `started`, per record index, when the client started it (stamp runs); `maxRSS` after the run.
 */
export interface RunResult {
  readonly records: number;
  readonly wallMs: number;
  readonly cpuMicros: number;
  readonly failures: number;
  readonly started?: BigInt64Array;
  readonly maxRssKiB: number;
}

/** A client's function; it is ready with nothing. */
export interface ClientApi {
  run(request: RunRequest): Promise<RunResult>;
}

/** A call from the orchestrator (one at a time), and the child's answer to it; the child's first answer is what it is ready with. */
export type Call = { readonly method: string; readonly args: readonly unknown[] };
export type Answer = { readonly value: unknown } | { readonly error: string };

/** The child's side: answers with what it is `ready` with, then serves `api`'s functions; exits when the orchestrator disconnects. */
export function serveParent<Api extends object>(api: Api, ready: Promise<unknown>): void {
  const functions = api as Record<string, (...args: readonly unknown[]) => unknown>;
  const answer = (work: Promise<unknown>): void => {
    work.then(
      (value) => process.send?.({ value } satisfies Answer),
      (error: unknown) =>
        process.send?.({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies Answer),
    );
  };
  process.on('disconnect', () => process.exit(0));
  process.on('message', ({ method, args }: Call) => answer(Promise.resolve().then(() => functions[method]?.(...args))));
  answer(ready);
}
