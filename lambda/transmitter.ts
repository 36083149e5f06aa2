/**
 * The transmitter: one POST to the webhook, bounded in time and in memory. It never follows a
 * redirect, never buffers more than a small excerpt of the response body, and turns every way a
 * request can go wrong into a value rather than an exception.
 *
 * Kept-alive connections and a frozen container: Lambda freezes the process between
 * invocations, and meanwhile the webhook's server or load balancer (or a NAT on the way) drops
 * idle connections. The transmitter therefore never reuses a connection idle longer than
 * {@link IDLE_CONNECTION_MAX_MS} (or than the server's `Keep-Alive: timeout=` hint allows),
 * checked when a connection is taken, since a frozen process's timers do not fire; and a request
 * that fails on a reused connection before any byte of the response arrived is sent once more,
 * on a new connection.
 */
import type { Agent as HttpAgent, ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import type { Socket } from 'node:net';
import { connectingAgent, type Connector } from './connector';
import { RATE_LIMIT_HEADER_NAMES, type RateLimitHeaders } from './rate-limit-headers';
import { withoutSecrets } from './scrub';
import { connectionErrorText } from './tls-material';

/** Bytes of a response body kept for logs and dead-letter attributes. */
export const RESPONSE_EXCERPT_BYTES = 512;
/**
 * Bytes of a response body read at most. Reading a small body to its end lets the connection be
 * reused; past this the socket is dropped instead, so a webhook answering 1 GB costs nothing.
 */
export const RESPONSE_READ_LIMIT_BYTES = 64 * 1024;
/**
 * Longest time, ms, a kept-alive connection may sit idle and still be reused. Below the
 * keep-alive timeouts servers commonly use (Node.js 5 s, Apache 5 s, ALB 60 s, nginx 75 s), so
 * the relay stops using a connection before the server may close it. A server's shorter
 * `Keep-Alive: timeout=` hint lowers it, less a second, as Node.js's own agent does.
 */
export const IDLE_CONNECTION_MAX_MS = 4_000;

/** The webhook answered with a status line. */
export interface WebhookResponse {
  readonly kind: 'response';
  readonly status: number;
  /** The raw `Retry-After` header, if any. */
  readonly retryAfter: string | undefined;
  /** The rate-limit headers (`RateLimit`, `X-RateLimit-Remaining`, …: see rate-limit-headers.ts) by lower-case name, if any. */
  readonly rateLimit?: RateLimitHeaders;
  /** The start of the response body, as text, for logs. */
  readonly excerpt: string;
  readonly latencyMs: number;
}

/**
 * Why no usable response came back. All of these are retried; all but `invalid-request` (the
 * request could not even be written: our side's problem) also suggest the webhook is down.
 */
export type TransportErrorKind = 'timeout' | 'connection' | 'dns' | 'protocol' | 'invalid-request';

/** The request failed before a complete response arrived. */
export interface TransportFailure {
  readonly kind: 'transport-error';
  readonly error: TransportErrorKind;
  readonly message: string;
  readonly latencyMs: number;
}

/** What one delivery attempt came to. */
export type WebhookResult = WebhookResponse | TransportFailure;

class RequestTimeout extends Error {
  constructor(timeoutMs: number) {
    super(`no complete response within ${timeoutMs} ms`);
  }
}

/** Node.js's margin under a server's `Keep-Alive: timeout=` hint (its agent's `agentKeepAliveTimeoutBuffer` default). */
const KEEP_ALIVE_HINT_MARGIN_MS = 1_000;
/** How much earlier than due the sweep may close an idle connection, ms, to close a burst of them at once. */
const SWEEP_SLACK_MS = 50;

// Per-socket bookkeeping, on the pooled sockets themselves: set once per response, no allocation.
/** `performance.now()` when the socket last went idle in the pool. */
const IDLE_SINCE = Symbol('idleSince');
/** `performance.now()` from which the idle socket must not be reused. */
const STALE_AT = Symbol('staleAt');
/** `socket.bytesRead` when it went idle: more since means the server sent something. */
const BYTES_READ_WHEN_IDLE = Symbol('bytesReadWhenIdle');
/** The server's `Keep-Alive: timeout=` hint, less the margin, ms; set only when a response carried one. */
const HINTED_IDLE_MS = Symbol('hintedIdleMs');

interface PooledSocket extends Socket {
  [IDLE_SINCE]: number;
  [STALE_AT]: number;
  [BYTES_READ_WHEN_IDLE]: number;
  [HINTED_IDLE_MS]?: number;
}

/** Swallows the errors of a request abandoned for a retry (one function for all, not one per request). */
function ignore(): void {}

/**
 * True when `error` on `request` is the server having dropped an idle kept-alive connection: the
 * connection was reused, it was reset or hung up, and not one byte came back since it went idle.
 * The server then did not answer, so sending again is safe (it is also what Node.js's docs
 * suggest for `request.reusedSocket`).
 */
function isStaleConnectionFailure(request: ClientRequest, error: unknown): boolean {
  if (!request.reusedSocket) return false;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  // "socket hang up" has the code ECONNRESET; EPIPE is the request written to a closed socket.
  if (code !== 'ECONNRESET' && code !== 'EPIPE') return false;
  const socket = request.socket as PooledSocket | null;
  return socket !== null && socket.bytesRead === socket[BYTES_READ_WHEN_IDLE];
}

/**
 * Notes a `Keep-Alive: timeout=<seconds>` hint on the socket, less Node.js's margin. Read by hand
 * rather than with a regular expression: this runs for every response of a server that sends it.
 */
function noteKeepAliveHint(socket: PooledSocket | null, value: string | undefined): void {
  if (socket === null || value === undefined || !value.startsWith('timeout=')) return;
  let seconds = 0;
  let i = 8;
  for (; i < value.length; i += 1) {
    const digit = value.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) break;
    seconds = seconds * 10 + digit;
  }
  if (i > 8) socket[HINTED_IDLE_MS] = seconds * 1000 - KEEP_ALIVE_HINT_MARGIN_MS;
}

