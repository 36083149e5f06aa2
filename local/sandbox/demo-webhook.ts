/**
 * The demo webhook `npm start` runs when no WEBHOOK_URL is set: an HTTP server on 127.0.0.1 that
 * prints every POST it receives (headers and body) and answers 200 — or, when the message asks
 * for it, something else, so the retry and dead-letter paths can be watched without writing a
 * webhook:
 *
 * - `{"retryAfter": 5}`: `429` with `Retry-After: 5` on the first attempt, then 200;
 * - `{"status": 503}`: that status on every attempt (500s retry until the DLQ, 400 is dead-lettered at once);
 * - `"times": N` with either: only the first N attempts get it, then 200.
 *
 * The attempt number comes from the relay's `<prefix>Receive-Count` header, so the demo keeps no state.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_VISIBILITY_SECONDS } from '../../lambda/aws-limits';

/** What the demo answers to one request. */
export interface DemoReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** One request the demo received, as it is printed. */
export interface DemoRequest {
  readonly method: string;
  readonly path: string;
  /** Header names as the client sent them, in order. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
  readonly messageId: string | undefined;
  readonly receiveCount: number | undefined;
}

/** A running demo webhook. */
export interface DemoWebhook {
  /** `http://127.0.0.1:<port>/webhook`. */
  readonly url: string;
  close(): Promise<void>;
}

/** Raised when the demo webhook's port is taken. */
export class DemoPortInUseError extends Error {
  constructor(readonly port: number) {
    super(
      `DEMO_WEBHOOK_PORT ${port} is already in use; set DEMO_WEBHOOK_PORT to another port (0 picks a free one), or WEBHOOK_URL to your own webhook`,
    );
    this.name = 'DemoPortInUseError';
  }
}

const OK: DemoReply = { status: 200, headers: { 'Content-Type': 'text/plain' }, body: 'ok\n' };

/** A JSON number the message asks for, whole and within bounds (text is not a number here). */
function wholeNumber(value: unknown, min: number, max: number): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max ? value : undefined;
}

/**
 * The demo's answer to a message body on its `receiveCount`-th attempt (see the module comment).
 * Anything that is not a JSON object asking for something gets 200.
 */
export function demoReplyFor(body: string, receiveCount: number): DemoReply {
  let request: unknown;
  try {
    request = JSON.parse(body);
  } catch {
    return OK;
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return OK;
  const { retryAfter: rawRetryAfter, status: rawStatus, times: rawTimes } = request as Record<string, unknown>;
  const retryAfter = wholeNumber(rawRetryAfter, 0, MAX_VISIBILITY_SECONDS);
  const status = wholeNumber(rawStatus, 200, 599);
  if (retryAfter === undefined && status === undefined) return OK;
  // A Retry-After alone is a one-off ("come back later"); a status alone repeats, to show the DLQ.
  const times = wholeNumber(rawTimes, 1, 1_000) ?? (status === undefined ? 1 : Number.POSITIVE_INFINITY);
  if (receiveCount > times) return OK;
  const headers: Record<string, string> = { 'Content-Type': 'text/plain' };
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  const answer = status ?? 429;
  return { status: answer, headers, body: `demo webhook answered ${answer} as the message asked\n` };
}

/**
 * Starts the demo webhook on 127.0.0.1.
 * @param port 0 picks a free port
 * @param headerPrefix the relay's `HEADER_PREFIX`, to find the receive count and message id
 * @param print called with each request and the reply it got
 */
export async function startDemoWebhook(
  port: number,
  headerPrefix: string,
  print: (request: DemoRequest, reply: DemoReply) => void,
): Promise<DemoWebhook> {
  const receiveCountHeader = `${headerPrefix}Receive-Count`.toLowerCase();
  const messageIdHeader = `${headerPrefix}Message-Id`.toLowerCase();
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers: [string, string][] = [];
      for (let index = 0; index + 1 < req.rawHeaders.length; index += 2) {
        headers.push([req.rawHeaders[index] as string, req.rawHeaders[index + 1] as string]);
      }
      const countHeader = req.headers[receiveCountHeader];
      const receiveCount = typeof countHeader === 'string' && /^[0-9]+$/.test(countHeader) ? Number(countHeader) : undefined;
      const idHeader = req.headers[messageIdHeader];
      const reply =
        req.method === 'POST' ? demoReplyFor(body, receiveCount ?? 1) : { status: 405, headers: { Allow: 'POST' }, body: 'POST only\n' };
      print(
        {
          method: req.method ?? '',
          path: req.url ?? '',
          headers,
          body,
          messageId: typeof idHeader === 'string' ? idHeader : undefined,
          receiveCount,
        },
        reply,
      );
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? new DemoPortInUseError(port) : error));
    server.listen(port, '127.0.0.1', resolve);
  });
  const { port: actual } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${actual}/webhook`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
