/**
 * Unit tests of lambda/refusal-run.ts (docs/pacing.md, "The endpoint hold"): when a run of refusals is evidence enough for
 * an endpoint hold, what does not count toward it, and what ends it. How a pace keeps the run and holds: pacer.test.ts.
 */
import { describe, expect, test } from 'vitest';
import { QUICK_HOLD_SECONDS } from '../../lambda/endpoint-hold';
import { HOLD_AFTER_MESSAGES, HOLD_EVIDENCE_MESSAGES, HOLD_EVIDENCE_MS, RecentRefusals, RefusalRun } from '../../lambda/refusal-run';

/** A run of `messages` different messages refused with `retryAfterSeconds`, begun at 0. */
function runOf(messages: number, retryAfterSeconds: number): RefusalRun {
  const run = new RefusalRun(0, retryAfterSeconds);
  for (let i = 0; i < messages; i += 1) run.refused(retryAfterSeconds, true, false);
  return run;
}

describe('RefusalRun', () => {
  test('a quick hold needs ten different messages refused, at once', () => {
    expect([runOf(HOLD_AFTER_MESSAGES - 1, 1).enough(0), runOf(HOLD_AFTER_MESSAGES, 1).enough(0)]).toEqual([false, true]);
  });

  test('a message refused again is no more evidence', () => {
    const run = runOf(HOLD_AFTER_MESSAGES - 1, 1);
    run.refused(1, false, false);
    expect(run.enough(0)).toBe(false);
  });

  test('a long hold needs the run to have lasted 2 s, or 200 different messages', () => {
    const long = QUICK_HOLD_SECONDS + 1;
    expect(runOf(HOLD_AFTER_MESSAGES, long).enough(HOLD_EVIDENCE_MS - 1)).toBe(false);
    expect(runOf(HOLD_AFTER_MESSAGES, long).enough(HOLD_EVIDENCE_MS)).toBe(true);
    expect(runOf(HOLD_EVIDENCE_MESSAGES, long).enough(0)).toBe(true);
  });

  test('lasts the shortest Retry-After in it', () => {
    const run = new RefusalRun(0, 3600);
    run.refused(3600, true, false);
    run.refused(2, true, false);
    run.refused(60, true, false);
    expect(run.shortestRetryAfterSeconds).toBe(2);
  });

  test('is over once more than a fifth as many acceptances as messages came (two, up to ten messages)', () => {
    const run = runOf(5, 1);
    expect([run.countAcceptance(), run.countAcceptance(), run.countAcceptance()]).toEqual([true, true, false]);
  });

  test('is mostly back from the queue when half its messages or more were received before', () => {
    const mixed = (before: number): RefusalRun => {
      const run = new RefusalRun(0, 1);
      for (let i = 0; i < 10; i += 1) run.refused(1, true, i < before);
      return run;
    };
    expect([mixed(4).mostlyBack, mixed(5).mostlyBack]).toEqual([false, true]);
  });
});

describe('RecentRefusals', () => {
  test('remembers the latest 16 message ids', () => {
    const recent = new RecentRefusals();
    expect([recent.seen('a'), recent.seen('a')]).toEqual([false, true]);
    for (let i = 0; i < 15; i += 1) recent.seen(`m${i}`);
    expect(recent.seen('a')).toBe(true);
    recent.seen('m15');
    expect(recent.seen('a')).toBe(false);
  });
});