function classifyError(error: unknown): { error: TransportErrorKind; message: string } {
  if (error instanceof RequestTimeout) return { error: 'timeout', message: error.message };
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL') return { error: 'dns', message };
  if (code.startsWith('HPE_') || code === 'ERR_INVALID_HTTP_RESPONSE') return { error: 'protocol', message };
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return { error: 'timeout', message };
  // The relay's own certificate could not be read (connector.ts): nothing was sent, and the webhook is not to blame.
  if (code === 'ERR_CLIENT_CERTIFICATE_UNAVAILABLE') return { error: 'invalid-request', message };
  return { error: 'connection', message: connectionErrorText(error) };
}

/**
 * One decoder for every excerpt: creating a `TextDecoder` costs more than decoding 512 bytes.
 * Each use ends with a flush, so no state carries over from one response to the next.
 */
const excerptDecoder = new TextDecoder('utf-8');

/**
 * The start of a response body as text: its first {@link RESPONSE_EXCERPT_BYTES} bytes decoded as
 * UTF-8, a character cut in half at the limit dropped rather than turned into U+FFFD.
 */
function excerptOf(chunks: readonly Buffer[]): string {
  if (chunks.length === 0) return '';
  const bytes = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).subarray(0, RESPONSE_EXCERPT_BYTES);
  const text = excerptDecoder.decode(bytes, { stream: true });
  excerptDecoder.decode(); // drop the cut character and reset for the next response
  return text;
}

/** The headers of an answer the relay reads. */
interface AnswerHeaders {
  readonly retryAfter: string | undefined;
  readonly rateLimit: RateLimitHeaders | undefined;
}

