/**
 * A real SQS wire protocol for end-to-end tests: `fauxqs` started in-process on a free port,
 * holding a main queue and a DLQ joined by a redrive policy, and the standard AWS environment
 * variables pointed at it, so code that builds its own `SQSClient` (the handler) finds it.
 */
import { randomUUID } from 'node:crypto';
import { type Message, ReceiveMessageCommand, SendMessageCommand, type MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { deadLetterQueueName, FIFO_SUFFIX } from '../lambda/sqs-util';
import { keepProtoNamedAttributes, RECEIVE_ALL_ATTRIBUTES, toSqsEvent } from '../local/event-source';

export interface QueueRef {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
}

export interface EmulatorOptions {
  readonly fifo?: boolean;
  readonly maxReceiveCount?: number;
  /** The main queue's default visibility timeout, seconds. */
  readonly visibilityTimeout?: number;
  /** Leave `process.env` alone (for tests that set the endpoint themselves). */
  readonly keepEnvironment?: boolean;
}

export interface Emulator {
  readonly server: FauxqsServer;
  readonly endpoint: string;
  readonly region: string;
  readonly sqs: SQSClient;
  readonly queue: QueueRef;
  readonly dlq: QueueRef;
  /** What a standalone relay (the daemon) is given to relay the main queue: its URL, this endpoint, region and credentials. */
  readonly daemonEnv: Readonly<Record<string, string>>;
  /** Sends one message to the main queue; returns its message id. */
  send(body: string, options?: { attributes?: Record<string, MessageAttributeValue>; groupId?: string }): Promise<string>;
  /** Receives up to `max` messages from a queue, as SQS returns them (all attributes). */
  receive(queue: QueueRef, max?: number, waitSeconds?: number): Promise<Message[]>;
  /** Receives from the main queue and shapes the messages as the event Lambda would send. */
  receiveEvent(max?: number, waitSeconds?: number): Promise<SQSEvent>;
  /** Messages of a queue by state, read without changing them. */
  counts(queue: QueueRef): { ready: number; inflight: number; delayed: number };
  /**
   * Every message of a queue, whatever its state, as the emulator holds it: read without changing
   * them, and without the AWS SDK's reader (which loses an attribute named `__proto__`).
   */
  messages(queue: QueueRef): { body: string; attributes: Record<string, MessageAttributeValue> }[];
  stop(): Promise<void>;
}

export const TEST_REGION = 'us-east-1';

/** Starts an emulator with a fresh queue pair; call `stop()` in `afterAll`. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const server = await startFauxqs({ port: 0, logger: false, defaultRegion: TEST_REGION });
  const name = `relay-${randomUUID().slice(0, 8)}${options.fifo === true ? FIFO_SUFFIX : ''}`;
  const fifoAttributes: Record<string, string> = options.fifo === true ? { FifoQueue: 'true' } : {};
  const dlqCreated = server.createQueue(deadLetterQueueName(name), { attributes: { ...fifoAttributes } });
  const queueCreated = server.createQueue(name, {
    attributes: {
      ...fifoAttributes,
      VisibilityTimeout: String(options.visibilityTimeout ?? 30),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqCreated.queueArn, maxReceiveCount: options.maxReceiveCount ?? 5 }),
    },
  });
  const queue: QueueRef = { name: queueCreated.queueName, url: queueCreated.queueUrl, arn: queueCreated.queueArn };
  const dlq: QueueRef = { name: dlqCreated.queueName, url: dlqCreated.queueUrl, arn: dlqCreated.queueArn };
  const endpoint = server.address;
  if (options.keepEnvironment !== true) {
    process.env.AWS_ENDPOINT_URL_SQS = endpoint;
    process.env.AWS_REGION = TEST_REGION;
    process.env.AWS_ACCESS_KEY_ID = 'test';
    process.env.AWS_SECRET_ACCESS_KEY = 'test';
  }
  const sqs = new SQSClient({ endpoint, region: TEST_REGION, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  // Received as the daemon receives: a `__proto__` attribute keeps its value.
  keepProtoNamedAttributes(sqs);
  const receive = async (from: QueueRef, max = 10, waitSeconds = 0): Promise<Message[]> => {
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: from.url, MaxNumberOfMessages: max, WaitTimeSeconds: waitSeconds, ...RECEIVE_ALL_ATTRIBUTES }),
    );
    return Messages ?? [];
  };
  return {
    server,
    endpoint,
    region: TEST_REGION,
    sqs,
    queue,
    dlq,
    daemonEnv: {
      QUEUE_URL: queue.url,
      AWS_ENDPOINT_URL_SQS: endpoint,
      AWS_REGION: TEST_REGION,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    },
    async send(body, sendOptions = {}) {
      const { MessageId } = await sqs.send(
        new SendMessageCommand({
          QueueUrl: queue.url,
          MessageBody: body,
          MessageAttributes: sendOptions.attributes,
          ...(options.fifo === true ? { MessageGroupId: sendOptions.groupId ?? 'default', MessageDeduplicationId: randomUUID() } : {}),
        }),
      );
      return MessageId ?? '';
    },
    receive,
    async receiveEvent(max = 10, waitSeconds = 0) {
      return toSqsEvent(await receive(queue, max, waitSeconds), queue.arn);
    },
    counts(of) {
      const state = server.inspectQueue(of.name);
      if (state === undefined) throw new Error(`no queue ${of.name}`);
      return { ready: state.messages.ready.length, inflight: state.messages.inflight.length, delayed: state.messages.delayed.length };
    },
    messages(of) {
      const state = server.inspectQueue(of.name);
      if (state === undefined) throw new Error(`no queue ${of.name}`);
      const { ready, delayed, inflight } = state.messages;
      return [...ready, ...delayed, ...inflight.map((held) => held.message)].map((message) => ({
        body: message.body,
        attributes: message.messageAttributes as Record<string, MessageAttributeValue>,
      }));
    },
    async stop() {
      sqs.destroy();
      await server.stop();
    },
  };
}
