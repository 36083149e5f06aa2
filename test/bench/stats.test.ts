import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { median, medianInterval } from '../../bench/stats';

describe('medianInterval', () => {
  it('gives the order statistics of the binomial table: 9 values → 2nd and 8th, 27 → 8th and 20th', () => {
    const nine = [9, 1, 8, 2, 7, 3, 6, 4, 5];
    // P(X ≤ 1) for n = 9 is 10/512 ≈ 0.0195 ≤ 0.025; P(X ≤ 2) = 46/512 ≈ 0.09 is not.
    expect(medianInterval(nine)).toEqual({ low: 2, high: 8, coverage: 1 - 2 * (10 / 512) });
    const twentySeven = Array.from({ length: 27 }, (_, index) => 27 - index);
    const interval = medianInterval(twentySeven);
    expect([interval?.low, interval?.high]).toEqual([8, 20]);
    expect(interval?.coverage).toBeGreaterThanOrEqual(0.95);
  });

  it('has no 95 % interval under six values (the widest one, min to max, covers only 1 − 2/2ⁿ)', () => {
    expect(medianInterval([1, 2, 3, 4, 5])).toBeUndefined();
    expect(medianInterval([1, 2, 3, 4, 5, 6])).toEqual({ low: 1, high: 6, coverage: 1 - 2 / 64 });
    expect(medianInterval([])).toBeUndefined();
  });

  it('always brackets the sample median and covers at least the confidence asked for', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 10, noNaN: true }), { minLength: 6, maxLength: 80 }),
        fc.constantFrom(0.8, 0.9, 0.95, 0.99),
        (values, confidence) => {
          const interval = medianInterval(values, confidence);
          if (interval === undefined) return values.length < 8; // 99 % needs 8 values (1 − 2/2⁸ ≥ 0.99)
          expect(interval.low).toBeLessThanOrEqual(median(values));
          expect(interval.high).toBeGreaterThanOrEqual(median(values));
          expect(interval.coverage).toBeGreaterThanOrEqual(confidence);
          return true;
        },
      ),
    );
  });

  it('holds the true median about as often as it says, on draws from a skewed distribution', () => {
    // Exponential draws with median ln 2; 2,000 trials of 15 values each, from a fixed seed.
    let seed = 12345;
    const uniform = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return (seed + 0.5) / 2 ** 31;
    };
    let held = 0;
    let coverage = 0;
    for (let trial = 0; trial < 2000; trial += 1) {
      const draws = Array.from({ length: 15 }, () => -Math.log(uniform()));
      const interval = medianInterval(draws) as NonNullable<ReturnType<typeof medianInterval>>;
      coverage = interval.coverage;
      if (interval.low <= Math.LN2 && Math.LN2 <= interval.high) held += 1;
    }
    expect(held / 2000).toBeGreaterThan(coverage - 0.02);
    expect(held / 2000).toBeLessThan(coverage + 0.02);
  });
});
