/**
 * The embedded SQS emulator of `npm start`: fauxqs in this process, listening on 127.0.0.1 only
 * and answering only requests addressed to this machine by name (see {@link isLocalHostHeader}),
 * with the main queue, its DLQ and the redrive policy, as the stack creates them.
 *
 * fauxqs's `startFauxqs()` names queues `http://sqs.<region>.localhost:<port>/…` and listens on
 * every interface. That host does not resolve on many machines (glibc has no `*.localhost`
 * rule), and the AWS SDK for JavaScript sends a request to its `QueueUrl`'s host whenever the
 * client has no explicit endpoint — so a user's `new SQSClient({})` pointed at us with
 * `AWS_ENDPOINT_URL_SQS` would fail with ENOTFOUND. Here the store names queues after the host
 * the request came to instead (`http://127.0.0.1:<port>/000000000000/<name>`): the printed queue
 * URL is then the endpoint plus a path, and works from any SQS client, SDK or CLI.
 * That takes fauxqs's store classes, which its package does not export; they are loaded from
 * beside its entry point, and the tests fail loudly should a fauxqs upgrade move them.
 */
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { FastifyReply, FastifyRequest } from 'fastify'; // fauxqs's server; types only
import { buildApp } from 'fauxqs';
import { deadLetterQueueName, FIFO_SUFFIX } from '../../lambda/sqs-util';
import { EMULATOR_CREDENTIALS, isEmulatorHost } from '../existing-queue';
import { subcommandPrefix } from '../invocation';

/** The region the embedded emulator's ARNs carry. */
export const EMULATOR_REGION = 'us-east-1';

/** A queue of the emulator. */
export interface EmulatedQueue {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
}

/** What {@link startEmbeddedSqs} creates. */
export interface EmbeddedSqsOptions {
  /** Port on 127.0.0.1; 0 picks a free one. */
  readonly port: number;
  /** Main queue name; ending in `.fifo` makes both queues FIFO. */
  readonly queueName: string;
  readonly maxReceiveCount: number;
  /** The main queue's default visibility timeout, seconds. */
  readonly visibilityTimeoutSeconds: number;
}

/** A running embedded emulator. */
export interface EmbeddedSqs {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  readonly port: number;
  readonly region: string;
  readonly queue: EmulatedQueue;
  readonly dlq: EmulatedQueue;
  readonly fifo: boolean;
  /** Ends pending long polls and closes the server; its messages are gone with it. */
  stop(): Promise<void>;
}

/**
 * What a client speaking SQS's older query protocol (form-encoded `Action=SendMessage&…`) is
 * told: fauxqs speaks only the JSON protocol, which AWS CLI v2 uses since 2.13.34 and the AWS
 * SDK for JavaScript v3 since 3.446.0 (Debian 12's `awscli` package, 2.9, predates it).
 */
export const QUERY_PROTOCOL_REFUSAL = `this SQS emulator speaks only SQS's JSON protocol; this client sent the older query protocol. Use AWS CLI 2.13.34 or later, a current AWS SDK (for JavaScript v3: @aws-sdk/client-sqs 3.446.0 or later), or ${subcommandPrefix('send')} --queue-url <queue URL> '<body>'`;

/** SQS's actions, as a query-protocol client names them in `Action`. */
const SQS_ACTIONS = new Set([
  'AddPermission',
  'CancelMessageMoveTask',
  'ChangeMessageVisibility',
  'ChangeMessageVisibilityBatch',
  'CreateQueue',
  'DeleteMessage',
  'DeleteMessageBatch',
  'DeleteQueue',
  'GetQueueAttributes',
  'GetQueueUrl',
  'ListDeadLetterSourceQueues',
  'ListMessageMoveTasks',
  'ListQueueTags',
  'ListQueues',
  'PurgeQueue',
  'ReceiveMessage',
  'RemovePermission',
  'SendMessage',
  'SendMessageBatch',
  'SetQueueAttributes',
  'StartMessageMoveTask',
  'TagQueue',
  'UntagQueue',
]);

/** A query-protocol error document, which those clients print as `An error occurred (<code>) … : <message>`. */
function queryProtocolError(action: string): string {
  const escaped = QUERY_PROTOCOL_REFUSAL.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return [
    '<?xml version="1.0"?>',
    '<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">',
    `  <Error><Type>Sender</Type><Code>UnsupportedProtocol</Code><Message>${escaped} (${action})</Message></Error>`,
    '  <RequestId>00000000-0000-0000-0000-000000000000</RequestId>',
    '</ErrorResponse>',
  ].join('\n');
}

/** What a request addressed to another host is told (403). */
export const FOREIGN_HOST_REFUSAL =
  'this SQS emulator answers only requests addressed to this machine (Host: localhost, *.localhost, 127.0.0.1 or [::1])';

/**
 * True when a `Host` header names this machine: `localhost`, a `*.localhost` name (fauxqs's queue
 * and bucket names; a browser never sends those to DNS), 127.0.0.0/8 or `[::1]`, with any port.
 * A missing or malformed header is not.
 */
export function isLocalHostHeader(host: string | undefined): boolean {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(:[0-9]{1,5})?$/.exec(host?.trim() ?? '');
  if (match === null) return false;
  const name = (match[1] as string).toLowerCase().replace(/\.$/, '');
  return isEmulatorHost(name);
}

