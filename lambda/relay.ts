/**
 * The relay: one SQS batch in, one POST per record out, and the batch response that tells
 * Lambda which records to leave on the queue. This module wires the small pieces together;
 * each decision lives in its own module (request building, classification, retry timing,
 * visibility updates, dead-lettering, the batch loop).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type NotAttempted, receiveCountOf, runBatch } from './batch';
import { type BreakerTransition, CircuitBreaker, countedHoldSeconds, isServerFailure } from './breaker';
import { classify } from './classify';
import { checkAuthorizationValue, type RelayConfig } from './config';
import { webhookConnector } from './connector';
import { type DeadLetterCause, DeadLetterWriter } from './dead-letter';
import { deadLettersByCause, publishDeadLettersByCause } from './dead-letter-metrics';
import { Deadline } from './deadline';
import { latencySample } from './latency';
import { OAuthTokens, tokenRetry } from './oauth-tokens';
import { type HeldRecord, HeldRecords, RELEASE_MARGIN_MS } from './held-records';
import { DEFAULT_METRICS_NAMESPACE, METRIC_NAMES } from './metric-names';
import { QueueDirectory } from './queues';
import { buildDeliveryRequest, type DeliveryRequest, idempotencyKeyOf } from './request';
import { backoffDelay } from './retry-timing';
import { CachedSecret } from './secrets';
import { parseSigningKeys, signDelivery } from './signing';
import { FUNCTION_SETTINGS } from './settings';
import { SqsGateway } from './sqs-gateway';
import { errorText } from './sqs-util';
import { WebhookTransmitter } from './transmitter';
import { WebhookTarget } from './webhook-target';
import type { PaceSnapshot } from './pace';
import { Pacer, paceKeyOf, paceSignalOf } from './pacer';
import { quotaOf } from './rate-limit-headers';
import { returnVisibility } from './return-visibility';
import { windowStartOf } from './retry-window';
import { type FailedVisibilityChange, type VisibilityChange, VisibilityUpdater } from './visibility';

/** The default service name of logs and metrics (`POWERTOOLS_SERVICE_NAME` overrides it). */
export const DEFAULT_SERVICE_NAME = FUNCTION_SETTINGS.POWERTOOLS_SERVICE_NAME.default;
/** No request starts with less than this left before the deadline margin: it could not finish. */
export const MIN_REQUEST_TIME_MS = 100;
/**
 * Of `DEADLINE_MARGIN_MS`, the SQS calls after the last request get all but a quarter, at most
 * this much, kept to log, publish metrics and return before the function's deadline.
 */
export const MAX_RETURN_RESERVE_MS = 200;
/** The dead-letter reason's `response` for a record past its window that the open breaker kept from being sent. */
const HELD_BY_BREAKER = 'not sent: the circuit breaker is open (the webhook looks down)';
/** … and for one the endpoint's hold kept (the webhook's refusals asked for a pause). */
const HELD_BY_ENDPOINT = "not sent: the webhook's refusals put the whole endpoint on hold (Retry-After)";

/** A record that went out and came to a conclusion. */
export type AttemptOutcome =
  | { readonly kind: 'delivered'; readonly status: number }
  | {
      readonly kind: 'dead-lettered';
      readonly status: number;
      readonly response: string;
      readonly cause: DeadLetterCause;
    }
  | {
      readonly kind: 'retry';
      /** Seconds until SQS should hand the message back; `undefined` keeps the queue's default. */
      readonly delaySeconds: number | undefined;
      /** Whether the delay is the webhook's own `Retry-After` (honoured even past the retry window). */
      readonly delaySource: 'retry-after' | 'backoff';
      readonly status?: number;
      /** The start of the webhook's response. */
      readonly response?: string;
      readonly error?: string;
      /** A failure the breaker counts (see `isServerFailure`): while it is open, parked at least for its hold. */
      readonly outage?: boolean;
    }
  /** Not sent: the circuit breaker is open. Comes back after the breaker's hold. */
  | { readonly kind: 'held'; readonly delaySeconds: number; readonly error?: string };

