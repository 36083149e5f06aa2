/**
 * Unit tests of lambda/duration-text.ts: the one wording of a duration that the construct's
 * messages, alarms and dashboard and local mode's banner and warnings share.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { durationText, type LargestDurationUnit } from '../../lambda/duration-text';

const UNIT_SECONDS: Record<string, number> = { day: 86_400, hour: 3600, minute: 60, second: 1 };

/** The seconds a text names, read back unit by unit. */
function secondsOf(text: string): number {
  return [...text.matchAll(/(\d+) (day|hour|minute|second)s?/g)].reduce(
    (sum, [, count, unit]) => sum + Number(count) * (UNIT_SECONDS[unit ?? ''] ?? Number.NaN),
    0,
  );
}

describe('durationText', () => {
  test.each<[number, LargestDurationUnit | undefined, string]>([
    [0, undefined, '0 seconds'],
    [1, undefined, '1 second'],
    [60, undefined, '1 minute'],
    [1800, undefined, '30 minutes'],
    [43_380, undefined, '12 hours 3 minutes'],
    [345_600, undefined, '4 days'],
    // Every unit kept: CDK's toHumanString says "1 day 1 hour" here.
    [90_060, undefined, '1 day 1 hour 1 minute'],
    [367_380, undefined, '4 days 6 hours 3 minutes'],
    // A retry window, worded in the hours it is set in.
    [86_400, 'hours', '24 hours'],
    [3600, 'hours', '1 hour'],
    [1800, 'hours', '30 minutes'],
    [5400, 'hours', '1 hour 30 minutes'],
    [325_800, 'hours', '90 hours 30 minutes'],
    [90, 'minutes', '1 minute 30 seconds'],
    [90, 'seconds', '90 seconds'],
  ])('%d s (largest unit %s): %s', (seconds, largestUnit, text) => {
    expect(durationText(seconds, largestUnit)).toBe(text);
  });

  test('rounds to whole seconds', () => {
    expect(durationText(59.6)).toBe('1 minute');
    expect(durationText(0.4)).toBe('0 seconds');
  });

  test('property: the text names exactly the seconds given, each unit once, largest first, none above the largest asked, 1 in the singular', () => {
    const units: LargestDurationUnit[] = ['days', 'hours', 'minutes', 'seconds'];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), fc.constantFrom(...units), (seconds, largestUnit) => {
        const text = durationText(seconds, largestUnit);
        expect(secondsOf(text)).toBe(seconds);
        const parts = [...text.matchAll(/(\d+) (day|hour|minute|second)(s?)/g)];
        for (const [, count, , plural] of parts) expect(plural).toBe(count === '1' ? '' : 's');
        const order = parts.map(([, , name]) => units.indexOf(`${name}s` as LargestDurationUnit));
        expect(order).toEqual([...order].sort((a, b) => a - b));
        expect(new Set(order).size).toBe(order.length);
        expect(Math.min(...order)).toBeGreaterThanOrEqual(units.indexOf(largestUnit));
        // No "0 hours" inside a text: a zero shows only as the whole of it.
        expect(text === '0 seconds' || !/\b0 /.test(text)).toBe(true);
      }),
    );
  });
});
