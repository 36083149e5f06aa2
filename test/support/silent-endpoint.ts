/**
 * An endpoint that accepts TCP connections on 127.0.0.1 and never answers: what an AWS API looks
 * like from a VPC without an endpoint behind a NAT that drops the replies, or from a throttled
 * proxy. Point a client at it (`AWS_ENDPOINT_URL_SECRETS_MANAGER`, `AWS_ENDPOINT_URL_SQS`) to see
 * whether the caller bounds its wait.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface SilentEndpoint {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** Connections accepted so far. */
  readonly connections: { count: number };
  /** Connections still open (the caller has not given up on them). */
  open(): number;
  close(): Promise<void>;
}

/** Starts a silent endpoint on a free port. */
export async function startSilentEndpoint(): Promise<SilentEndpoint> {
  const sockets = new Set<Socket>();
  const connections = { count: 0 };
  const server: Server = createServer((socket) => {
    connections.count += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.resume(); // read the request and say nothing
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    connections,
    open: () => sockets.size,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