/** Most answers carry neither: one object for all of them. */
const NO_ANSWER_HEADERS: AnswerHeaders = Object.freeze({ retryAfter: undefined, rateLimit: undefined });

/**
 * The `Retry-After` header as `response.headers['retry-after']` would give it (the first one), and the rate-limit headers (the
 * first of each name), read from the raw list: asking for `headers` builds an object of every header, per response. In the same
 * pass, a `Keep-Alive` hint is noted on the connection (see {@link noteKeepAliveHint}). A header name is compared only when its
 * length and first letter could be one of theirs, so the common headers cost a comparison or two each.
 */
function answerHeadersOf(response: IncomingMessage): AnswerHeaders {
  const rawHeaders = response.rawHeaders;
  let retryAfter: string | undefined;
  let rateLimit: Record<string, string> | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    const length = name.length;
    if (length === 11) {
      if (retryAfter === undefined && name.toLowerCase() === 'retry-after') retryAfter = rawHeaders[i + 1];
    } else if (length === 10) {
      if (name.toLowerCase() === 'keep-alive') noteKeepAliveHint(response.socket as PooledSocket | null, rawHeaders[i + 1]);
    } else if (length >= 9 && length <= 21 && ((name.charCodeAt(0) | 0x20) === 0x72 || (name.charCodeAt(0) | 0x20) === 0x78)) {
      // r or x: RateLimit…, X-RateLimit-…
      const lower = name.toLowerCase();
      if (RATE_LIMIT_HEADER_NAMES.has(lower)) {
        rateLimit ??= {};
        rateLimit[lower] ??= rawHeaders[i + 1] as string;
      }
    }
  }
  return retryAfter === undefined && rateLimit === undefined ? NO_ANSWER_HEADERS : { retryAfter, rateLimit };
}

/**
 * Reads a response to its end, or to {@link RESPONSE_READ_LIMIT_BYTES} (then `drop` closes the connection rather than
 * drain the rest), and calls `finish` with the answer; `fail` with the error of a connection closed mid-body.
 */
function readAnswer(
  response: IncomingMessage,
  elapsed: () => number,
  finish: (result: WebhookResult) => void,
  fail: (error: unknown) => void,
  drop: () => void,
): void {
  const chunks: Buffer[] = [];
  let read = 0;
  const { retryAfter, rateLimit } = answerHeadersOf(response);
  const complete = (): void => {
    const status = response.statusCode ?? 0;
    finish({ kind: 'response', status, retryAfter, rateLimit, excerpt: excerptOf(chunks), latencyMs: elapsed() });
  };
  response.on('data', (chunk: Buffer) => {
    if (read < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
    read += chunk.length;
    if (read > RESPONSE_READ_LIMIT_BYTES) {
      // Enough: the status is known. Drop this connection rather than drain the rest.
      complete();
      drop();
    }
  });
  response.on('end', complete);
  // A connection closed mid-body means no complete answer, whatever the status said: node:http
  // then emits 'error' (ECONNRESET, "aborted") on the response, and never 'end'.
  response.on('error', fail);
}

/** True when a raw header list (`[name, value, …]`) has a `Host` header. */
function hasHost(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') return true;
  }
  return false;
}

/** The request options of every POST to `url`, worked out once rather than from the URL per request. */
function requestOptionsOf(url: URL, agent: HttpAgent): RequestOptions {
  return {
    protocol: url.protocol,
    // As node:http's own URL handling: an IPv6 literal without its brackets.
    hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
    ...(url.port === '' ? {} : { port: Number(url.port) }),
    path: `${url.pathname}${url.search}`,
    method: 'POST',
    agent,
  };
}

/**
 * The client side of node:http or node:https, whichever `url` needs, loaded with
 * `process.getBuiltinModule` because `import` also loads Node's bundled undici at every cold start
 * (measured: docs/performance.md, "node:http, loaded with `process.getBuiltinModule`").
 *
 * The agent stamps each connection it keeps as it goes idle (`keepSocketAlive`, a documented
 * override): since when, until when it may be reused, and how many bytes it had read.
 * @param idleMaxMs longest idle time of a reused connection
 * @param onIdle told of each connection put in the pool
 * @param connector opens new connections (a proxy, a client certificate); `undefined`: the agent's own way
 */
