/** Small statistics for the benchmark's figures. */

/** The median of `values` (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The `p`-th percentile (0–100) of `values`, nearest-rank; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

/** Smallest and largest of `values`. */
export function range(values: readonly number[]): { min: number; max: number } {
  return { min: Math.min(...values), max: Math.max(...values) };
}

/** A number with `digits` significant digits at most and thousands separators: 12,345 / 123 / 1.23. */
export function fmt(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return 'n/a';
  const magnitude = Math.abs(value) >= 1 ? Math.floor(Math.log10(Math.abs(value))) + 1 : 1;
  const decimals = Math.max(0, digits - magnitude);
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** A ratio with two decimals: "0.93". */
export function ratio(numerator: number, denominator: number): string {
  return denominator === 0 || !Number.isFinite(numerator / denominator) ? 'n/a' : (numerator / denominator).toFixed(2);
}
