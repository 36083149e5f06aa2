/**
 * What the relay tells the operator (docs/operations.md): a line per record not delivered, the batch line, the
 * per-batch metrics (metric-names.ts), and the lines that announce the breaker's and the pace's changes.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { receiveCountOf } from './batch';
import type { VisibilityGiven } from './batch-visibility';
import type { BreakerTransition, CircuitBreaker } from './breaker';
import { deadLettersByCause, publishDeadLettersByCause } from './dead-letter-metrics';
import { latencySample } from './latency';
import { METRIC_NAMES } from './metric-names';
import type { PaceSnapshot } from './pace';
import type { Pacer } from './pacer';
import { isFailure, type RecordOutcome } from './record-outcome';
import type { DeliveryRequest } from './request';
import { sentAtMs } from './retry-window';
import type { TransportFailure, WebhookResult } from './transmitter';

/** The batch line's counts of records, by outcome. */
interface OutcomeCounts {
  delivered: number;
  retried: number;
  deadLettered: number;
  notAttempted: number;
  held: number;
}

/**
 * Seconds since the oldest of `records` that goes back to the queue was sent to it (`SentTimestamp`), whole; 0 when none
 * goes back.
 */
function ageOfOldestReturned(records: readonly SQSRecord[], outcomes: readonly RecordOutcome[], nowMs: number): number {
  let oldest = nowMs;
  records.forEach((record, index) => {
    const outcome = outcomes[index];
    if (outcome === undefined || !isFailure(outcome)) return;
    const sent = sentAtMs(record);
    if (sent !== undefined && sent < oldest) oldest = sent;
  });
  return Math.floor((nowMs - oldest) / 1000);
}

/** A batch to report: its records, what happened to each, and how they went back to the queue. */
export interface RelayedBatch {
  readonly records: readonly SQSRecord[];
  readonly outcomes: readonly RecordOutcome[];
  readonly visibility: VisibilityGiven;
  /** Every request's latency, ms. */
  readonly latenciesMs: readonly number[];
  /** When the batch started, ms since the epoch. */
  readonly startedAt: number;
}

/** What {@link BatchReporter} reads besides the batch: the logs, the metrics, and the state of the breaker and the pace. */
export interface BatchReporterParts {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly breaker: CircuitBreaker;
  readonly pacer: Pacer;
}

/** Writes the relay's log lines and metrics. Long-lived, like the relay: it remembers the pace it announced last. */
export class BatchReporter {
  /** The requests-per-second limit the last pace line announced (`Infinity`: unpaced). */
  private announcedRate = Number.POSITIVE_INFINITY;

  constructor(
    private readonly maxReceiveCount: number,
    private readonly parts: BatchReporterParts,
  ) {}

  /** The per-record lines for records not delivered, the batch summary line, and the counters. */
  report(batch: RelayedBatch): void {
    const { records, outcomes, visibility } = batch;
    const failedVisibility = new Map(visibility.failures.map((failure) => [failure.messageId, failure.reason]));
    const counts: OutcomeCounts = { delivered: 0, retried: 0, deadLettered: 0, notAttempted: 0, held: 0 };
    records.forEach((record, index) => {
      this.reportRecord(record, outcomes[index] as RecordOutcome, visibility, failedVisibility, counts);
    });
    // One line for the batch, not one per record: SQS refusing every change (throttled, access denied) would
    // otherwise write as many ERROR lines as the batch has records. Each record's own line names its error.
    const [firstFailure] = visibility.failures;
    if (firstFailure !== undefined) {
      this.parts.logger.error('Visibility change failed; SQS will use the queue default', {
        failed: visibility.failures.length,
        messageId: firstFailure.messageId,
        error: firstFailure.reason,
      });
    }
    this.publishMetrics(batch, counts);
    this.parts.logger.info('Batch relayed', {
      records: records.length,
      ...counts,
      visibilityFailures: visibility.failures.length,
      durationMs: Date.now() - batch.startedAt,
    });
  }