function httpClientFor(
  url: URL,
  maxSockets: number,
  idleMaxMs: number,
  onIdle: (staleAt: number) => void,
  connector: Connector | undefined,
): { agent: HttpAgent; send: (options: RequestOptions) => ClientRequest } {
  // No agent `timeout`: it costs a closure per request (docs/performance.md, "A timer per request, and no agent `timeout`").
  const options = { keepAlive: true, maxSockets, scheduling: 'lifo' as const };
  // A mixin (node:https's Agent extends node:http's; each needs its own subclass), hence the any[].
  // biome-ignore lint/suspicious/noExplicitAny: a mixin's base constructor must take any arguments (TypeScript's rule for mixins)
  const stamping = <A extends new (...args: any[]) => HttpAgent>(Base: A): A =>
    class extends Base {
      override keepSocketAlive(socket: Socket): boolean {
        // node:http returns false when a server's hint is too short to reuse the connection at all.
        const kept: unknown = super.keepSocketAlive(socket);
        if (kept === false) return false;
        const pooled = socket as PooledSocket;
        const now = performance.now();
        const hinted = pooled[HINTED_IDLE_MS];
        pooled[IDLE_SINCE] = now;
        pooled[STALE_AT] = now + (hinted !== undefined && hinted < idleMaxMs ? hinted : idleMaxMs);
        pooled[BYTES_READ_WHEN_IDLE] = socket.bytesRead;
        onIdle(pooled[STALE_AT]);
        return true;
      }
    };
  // biome-ignore lint/suspicious/noExplicitAny: as above
  const connecting = <A extends new (...args: any[]) => HttpAgent>(Base: A): A =>
    connector === undefined ? Base : connectingAgent(Base, connector);
  if (url.protocol === 'https:') {
    const https = process.getBuiltinModule('node:https');
    return { agent: new (stamping(connecting(https.Agent)))(options), send: https.request };
  }
  const http = process.getBuiltinModule('node:http');
  return { agent: new (stamping(connecting(http.Agent)))(options), send: http.request };
}

/** Options of {@link WebhookTransmitter} beyond the URL and pool size. */
export interface TransmitterOptions {
  /** Longest idle time, ms, of a connection still reused. @default {@link IDLE_CONNECTION_MAX_MS} */
  readonly idleConnectionMaxMs?: number;
  /**
   * Opens new connections: through a forward proxy, with a client certificate (connector.ts). The
   * pool, the idle bounds and the timeouts are the same either way. @default direct connections
   */
  readonly connector?: Connector;
  /** Texts never to pass on from an answer: its excerpt has each cut out (the URL's own secrets, see url-rules.ts). */
  readonly hiddenInAnswers?: readonly string[];
}

/**
 * POSTs to one webhook URL over a pool of kept-alive connections.
 *
 * A connection idle past its bound is never reused (see {@link IDLE_CONNECTION_MAX_MS}), and
 * idle ones are closed once past it while the process runs. A request that fails on a reused
 * connection before any byte of the response arrived (`ECONNRESET`, "socket hang up", `EPIPE`:
 * the server or a NAT dropped the idle connection) is sent once more on a new connection, within
 * the same timeout; the caller sees only the second attempt's result, so such failures never
 * count toward the circuit breaker. In the rare case that a server took the request in and then
 * reset the connection without answering at all, the webhook receives it twice: delivery is
 * at least once in any case (a webhook must deduplicate on `webhook-id`).
 */
