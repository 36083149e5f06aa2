import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { latencySample, MAX_LATENCY_VALUES } from '../../lambda/latency';

/** Nearest-rank percentile, as CloudWatch reads one from the values it holds. */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

describe('latencySample', () => {
  test('a batch of up to 99 requests publishes every latency', () => {
    expect(latencySample([5, 1, 3])).toEqual([1, 3, 5]);
    const most = Array.from({ length: MAX_LATENCY_VALUES }, (_, index) => MAX_LATENCY_VALUES - index);
    expect(latencySample(most)).toEqual([...most].reverse());
    expect(latencySample([])).toEqual([]);
  });

  test('a bigger batch publishes 99 values from its minimum to its maximum, one below the 100 at which Powertools flushes a line by itself', () => {
    const latencies = Array.from({ length: 10_000 }, (_, index) => (index * 7919) % 10_000);
    const sample = latencySample(latencies);
    expect(MAX_LATENCY_VALUES).toBe(99);
    expect(sample).toHaveLength(99);
    expect(sample[0]).toBe(0);
    expect(sample.at(-1)).toBe(9_999);
    expect(sample[49]).toBe(5_000); // the median: rank 49 of 0..98 is rank 4,999.5 of 0..9,999, rounded
    expect(latencies[0]).toBe(0); // the input is left alone
    expect(latencies[1]).toBe(7_919);
  });

  test('property: the published values give the batch percentiles to within 1 % of rank', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 60_000 }), { minLength: 1, maxLength: 3_000 }),
        fc.integer({ min: 1, max: 99 }),
        (latencies, p) => {
          const sample = latencySample(latencies);
          expect(sample.length).toBe(Math.min(latencies.length, MAX_LATENCY_VALUES));
          expect(sample).toEqual([...sample].sort((a, b) => a - b));
          expect(sample[0]).toBe(Math.min(...latencies));
          expect(sample.at(-1)).toBe(Math.max(...latencies));
          const published = percentile(sample, p);
          expect(published).toBeGreaterThanOrEqual(percentile(latencies, Math.max(0, p - 1)));
          expect(published).toBeLessThanOrEqual(percentile(latencies, Math.min(100, p + 1)));
        },
      ),
      { numRuns: 300 },
    );
  });
});
