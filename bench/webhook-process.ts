/**
 * The benchmark's webhook, in a process of its own. A minimal HTTP/1.1 server on `node:net`, far cheaper per request than node:http's
 * (so the client under test, not the webhook, runs out of CPU): it parses the head and the `Content-Length` body, answers each request
 * as soon as it is complete, and keeps connections alive. A request without `Content-Length` gets a 400 and its connection closed.
 * Listens on 127.0.0.1 only.
 */
import { once } from 'node:events';
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

/** What the webhook answers, how late (0: at once), arrival stamps by record index, and its counts since the reset. */
let mode: WebhookMode = 'ok';
let delayMs = 0;
let received: BigInt64Array | undefined;
let counts = { requests: 0, connections: 0, cpuAtReset: process.cpuUsage() };

function serve(socket: Socket): void {
  counts.connections += 1;
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
        socket.end(Buffer.concat([...replies, BAD]));
        return;
      }
      const bodyStart = headEnd + 4;
      const bodyEnd = bodyStart + Number(length);
      if (data.length < bodyEnd) break;
      counts.requests += 1;
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
    counts = { requests: 0, connections: 0, cpuAtReset: process.cpuUsage() };
  },
  async stats() {
    const { requests, connections, cpuAtReset } = counts;
    const cpu = process.cpuUsage(cpuAtReset);
    return { requests, connections, cpuMicros: cpu.user + cpu.system, ...(received && { received }) };
  },
};

const server = createServer(serve).listen(0, '127.0.0.1');
const listening = once(server, 'listening').then(() => ({ port: (server.address() as AddressInfo).port }));
serveParent<WebhookApi>(api, listening);
