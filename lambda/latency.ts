/**
 * The `WebhookLatency` metric of one batch, in at most one embedded-metric-format line: every
 * latency of a small batch, evenly spaced order statistics of a large one, since a value per
 * request cost a big batch a tenth of its CPU (measured: docs/performance.md, "At most 99 latency
 * values per batch").
 */

/**
 * Latency values published per batch: one below the 100 an EMF line carries, since at the 100th
 * Powertools flushes by itself and the end-of-invocation flush then logs a WARN.
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
