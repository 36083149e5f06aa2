/**
 * A real forward proxy on 127.0.0.1 for the end-to-end tests, as a corporate one behaves: it takes
 * HTTP CONNECT only, may demand `Proxy-Authorization: Basic`, resolves every host name to 127.0.0.1
 * (so that a test's webhook can be named `webhook.test`, as a real proxy resolves names the relay
 * never does), and pipes bytes both ways. It records each tunnel, and can be told to hang CONNECTs.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';

/** One CONNECT as the proxy received it. */
export interface TunnelRequest {
  /** `host:port` asked for. */
  readonly authority: string;
  /** The `Proxy-Authorization` header, if any. */
  readonly authorization: string | undefined;
  /** What the proxy answered (`undefined` while hanging). */
  status: number | undefined;
  /** Whether the tunnel is open now (established, and neither side closed). */
  open: boolean;
}

/** A running {@link startConnectProxy}. */
export interface TestConnectProxy {
  /** `http://127.0.0.1:<port>`, without credentials. */
  readonly url: string;
  readonly port: number;
  /** Every CONNECT received, in order. */
  readonly tunnels: TunnelRequest[];
  /** While true, CONNECTs are never answered. */
  hanging: boolean;
  close(): Promise<void>;
}

/**
 * Starts the proxy on a free port of 127.0.0.1.
 * @param credentials `user:password` it demands (407 without them), or none
 */
export async function startConnectProxy(credentials?: string): Promise<TestConnectProxy> {
  const sockets = new Set<Socket>();
  const expected = credentials === undefined ? undefined : `Basic ${Buffer.from(credentials).toString('base64')}`;
  const server: Server = createServer((_req, res) => {
    // A forward proxy for plain requests is not what this one is.
    res.writeHead(405, { Connection: 'close' });
    res.end('CONNECT only');
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const tunnel: TunnelRequest = {
      authority: req.url ?? '',
      authorization: req.headers['proxy-authorization'],
      status: undefined,
      open: false,
    };
    proxy.tunnels.push(tunnel);
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (proxy.hanging) return;
    if (expected !== undefined && tunnel.authorization !== expected) {
      tunnel.status = 407;
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const port = Number(/:(\d+)$/.exec(tunnel.authority)?.[1]);
    const upstream = connect(port, '127.0.0.1', () => {
      tunnel.status = 200;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      tunnel.open = true;
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.on('close', () => {
      tunnel.open = false;
      upstream.destroy();
    });
    upstream.on('error', () => {
      if (tunnel.status === undefined) {
        tunnel.status = 502;
        client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const proxy: TestConnectProxy = {
    url: `http://127.0.0.1:${port}`,
    port,
    tunnels: [],
    hanging: false,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