/** What happened to one record of a batch. */
export type RecordOutcome = AttemptOutcome | NotAttempted;

/** What the batch's visibility changes did: those not made, the records on their last attempt, and each record's visibility. */
interface VisibilityGiven {
  readonly failures: readonly FailedVisibilityChange[];
  readonly lastInWindow: ReadonlySet<string>;
  /** The visibility timeout (seconds) each record was handed back with, by message id. */
  readonly secondsById: ReadonlyMap<string, number>;
}

/** True when the record must go back to the queue (it is in `batchItemFailures`). */
export function isFailure(outcome: RecordOutcome): boolean {
  return outcome.kind === 'retry' || outcome.kind === 'not-attempted' || outcome.kind === 'held';
}

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

/** The secrets a request carries: its signing keys and `Authorization` value, each when configured. */
interface Credentials {
  readonly signingKeys: readonly Buffer[] | undefined;
  readonly authorization: string | undefined;
}

/** Adds the Standard Webhooks signature and `Authorization` to the request's (own, fresh) headers. */
function addCredentials(request: DeliveryRequest, { signingKeys, authorization }: Credentials): void {
  const { headers } = request;
  if (signingKeys !== undefined) {
    const signature = signDelivery(signingKeys, request.id, Math.floor(Date.now() / 1000), request.body);
    headers.push(
      'webhook-id',
      signature['webhook-id'],
      'webhook-timestamp',
      signature['webhook-timestamp'],
      'webhook-signature',
      signature['webhook-signature'],
    );
  }
  if (authorization !== undefined) headers.push('Authorization', authorization);
}

/** Relays batches for one configuration. Long-lived: one per warm container. */
export class BatchRelay {
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  private readonly random: () => number;
  /** The webhook's URL (given, or read from Secrets Manager) and the connections to it. */
  private readonly target: WebhookTarget;
  private readonly sqs: SqsGateway;
  private readonly queues: QueueDirectory;
  private readonly signingKeys: CachedSecret<Buffer[]> | undefined;
  private readonly authorization: CachedSecret<string> | undefined;
  /** OAuth 2.0 client credentials (oauth-tokens.ts), when `OAUTH_TOKEN_URL` is set. */
  private readonly tokens: OAuthTokens | undefined;
  private readonly breaker: CircuitBreaker;
  /** The records the breaker held back in earlier batches, released when it closes. */
  private readonly held = new HeldRecords();
  private readonly pacer: Pacer;
  /** The requests-per-second limit the last pace line announced (`Infinity`: unpaced). */
  private announcedRate = Number.POSITIVE_INFINITY;
  /** What {@link cachedCredentials} returned last. */
  private lastCredentials: Credentials | undefined;

