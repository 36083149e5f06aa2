/**
 * The names the function's metrics are published under, shared by the handler (which emits
 * them) and the CDK construct (whose dashboard and alarms read them): one source, no drift.
 * Kept free of dependencies so the CDK app can load it without the function's.
 */
import { FUNCTION_SETTINGS } from './settings';

/** Metric names (CloudWatch embedded metric format, dimension `service`). */
export const METRIC_NAMES = {
  delivered: 'Delivered',
  retried: 'Retried',
  deadLettered: 'DeadLettered',
  webhookLatency: 'WebhookLatency',
  /** Seconds the circuit breaker has been open, published by every invocation that finds it open. */
  breakerOpenSeconds: 'BreakerOpenSeconds',
  /**
   * Seconds since the oldest record a batch hands back to the queue was sent (0 when it hands none back). SQS's own
   * `ApproximateAgeOfOldestMessage` stops counting a message once it has been received three times, so it misses the
   * messages the relay keeps handing back through an outage or a webhook's refusals.
   */
  ageOfOldestReturnedMessage: 'AgeOfOldestReturnedMessage',
  /** A container's requests-per-second limit (pacer.ts), published per batch only while the container is paced. */
  paceRequestsPerSecond: 'PaceRequestsPerSecond',
  /** A container's in-flight limit, per batch. */
  paceInFlightLimit: 'PaceInFlightLimit',
  /** Answers asking the relay to slow down (`429`, `503`, `504`, `408`, timeouts), per batch. */
  requestsRefused: 'RequestsRefused',
} as const;

/** The default CloudWatch namespace (`POWERTOOLS_METRICS_NAMESPACE` overrides it). */
export const DEFAULT_METRICS_NAMESPACE = FUNCTION_SETTINGS.POWERTOOLS_METRICS_NAMESPACE.default;
