/**
 * The `WebhookLatency` metric of one batch, in at most one embedded-metric-format line.
 *
 * An EMF line holds at most 100 values of a metric, and Powertools' `addMetric` costs several
 * microseconds a call (it validates the unit and looks up its per-invocation store each time):
 * one value per request made a 10,000-record batch pay about 10 % of its CPU and write 100
 * metric lines. A batch of up to 99 requests still publishes every latency; a larger one
 * publishes 99 evenly spaced order statistics of its latencies (its minimum, its maximum and
 * 97 quantiles between), from which CloudWatch's percentiles read the batch's own to within 1 %
 * of rank. What is lost is the `SampleCount` statistic (no longer the number of requests: the
 * `Delivered`, `Retried` and `DeadLettered` counts are) and the weight of a big batch against a
 * small one in the same period.
 */

/**
 * Latency values published per batch: one below the 100 values an EMF line can carry. At its
 * 100th value of a metric Powertools flushes the line by itself, and the middleware's flush at
 * the end of the invocation then finds nothing and logs a WARN ("No application metrics to
 * publish") on every large batch.
 */
export const MAX_LATENCY_VALUES = 99;

/**
 * The latencies to publish for a batch: all of them when there are at most
 * {@link MAX_LATENCY_VALUES}, else that many order statistics spread evenly from the smallest
 * to the largest. Ascending either way; the input is not changed.
 */
export function latencySample(latenciesMs: readonly number[]): number[] {
  const sorted = Float64Array.from(latenciesMs).sort();
  if (sorted.length <= MAX_LATENCY_VALUES) return Array.from(sorted);
  const last = sorted.length - 1;
  return Array.from({ length: MAX_LATENCY_VALUES }, (_, index) => sorted[Math.round((index * last) / (MAX_LATENCY_VALUES - 1))] as number);
}
