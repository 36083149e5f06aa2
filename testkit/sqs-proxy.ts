/**
 * A real HTTP proxy in front of the SQS emulator: it counts every API call by action (the AWS
 * JSON protocol names it in `X-Amz-Target`, e.g. `AmazonSQS.ChangeMessageVisibilityBatch`) and
 * can refuse chosen actions, so tests watch the relay when SQS says no, and the benchmarks report
 * exactly which calls a batch cost, over the real wire protocol rather than a mocked client.
 * It can also hang chosen actions (an endpoint that accepts and never answers), before or after
 * passing the call on. Optionally it enforces the one message rule fauxqs leaves unchecked
 * ({@link SqsProxyOptions.enforceAttributeCharacters}). Listens on 127.0.0.1 only.
 */
import { Agent, createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SQSClient } from '@aws-sdk/client-sqs';

export interface SqsProxy {
  /** The endpoint to give a client (`AWS_ENDPOINT_URL_SQS`). */
  readonly endpoint: string;
  /** An SQS client that talks to the emulator through the proxy. */
  readonly sqs: SQSClient;
  /** Actions (e.g. `ChangeMessageVisibilityBatch`) currently refused with 403 AccessDenied. */
  readonly refused: Set<string>;
  /** How many requests of each action were refused (AccessDenied, or InvalidMessageContents under the attribute rule). */
  readonly refusals: Map<string, number>;
  /** Actions currently accepted and never answered nor passed on (SQS never sees them). */
  readonly hung: Set<string>;
  /** Actions currently passed on to the emulator whose answer is then withheld (SQS acted; the caller never hears). */
  readonly answersWithheld: Set<string>;
  /** Requests hung so far (either way), by action. */
  readonly hangs: Map<string, number>;
  /** Drops every connection held by a hang (the callers see a reset if still waiting). */
  releaseHung(): void;
  /** Calls so far (refused ones included), by action. */
  counts(): Record<string, number>;
  /** Entries of each `ChangeMessageVisibilityBatch` call so far. */
  visibilityEntries(): number[];
  /** Forgets the counts. */
  reset(): void;
  close(): Promise<void>;
}

/** What the proxy checks besides what it is told to refuse or hang. */
export interface SqsProxyOptions {
  /**
   * Refuse a `SendMessage`/`SendMessageBatch` whose string attribute values hold a character a
   * message body may not (#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF; SQS's
   * MessageAttributeValue has "the same restrictions on the content as the message body"), as
   * SQS does, with `InvalidMessageContents`. fauxqs 1.9 checks bodies and the 1 MiB size itself,
   * not this.
   */
  readonly enforceAttributeCharacters?: boolean;
}

// Written from SQS's documentation, not taken from lambda/: the stand-in for SQS must not share the relay's mistakes.
const ILLEGAL_IN_MESSAGE = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

type Attributes = Record<string, { StringValue?: unknown }> | undefined;

/** True for a SendMessage(Batch) body with a string attribute value SQS would refuse. */
function hasIllegalAttribute(action: string, body: Buffer): boolean {
  if (action !== 'SendMessage' && action !== 'SendMessageBatch') return false;
  const input = JSON.parse(body.toString('utf8')) as { MessageAttributes?: Attributes; Entries?: { MessageAttributes?: Attributes }[] };
  const messages = action === 'SendMessage' ? [input] : (input.Entries ?? []);
  return messages.some((message) =>
    Object.values(message.MessageAttributes ?? {}).some(
      (attribute) => typeof attribute.StringValue === 'string' && ILLEGAL_IN_MESSAGE.test(attribute.StringValue),
    ),
  );
}

/** Starts a proxy forwarding to `target` (the emulator's endpoint). */
export async function startSqsProxy(target: string, region: string, options: SqsProxyOptions = {}): Promise<SqsProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const refused = new Set<string>();
  const refusals = new Map<string, number>();
  const hung = new Set<string>();
  const answersWithheld = new Set<string>();
  const hangs = new Map<string, number>();
  const held = new Set<ServerResponse>();
  const hold = (action: string, outgoing: ServerResponse): void => {
    hangs.set(action, (hangs.get(action) ?? 0) + 1);
    held.add(outgoing);
    outgoing.on('close', () => held.delete(outgoing));
  };
  const releaseHung = (): void => {
    for (const outgoing of held) outgoing.destroy();
    held.clear();
  };
  let counts = new Map<string, number>();
  let entries: number[] = [];
  const server: Server = createServer((incoming, outgoing) => {
    const action = String(incoming.headers['x-amz-target'] ?? 'unknown').replace(/^AmazonSQS\./, '');
    counts.set(action, (counts.get(action) ?? 0) + 1);
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      if (action === 'ChangeMessageVisibilityBatch') {
        try {
          entries.push((JSON.parse(body.toString()) as { Entries?: unknown[] }).Entries?.length ?? 0);
        } catch {
          entries.push(-1);
        }
      }
      if (refused.has(action)) {
        refusals.set(action, (refusals.get(action) ?? 0) + 1);
        outgoing.writeHead(403, { 'Content-Type': 'application/x-amz-json-1.0' });
        outgoing.end(JSON.stringify({ __type: 'com.amazonaws.sqs#AccessDenied', message: `test proxy refuses ${action}` }));
        return;
      }
      if (options.enforceAttributeCharacters === true && hasIllegalAttribute(action, body)) {
        refusals.set(action, (refusals.get(action) ?? 0) + 1);
        outgoing.writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' });
        outgoing.end(
          JSON.stringify({
            __type: 'com.amazonaws.sqs#InvalidMessageContents',
            message: 'Invalid characters found in a message attribute value.',
          }),
        );
        return;
      }
      if (hung.has(action)) return hold(action, outgoing);
      const withhold = answersWithheld.has(action);
      const forwarded = request(
        { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers, agent },
        (answer) => {
          if (withhold) {
            answer.resume(); // read and dropped: SQS did the work, the caller never learns it
            return hold(action, outgoing);
          }
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const sqs = new SQSClient({
    endpoint,
    region,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    useQueueUrlAsEndpoint: false,
  });
  return {
    endpoint,
    sqs,
    refused,
    refusals,
    hung,
    answersWithheld,
    hangs,
    releaseHung,
    counts: () => Object.fromEntries(counts),
    visibilityEntries: () => [...entries],
    reset() {
      counts = new Map();
      entries = [];
      hangs.clear();
    },
    async close() {
      sqs.destroy();
      releaseHung();
      server.closeAllConnections();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
