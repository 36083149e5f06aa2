import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { editDistance, likelyTypos, nearestName } from '../../lambda/nearest-name';

describe('the nearest known name', () => {
  test.each([
    ['webhookUrl', 'webhookUrl', 0],
    ['webhookUrll', 'webhookUrl', 1],
    ['alarmEmial', 'alarmEmail', 1],
    ['WEBHOOK_ULR', 'WEBHOOK_URL', 1],
    ['webhook_url', 'WEBHOOK_URL', 0],
    ['batchSize', 'batchSizes', 1],
    ['', 'abc', 3],
    ['kitten', 'sitting', 3],
  ])('%j is %j edits from %j', (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
    expect(editDistance(b, a)).toBe(distance);
  });

  test('distance is zero only for the same name (ignoring case), and never more than the longer length', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 }), (a, b) => {
        const distance = editDistance(a, b);
        expect(distance === 0).toBe(a.toLowerCase() === b.toLowerCase());
        expect(distance).toBeLessThanOrEqual(Math.max(a.length, b.length));
        expect(distance).toBe(editDistance(b, a));
      }),
    );
  });

  test('the nearest candidate, or none within the bound', () => {
    const keys = ['alarmEmail', 'webhookUrl', 'stackName'];
    expect(nearestName('alarmEmial', keys)).toBe('alarmEmail');
    expect(nearestName('somethingElse', keys)).toBeDefined();
    expect(nearestName('somethingElse', keys, 2)).toBeUndefined();
    expect(likelyTypos(['webhookUrll', 'webhookUrl', 'zzzzzzzzzz', 'wbUrl'], keys)).toEqual(new Map([['webhookUrll', 'webhookUrl']]));
  });
});
