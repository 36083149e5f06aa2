/**
 * Messages between the benchmark's orchestrator (`run.ts`) and its child processes: the webhook
 * (`webhook-process.ts`) and the clients (`client-process.ts`). Children are forked with
 * `serialization: 'advanced'`, so bigints and typed arrays cross as they are.
 */
import type { SQSEvent } from 'aws-lambda';

/** What the webhook answers. */
export type WebhookMode =
  /** `200` to everything, at once. */
  | 'ok'
  /** `429` + `Retry-After` to bodies marked for retry (see `records.ts`), `200` to the rest. */
  | 'mixed';

export type ToWebhook =
  | { readonly type: 'reset'; readonly id: number; readonly mode: WebhookMode; readonly stampSize: number; readonly delayMs: number }
  | { readonly type: 'stats'; readonly id: number }
  | { readonly type: 'exit' };

export interface WebhookStats {
  readonly requests: number;
  /** TCP connections accepted since the reset (keep-alive reuse shows as few). */
  readonly connections: number;
  readonly status429: number;
  /** CPU the webhook used since the reset, µs (user + system). */
  readonly cpuMicros: number;
  /** Per record index: `process.hrtime.bigint()` when its request was complete at the webhook (0 if none). */
  readonly received?: BigInt64Array;
}

export type FromWebhook =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'done'; readonly id: number; readonly stats?: WebhookStats };

/** The implementations a client process can run. */
export type ClientKind =
  /** The relay's handler, imported from the synthesized bundle. */
  | 'relay'
  /** node:http with a keep-alive Agent: nothing but the same POSTs (the relay's transport). */
  | 'bare-http'
  /** The relay's own `WebhookTransmitter` (lambda/transmitter.ts) in the bare loop: its cost over node:http. */
  | 'transmitter'
  /** undici `Pool.request`: nothing but the same POSTs. */
  | 'bare-undici'
  /** global `fetch`: nothing but the same POSTs. */
  | 'bare-fetch'
  /** Powertools `BatchProcessor` + `processPartialResponse` + global `fetch`, concurrency-limited. */
  | 'peer'
  /** A handler that returns at once: the floor (a process that only parses the event). */
  | 'noop';

export interface RunRequest {
  readonly type: 'run';
  readonly id: number;
  /**
   * A file holding the event as JSON text (synthetic records, see `records.ts`): read once and
   * parsed for every run, as Lambda's runtime parses every event it is handed. Or…
   */
  readonly eventFile?: string;
  /** …a ready event (records received from the emulator). */
  readonly event?: SQSEvent;
  /** Record when each record is started (latency runs). */
  readonly stamp?: boolean;
  /** The invocation's deadline, ms. */
  readonly timeoutMs: number;
  /**
   * Count the invocation's instructions: the client runs under `valgrind --tool=callgrind
   * --instr-atstart=no`, and switches instrumentation on, zeroes the counters, and dumps them
   * (`callgrind_control`) around exactly the part that `wallMs` times.
   */
  readonly countInstructions?: boolean;
}

export interface RunResult {
  readonly type: 'result';
  readonly id: number;
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
  readonly error?: string;
}

export type ToClient = RunRequest | { readonly type: 'exit' };

export type FromClient =
  | { readonly type: 'ready'; readonly importMs: number; readonly maxRssKiB: number }
  | { readonly type: 'init-error'; readonly error: string }
  | RunResult;