  /** Counts one record's outcome and, unless it was delivered, writes its line. */
  private reportRecord(
    record: SQSRecord,
    outcome: RecordOutcome,
    visibility: VisibilityGiven,
    failedVisibility: ReadonlyMap<string, string>,
    counts: OutcomeCounts,
  ): void {
    const { logger } = this.parts;
    if (outcome.kind === 'delivered') {
      counts.delivered += 1;
      return;
    }
    const receiveCount = receiveCountOf(record);
    const line: Record<string, unknown> = { messageId: record.messageId, outcome: outcome.kind, receiveCount };
    if (outcome.kind === 'dead-lettered') {
      counts.deadLettered += 1;
      Object.assign(line, { status: outcome.status, response: outcome.response, attempts: receiveCount });
      logger.warn(
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
    if (visibility.lastInWindow.has(record.messageId)) {
      logger.warn('Message not delivered; its next attempt is the last in its retry window', line);
    } else if (receiveCount >= this.maxReceiveCount) {
      logger.warn('Message not delivered on its last receive: SQS moves it to the dead-letter queue next', line);
    } else if (outcome.kind === 'held') {
      // During an outage every record of every batch is held: one line each at INFO would
      // flood the logs; the batch line counts them and the breaker's WARN says why.
      logger.debug('Message held back: circuit breaker open', line);
    } else {
      logger.info('Message not delivered; returned to the queue', line);
    }
  }

  /** The batch's metrics: its counts, the breaker's open time, the dead letters by cause, the pace, the latencies. */
  private publishMetrics({ records, outcomes, latenciesMs }: RelayedBatch, counts: OutcomeCounts): void {
    const { metrics, breaker, pacer } = this.parts;
    const now = Date.now();
    metrics.addMetric(METRIC_NAMES.delivered, MetricUnit.Count, counts.delivered);
    metrics.addMetric(METRIC_NAMES.retried, MetricUnit.Count, counts.retried + counts.notAttempted + counts.held);
    // 0 while closed: the alarm keeps its state through the minutes an outage's long holds leave without an invocation,
    // and goes back to OK on the first batch after the webhook's return.
    metrics.addMetric(METRIC_NAMES.breakerOpenSeconds, MetricUnit.Seconds, breaker.openSeconds(now) ?? 0);
    // 0 when every record found its end: the alarm on it keeps its state through the hours a long hold or `Retry-After` leaves
    // without an invocation, and is OK again with the batch that delivers (or dead-letters) the last of them.
    metrics.addMetric(METRIC_NAMES.ageOfOldestReturnedMessage, MetricUnit.Seconds, ageOfOldestReturned(records, outcomes, now));
    metrics.addMetric(METRIC_NAMES.deadLettered, MetricUnit.Count, counts.deadLettered);
    publishDeadLettersByCause(metrics, METRIC_NAMES.deadLettered, deadLettersByCause(records, outcomes, this.maxReceiveCount));
    const pace = pacer.snapshot();
    if (pace.requestsPerSecond !== undefined)
      metrics.addMetric(METRIC_NAMES.paceRequestsPerSecond, MetricUnit.CountPerSecond, Math.round(pace.requestsPerSecond * 100) / 100);
    metrics.addMetric(METRIC_NAMES.paceInFlightLimit, MetricUnit.Count, pace.inFlightLimit);
    metrics.addMetric(METRIC_NAMES.requestsRefused, MetricUnit.Count, pacer.takeRefusedCount());
    this.announcePace(pace);
    for (const latencyMs of latencySample(latenciesMs)) metrics.addMetric(METRIC_NAMES.webhookLatency, MetricUnit.Milliseconds, latencyMs);
  }

  /**
   * One WARN line when the breaker opens, one INFO when it closes (with the time it was open).
   * @param result the answer that changed it: an opening or a failed probe names its status (0: no answer) and error
   */
  announceBreaker(transition: BreakerTransition | undefined, result?: WebhookResult): void {
    const { logger } = this.parts;
    // The status alone of an answer: its body may quote what the request carried.
    const failure =
      result === undefined ? {} : result.kind === 'response' ? { status: result.status } : { status: 0, error: transportErrorText(result) };
    if (transition?.kind === 'opened') {
      logger.warn('Webhook looks down: circuit breaker opened; holding records back', { ...transition, ...failure });
    } else if (transition?.kind === 'reopened') {
      logger.info('Circuit breaker probe failed; still open', { ...transition, ...failure });
    } else if (transition?.kind === 'closed') {
      logger.info('Webhook answered again: circuit breaker closed', { ...transition });
    }
  }

  /** One INFO line when the pace has changed by more than half since the last one (or since start). */
  private announcePace(pace: PaceSnapshot): void {
    const rate = pace.requestsPerSecond ?? Number.POSITIVE_INFINITY;
    const was = this.announcedRate;
    if (rate === was || (rate > was * 0.5 && rate < was * 1.5)) return;
    this.announcedRate = rate;
    this.parts.logger.info(rate < was ? 'Webhook asked to slow down: pace lowered' : 'Webhook keeping up: pace raised', {
      requestsPerSecond: pace.requestsPerSecond === undefined ? 'unlimited' : Math.round(pace.requestsPerSecond * 10) / 10,
      inFlightLimit: pace.inFlightLimit,
      previousRequestsPerSecond: was === Number.POSITIVE_INFINITY ? 'unlimited' : Math.round(was * 10) / 10,
    });
  }

  /** The WARN lines about what the request could not carry as the message asked. */
  warnAboutRequest(record: SQSRecord, request: DeliveryRequest): void {
    for (const skipped of request.skippedAttributes) {
      this.parts.logger.warn('Message attribute not sent as a header', {
        messageId: record.messageId,
        attribute: skipped.name,
        reason: skipped.reason,
      });
    }
    if (request.ignoredOriginalId !== undefined) {
      this.parts.logger.warn('Claimed original message id ignored: the webhook sees the SQS id', {
        messageId: record.messageId,
        claimedOriginalId: request.ignoredOriginalId.claimed,
        reason: request.ignoredOriginalId.reason,
      });
    }
  }
}

/** How a request that got no HTTP answer failed, as a record's line and the breaker's say it. */
export function transportErrorText(result: TransportFailure): string {
  return `${result.error}: ${result.message}`;
}
