/**
 * A real OAuth 2.0 token endpoint on 127.0.0.1 for the end-to-end tests: the client credentials
 * grant (RFC 6749 §4.4), the client authenticated by HTTP Basic or in the form, tokens with an
 * `expires_in` it remembers, so that a webhook can check what the relay sends (`verify`). It counts
 * the grants, and can be told to fail (a status) or to hang (never answer). Plain HTTP, or HTTPS
 * with a certificate given (it then notes any client certificate presented, and takes none).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** One grant request as the endpoint received it. */
export interface TokenGrant {
  readonly clientAuthentication: 'client_secret_basic' | 'client_secret_post' | 'none';
  readonly clientId: string | undefined;
  readonly form: Record<string, string>;
  /** `Date.now()` when it arrived. */
  readonly receivedAt: number;
  /** Over HTTPS, the common name of the client certificate presented with it, if any (none is asked for, but any is noted). */
  readonly clientCertificate?: string;
}

/** How {@link startTokenEndpoint} serves. */
export interface TokenEndpointOptions {
  /** HTTPS with this certificate and key (PEM); plain HTTP without. */
  readonly tls?: { readonly certificate: string; readonly privateKey: string };
}

/** A running {@link startTokenEndpoint}. */
export interface TestTokenEndpoint {
  readonly url: string;
  /** Every grant request received, in order (the failed and hung ones too). */
  readonly grants: TokenGrant[];
  /** Tokens issued, in order. */
  readonly issued: string[];
  /** `expires_in` of the tokens it issues, seconds; `undefined` leaves it out. */
  expiresInSeconds: number | undefined;
  /** When set, every request is answered with this status and an RFC 6749 error body. */
  failWith: number | undefined;
  /** With `failWith`, the `Retry-After` (seconds) its answers carry, as a rate-limited endpoint's `429` does; unset: none. */
  retryAfterSeconds: number | undefined;
  /** While true, requests are never answered. */
  hanging: boolean;
  /** Whether `header` (`Bearer …`) carries a token it issued that has not expired, nor been revoked. */
  verify(header: string | undefined): boolean;
  /** When a token it issued expires (`Date.now()` time), if it did issue it and it has an `expires_in`. */
  expiryOf(token: string): number | undefined;
  /** Makes a token it issued invalid at once (the webhook then answers 401 to it). */
  revoke(token: string): void;
  close(): Promise<void>;
}

/** Starts a token endpoint for client `clientId` / `clientSecret` on a free port of 127.0.0.1. */
export async function startTokenEndpoint(
  clientId: string,
  clientSecret: string,
  options: TokenEndpointOptions = {},
): Promise<TestTokenEndpoint> {
  const expiries = new Map<string, number>();
  const sockets = new Set<Socket>();
  const { tls } = options;
  /** The client certificate's common name, over HTTPS: the grant records what the relay presented. */
  const presented = (req: IncomingMessage): { clientCertificate?: string } => {
    const name = tls === undefined ? undefined : (req.socket as TLSSocket).getPeerCertificate()?.subject?.CN;
    return name === undefined ? {} : { clientCertificate: String(name) };
  };
  const handle = (req: IncomingMessage, res: import('node:http').ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const receivedAt = Date.now();
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()));
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      let grant: TokenGrant;
      let secret: string | undefined;
      if (basic !== null) {
        // RFC 6749 §2.3.1: base64 of the form-encoded id ':' secret.
        const [id = '', password = ''] = Buffer.from(basic[1] as string, 'base64')
          .toString()
          .split(':');
        const decode = (text: string): string => decodeURIComponent(text.replace(/\+/g, ' '));
        grant = { clientAuthentication: 'client_secret_basic', clientId: decode(id), form, receivedAt, ...presented(req) };
        secret = decode(password);
      } else if (form.client_id !== undefined) {
        grant = { clientAuthentication: 'client_secret_post', clientId: form.client_id, form, receivedAt, ...presented(req) };
        secret = form.client_secret;
      } else {
        grant = { clientAuthentication: 'none', clientId: undefined, form, receivedAt, ...presented(req) };
      }
      endpoint.grants.push(grant);
      if (endpoint.hanging) return;
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers });
        res.end(JSON.stringify(body));
      };
      if (endpoint.failWith !== undefined) {
        const { retryAfterSeconds } = endpoint;
        const headers: Record<string, string> = retryAfterSeconds === undefined ? {} : { 'Retry-After': String(retryAfterSeconds) };
        return reply(endpoint.failWith, { error: 'temporarily_unavailable', error_description: 'the test says so' }, headers);
      }
      if (req.method !== 'POST' || form.grant_type !== 'client_credentials') return reply(400, { error: 'unsupported_grant_type' });
      // Quoting the secret it got, as careless endpoints do: the relay must not pass it on.
      if (grant.clientId !== clientId || secret !== clientSecret)
        return reply(401, { error: 'invalid_client', error_description: `the secret ${String(secret)} is not the client's` });
      const token = `tok-${endpoint.issued.length + 1}-${randomBytes(12).toString('hex')}`;
      endpoint.issued.push(token);
      const lifetime = endpoint.expiresInSeconds;
      expiries.set(token, lifetime === undefined ? Number.POSITIVE_INFINITY : Date.now() + lifetime * 1000);
      return reply(200, { access_token: token, token_type: 'Bearer', ...(lifetime === undefined ? {} : { expires_in: lifetime }) });
    });
  };
  // Asks for a client certificate without requiring one, so that one presented is seen.
  const server: Server =
    tls === undefined
      ? createServer(handle)
      : createHttpsServer({ cert: tls.certificate, key: tls.privateKey, requestCert: true, rejectUnauthorized: false }, handle);
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const endpoint: TestTokenEndpoint = {
    url: `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}/oauth/token`,
    grants: [],
    issued: [],
    expiresInSeconds: 3600,
    failWith: undefined,
    retryAfterSeconds: undefined,
    hanging: false,
    verify(header) {
      const token = /^Bearer (.+)$/.exec(header ?? '')?.[1];
      const expiry = token === undefined ? undefined : expiries.get(token);
      return expiry !== undefined && Date.now() < expiry;
    },
    expiryOf(token) {
      return expiries.get(token);
    },
    revoke(token) {
      expiries.delete(token);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return endpoint;
}
