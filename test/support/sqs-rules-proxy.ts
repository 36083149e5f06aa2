/**
 * A real HTTP proxy in front of the SQS emulator that enforces the one message rule fauxqs 1.9
 * leaves unchecked: string attribute values may hold only the characters a message body may
 * (#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF; SQS's MessageAttributeValue: "the
 * same restrictions on the content as the message body"). fauxqs checks bodies and the 1 MiB
 * size itself. A refused call is answered as SQS answers it, `InvalidMessageContents`, so the
 * relay sees the error a real queue would give. Listens on 127.0.0.1 only.
 */
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SQSClient } from '@aws-sdk/client-sqs';

export interface SqsRulesProxy {
  /** An SQS client that talks to the emulator through the proxy. */
  readonly sqs: SQSClient;
  /** Calls refused so far for an illegal attribute value. */
  readonly refused: () => number;
  close(): Promise<void>;
}

const ILLEGAL = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

type Attributes = Record<string, { StringValue?: unknown }> | undefined;

function hasIllegalAttribute(attributes: Attributes): boolean {
  return Object.values(attributes ?? {}).some((attribute) => typeof attribute.StringValue === 'string' && ILLEGAL.test(attribute.StringValue));
}

/** Starts a proxy forwarding to `target` (the emulator's endpoint). */
export async function startSqsRulesProxy(target: string, region: string): Promise<SqsRulesProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true });
  let refused = 0;
  const server: Server = createServer((incoming, outgoing) => {
    const action = String(incoming.headers['x-amz-target'] ?? '').replace(/^AmazonSQS\./, '');
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      if (action === 'SendMessage' || action === 'SendMessageBatch') {
        const input = JSON.parse(body.toString('utf8')) as { MessageAttributes?: Attributes; Entries?: { MessageAttributes?: Attributes }[] };
        const messages = action === 'SendMessage' ? [input] : (input.Entries ?? []);
        if (messages.some((message) => hasIllegalAttribute(message.MessageAttributes))) {
          refused += 1;
          outgoing.writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' });
          outgoing.end(JSON.stringify({ __type: 'com.amazonaws.sqs#InvalidMessageContents', message: 'Invalid characters found in a message attribute value.' }));
          return;
        }
      }
      const forwarded = request({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers, agent }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      });
      forwarded.on('error', () => outgoing.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const sqs = new SQSClient({ endpoint: `http://127.0.0.1:${port}`, region, credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, useQueueUrlAsEndpoint: false });
  return {
    sqs,
    refused: () => refused,
    async close() {
      sqs.destroy();
      server.closeAllConnections();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
