/** The back-pressure scenarios' goals, per run and per section, and the section of the report that shows them. */
import { describe, expect, test } from 'vitest';
import { backPressureText } from '../../bench/report';
import { type BackPressureRun, type BackPressureSection, goalMet, speedOf } from '../../bench/scenarios/back-pressure';

const good: BackPressureRun = {
  drainSeconds: 18,
  delivered: 3_000,
  duplicates: 0,
  deadLettered: 0,
  left: 0,
  requests: 3_300,
  refused: 300,
};
const section = (runs: BackPressureRun[]): BackPressureSection => ({
  messages: 3_000,
  requestsPerSecond: 200,
  burst: 20,
  relayEnv: { POLLERS: '5' },
  sides: [{ side: 'defaults', env: {}, runs }],
});

describe('goalMet', () => {
  test('every message delivered, none dead-lettered or left, drain ≤ 1.25 × N/R, ≤ 10 % refused', () => {
    expect(goalMet(section([good]), good)).toBe(true);
    for (const miss of [
      { drainSeconds: 18.8 },
      { delivered: 2_999 },
      { deadLettered: 1 },
      { left: 1 },
      { refused: 331 },
    ] satisfies Partial<BackPressureRun>[]) {
      expect(goalMet(section([good]), { ...good, ...miss }), JSON.stringify(miss)).toBe(false);
    }
  });

  test('without a rate (recovery) the refused share does not count, and the drain only against its own goal', () => {
    const recovery = { ...section([good]), requestsPerSecond: undefined, unavailableSeconds: 40, drainGoalSeconds: 55 };
    expect(goalMet(recovery, { ...good, drainSeconds: 55, refused: 3_000 })).toBe(true);
    expect(goalMet(recovery, { ...good, drainSeconds: 55.1 })).toBe(false);
    expect(goalMet(recovery, { ...good, drainSeconds: 30, deadLettered: 1 })).toBe(false);
  });
});

test('the report shows every run and the median of a side', () => {
  const text = backPressureText({ backPressure: section([good, { ...good, deadLettered: 5, delivered: 2_995 }, good]) }) ?? '';
  expect(text).toContain('| defaults | 2 | 18.0 s | 2,995 | 0 | 5 |');
  expect(text).toContain('| **defaults** | median | **18.0 s** |');
  expect(text).toContain('NOT met (2 of 3 runs)');
  expect(backPressureText({})).toBeUndefined();
});

describe("the other scenarios' goals", () => {
  test('an announced limit: drain ≤ 1.15 × N/R and ≤ 1 % refused', () => {
    const announced: BackPressureSection = { ...section([good]), kind: 'rate-limit-headers' };
    const fine = { ...good, drainSeconds: 17.2, requests: 3_020, refused: 20 };
    expect(goalMet(announced, fine)).toBe(true);
    expect(goalMet(announced, { ...fine, drainSeconds: 17.3 })).toBe(false);
    expect(goalMet(announced, { ...fine, requests: 3_040, refused: 40 })).toBe(false);
  });

  test("per-message and per-key: a run's goal is nothing dead-lettered; the section's, the rest's speed against PACING=false", () => {
    const rest = (restDrainSeconds: number, deadLettered = 0): BackPressureRun => ({ ...good, restDrainSeconds, deadLettered, left: 200 });
    const perMessage: BackPressureSection = {
      kind: 'per-message',
      description: 'one tenant refused',
      messages: 4_000,
      relayEnv: {},
      sides: [
        { side: 'defaults', env: {}, runs: [rest(4), rest(5), rest(4.4)] },
        { side: 'PACING=false', env: { PACING: 'false' }, runs: [rest(4), rest(4.2), rest(3.8)] },
      ],
    };
    expect(goalMet(perMessage, rest(9))).toBe(true);
    expect(goalMet(perMessage, rest(4, 1))).toBe(false);
    expect(speedOf(perMessage)).toBeCloseTo(4 / 4.4, 10);
    const text = backPressureText({ perMessage: [perMessage] }) ?? '';
    expect(text).toContain('with one tenant refused');
    expect(text).toContain('| defaults | 2 | 18.0 s | 5.00 s |');
    expect(text).toContain('= **0.91**, met.');
  });
});
