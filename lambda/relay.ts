/**
 * The relay: one SQS batch in, one POST per record out, and the batch response that tells
 * Lambda which records to leave on the queue. This module wires the pieces together; each
 * decision lives in its own module: one record's attempt (record-sender.ts, window-end.ts),
 * the batch loop (batch.ts), how records go back to the queue (batch-visibility.ts,
 * return-visibility.ts), and what the operator is told (batch-report.ts).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { runBatch } from './batch';
import { BatchReporter } from './batch-report';
import { BatchVisibility } from './batch-visibility';
import { CircuitBreaker } from './breaker';
import type { RelayConfig } from './config';
import { webhookConnector } from './connector';
import { RequestCredentials } from './credentials';
import { DeadLetterWriter } from './dead-letter';
import { Deadline } from './deadline';
import { DEFAULT_METRICS_NAMESPACE } from './metric-names';
import { OAuthTokens } from './oauth-tokens';
import { Pacer } from './pacer';
import { QueueDirectory } from './queues';
import { isFailure, type RecordOutcome } from './record-outcome';
import { MIN_REQUEST_TIME_MS, RecordSender } from './record-sender';
import { FUNCTION_SETTINGS } from './settings';
import { SqsGateway } from './sqs-gateway';
import { WebhookTransmitter } from './transmitter';
import { urlSecretsOf } from './url-rules';
import { WebhookTarget } from './webhook-target';
import { RetryWindowEnd } from './window-end';

/** The default service name of logs and metrics (`POWERTOOLS_SERVICE_NAME` overrides it). */
export const DEFAULT_SERVICE_NAME = FUNCTION_SETTINGS.POWERTOOLS_SERVICE_NAME.default;
/**
 * Of `DEADLINE_MARGIN_MS`, the SQS calls after the last request get all but a quarter, at most
 * this much, kept to log, publish metrics and return before the function's deadline.
 */
export const MAX_RETURN_RESERVE_MS = 200;
/** What the relay is built from; everything but the configuration has a production default. */
export interface RelayDependencies {
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** The SQS client; by default one built from the SDK's defaults (so `AWS_ENDPOINT_URL_SQS` works), on first use. */
  readonly sqs?: SQSClient;
  /** Jitter source. */
  readonly random?: () => number;
}

/** Raised for an event that is not an SQS batch: the one input the handler refuses outright. */
export class NotAnSqsEventError extends TypeError {
  constructor(detail: string) {
    super(`The event is not an SQS batch (${detail}); is the function wired to something other than an SQS event source?`);
    this.name = 'NotAnSqsEventError';
  }
}

function assertSqsEvent(event: unknown): asserts event is SQSEvent {
  if (typeof event !== 'object' || event === null) throw new NotAnSqsEventError(`got ${event === null ? 'null' : typeof event}`);
  const records = (event as { Records?: unknown }).Records;
  if (!Array.isArray(records)) throw new NotAnSqsEventError('no Records array');
  records.forEach((record: unknown, index) => {
    const r = record as Partial<SQSRecord> | null;
    if (
      typeof r !== 'object' ||
      r === null ||
      r.eventSource !== 'aws:sqs' ||
      typeof r.messageId !== 'string' ||
      typeof r.receiptHandle !== 'string' ||
      typeof r.eventSourceARN !== 'string'
    ) {
      throw new NotAnSqsEventError(`Records[${index}] is not an SQS record`);
    }
  });
}

/** Relays batches for one configuration. Long-lived: one per warm container. */
export class BatchRelay {
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  /** The webhook's URL (given, or read from Secrets Manager) and the connections to it. */
  private readonly target: WebhookTarget;
  private readonly sender: RecordSender;
  private readonly visibility: BatchVisibility;
  private readonly reporter: BatchReporter;

