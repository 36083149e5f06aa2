/**
 * A real HTTP proxy in front of the emulator that refuses chosen SQS actions, so tests can
 * watch the relay when SQS says no, over the real wire protocol rather than a mocked client.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SQSClient } from '@aws-sdk/client-sqs';

export interface RefusingProxy {
  /** An SQS client that talks to the emulator through the proxy. */
  readonly sqs: SQSClient;
  /** Actions (e.g. `ChangeMessageVisibilityBatch`) currently refused. */
  readonly refused: Set<string>;
  /** How many requests of each action were refused. */
  readonly refusals: Map<string, number>;
  close(): Promise<void>;
}

/** Starts a proxy forwarding to `target` (the emulator's endpoint). */
export async function startRefusingProxy(target: string, region: string): Promise<RefusingProxy> {
  const refused = new Set<string>();
  const refusals = new Map<string, number>();
  const upstream = new URL(target);
  const server: Server = createServer((incoming, outgoing) => {
    // AWS JSON protocol: the action is named in X-Amz-Target, e.g. "AmazonSQS.SendMessage".
    const action = String(incoming.headers['x-amz-target'] ?? '').replace(/^AmazonSQS\./, '');
    if (refused.has(action)) {
      refusals.set(action, (refusals.get(action) ?? 0) + 1);
      incoming.resume();
      outgoing.writeHead(403, { 'Content-Type': 'application/x-amz-json-1.0' });
      outgoing.end(JSON.stringify({ __type: 'com.amazonaws.sqs#AccessDenied', message: `test proxy refuses ${action}` }));
      return;
    }
    const forwarded = request(
      { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const sqs = new SQSClient({
    endpoint: `http://127.0.0.1:${port}`,
    region,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    useQueueUrlAsEndpoint: false,
  });
  return {
    sqs,
    refused,
    refusals,
    async close() {
      sqs.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
