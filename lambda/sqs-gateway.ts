/**
 * The relay's only door to the SQS API. The SDK is loaded on the first call, not at cold start:
 * a batch that is all 2xx makes no SQS call (Lambda deletes the records itself), so most
 * invocations never pay for parsing and initialising it.
 *
 * Every call is bounded (see deadline.ts): the client built here has the SDK's request-handler
 * timeouts, and a gateway obtained with {@link SqsGateway.until} gives each call an abort signal,
 * so no call outlives the time the invocation gave it.
 */
import type {
  ChangeMessageVisibilityBatchCommandInput,
  ChangeMessageVisibilityBatchCommandOutput,
  SendMessageCommandInput,
  SendMessageCommandOutput,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { AWS_REQUEST_HANDLER_OPTIONS, beforeDeadline } from './deadline';

type SqsModule = typeof import('@aws-sdk/client-sqs');

/** The module and client, loaded once and shared by a gateway and every view of it. */
class SqsConnection {
  private module: Promise<SqsModule> | undefined;
  private client: Promise<SQSClient> | undefined;

  constructor(private readonly injected: SQSClient | undefined) {}

  load(): Promise<SqsModule> {
    this.module ??= import('@aws-sdk/client-sqs');
    return this.module;
  }

  sqs(): Promise<SQSClient> {
    // useQueueUrlAsEndpoint false: the SDK would otherwise send each call to the host in the
    // queue URL, ignoring AWS_ENDPOINT_URL_SQS, and an emulator's URL host need not resolve.
    this.client ??= this.injected
      ? Promise.resolve(this.injected)
      : this.load().then(
          ({ SQSClient }) => new SQSClient({ useQueueUrlAsEndpoint: false, requestHandler: { ...AWS_REQUEST_HANDLER_OPTIONS } }),
        );
    return this.client;
  }
}

/** The SQS calls the relay makes. */
export class SqsGateway {
  private readonly connection: SqsConnection;

  /**
   * @param injected a ready client (tests, the local runner), or the gateway whose client to share (see {@link until});
   *   by default one from the SDK's defaults (and the relay's timeouts) is built on first use
   * @param signal when it aborts, the calls of this gateway in flight are abandoned and new ones fail at once
   */
  constructor(
    injected?: SQSClient | SqsGateway,
    private readonly signal?: AbortSignal,
  ) {
    this.connection = injected instanceof SqsGateway ? injected.connection : new SqsConnection(injected);
  }

  /** This gateway (same client) with its calls bounded by `signal`. */
  until(signal: AbortSignal): SqsGateway {
    return new SqsGateway(this, signal);
  }

  /** Runs one call with the module and client, bounded by this gateway's signal. */
  private call<T>(
    action: string,
    run: (module: SqsModule, sqs: SQSClient, options: { abortSignal?: AbortSignal }) => Promise<T>,
  ): Promise<T> {
    return beforeDeadline(action, this.signal, async (abortSignal) => {
      const [module, sqs] = await Promise.all([this.connection.load(), this.connection.sqs()]);
      return run(module, sqs, abortSignal === undefined ? {} : { abortSignal });
    });
  }

  /** `GetQueueUrl`. */
  getQueueUrl(queueName: string, ownerAccountId: string): Promise<string | undefined> {
    return this.call('GetQueueUrl', async ({ GetQueueUrlCommand }, sqs, options) => {
      return (await sqs.send(new GetQueueUrlCommand({ QueueName: queueName, QueueOwnerAWSAccountId: ownerAccountId }), options)).QueueUrl;
    });
  }

  /** `GetQueueAttributes` for one attribute. */
  getQueueAttribute(queueUrl: string, name: 'RedrivePolicy'): Promise<string | undefined> {
    return this.call('GetQueueAttributes', async ({ GetQueueAttributesCommand }, sqs, options) => {
      return (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [name] }), options)).Attributes?.[name];
    });
  }

  /** `ChangeMessageVisibilityBatch`. */
  changeMessageVisibilityBatch(input: ChangeMessageVisibilityBatchCommandInput): Promise<ChangeMessageVisibilityBatchCommandOutput> {
    return this.call('ChangeMessageVisibilityBatch', ({ ChangeMessageVisibilityBatchCommand }, sqs, options) =>
      sqs.send(new ChangeMessageVisibilityBatchCommand(input), options),
    );
  }

  /** `SendMessage`. */
  sendMessage(input: SendMessageCommandInput): Promise<SendMessageCommandOutput> {
    return this.call('SendMessage', ({ SendMessageCommand }, sqs, options) => sqs.send(new SendMessageCommand(input), options));
  }
}
