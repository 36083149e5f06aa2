/**
 * Unit tests of lambda/doubt.ts (docs/pacing.md, "Doubts and floors"): the dips by the clock, the verdicts on the answers
 * counted in and before them, and when a doubt is over. How a pace begins one and acts on its verdict: pacer.test.ts.
 */
import { describe, expect, test } from 'vitest';
import { Doubt, UNMOVED_VERDICT_ANSWERS, VERDICT_ANSWERS, type Verdict } from '../../lambda/doubt';

/** Begun at 10.1 s of the clock: it starts at 11 s, its dips the second quarter of each half second from there. */
const BEGUN = 10_100;
const SINCE = 11_000;
const IN_BASE = SINCE + 10;
const IN_DIP = SINCE + 260;

/**
 * Counts `pairs` answers in the slots before the dips and as many in the dips, alternately, the `i`-th of each refused when
 * `refusedBase(i)` / `refusedDip(i)`; the verdicts returned, by the count at which each came.
 */
function feed(doubt: Doubt, pairs: number, refusedBase: (i: number) => boolean, refusedDip: (i: number) => boolean): Map<number, Verdict> {
  const verdicts = new Map<number, Verdict>();
  for (let i = 0; i < pairs; i += 1) {
    doubt.count(refusedBase(i), IN_BASE);
    const verdict = doubt.count(refusedDip(i), IN_DIP);
    if (verdict !== undefined) verdicts.set(i + 1, verdict);
  }
  return verdicts;
}

describe('Doubt', () => {
  test('begins at the next whole second of the clock and dips in every other quarter second from there', () => {
    const doubt = new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100);
    expect(doubt.since).toBe(SINCE);
    expect([10_900, SINCE + 100, SINCE + 300, SINCE + 600, SINCE + 800].map((at) => doubt.dipping(at))).toEqual([
      false,
      false,
      true,
      false,
      true,
    ]);
  });

  test('answers to requests sent before it began are not counted', () => {
    const doubt = new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100);
    for (let i = 0; i < 20; i += 1) doubt.count(true, BEGUN + 260);
    expect(doubt.answers).toBe(0);
  });

  test('a share that falls in the dips beyond the noise is congestion, on as few as 8 answers each', () => {
    const doubt = new Doubt(BEGUN, 50, 50);
    const verdicts = feed(
      doubt,
      8,
      (i) => i % 2 === 0,
      () => false,
    );
    expect([...verdicts]).toEqual([[8, 'congestion']]);
    expect(doubt.dipShare).toBe(0);
    expect(doubt.share).toBe(0.25);
  });

  test('begun unpaced, a share the dips did not lower at all persists on 16 answers each, not 8', () => {
    const doubt = new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100);
    const refused = (i: number): boolean => i % 8 === 0;
    expect([...feed(doubt, UNMOVED_VERDICT_ANSWERS, refused, refused)]).toEqual([[UNMOVED_VERDICT_ANSWERS, 'persists']]);
    expect(doubt.answers).toBe(2 * UNMOVED_VERDICT_ANSWERS);
  });

  test('begun paced (cut for congestion before), the same share persists only on 40 answers each', () => {
    const doubt = new Doubt(BEGUN, 50, 50);
    const refused = (i: number): boolean => i % 8 === 0;
    expect([...feed(doubt, VERDICT_ANSWERS, refused, refused)]).toEqual([[VERDICT_ANSWERS, 'persists']]);
  });

  test('ending, a doubt begun unpaced finds persistence on 8 answers each; one begun paced finds nothing', () => {
    const refused = (i: number): boolean => i % 4 === 0;
    const unpaced = new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100);
    const paced = new Doubt(BEGUN, 50, 50);
    feed(unpaced, 8, refused, refused);
    feed(paced, 8, refused, refused);
    expect([unpaced.verdict(false), unpaced.verdict(true), paced.verdict(true)]).toEqual([undefined, 'persists', undefined]);
  });

  test('most requests refused, in the dips as before them, is congestion, never a floor', () => {
    const doubt = new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100);
    const refused = (i: number): boolean => i % 4 !== 0;
    expect([...feed(doubt, UNMOVED_VERDICT_ANSWERS, refused, refused)]).toEqual([[UNMOVED_VERDICT_ANSWERS, 'congestion']]);
  });

  test('begun unpaced, no cut in its first second (nor while it waits for it); then cuts keep 70 % of the most the pace sent since it began', () => {
    const doubt = new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100);
    expect(doubt.cutsKeep(BEGUN + 10, 100)).toBeUndefined();
    expect(doubt.cutsKeep(SINCE + 500, 50)).toBeUndefined();
    expect(doubt.cutsKeep(SINCE + 1_000, 200)).toBeCloseTo(140);
    expect(doubt.cutsKeep(SINCE + 1_100, 10)).toBeCloseTo(140);
    expect(new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100).cutsKeep(SINCE + 1_000, 10)).toBeCloseTo(70);
  });

  test('begun on a pace cut for congestion before, cuts at once, as far as 70 % of the most it sent since it began', () => {
    const doubt = new Doubt(BEGUN, 120, 100);
    expect(doubt.cutsKeep(BEGUN + 10, 100)).toBeCloseTo(70);
    expect(doubt.cutsKeep(SINCE + 500, 150)).toBeCloseTo(105);
    expect(doubt.cutsKeep(SINCE + 600, 10)).toBeCloseTo(105);
  });

  test('is over after 5 s without a refusal, or 5 s after it began', () => {
    const quiet = new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100);
    expect([quiet.over(SINCE), quiet.over(BEGUN + 5_000), quiet.over(BEGUN + 5_001)]).toEqual([undefined, undefined, 'quiet']);
    const long = new Doubt(BEGUN, Number.POSITIVE_INFINITY, 100);
    long.refusedAt(SINCE + 4_000);
    expect([long.over(SINCE + 5_000), long.over(SINCE + 5_001)]).toEqual([undefined, 'out of time']);
  });
});