  constructor(
    private readonly config: RelayConfig,
    dependencies: RelayDependencies = {},
  ) {
    // Powertools prefers an explicit option over its environment variables; ours are only defaults.
    const serviceName = process.env.POWERTOOLS_SERVICE_NAME || DEFAULT_SERVICE_NAME;
    this.logger = dependencies.logger ?? new Logger({ serviceName });
    this.metrics =
      dependencies.metrics ??
      new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE || DEFAULT_METRICS_NAMESPACE, serviceName });
    this.random = dependencies.random ?? Math.random;
    this.sqs = new SqsGateway(dependencies.sqs);
    this.tokens = OAuthTokens.for(config, this.logger);
    this.queues = new QueueDirectory(this.sqs, config.deadLetterQueueUrl);
    this.breaker = new CircuitBreaker(config.breaker);
    this.pacer = new Pacer(config.pacing);
    const refresh = config.secretsRefreshSeconds;
    const secretOptions = { logger: this.logger };
    this.signingKeys =
      config.signingSecret && new CachedSecret(config.signingSecret, 'signing secret', parseSigningKeys, refresh, secretOptions);
    this.authorization =
      config.authorization &&
      new CachedSecret(config.authorization, 'Authorization secret', checkAuthorizationValue, refresh, secretOptions);
    // How the webhook is reached (connector.ts: a proxy, a client certificate, each when configured), for its URL.
    this.target = new WebhookTarget(
      config,
      (url) =>
        new WebhookTransmitter(url, config.maxConcurrency, { connector: webhookConnector({ ...config, webhookUrl: url }, this.logger) }),
      secretOptions,
    );
  }

  /** The dead-letter writer whose SQS calls are abandoned when `signal` aborts (made per copy: copies are rare). */
  private deadLettersUntil(signal: AbortSignal): DeadLetterWriter {
    return new DeadLetterWriter(this.sqs.until(signal), this.queues.until(signal), this.logger);
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
    const requestTimeoutMs = (): number => Math.min(this.config.requestTimeoutMs, timeLeftForRequests());
    const outcomes = await runBatch<RecordOutcome>(
      records,
      {
        concurrency: this.config.maxConcurrency,
        blocksGroup: isFailure,
        canStart: () => timeLeftForRequests() >= MIN_REQUEST_TIME_MS,
      },
      (record) => this.attempt(record, requestTimeoutMs, latenciesMs, requestsEnd),
    );
    const sqsEnd = new Deadline(deadlineAt - Math.min(MAX_RETURN_RESERVE_MS, margin / 4));
    const visibility = await this.updateVisibility(records, outcomes, startedAt, sqsEnd);
    // What the breaker held in earlier batches comes back as soon as it is closed again.
    if (this.held.size > 0 && this.breaker.openSeconds(Date.now()) === undefined) await this.releaseHeld(records, sqsEnd);
    this.target.closeRetired();
    const batchItemFailures = records
      .filter((_, index) => isFailure(outcomes[index] as RecordOutcome))
      .map((record) => ({ itemIdentifier: record.messageId }));
    this.report(records, outcomes, visibility, latenciesMs, startedAt);
    return { batchItemFailures };
  }

  /**
   * The outcome as it stands or, for a record still failing past its retry window, its
   * dead-lettering. Synchronous but for that: no extra promise per record.
   */
  private ended(record: SQSRecord, outcome: AttemptOutcome, requestsEnd: Deadline): AttemptOutcome | Promise<AttemptOutcome> {
    if ((outcome.kind !== 'retry' && outcome.kind !== 'held') || !this.pastWindow(record)) return outcome;
    return this.giveUp(record, outcome, requestsEnd);
  }

  /** Whether `record`'s retry window is on and over. */
  private pastWindow(record: SQSRecord): boolean {
    if (this.config.retryWindowSeconds === 0) return false;
    const now = Date.now();
    return now >= windowStartOf(record, now) + this.config.retryWindowSeconds * 1000;
  }

  /**
   * A record the pace kept from being sent: handed back (for the endpoint's hold, if one is on) or, when the hold
   * kept it past its retry window, dead-lettered like a record failing there. If the copy fails, it is handed back.
   */
  private async unsent(record: SQSRecord, requestsEnd: Deadline, key: string | undefined): Promise<AttemptOutcome | NotAttempted> {
    const paced: NotAttempted = { kind: 'not-attempted', reason: 'paced', delaySeconds: this.pacer.retryInSeconds(key) };
    if (this.pacer.retryInSeconds() === 0 || !this.pastWindow(record)) return paced;
    const given = await this.giveUp(record, { kind: 'held', delaySeconds: 0 }, requestsEnd, HELD_BY_ENDPOINT);
    return given.kind === 'dead-lettered' ? given : paced;
  }

  /**
   * Dead-letters a record whose failures outlasted its retry window, its reason naming the
   * attempts (its receive count) and the last answer. If the copy fails, the record is returned as it was.
   * @param heldBy for a record held unsent, what held it (the reason's `response`)
   */
  private async giveUp(
    record: SQSRecord,
    outcome: Extract<AttemptOutcome, { kind: 'retry' | 'held' }>,
    requestsEnd: Deadline,
    heldBy: string = HELD_BY_BREAKER,
  ): Promise<AttemptOutcome> {
    const status = outcome.kind === 'retry' ? (outcome.status ?? 0) : 0;
    const response = outcome.kind === 'held' ? heldBy : (outcome.response ?? outcome.error ?? '');
    try {
      const credentials = this.cachedCredentials() ?? (await this.fetchCredentials(requestsEnd.signal));
      const id = idempotencyKeyOf(record, credentials.signingKeys);
      const copied = await this.deadLettersUntil(requestsEnd.signal).send(record, status, response, {
        originalId: id,
        signingKeys: credentials.signingKeys,
        cause: 'retry window exhausted',
      });
      if (copied.ok) return { kind: 'dead-lettered', status, response, cause: 'retry window exhausted' };
      return { ...outcome, error: `retry window exhausted, but the dead-letter copy failed: ${copied.error}` };
    } catch (error) {
      return { ...outcome, error: `retry window exhausted, but the dead-letter copy failed: ${errorText(error)}` };
    }
  }

  /**
   * One record: ask the breaker and the pacer, build, send once, classify, and dead-letter it if
   * the webhook refused it for good or it is still failing past its retry window. A refusal's
   * `Retry-After` is never waited out here but handed to SQS as the record's visibility: each
   * attempt is a receive, and `X-Carrier-Receive-Count` counts attempts. Never throws.
   * @param timeoutMs the request's timeout as of now (it shrinks while waiting on a probe)
   * @param latenciesMs the batch's request latencies, to which this one's is added
   * @param requestsEnd when requests, secret reads and dead-letter copies are abandoned (the record is then retried)
   */
  private async attempt(
    record: SQSRecord,
    timeoutMs: () => number,
    latenciesMs: number[],
    requestsEnd: Deadline,
  ): Promise<AttemptOutcome | NotAttempted> {
    const attempt = receiveCountOf(record);
    let permit = this.breaker.permit(Date.now());
    while (permit === 'wait') {
      await this.breaker.probeSettled();
      permit = this.breaker.permit(Date.now());
    }
    if (permit === 'hold')
      return this.ended(record, { kind: 'held', delaySeconds: this.breakerHoldSeconds(record, Date.now()) }, requestsEnd);
    let judged = false;
    let paced = false;
    const key = this.config.paceKey === undefined ? undefined : paceKeyOf(record, this.config.paceKey);
    try {
      // Awaited only when a secret is not in memory: an await per record costs more than the check.
      // Before the request is built: the signing keys vouch for a redriven copy's original id.
      const credentials = this.cachedCredentials() ?? (await this.fetchCredentials(requestsEnd.signal));
      const target = this.target.peek() ?? (await this.target.get(requestsEnd.signal));
      const request = buildDeliveryRequest(record, target.config, credentials.signingKeys);
      this.warnAboutRequest(record, request);
      addCredentials(request, credentials);
      // OAuth (oauth-tokens.ts): the container's token; when none can be had the record is retried, never for its own fault.
      const token = this.tokens && (this.tokens.peek() ?? (await this.tokens.get(requestsEnd.signal)));
      if (token?.kind === 'unavailable') return tokenRetry(token, this.backoff(attempt));
      if (token !== undefined) request.headers.push('Authorization', token.header);
      const slot = this.pacer.acquire(requestsEnd.at - MIN_REQUEST_TIME_MS, key);
      if (slot !== true && !(await slot)) return this.unsent(record, requestsEnd, key);
      paced = true;
      // Worked out once (each call reads the clock), after any wait: on a probe, a secret, the pace.
      const requestTimeoutMs = timeoutMs();
      if (requestTimeoutMs < MIN_REQUEST_TIME_MS) return { kind: 'not-attempted', reason: 'deadline' };
      // OAuth: a 401 renews the token and resends once, on this attempt.
      const sent =
        token === undefined || this.tokens === undefined
          ? await target.transmitter.post(request.headers, request.body, requestTimeoutMs)
          : await this.tokens.send(token, request, target.transmitter, {
              firstTimeoutMs: requestTimeoutMs,
              timeoutNow: timeoutMs,
              minimumMs: MIN_REQUEST_TIME_MS,
              signal: requestsEnd.signal,
            });
      if (sent.kind === 'unavailable') return tokenRetry(sent, this.backoff(attempt));
      const result = sent;
      latenciesMs.push(Math.round(result.latencyMs));
      judged = true;
      const answeredAt = Date.now();
      this.announce(this.breaker.record(result, permit === 'probe', answeredAt));
      const verdict = classify(result, this.config, attempt, answeredAt, this.random);
      this.pacer.release(
        {
          signal: paceSignalOf(result),
          latencyMs: result.latencyMs,
          retryAfterSeconds: verdict.kind === 'retry' && verdict.delaySource === 'retry-after' ? verdict.delaySeconds : undefined,
          messageId: record.messageId,
          // Read only when the answer carried rate-limit headers: most carry none, and cost nothing here.
          quota: result.kind === 'response' && result.rateLimit !== undefined ? quotaOf(result.rateLimit, answeredAt) : undefined,
        },
        key,
        answeredAt,
      );
      paced = false;
      const outage = isServerFailure(result);
      if (result.kind === 'transport-error') {
        const retry: AttemptOutcome = {
          kind: 'retry',
          delaySeconds: verdict.kind === 'retry' ? verdict.delaySeconds : undefined,
          delaySource: 'backoff',
          error: `${result.error}: ${result.message}`,
          outage,
        };
        return this.ended(record, retry, requestsEnd);
      }
      const { status } = result;
      if (verdict.kind === 'delivered') return { kind: 'delivered', status };
      if (verdict.kind === 'retry') {
        const retry: AttemptOutcome = {
          kind: 'retry',
          delaySeconds: verdict.delaySeconds,
          delaySource: verdict.delaySource,
          status,
          response: result.excerpt,
          outage,
        };
        return this.ended(record, retry, requestsEnd);
      }
      // A copy abandoned at the deadline leaves the original to be retried, never acknowledged without it.
      const copied = await this.deadLettersUntil(requestsEnd.signal).send(record, status, result.excerpt, {
        originalId: request.id,
        signingKeys: credentials.signingKeys,
      });
      if (copied.ok) return { kind: 'dead-lettered', status, response: result.excerpt, cause: 'refused permanently' };
      return {
        kind: 'retry',
        delaySeconds: this.backoff(attempt),
        delaySource: 'backoff',
        status,
        error: `dead-letter copy failed, will retry: ${copied.error}`,
      };
    } catch (error) {
      const retry: AttemptOutcome = { kind: 'retry', delaySeconds: this.backoff(attempt), delaySource: 'backoff', error: errorText(error) };
      return this.ended(record, retry, requestsEnd);
    } finally {
      // A slot taken for a request that never went (an error building or sending it) is given back without a verdict.
      if (paced) this.pacer.giveBack(key);
      // A probe that never reached the webhook must not leave the others waiting on it.
      if (permit === 'probe' && !judged) this.breaker.abandonProbe(Date.now());
    }
  }

  /** The WARN lines about what the request could not carry as the message asked. */
  private warnAboutRequest(record: SQSRecord, request: DeliveryRequest): void {
    for (const skipped of request.skippedAttributes) {
      this.logger.warn('Message attribute not sent as a header', {
        messageId: record.messageId,
        attribute: skipped.name,
        reason: skipped.reason,
      });
    }
    if (request.ignoredOriginalId !== undefined) {
      this.logger.warn('Claimed original message id ignored: the webhook sees the SQS id', {
        messageId: record.messageId,
        claimedOriginalId: request.ignoredOriginalId.claimed,
        reason: request.ignoredOriginalId.reason,
      });
    }
  }

  /** One WARN line when the breaker opens, one INFO when it closes. */
  private announce(transition: BreakerTransition | undefined): void {
    if (transition?.kind === 'opened') {
      this.logger.warn('Webhook looks down: circuit breaker opened; holding records back', { ...transition });
    } else if (transition?.kind === 'reopened') {
      this.logger.info('Circuit breaker probe failed; still open', { ...transition });
    } else if (transition?.kind === 'closed') {
      this.logger.info('Webhook answered again: circuit breaker closed', { ...transition });
      this.metrics.addMetric(METRIC_NAMES.breakerOpenSeconds, MetricUnit.Seconds, transition.openSeconds);
    }
  }

  /** One INFO line when the pace has changed by more than half since the last one (or since start). */
  private announcePace(pace: PaceSnapshot): void {
    const rate = pace.requestsPerSecond ?? Number.POSITIVE_INFINITY;
    const was = this.announcedRate;
    if (rate === was || (rate > was * 0.5 && rate < was * 1.5)) return;
    this.announcedRate = rate;
    this.logger.info(rate < was ? 'Webhook asked to slow down: pace lowered' : 'Webhook keeping up: pace raised', {
      requestsPerSecond: pace.requestsPerSecond === undefined ? 'unlimited' : Math.round(pace.requestsPerSecond * 10) / 10,
      inFlightLimit: pace.inFlightLimit,
      previousRequestsPerSecond: was === Number.POSITIVE_INFINITY ? 'unlimited' : Math.round(was * 10) / 10,
    });
  }

  /** The secrets every request carries, if all are in memory and current; `undefined` if one must be fetched. */
  private cachedCredentials(): Credentials | undefined {
    const signingKeys = this.signingKeys?.peek();
    const authorization = this.authorization?.peek();
    if ((this.signingKeys !== undefined && signingKeys === undefined) || (this.authorization !== undefined && authorization === undefined))
      return undefined;
    // The same secrets as the last record's, almost always: their object again rather than a new one per record.
    const last = this.lastCredentials;
    if (last !== undefined && last.signingKeys === signingKeys && last.authorization === authorization) return last;
    this.lastCredentials = { signingKeys, authorization };
    return this.lastCredentials;
  }

  /** The secrets every request carries, fetched where not cached; `signal` abandons the reads. */
  private async fetchCredentials(signal: AbortSignal): Promise<Credentials> {
    const [signingKeys, authorization] = await Promise.all([this.signingKeys?.get(signal), this.authorization?.get(signal)]);
    return { signingKeys, authorization };
  }

  private backoff(receiveCount: number): number | undefined {
    return backoffDelay(this.config.backoff, receiveCount, this.random);
  }

  /**
   * Sets the visibility of every record going back to the queue, as return-visibility.ts decides it, and remembers
   * the breaker's holds, to be released when it closes.
   * Calls (and the queue URL lookups they need) still in flight at `sqsEnd` are abandoned: their
   * records are returned all the same and come back after the queue's default visibility timeout.
   */
  private async updateVisibility(
    records: readonly SQSRecord[],
    outcomes: readonly RecordOutcome[],
    startedAt: number,
    sqsEnd: Deadline,
  ): Promise<VisibilityGiven> {
    const now = Date.now();
    const elapsedSeconds = (now - startedAt) / 1000;
    const breakerOpen = this.breaker.openSeconds(now) !== undefined;
    const windowSeconds = this.config.retryWindowSeconds;
    const endpointHoldSeconds = this.pacer.retryInSeconds();
    const lastInWindow = new Set<string>();
    const byQueue = new Map<string, VisibilityChange[]>();
    const secondsById = new Map<string, number>();
    const holds: HeldRecord[] = [];
    records.forEach((record, index) => {
      const outcome = outcomes[index] as RecordOutcome;
      if (!isFailure(outcome)) return;
      const window =
        windowSeconds > 0
          ? {
              timeLeftSeconds: (windowStartOf(record, now) + windowSeconds * 1000 - now) / 1000,
              receiveCount: receiveCountOf(record),
              maxReceiveCount: this.config.maxReceiveCount,
            }
          : undefined;
      const breakerHoldSeconds = breakerOpen ? this.breakerHoldSeconds(record, now) : undefined;
      const decided = returnVisibility(outcome, { breakerHoldSeconds, endpointHoldSeconds, window, elapsedSeconds });
      if (decided.lastInWindow) lastInWindow.add(record.messageId);
      const { visibilitySeconds } = decided;
      if (visibilitySeconds === undefined) return;
      const { messageId, receiptHandle, eventSourceARN: queueArn } = record;
      const changes = byQueue.get(queueArn) ?? [];
      changes.push({ messageId, receiptHandle, visibilitySeconds });
      byQueue.set(queueArn, changes);
      secondsById.set(messageId, visibilitySeconds);
      if (decided.breakerHold) {
        holds.push({
          queueArn,
          messageId,
          receiptHandle,
          untilMs: now + visibilitySeconds * 1000,
          earliestMs: now + decided.releaseFloorSeconds * 1000,
        });
      }
    });
    if (byQueue.size === 0) return { failures: [], lastInWindow, secondsById };
    const failures = await this.applyVisibility(byQueue, sqsEnd);
    if (holds.length > 0) {
      const unchanged = new Set(failures.map((failure) => failure.messageId));
      const held = holds.filter((hold) => !unchanged.has(hold.messageId));
      this.held.remember(held, now);
    }
    return { failures, lastInWindow, secondsById };
  }

  /**
   * How long the open breaker holds `record` back, seconds: its hold as of now or, under SQS's count semantics (the
   * window off: every hold spends one of the record's receives), at least the hold its receive count calls for.
   */
  private breakerHoldSeconds(record: SQSRecord, nowMs: number): number {
    const hold = this.breaker.holdSeconds(nowMs);
    if (this.config.retryWindowSeconds > 0) return hold;
    return Math.max(hold, countedHoldSeconds(this.config.breaker, receiveCountOf(record)));
  }

  /**
   * Releases the records the breaker held back in earlier batches (see held-records.ts), but for `records`, the
   * batch's own: their visibility set to 0 (or to what is left of their window's spacing), the calls abandoned at
   * `sqsEnd` or {@link RELEASE_MARGIN_MS} after they start. A handle SQS no longer takes (the message deleted, or
   * received again) is dropped: not the batch's error.
   */
  private async releaseHeld(records: readonly SQSRecord[], sqsEnd: Deadline): Promise<void> {
    const now = Date.now();
    const byQueue = this.held.takeReleasable(now, new Set(records.map((record) => record.messageId)));
    if (byQueue.size === 0) return;
    const failures = await this.applyVisibility(byQueue, new Deadline(Math.min(sqsEnd.at, now + RELEASE_MARGIN_MS)));
    for (const failure of failures) {
      this.logger.debug('Held record not released; it comes back when its hold ends', {
        messageId: failure.messageId,
        error: failure.reason,
      });
    }
    const released = [...byQueue.values()].reduce((count, changes) => count + changes.length, 0) - failures.length;
    this.logger.info('Records held by the circuit breaker released', { released, notReleased: failures.length });
  }

  /**
   * Applies visibility changes, per source queue ARN, and resolves (never rejects) with those not made. Calls and
   * queue URL lookups still in flight at `deadline` are abandoned.
   */
  private async applyVisibility(
    byQueue: ReadonlyMap<string, readonly VisibilityChange[]>,
    deadline: Deadline,
  ): Promise<FailedVisibilityChange[]> {
    const queues = this.queues.until(deadline.signal);
    const visibility = new VisibilityUpdater(this.sqs.until(deadline.signal));
    const results = await Promise.all(
      [...byQueue].map(async ([queueArn, changes]) => {
        try {
          return await visibility.apply(await queues.urlOf(queueArn), changes);
        } catch (error) {
          const reason = `queue URL lookup failed: ${errorText(error)}`;
          return changes.map((change) => ({ messageId: change.messageId, reason }));
        }
      }),
    );
    return results.flat();
  }

  /** The per-record lines for records not delivered, the batch summary line, and the counters. */
  private report(
    records: readonly SQSRecord[],
    outcomes: readonly RecordOutcome[],
    visibility: VisibilityGiven,
    latenciesMs: readonly number[],
    startedAt: number,
  ): void {
    const { failures: visibilityFailures, lastInWindow } = visibility;
    const failedVisibility = new Map(visibilityFailures.map((failure) => [failure.messageId, failure.reason]));
    const counts = { delivered: 0, retried: 0, deadLettered: 0, notAttempted: 0, held: 0 };
    records.forEach((record, index) => {
      const outcome = outcomes[index] as RecordOutcome;
      if (outcome.kind === 'delivered') {
        counts.delivered += 1;
        return;
      }
      const receiveCount = receiveCountOf(record);
      const line: Record<string, unknown> = { messageId: record.messageId, outcome: outcome.kind, receiveCount };
      if (outcome.kind === 'dead-lettered') {
        counts.deadLettered += 1;
        Object.assign(line, { status: outcome.status, response: outcome.response, attempts: receiveCount });
        this.logger.warn(
          outcome.cause === 'retry window exhausted'
            ? 'Message dead-lettered: still failing at the end of its retry window'
            : 'Message dead-lettered: the webhook refused it permanently',
          line,
        );
        return;
      }
      if (outcome.kind === 'retry') {
        counts.retried += 1;
        Object.assign(line, { status: outcome.status, delaySeconds: outcome.delaySeconds, error: outcome.error });
      } else if (outcome.kind === 'held') {
        counts.held += 1;
        Object.assign(line, { reason: 'circuit breaker open', delaySeconds: outcome.delaySeconds, error: outcome.error });
      } else {
        counts.notAttempted += 1;
        Object.assign(line, { reason: outcome.reason });
      }
      const visibilityError = failedVisibility.get(record.messageId);
      if (visibilityError !== undefined) line.visibilityError = visibilityError;
      // The delay really given (window spacing, breaker holds and SQS's limits applied), which
      // may differ from the delaySeconds the webhook or the backoff asked for.
      else if (visibility.secondsById.has(record.messageId)) line.visibilitySeconds = visibility.secondsById.get(record.messageId);
      if (lastInWindow.has(record.messageId)) {
        this.logger.warn('Message not delivered; its next attempt is the last in its retry window', line);
      } else if (receiveCount >= this.config.maxReceiveCount) {
        this.logger.warn('Message not delivered on its last receive: SQS moves it to the dead-letter queue next', line);
      } else if (outcome.kind === 'held') {
        // During an outage every record of every batch is held: one line each at INFO would
        // flood the logs; the batch line counts them and the breaker's WARN says why.
        this.logger.debug('Message held back: circuit breaker open', line);
      } else {
        this.logger.info('Message not delivered; returned to the queue', line);
      }
    });
    for (const failure of visibilityFailures) {
      this.logger.error('Visibility change failed; SQS will use the queue default', {
        messageId: failure.messageId,
        error: failure.reason,
      });
    }
    this.metrics.addMetric(METRIC_NAMES.delivered, MetricUnit.Count, counts.delivered);
    this.metrics.addMetric(METRIC_NAMES.retried, MetricUnit.Count, counts.retried + counts.notAttempted + counts.held);
    const openSeconds = this.breaker.openSeconds(Date.now());
    if (openSeconds !== undefined) this.metrics.addMetric(METRIC_NAMES.breakerOpenSeconds, MetricUnit.Seconds, openSeconds);
    this.metrics.addMetric(METRIC_NAMES.deadLettered, MetricUnit.Count, counts.deadLettered);
    publishDeadLettersByCause(this.metrics, METRIC_NAMES.deadLettered, deadLettersByCause(records, outcomes, this.config.maxReceiveCount));
    const pace = this.pacer.snapshot();
    if (pace.requestsPerSecond !== undefined)
      this.metrics.addMetric(METRIC_NAMES.paceRequestsPerSecond, MetricUnit.CountPerSecond, Math.round(pace.requestsPerSecond * 100) / 100);
    this.metrics.addMetric(METRIC_NAMES.paceInFlightLimit, MetricUnit.Count, pace.inFlightLimit);
    this.metrics.addMetric(METRIC_NAMES.requestsRefused, MetricUnit.Count, this.pacer.takeRefusedCount());
    this.announcePace(pace);
    for (const latencyMs of latencySample(latenciesMs))
      this.metrics.addMetric(METRIC_NAMES.webhookLatency, MetricUnit.Milliseconds, latencyMs);
    this.logger.info('Batch relayed', {
      records: records.length,
      ...counts,
      visibilityFailures: visibilityFailures.length,
      durationMs: Date.now() - startedAt,
    });
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
