/**
 * What crosses between the benchmark's orchestrator and its children, the webhook
 * (`webhook-process.ts`) and the clients (`client-process.ts`): each child serves a few async
 * functions ({@link serveParent}), which the orchestrator calls (`children.ts`). Children are forked
 * with `serialization: 'advanced'`, so bigints and typed arrays cross as they are.
 */
/** What the webhook answers: `ok`, `200` to everything; `mixed`, `429` + `Retry-After` to bodies marked for retry (records.ts). */
export type WebhookMode = 'ok' | 'mixed';

export interface WebhookStats {
  readonly requests: number;
  /** TCP connections accepted since the reset (keep-alive reuse shows as few). */
  readonly connections: number;
  /** CPU the webhook used since the reset, µs (user + system). */
  readonly cpuMicros: number;
  /** Per record index: `process.hrtime.bigint()` when its request was complete at the webhook (0 if none). */
  readonly received?: BigInt64Array;
}

/** The webhook's functions; it is ready with the port it listens on. */
export interface WebhookApi {
  /** Clears the counters, sets what it answers and how late, and (`stampSize` > 0) records arrival times by record index. */
  reset(mode: WebhookMode, stampSize: number, delayMs: number): Promise<void>;
  stats(): Promise<WebhookStats>;
}

/**
 * The implementations a client process can run: `relay`, the handler from the synthesized bundle;
 * `peer`, Powertools' BatchProcessor + fetch (peer.ts); `noop`, a handler that returns at once; and
 * bare loops sending the relay's POSTs and nothing else: `bare-http` (node:http keep-alive Agent,
 * the relay's transport), `transmitter` (the relay's own WebhookTransmitter in that loop),
 * `bare-undici` (undici `Pool.request`), `bare-fetch` (global `fetch`).
 */
export type ClientKind = 'relay' | 'peer' | 'noop' | 'bare-http' | 'transmitter' | 'bare-undici' | 'bare-fetch';

/** One invocation: its event, a JSON file read once and parsed for every run (as Lambda's runtime parses every event), and its deadline. */
export interface RunRequest {
  readonly eventFile: string;
  readonly timeoutMs: number;
  /** Record when each record is started (latency runs). */
  readonly stamp?: boolean;
  /**
   * Count the invocation's instructions: the client runs under `valgrind --tool=callgrind
   * --instr-atstart=no`, and switches instrumentation on, zeroes the counters, and dumps them
   * (`callgrind_control`) around exactly the part that `wallMs` times.
   */
  readonly countInstructions?: boolean;
}

export interface RunResult {
  readonly records: number;
  /** Wall time of the invocation, ms. */
  readonly wallMs: number;
  /** CPU of the process during the invocation, µs (user + system). */
  readonly cpuMicros: number;
  /** Records the handler reported failed (`batchItemFailures`), or non-2xx for the bare clients. */
  readonly failures: number;
  /** Per record index: `process.hrtime.bigint()` when the handler started it (stamp runs). */
  readonly started?: BigInt64Array;
  /** `process.resourceUsage().maxRSS` after the run, KiB. */
  readonly maxRssKiB: number;
}

/** A client's functions; it is ready with {@link ClientReady}. */
export interface ClientApi {
  run(request: RunRequest): Promise<RunResult>;
}

export interface ClientReady {
  /** The client's initialisation (the handler module's import), ms. */
  readonly importMs: number;
  /** `maxRSS` right after initialisation, KiB. */
  readonly maxRssKiB: number;
}

/** A call from the orchestrator (one at a time), or its request that the child exit. */
export type Call = { readonly method: string; readonly args: readonly unknown[] } | 'exit';
/** The child's answer to its start (what it is ready with), then to each call in turn. */
export type Answer = { readonly value: unknown } | { readonly error: string };

const describe = (error: unknown): string => (error instanceof Error ? (error.stack ?? error.message) : String(error));
const answer = (message: Answer, then = (): void => undefined): boolean | undefined => process.send?.(message, then);

/**
 * The child's side: `start` sets the child up; what it is ready with is sent, then each call runs
 * one of `api`'s functions. The child exits when asked, when its start fails, or when the
 * orchestrator goes away (the IPC channel closes).
 */
export function serveParent<Api extends object, Ready>(start: () => Promise<{ readonly ready: Ready; readonly api: Api }>): void {
  process.on('disconnect', () => process.exit(0));
  start().then(
    ({ ready, api }) => {
      process.on('message', (call: Call) => {
        if (call === 'exit') process.exit(0);
        Promise.resolve()
          .then(() => (api as Record<string, (...args: readonly unknown[]) => Promise<unknown>>)[call.method]?.(...call.args))
          .then(
            (value) => answer({ value }),
            (error: unknown) => answer({ error: describe(error) }),
          );
      });
      answer({ value: ready });
    },
    (error: unknown) => answer({ error: describe(error) }, () => process.exit(1)),
  );
}