export class WebhookTransmitter {
  private readonly agent: HttpAgent;
  private readonly send: (options: RequestOptions) => ClientRequest;
  private readonly options: RequestOptions;
  /** The request options of a retry: a one-off connection, never one from the pool. */
  private readonly freshOptions: RequestOptions;
  /** The `Host` header for a header list without one: given a list, node:http leaves it to us. */
  private readonly host: string;
  private readonly hidden: readonly string[];
  /** The agent's key for this webhook's connections (`agent.getName`), known once one went idle. */
  private poolName: string | undefined;
  /** Closes idle connections past their bound while the process runs (timers do not fire while frozen). */
  private sweepTimer: NodeJS.Timeout | undefined;
  /** When {@link sweepTimer} fires, `performance.now()` time. */
  private sweepAt = Infinity;

  /**
   * @param url the webhook
   * @param maxSockets connections kept to it; the relay's concurrency, so no request waits for a socket
   */
  constructor(url: URL, maxSockets: number, options: TransmitterOptions = {}) {
    const client = httpClientFor(
      url,
      maxSockets,
      options.idleConnectionMaxMs ?? IDLE_CONNECTION_MAX_MS,
      (staleAt) => this.sweepBy(staleAt),
      options.connector,
    );
    this.agent = client.agent;
    this.send = client.send;
    this.options = requestOptionsOf(url, this.agent);
    this.freshOptions = { ...this.options, agent: false };
    this.host = url.host;
    this.hidden = options.hiddenInAnswers ?? [];
    // The pool's key as the agent itself computes it (for https it depends on the TLS options
    // and the server name), learnt from the first connection it frees: one listener, once.
    this.agent.once('free', (_socket: Socket, freed: RequestOptions) => {
      this.poolName = this.agent.getName(freed);
    });
  }

  /**
   * POSTs `body` with `headers`. Resolves (never rejects) once the response is complete or has
   * been read up to {@link RESPONSE_READ_LIMIT_BYTES}, or once the attempt failed.
   * @param headers in node:http's raw form, `[name, value, name, value, …]`; `Host` is added when missing. Not changed.
   * @param timeoutMs bound on the whole exchange, from connect to the end of the response, a retry on a new connection included
   */
  post(headers: readonly string[], body: Buffer, timeoutMs: number): Promise<WebhookResult> {
    const started = performance.now();
    // The agent hands out the newest idle connection (LIFO): too old, or closing, drop the idle ones first. Checked
    // here because after a freeze the sweep timer has not run (docs/performance.md, "A LIFO pool, checked before each request").
    const next = this.newestIdle();
    if (next !== undefined && (next[STALE_AT] <= started || !next.writable)) {
      const dropped = this.dropIdle((socket) => socket[STALE_AT] <= started || !socket.writable);
      return dropped.then(() => this.exchange(headers, body, timeoutMs, started, timeoutMs - (performance.now() - started)));
    }
    return this.exchange(headers, body, timeoutMs, started, timeoutMs);
  }