  constructor(
    private readonly config: RelayConfig,
    dependencies: RelayDependencies = {},
  ) {
    // Powertools prefers an explicit option over its environment variables; ours are only defaults.
    const serviceName = process.env.POWERTOOLS_SERVICE_NAME || DEFAULT_SERVICE_NAME;
    const logger = dependencies.logger ?? new Logger({ serviceName });
    const metrics =
      dependencies.metrics ??
      new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE || DEFAULT_METRICS_NAMESPACE, serviceName });
    this.logger = logger;
    this.metrics = metrics;
    const sqs = new SqsGateway(dependencies.sqs);
    const tokens = OAuthTokens.for(config, logger);
    const queues = new QueueDirectory(sqs, config.deadLetterQueueUrl);
    const breaker = new CircuitBreaker(config.breaker);
    const pacer = new Pacer(config.pacing);
    const credentials = new RequestCredentials(config, logger);
    // How the webhook is reached (connector.ts: a proxy, a client certificate, each when configured), for its URL.
    this.target = new WebhookTarget(
      config,
      (url) =>
        new WebhookTransmitter(url, config.maxConcurrency, {
          connector: webhookConnector({ ...config, webhookUrl: url }, logger),
          // An answer quoting the URL's secrets (a 404 echoing the path) must not carry them into a log or a dead letter.
          hiddenInAnswers: urlSecretsOf(url, config.webhookUrlSecret !== undefined),
        }),
      { logger },
    );
    // Made per copy, its SQS calls abandoned when `signal` aborts: copies are rare.
    const deadLettersUntil = (signal: AbortSignal): DeadLetterWriter =>
      new DeadLetterWriter(sqs.until(signal), queues.until(signal), logger);
    this.reporter = new BatchReporter(config.maxReceiveCount, { logger, metrics, breaker, pacer });
    this.visibility = new BatchVisibility(config, { sqs, queues, breaker, pacer, logger });
    const windowEnd = new RetryWindowEnd(config, { credentials, deadLettersUntil });
    this.sender = new RecordSender(config, {
      breaker,
      pacer,
      target: this.target,
      credentials,
      tokens,
      reporter: this.reporter,
      windowEnd,
      deadLettersUntil,
      random: dependencies.random ?? Math.random,
    });
  }

  /** The logger and metrics, for the middleware that flushes them. */
  get telemetry(): { logger: Logger; metrics: Metrics } {
    return { logger: this.logger, metrics: this.metrics };
  }

  /**
   * Relays one batch and returns the records to leave on the queue.
   * @throws {NotAnSqsEventError} only when the event is not an SQS batch
   */
  async relay(event: unknown, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse> {
    assertSqsEvent(event);
    const startedAt = Date.now();
    const records = event.Records;
    const margin = this.config.deadlineMarginMs;
    const deadlineAt = startedAt + context.getRemainingTimeInMillis();
    // Secret reads and dead-letter copies belong to the requests: they end where requests must,
    // so that the margin is left whole for the visibility changes of whatever they could not settle.
    const requestsEnd = new Deadline(deadlineAt - margin);
    const timeLeftForRequests = (): number => context.getRemainingTimeInMillis() - margin;
    /** Every request's latency, published once per batch (see latency.ts). */
    const latenciesMs: number[] = [];
    // One function for the batch, not one per record.
    const timeoutMs = (): number => Math.min(this.config.requestTimeoutMs, timeLeftForRequests());
    const bounds = { timeoutMs, longestTimeoutMs: timeoutMs(), latenciesMs, requestsEnd };
    const outcomes = await runBatch<RecordOutcome>(
      records,
      {
        concurrency: this.config.maxConcurrency,
        blocksGroup: isFailure,
        canStart: () => timeLeftForRequests() >= MIN_REQUEST_TIME_MS,
      },
      (record) => this.sender.attempt(record, bounds),
    );
    const sqsEnd = new Deadline(deadlineAt - Math.min(MAX_RETURN_RESERVE_MS, margin / 4));
    const visibility = await this.visibility.update(records, outcomes, startedAt, sqsEnd);
    // What the breaker held in earlier batches comes back as soon as it is closed again.
    await this.visibility.releaseHeldOnceClosed(records, sqsEnd);
    this.target.closeRetired();
    const batchItemFailures = records
      .filter((_, index) => isFailure(outcomes[index] as RecordOutcome))
      .map((record) => ({ itemIdentifier: record.messageId }));
    this.reporter.report({ records, outcomes, visibility, latenciesMs, startedAt });
    return { batchItemFailures };
  }

  /** Closes kept-alive webhook connections. */
  close(): void {
    this.target.close();
  }
}

/** The Lambda handler type of the relay. */
export type RelayHandler = middy.MiddyfiedHandler<SQSEvent, SQSBatchResponse, Error, Context>;

/**
 * Builds the middy-wrapped Lambda handler for `config`: Powertools' context injection for
 * logs and metrics flushing around {@link BatchRelay.relay}.
 */
export function createRelayHandler(config: RelayConfig, dependencies: RelayDependencies = {}): RelayHandler {
  const relay = new BatchRelay(config, dependencies);
  const { logger, metrics } = relay.telemetry;
  // timeoutEarlyInMillis 0: the relay keeps its own deadline margin and returns partial results;
  // middy's early timeout would instead throw and send the whole batch, delivered records too, back.
  return middy<SQSEvent, SQSBatchResponse, Error, Context>({ timeoutEarlyInMillis: 0 })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics))
    .handler((event, context) => relay.relay(event, context));
}