/** Raised when the emulator's port is taken. */
export class PortInUseError extends Error {
  constructor(readonly port: number) {
    // Not "QUEUE_URL to the running queue": another `npm start`'s own relay would share its messages.
    super(
      `port ${port} is already in use (another emulator or \`npm start\`?); set SQS_PORT to a free port (0: any), or QUEUE_URL to a queue of your own in that emulator, with its DLQ (recipe: docs/local.md, "A queue of your own in a running emulator"), not to another \`npm start\`'s queue, which its relay takes messages from too`,
    );
    this.name = 'PortInUseError';
  }
}

/** The parts of fauxqs's stores this module touches. */
interface SqsStoreInternals {
  /** The host queue URLs are built with; falsy means "the request's Host header". */
  host: string | undefined;
  /** Wakes every pending long poll (they answer empty). */
  shutdown(): void;
}
type StoreClass = new () => unknown;
type BuildAppStores = NonNullable<NonNullable<Parameters<typeof buildApp>[0]>['stores']>;

async function loadStoreClass(entryUrl: string, path: string, name: string): Promise<StoreClass> {
  const module = (await import(new URL(path, entryUrl).href)) as Record<string, unknown>;
  const store = module[name];
  if (typeof store !== 'function') throw new Error(`fauxqs has no ${name} at ${path}: this fauxqs version is not supported`);
  return store as StoreClass;
}

/** fauxqs's stores, with the SQS store naming queues after the request's host. */
async function createStores(): Promise<{ stores: BuildAppStores; sqsStore: SqsStoreInternals }> {
  const entryUrl = import.meta.resolve('fauxqs');
  const [SqsStore, SnsStore, S3Store] = await Promise.all([
    loadStoreClass(entryUrl, './sqs/sqsStore.js', 'SqsStore'),
    loadStoreClass(entryUrl, './sns/snsStore.js', 'SnsStore'),
    loadStoreClass(entryUrl, './s3/s3Store.js', 'S3Store'),
  ]);
  const sqsStore = new SqsStore() as SqsStoreInternals;
  if (!('host' in sqsStore) || typeof sqsStore.shutdown !== 'function') {
    throw new Error('fauxqs SqsStore has changed shape: this fauxqs version is not supported');
  }
  sqsStore.host = undefined;
  const stores = { sqsStore, snsStore: new SnsStore(), s3Store: new S3Store() } as unknown as BuildAppStores;
  return { stores, sqsStore };
}

/** Starts the emulator and creates the DLQ, then the main queue with its redrive policy. */
export async function startEmbeddedSqs(options: EmbeddedSqsOptions): Promise<EmbeddedSqs> {
  const { stores, sqsStore } = await createStores();
  const app = buildApp({ logger: false, defaultRegion: EMULATOR_REGION, stores });
  // Listening on 127.0.0.1 keeps other machines out, not a web page: a DNS-rebinding page (or a
  // proxy on this machine) reaches it under a name of its own. Every route (SQS, SNS, S3, the
  // inspection endpoints) answers only requests addressed to this machine by name.
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (isLocalHostHeader(request.headers.host)) return;
    await reply.status(403).header('content-type', 'text/plain; charset=utf-8').send(FOREIGN_HOST_REFUSAL);
  });
  // fauxqs hands form-encoded requests to its SNS router, whose answer to an SQS action is a bare
  // "Unknown action: SendMessage". An old SQS client gets a line naming the versions that work.
  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== 'POST' || !(request.headers['content-type'] ?? '').includes('application/x-www-form-urlencoded')) return;
    const action = (request.body as { Action?: unknown } | undefined)?.Action;
    if (typeof action !== 'string' || !SQS_ACTIONS.has(action)) return;
    await reply.status(400).header('content-type', 'text/xml').send(queryProtocolError(action));
  });
  try {
    // Loopback only: an emulator takes messages from anyone who can reach it, without credentials.
    await app.listen({ port: options.port, host: '127.0.0.1' });
  } catch (error) {
    await app.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError(options.port);
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    sqsStore.shutdown();
    await app.close();
  };
  // Queues are created through the API, so their URLs are built from the Host the SDK sends: the endpoint.
  const sqs = new SQSClient({ endpoint, region: EMULATOR_REGION, credentials: EMULATOR_CREDENTIALS });
  try {
    const fifo = options.queueName.endsWith(FIFO_SUFFIX);
    // Content-based deduplication lets a FIFO message be sent with a group id alone, as a demo should.
    const fifoAttributes: Record<string, string> = fifo ? { FifoQueue: 'true', ContentBasedDeduplication: 'true' } : {};
    const dlq = await createQueue(sqs, deadLetterQueueName(options.queueName), {
      ...fifoAttributes,
      MessageRetentionPeriod: String(14 * 24 * 3600),
    });
    const queue = await createQueue(sqs, options.queueName, {
      ...fifoAttributes,
      VisibilityTimeout: String(options.visibilityTimeoutSeconds),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: options.maxReceiveCount }),
    });
    return { endpoint, port, region: EMULATOR_REGION, queue, dlq, fifo, stop };
  } catch (error) {
    await stop();
    throw error;
  } finally {
    sqs.destroy();
  }
}

async function createQueue(sqs: SQSClient, name: string, attributes: Record<string, string>): Promise<EmulatedQueue> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (QueueUrl === undefined) throw new Error(`the emulator created ${name} without a URL`);
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new Error(`the emulator has no ARN for ${name}`);
  return { name, url: QueueUrl, arn };
}
