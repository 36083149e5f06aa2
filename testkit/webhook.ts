/**
 * A real HTTP webhook on 127.0.0.1 for the end-to-end tests and the bench: every request is recorded,
 * and a responder decides what each one gets (status, headers, body, a delay, a hang, or a
 * connection reset mid-response); rate-limited-webhook.ts is one such responder.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** One request as the webhook received it. */
export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly receivedAt: number;
  /** The common name of the client certificate the request came with (an HTTPS webhook that asks for one). */
  readonly clientCertificate?: string;
}

/** An HTTPS webhook: its certificate, and whether it demands a client certificate signed by `ca`. */
export interface WebhookTls {
  readonly certificate: string;
  readonly privateKey: string;
  /** The CAs whose client certificates it takes; with it, a request without one is refused in the handshake. */
  readonly clientCa?: string;
}

/** How {@link startWebhook} serves. */
export interface WebhookOptions {
  /** HTTPS instead of plain HTTP. */
  readonly tls?: WebhookTls;
  /** The host its URL names (it listens on 127.0.0.1 whatever the name: a proxy in the test resolves it). @default 127.0.0.1 */
  readonly host?: string;
}

/** What the webhook does with one request. */
export type WebhookReply =
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body?: string; readonly delayMs?: number }
  /** Never answer (the relay's timeout must fire). */
  | { readonly hang: true }
  /** Send the status line and part of a body, then destroy the socket. */
  | { readonly resetMidResponse: true }
  /** Destroy the socket without answering at all. */
  | { readonly resetBeforeResponse: true };

/** Decides the reply to each request; `index` counts the requests from 0. */
export type Responder = (request: ReceivedRequest, index: number) => WebhookReply | Promise<WebhookReply>;

/** A running {@link startWebhook}. */
export interface TestWebhook {
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: ReceivedRequest[];
  /** Replace how requests are answered. */
  respondWith(responder: Responder): void;
  /** Forget the requests and answer with the responder it was started with again (between tests). */
  reset(): void;
  close(): Promise<void>;
}

/** Starts a webhook on 127.0.0.1 at a free port; it answers 200 until told otherwise. */
export async function startWebhook(responder: Responder = () => ({ status: 200 }), options: WebhookOptions = {}): Promise<TestWebhook> {
  let respond = responder;
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  const { tls } = options;
  const handle = (req: import('node:http').IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const peer = tls === undefined ? undefined : (req.socket as TLSSocket).getPeerCertificate();
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
        receivedAt: Date.now(),
        ...(peer?.subject?.CN === undefined ? {} : { clientCertificate: String(peer.subject.CN) }),
      };
      const index = requests.push(request) - 1;
      void Promise.resolve(respond(request, index)).then((reply) => answer(res, reply));
    });
  };
  const server: Server =
    tls === undefined
      ? createServer(handle)
      : createHttpsServer(
          {
            cert: tls.certificate,
            key: tls.privateKey,
            ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true }),
          },
          handle,
        );
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls === undefined ? 'http' : 'https'}://${options.host ?? '127.0.0.1'}:${port}/hook`,
    requests,
    respondWith(next) {
      respond = next;
    },
    reset() {
      requests.length = 0;
      respond = responder;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function answer(res: ServerResponse, reply: WebhookReply): void {
  if ('hang' in reply) return;
  if ('resetBeforeResponse' in reply) {
    res.socket?.destroy();
    return;
  }
  if ('resetMidResponse' in reply) {
    res.writeHead(200, { 'Content-Length': '1000' });
    res.write('partial');
    setTimeout(() => res.socket?.destroy(), 20);
    return;
  }
  const send = (): void => {
    res.writeHead(reply.status, reply.headers);
    res.end(reply.body ?? '');
  };
  if (reply.delayMs !== undefined && reply.delayMs > 0) setTimeout(send, reply.delayMs);
  else send();
}

/** The Standard Webhooks headers of a received request, as the `standardwebhooks` verifier takes them. */
export function signatureHeadersOf(
  request: ReceivedRequest | undefined,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const headers = request?.headers ?? {};
  return {
    'webhook-id': String(headers['webhook-id']),
    'webhook-timestamp': String(headers['webhook-timestamp']),
    'webhook-signature': String(headers['webhook-signature']),
  };
}
