/**
 * A webhook with a capacity, for the back-pressure bench scenarios and tests (issue 21): an HTTP
 * server on 127.0.0.1 that takes `requestsPerSecond` through a token bucket and answers `429` +
 * `Retry-After: 1` above it, and optionally `503` (or another status) without `Retry-After` for
 * its first seconds (a restart, a bad deploy). It records each delivered message id, so a caller can check that
 * every message arrived exactly once, and counts what it refused.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** How the webhook answers. */
export interface RateLimitedWebhookOptions {
  /** Requests per second it accepts; unset: no limit. */
  readonly requestsPerSecond?: number;
  /**
   * Tokens the bucket holds (the burst it accepts after a quiet spell). Default: a tenth of a
   * second's worth (at least 1), so a relay cannot hide a flood inside the first second.
   */
  readonly burst?: number;
  /** Answer `unavailableStatus` without `Retry-After` to every request for this long after the first one, ms. */
  readonly unavailableForMs?: number;
  /** Default 503 (the circuit breaker counts it as an outage); 500 is a webhook that is up and failing. */
  readonly unavailableStatus?: number;
  /** The relay's header prefix: the message id is `<prefix>Message-Id` (else the body stands for it). */
  readonly headerPrefix?: string;
}

/** A running {@link startRateLimitedWebhook}. */
export interface RateLimitedWebhook {
  readonly url: string;
  /** The bucket's size as used. */
  readonly burst: number;
  /** Accepted (2xx) requests by message id: 1 each when every message arrived exactly once. */
  readonly delivered: ReadonlyMap<string, number>;
  /** Requests answered `429` or `unavailableStatus`. */
  refused(): number;
  /** Every request answered. */
  requests(): number;
  /** Accepted requests beyond each message's first. */
  duplicates(): number;
  /** When the last request was accepted (`Date.now()`), or undefined. */
  lastDeliveryAt(): number | undefined;
  close(): Promise<void>;
}

/** The bucket's default size: a tenth of a second's worth of requests, at least 1. */
export const defaultBurst = (requestsPerSecond: number): number => Math.max(1, requestsPerSecond / 10);

/** Starts the webhook on a free port of 127.0.0.1 (see {@link RateLimitedWebhookOptions}). */
export async function startRateLimitedWebhook(options: RateLimitedWebhookOptions = {}): Promise<RateLimitedWebhook> {
  const rate = options.requestsPerSecond;
  const burst = rate === undefined ? Number.POSITIVE_INFINITY : (options.burst ?? defaultBurst(rate));
  const idHeader = `${options.headerPrefix ?? 'X-Carrier-'}Message-Id`.toLowerCase();
  const delivered = new Map<string, number>();
  let tokens = burst;
  let filledAt = performance.now();
  let firstAt: number | undefined;
  let refused = 0;
  let requests = 0;
  let duplicates = 0;
  let lastDeliveryAt: number | undefined;

  const take = (): boolean => {
    if (rate === undefined) return true;
    const now = performance.now();
    tokens = Math.min(burst, tokens + ((now - filledAt) / 1000) * rate);
    filledAt = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
  const answer = (req: IncomingMessage, body: string): [number, Record<string, string>] => {
    requests += 1;
    firstAt ??= Date.now();
    if (options.unavailableForMs !== undefined && Date.now() - firstAt < options.unavailableForMs)
      return [options.unavailableStatus ?? 503, {}];
    if (!take()) return [429, { 'Retry-After': '1' }];
    const header = req.headers[idHeader];
    const id = typeof header === 'string' ? header : body;
    const count = (delivered.get(id) ?? 0) + 1;
    delivered.set(id, count);
    if (count > 1) duplicates += 1;
    lastDeliveryAt = Date.now();
    return [200, {}];
  };

  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const [status, headers] = answer(req, Buffer.concat(chunks).toString());
      if (status !== 200) refused += 1;
      res.writeHead(status, headers).end();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    burst,
    delivered,
    refused: () => refused,
    requests: () => requests,
    duplicates: () => duplicates,
    lastDeliveryAt: () => lastDeliveryAt,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
