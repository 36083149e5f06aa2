/**
 * The relay's only door to the SQS API. The SDK is loaded on the first call, not at cold start:
 * a batch that is all 2xx makes no SQS call (Lambda deletes the records itself), so most
 * invocations never pay for parsing and initialising it.
 */
import type {
  ChangeMessageVisibilityBatchCommandInput,
  ChangeMessageVisibilityBatchCommandOutput,
  SendMessageCommandInput,
  SendMessageCommandOutput,
  SQSClient,
} from '@aws-sdk/client-sqs';

type SqsModule = typeof import('@aws-sdk/client-sqs');

/** The SQS calls the relay makes. */
export class SqsGateway {
  private module: Promise<SqsModule> | undefined;
  private client: Promise<SQSClient> | undefined;

  /** @param injected a ready client (tests, the local runner); by default one from the SDK's defaults is built on first use */
  constructor(private readonly injected?: SQSClient) {}

  private load(): Promise<SqsModule> {
    this.module ??= import('@aws-sdk/client-sqs');
    return this.module;
  }

  private sqs(): Promise<SQSClient> {
    // useQueueUrlAsEndpoint false: the SDK would otherwise send each call to the host in the
    // queue URL, ignoring AWS_ENDPOINT_URL_SQS, and an emulator's URL host need not resolve.
    this.client ??= this.injected ? Promise.resolve(this.injected) : this.load().then(({ SQSClient }) => new SQSClient({ useQueueUrlAsEndpoint: false }));
    return this.client;
  }

  /** `GetQueueUrl`. */
  async getQueueUrl(queueName: string, ownerAccountId: string): Promise<string | undefined> {
    const [{ GetQueueUrlCommand }, sqs] = await Promise.all([this.load(), this.sqs()]);
    return (await sqs.send(new GetQueueUrlCommand({ QueueName: queueName, QueueOwnerAWSAccountId: ownerAccountId }))).QueueUrl;
  }

  /** `GetQueueAttributes` for one attribute. */
  async getQueueAttribute(queueUrl: string, name: 'RedrivePolicy'): Promise<string | undefined> {
    const [{ GetQueueAttributesCommand }, sqs] = await Promise.all([this.load(), this.sqs()]);
    return (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [name] }))).Attributes?.[name];
  }

  /** `ChangeMessageVisibilityBatch`. */
  async changeMessageVisibilityBatch(input: ChangeMessageVisibilityBatchCommandInput): Promise<ChangeMessageVisibilityBatchCommandOutput> {
    const [{ ChangeMessageVisibilityBatchCommand }, sqs] = await Promise.all([this.load(), this.sqs()]);
    return sqs.send(new ChangeMessageVisibilityBatchCommand(input));
  }

  /** `SendMessage`. */
  async sendMessage(input: SendMessageCommandInput): Promise<SendMessageCommandOutput> {
    const [{ SendMessageCommand }, sqs] = await Promise.all([this.load(), this.sqs()]);
    return sqs.send(new SendMessageCommand(input));
  }
}
