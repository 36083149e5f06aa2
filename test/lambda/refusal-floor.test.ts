/**
 * Unit tests of lambda/refusal-floor.ts (docs/pacing.md, "Doubts and floors"): what a floor explains, when it is stale,
 * how it follows refusals that fade, and the refused share of messages back from the queue learned over it. How a pace learns
 * a floor and judges refusals against it: pacer.test.ts.
 */
import { describe, expect, test } from 'vitest';
import type { MeterReading } from '../../lambda/answer-meter';
import { FLOOR_KEPT_MS, OTHERS_GONE_MS, RefusalFloor } from '../../lambda/refusal-floor';

/** A second's answers: `first` of them to messages received for the first time (`firstRefused` refused), the rest back from the queue. */
function reading(answers: number, refused: number, first = answers, firstRefused = Math.min(refused, first)): MeterReading {
  return {
    started: answers,
    accepted: answers - refused,
    refused,
    firstAccepted: first - firstRefused,
    firstRefused,
    seconds: 1,
    all: false,
  };
}

/** A floor of `share`, with the share of messages back from the queue learned at `returned` from `answers` answers. */
function floorOf(share: number, returned = 0, answers = 0): RefusalFloor {
  const floor = new RefusalFloor();
  floor.set(share);
  for (let i = 0; i < answers; i += 1) floor.learnReturned(i < returned * answers, { refused: 0, answers: 20 });
  return floor;
}

describe('RefusalFloor', () => {
  test('explains its share and a margin: 5 points, or half the floor when more', () => {
    expect([floorOf(0).explained(), floorOf(0.3).explained()]).toEqual([0.05, expect.closeTo(0.45)]);
  });

  test('is stale until learned, and again 30 s after', () => {
    const floor = new RefusalFloor();
    expect(floor.stale(0)).toBe(true);
    floor.learned(1_000);
    expect([floor.stale(1_000 + FLOOR_KEPT_MS - 1), floor.stale(1_000 + FLOOR_KEPT_MS)]).toEqual([false, true]);
  });

  test('follows a share below it beyond its noise down, a hundredth of the way per answer; not one within its noise', () => {
    const fading = floorOf(0.2);
    fading.followDown(reading(100, 0));
    expect(fading.share).toBeCloseTo(0.198);
    const same = floorOf(0.2);
    same.followDown(reading(100, 15));
    expect(same.share).toBe(0.2);
  });

  test('a floor followed down below a tenth of a percent is none', () => {
    const floor = floorOf(0.001);
    floor.followDown(reading(100, 0));
    expect(floor.share).toBe(0);
  });

  test('learns the share of messages back from the queue only while the first receives are enough and explained', () => {
    const floor = floorOf(0.1);
    floor.firstTaken(0);
    // Refused messages back from the queue, among first receives too few to judge on: explained once learned, not before.
    const backlog = reading(10, 7, 2, 0);
    floor.learnReturned(true, { refused: 0, answers: 10 });
    floor.learnReturned(true, { refused: 10, answers: 20 });
    expect(floor.returnedExplains(0, backlog)).toBe(false);
    floor.learnReturned(true, { refused: 2, answers: 20 });
    expect(floor.returnedExplains(0, backlog)).toBe(true);
  });

  test('that share explains refusals only while the first receives are too few, and for 10 s after one was taken', () => {
    const floor = floorOf(0.1, 1, 10);
    floor.firstTaken(0);
    expect(floor.returnedExplains(0, reading(20, 14, 16, 2))).toBe(false);
    expect(floor.returnedExplains(0, reading(10, 7, 2, 0))).toBe(true);
    expect(floor.returnedExplains(OTHERS_GONE_MS + 1, reading(10, 7, 2, 0))).toBe(false);
  });

  test('with no floor left, the share of messages back from the queue goes too', () => {
    const floor = floorOf(0.1, 1, 10);
    floor.firstTaken(0);
    floor.set(0);
    floor.set(0.1);
    expect(floor.returnedExplains(0, reading(10, 7, 2, 0))).toBe(false);
  });
});