  /**
   * One exchange, and its one retry on a new connection when the first fails on a stale one.
   * @param delayMs the time left of `timeoutMs` (less than it when idle connections were dropped first)
   */
  private exchange(headers: readonly string[], body: Buffer, timeoutMs: number, started: number, delayMs: number): Promise<WebhookResult> {
    const elapsed = (): number => performance.now() - started;
    return new Promise<WebhookResult>((resolve) => {
      let settled = false;
      let retried = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (result: WebhookResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(this.hidden.length === 0 ? result : withoutSecrets(result, this.hidden));
      };
      const fail = (error: unknown): void => {
        if (!retried && !settled && isStaleConnectionFailure(request, error)) {
          retried = true;
          const stale = request;
          stale.removeListener('error', fail);
          stale.on('error', ignore);
          // The other idle connections have been idle at least as long: likely dropped too.
          void this.dropIdle((socket) => socket[IDLE_SINCE] <= started);
          try {
            request = this.send({ ...this.freshOptions, headers: headerList });
          } catch {
            // Not expected (these headers passed once already), but this runs in an event handler.
            finish({ kind: 'transport-error', ...classifyError(error), latencyMs: elapsed() });
            return;
          }
          request.on('error', fail);
          request.on('response', onResponse);
          request.end(body);
          return;
        }
        finish({ kind: 'transport-error', ...classifyError(error), latencyMs: elapsed() });
      };
      const onResponse = (response: IncomingMessage): void => readAnswer(response, elapsed, finish, fail, () => request.destroy());
      const headerList = hasHost(headers) ? headers : [...headers, 'Host', this.host];
      let request: ClientRequest;
      try {
        // A flat header list skips node:http's per-header setHeader() bookkeeping; an illegal value still throws here
        // (docs/performance.md, "Headers as a raw list, both ways").
        request = this.send({ ...this.options, headers: headerList });
      } catch (error) {
        // Node validates headers synchronously; keep the promise's never-rejects contract.
        const message = error instanceof Error ? error.message : String(error);
        finish({ kind: 'transport-error', error: 'invalid-request', message, latencyMs: elapsed() });
        return;
      }
      // A timer per request: a shared sweep took more CPU and memory (docs/performance.md, "A timer per request,
      // and no agent `timeout`"). It bounds a retry too: it destroys whichever request is current.
      timer = setTimeout(() => request.destroy(new RequestTimeout(timeoutMs)), delayMs);
      request.on('error', fail);
      request.on('response', onResponse);
      request.end(body);
    });
  }

  /** The idle connection the agent would hand out next (its pool is LIFO), if any. */
  private newestIdle(): PooledSocket | undefined {
    if (this.poolName === undefined) return undefined;
    const idle = this.agent.freeSockets[this.poolName];
    return idle === undefined ? undefined : (idle[idle.length - 1] as PooledSocket | undefined);
  }

  /**
   * Closes the idle connections `drop` picks and resolves once they are out of the pool: the
   * agent removes a socket on its 'close', and until then could still hand it out.
   */
  private dropIdle(drop: (socket: PooledSocket) => boolean): Promise<void> {
    const idle = this.poolName === undefined ? undefined : this.agent.freeSockets[this.poolName];
    if (idle === undefined) return Promise.resolve();
    const closed: Promise<void>[] = [];
    for (const socket of [...idle] as PooledSocket[]) {
      if (!drop(socket)) continue;
      if (!socket.closed) closed.push(new Promise((resolve) => socket.once('close', () => resolve())));
      socket.destroy();
    }
    return Promise.all(closed).then(() => undefined);
  }

  /** Makes sure a sweep runs by `staleAt` (a `performance.now()` time). */
  private sweepBy(staleAt: number): void {
    if (this.sweepTimer !== undefined && this.sweepAt <= staleAt) return;
    clearTimeout(this.sweepTimer);
    this.sweepAt = staleAt;
    // unref: an idle pool never keeps the process alive.
    this.sweepTimer = setTimeout(this.sweep, Math.max(0, staleAt - performance.now())).unref();
  }

  /** Closes the idle connections past their bound, and plans the next sweep for the rest. */
  private readonly sweep = (): void => {
    this.sweepTimer = undefined;
    this.sweepAt = Infinity;
    // A few ms early rather than a timer per connection freed in the same burst.
    const now = performance.now() + SWEEP_SLACK_MS;
    void this.dropIdle((socket) => socket[STALE_AT] <= now);
    const idle = this.poolName === undefined ? undefined : this.agent.freeSockets[this.poolName];
    let next = Infinity;
    for (const socket of (idle ?? []) as PooledSocket[]) if (!socket.destroyed && socket[STALE_AT] < next) next = socket[STALE_AT];
    if (next !== Infinity) this.sweepBy(next);
  };

  /** Closes idle kept-alive connections (for tests and the local runner's shutdown). */
  close(): void {
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    this.sweepAt = Infinity;
    this.agent.destroy();
  }
}
