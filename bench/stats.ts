/** Small statistics for the benchmark's figures. */

/** The median of `values` (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** A confidence interval for a median: two of the sorted values, and its exact coverage (at least the confidence asked for). */
export interface MedianInterval {
  readonly low: number;
  readonly high: number;
  readonly coverage: number;
}

/**
 * A distribution-free interval for the median `values` were drawn from (independent draws; no normality: the runs have long tails):
 * the k-th smallest and largest values, k the largest with P(fewer than k of n below the median) ≤ (1 − `confidence`) / 2 (Binomial(n, ½)).
 * `undefined` with too few values (fewer than 6 at 95 %).
 */
export function medianInterval(values: readonly number[], confidence = 0.95): MedianInterval | undefined {
  const n = values.length;
  const tail = (1 - confidence) / 2;
  // P(X ≤ i) for X ~ Binomial(n, ½), built up term by term (C(n, i) / 2ⁿ) until it passes the tail.
  let term = 0.5 ** n;
  let cumulative = 0;
  let k = 0;
  let outside = 0; // P(X ≤ k − 1): the chance the median lies below the k-th smallest value
  for (let i = 0; i < n; i += 1) {
    cumulative += term;
    if (cumulative > tail) break;
    k = i + 1;
    outside = cumulative;
    term = (term * (n - i)) / (i + 1);
  }
  if (k === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return { low: sorted[k - 1] as number, high: sorted[n - k] as number, coverage: 1 - 2 * outside };
}

/** The `p`-th percentile (0–100) of `values`, nearest-rank; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}
