/**
 * The benchmark's webhook, in a process of its own so it never shares the client's event loop.
 *
 * A minimal HTTP/1.1 server straight on `node:net`: it parses just enough (the head, the
 * `Content-Length` body) to answer each request the moment it is complete, keeps connections
 * alive, and costs a fraction of `node:http`'s server per request, so on a 2-core machine the
 * client under test, not the webhook, is what runs out of CPU. Clients here always send a
 * `Content-Length` (a request without one is answered 400 and its connection closed).
 *
 * Listens on 127.0.0.1 only; exits when its parent goes.
 */
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { serveParent, type WebhookApi, type WebhookMode } from './protocol';
import { indexOfMessageId, RETRY_AFTER_SECONDS, RETRY_MARKER_BYTE } from './records';

const OK = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n', 'latin1');
const TOO_MANY = Buffer.from(
  `HTTP/1.1 429 Too Many Requests\r\nRetry-After: ${RETRY_AFTER_SECONDS}\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n`,
  'latin1',
);
const BAD = Buffer.from('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n', 'latin1');
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*([0-9]+)/i;
const MESSAGE_ID = /\r\nx-carrier-message-id:[ \t]*([^\r]+)/i;

let mode: WebhookMode = 'ok';
/** Answer this long after the request is complete (a webhook's own latency); 0: at once. */
let delayMs = 0;
let received: BigInt64Array | undefined;
let requests = 0;
let connections = 0;
let cpuAtReset = process.cpuUsage();

function serve(socket: Socket): void {
  connections += 1;
  socket.setNoDelay(true);
  let pending: Buffer | undefined;
  socket.on('data', (chunk: Buffer) => {
    const now = received === undefined ? 0n : process.hrtime.bigint();
    const data = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
    let offset = 0;
    const replies: Buffer[] = [];
    for (;;) {
      const headEnd = data.indexOf(HEAD_END, offset);
      if (headEnd < 0) break;
      const head = data.toString('latin1', offset, headEnd);
      const length = CONTENT_LENGTH.exec(head)?.[1];
      if (length === undefined) {
        replies.push(BAD);
        socket.end(Buffer.concat(replies));
        return;
      }
      const bodyStart = headEnd + 4;
      const bodyEnd = bodyStart + Number(length);
      if (data.length < bodyEnd) break;
      requests += 1;
      if (received !== undefined) {
        const id = MESSAGE_ID.exec(head)?.[1];
        const index = id === undefined ? -1 : indexOfMessageId(id);
        if (index >= 0 && index < received.length) received[index] = now;
      }
      replies.push(mode === 'mixed' && data[bodyStart + 2] === RETRY_MARKER_BYTE ? TOO_MANY : OK);
      offset = bodyEnd;
    }
    pending = offset < data.length ? data.subarray(offset) : undefined;
    if (replies.length === 0) return;
    const reply = replies.length === 1 ? (replies[0] as Buffer) : Buffer.concat(replies);
    if (delayMs > 0) setTimeout(() => socket.writable && socket.write(reply), delayMs);
    else socket.write(reply);
  });
  socket.on('error', () => socket.destroy());
}

const api: WebhookApi = {
  async reset(newMode, stampSize, newDelayMs) {
    mode = newMode;
    delayMs = newDelayMs;
    received = stampSize > 0 ? new BigInt64Array(stampSize) : undefined;
    requests = 0;
    connections = 0;
    cpuAtReset = process.cpuUsage();
  },
  async stats() {
    const cpu = process.cpuUsage(cpuAtReset);
    return { requests, connections, cpuMicros: cpu.user + cpu.system, ...(received && { received }) };
  },
};

serveParent<WebhookApi, { port: number }>(
  () =>
    new Promise((resolve) => {
      const server = createServer(serve).listen(0, '127.0.0.1', () =>
        resolve({ ready: { port: (server.address() as AddressInfo).port }, api }),
      );
    }),
);
