/**
 * Unit tests of lambda/cut-series.ts and lambda/refusal-statistics.ts (docs/pacing.md, "Cuts as a test"): when a series
 * of cuts is tried, and its trial: a refused share that fell with the pace, one that persists, and one a token bucket explains.
 * How a pace begins a series and acts on its trial: pacer.test.ts.
 */
import { describe, expect, test } from 'vitest';
import { CUTS_TRIED_MS, CutSeries } from '../../lambda/cut-series';
import { differenceError } from '../../lambda/refusal-statistics';

describe('differenceError', () => {
  test('is the standard error of the difference of two shares, from their pooled share', () => {
    expect(differenceError({ refused: 1, answers: 10 }, { refused: 1, answers: 10 })).toBeCloseTo(Math.sqrt(0.1 * 0.9 * 0.2));
  });

  test('takes a share of none refused as about 1 %: a few answers, none refused, are no proof that none will be', () => {
    expect(differenceError({ refused: 0, answers: 10 }, { refused: 0, answers: 10 })).toBeCloseTo(Math.sqrt(0.01 * 0.2));
  });
});

describe('CutSeries', () => {
  const series = (): CutSeries => CutSeries.begin(0, 100, { refused: 20, answers: 100 });

  test('is tried once it has gone on for a second and what is sent has come down to 60 % of what it was', () => {
    expect([series().due(CUTS_TRIED_MS - 1), series().due(CUTS_TRIED_MS)]).toEqual([false, true]);
    expect([series().cutFarEnough(61), series().cutFarEnough(60)]).toEqual([false, true]);
  });

  test('a share that fell is congestion: the series goes on from there, tried again at 40 % of what is sent now', () => {
    const trial = series().trial(CUTS_TRIED_MS, 60, { refused: 2, answers: 100 });
    expect(trial).toHaveProperty('fell');
    const next = (trial as { fell: CutSeries }).fell;
    expect([next.due(2 * CUTS_TRIED_MS - 1), next.due(2 * CUTS_TRIED_MS)]).toEqual([false, true]);
    expect([next.cutFarEnough(25), next.cutFarEnough(24)]).toEqual([false, true]);
  });

  test('a share that did not fall, above what a token bucket would refuse at the lower pace, persists: it is a floor', () => {
    expect(series().trial(CUTS_TRIED_MS, 60, { refused: 20, answers: 100 })).toEqual({ persists: 0.2 });
  });

  test('a share neither below the one before nor above what a token bucket would refuse shows neither', () => {
    // Half refused at 100 requests/s: a bucket of 50/s. At 60/s it refuses a sixth; 3 of 10 is within the noise of both.
    const bucket = CutSeries.begin(0, 100, { refused: 5, answers: 10 });
    expect(bucket.trial(CUTS_TRIED_MS, 60, { refused: 3, answers: 10 })).toBeUndefined();
  });
});
