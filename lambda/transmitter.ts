/**
 * The transmitter: one POST to the webhook, bounded in time and in memory. It never follows a
 * redirect, never buffers more than a small excerpt of the response body, and turns every way a
 * request can go wrong into a value rather than an exception.
 */
import type { Agent as HttpAgent, ClientRequest, IncomingMessage, RequestOptions } from 'node:http';

/** Bytes of a response body kept for logs and dead-letter attributes. */
export const RESPONSE_EXCERPT_BYTES = 512;
/**
 * Bytes of a response body read at most. Reading a small body to its end lets the connection be
 * reused; past this the socket is dropped instead, so a webhook answering 1 GB costs nothing.
 */
export const RESPONSE_READ_LIMIT_BYTES = 64 * 1024;

/** The webhook answered with a status line. */
export interface WebhookResponse {
  readonly kind: 'response';
  readonly status: number;
  /** The raw `Retry-After` header, if any. */
  readonly retryAfter: string | undefined;
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

function classifyError(error: unknown): { error: TransportErrorKind; message: string } {
  if (error instanceof RequestTimeout) return { error: 'timeout', message: error.message };
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL') return { error: 'dns', message };
  if (code.startsWith('HPE_') || code === 'ERR_INVALID_HTTP_RESPONSE') return { error: 'protocol', message };
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return { error: 'timeout', message };
  return { error: 'connection', message: code === '' ? message : `${code}: ${message}` };
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

/**
 * The `Retry-After` header as `response.headers['retry-after']` would give it (the first one),
 * read from the raw list: asking for `headers` builds an object of every header, per response.
 */
function retryAfterOf(rawHeaders: readonly string[]): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length === 11 && name.toLowerCase() === 'retry-after') return rawHeaders[i + 1];
  }
  return undefined;
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
 * `process.getBuiltinModule` rather than `import`: on Node.js 24 importing node:http as an ES
 * module builds its whole namespace, whose `WebSocket` getter loads Node's bundled undici, about
 * 40 ms of every cold start (bench: the built-ins row of the cold-start section).
 */
function httpClientFor(url: URL, maxSockets: number): { agent: HttpAgent; send: (options: RequestOptions) => ClientRequest } {
  const options = { keepAlive: true, maxSockets, scheduling: 'lifo' as const };
  if (url.protocol === 'https:') {
    const https = process.getBuiltinModule('node:https');
    return { agent: new https.Agent(options), send: https.request };
  }
  const http = process.getBuiltinModule('node:http');
  return { agent: new http.Agent(options), send: http.request };
}

/** POSTs to one webhook URL over a pool of kept-alive connections. */
export class WebhookTransmitter {
  private readonly agent: HttpAgent;
  private readonly send: (options: RequestOptions) => ClientRequest;
  private readonly options: RequestOptions;
  /** The `Host` header for a header list without one: given a list, node:http leaves it to us. */
  private readonly host: string;

  /**
   * @param url the webhook
   * @param maxSockets connections kept to it; the relay's concurrency, so no request waits for a socket
   */
  constructor(url: URL, maxSockets: number) {
    const client = httpClientFor(url, maxSockets);
    this.agent = client.agent;
    this.send = client.send;
    this.options = requestOptionsOf(url, this.agent);
    this.host = url.host;
  }

  /**
   * POSTs `body` with `headers`. Resolves (never rejects) once the response is complete or has
   * been read up to {@link RESPONSE_READ_LIMIT_BYTES}, or once the attempt failed.
   * @param headers in node:http's raw form, `[name, value, name, value, …]`; `Host` is added when missing. Not changed.
   * @param timeoutMs bound on the whole exchange, from connect to the end of the response
   */
  post(headers: readonly string[], body: Buffer, timeoutMs: number): Promise<WebhookResult> {
    const started = performance.now();
    const elapsed = (): number => performance.now() - started;
    return new Promise<WebhookResult>((resolve) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (result: WebhookResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const fail = (error: unknown): void => finish({ kind: 'transport-error', ...classifyError(error), latencyMs: elapsed() });
      let request: ClientRequest;
      try {
        // Headers as a flat list go straight into the request head (still validated: an illegal
        // value throws here), skipping node:http's per-header bookkeeping for its setHeader().
        request = this.send({ ...this.options, headers: hasHost(headers) ? headers : [...headers, 'Host', this.host] });
      } catch (error) {
        // Node validates headers synchronously; keep the promise's never-rejects contract.
        const message = error instanceof Error ? error.message : String(error);
        finish({ kind: 'transport-error', error: 'invalid-request', message, latencyMs: elapsed() });
        return;
      }
      // A timer per request. One shared timer sweeping a Set of deadlines ran fewer instructions,
      // but on Node.js 24 with a 256 MB function's heap limits (--max-semi-space-size=12
      // --max-old-space-size=231) it took more CPU per record and about 20 MiB more memory.
      timer = setTimeout(() => request.destroy(new RequestTimeout(timeoutMs)), timeoutMs);
      request.on('error', fail);
      request.on('response', (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let read = 0;
        const retryAfterHeader = retryAfterOf(response.rawHeaders);
        const complete = (): void => {
          const status = response.statusCode ?? 0;
          finish({ kind: 'response', status, retryAfter: retryAfterHeader, excerpt: excerptOf(chunks), latencyMs: elapsed() });
        };
        response.on('data', (chunk: Buffer) => {
          if (read < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
          read += chunk.length;
          if (read > RESPONSE_READ_LIMIT_BYTES) {
            // Enough: the status is known. Drop this connection rather than drain the rest.
            complete();
            request.destroy();
          }
        });
        response.on('end', complete);
        // A connection closed mid-body means no complete answer, whatever the status said: node:http
        // then emits 'error' (ECONNRESET, "aborted") on the response, and never 'end'.
        response.on('error', fail);
      });
      request.end(body);
    });
  }

  /** Closes idle kept-alive connections (for tests and the local runner's shutdown). */
  close(): void {
    this.agent.destroy();
  }
}
