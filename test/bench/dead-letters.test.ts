/**
 * The report's dead-letters section (`npm run bench -- --only=dead-letters`, and every full run):
 * the figures of `bench/scenarios/dead-letters.ts` as a table in BENCHMARKS.md, before the
 * capacity planning; absent from a report of results measured before the scenario existed.
 */
import { describe, expect, it } from 'vitest';
import { deadLetterFigures, deadLettersText, markdown } from '../../bench/report';
import { DEAD_LETTERS, FIXTURES } from './fixtures/variants';

const figures = DEAD_LETTERS;

describe('the dead-letters section', () => {
  it('a row per run: messages, median time, messages per second, every run', () => {
    const text = deadLettersText({ deadLetters: figures }) ?? '';
    expect(text).toMatch(/^## Dead letters: summary and replay\n/);
    expect(text).toContain(
      '| summary: all 10,000 read, counted, made visible again | 10,000 | 9,752 ms | 1,025/s | 15,638, 8,225, 9,752 ms |',
    );
    expect(text).toContain('| replay of the other 4,000 | 4,000 | 8,486 ms | 471/s | 8,143, 11,892, 8,486 ms |');
    expect(text).toContain('on Node.js v20.20.2');
    expect(text).toContain('(1,757 ms for one that prints its version and exits)');
    expect(text).toContain('on 2026-11-26T14:44:57Z (commit b15a941)');
    expect(deadLettersText({})).toBeUndefined();
  });

  it('goes into BENCHMARKS.md before the capacity planning, when the run has it', () => {
    const [results] = Object.values(FIXTURES);
    if (results === undefined) throw new Error('no fixture');
    const withSection = markdown({ ...results, deadLetters: figures });
    const section = deadLettersText({ deadLetters: figures }) ?? '';
    expect(withSection.indexOf(section)).toBeGreaterThan(0);
    expect(withSection.indexOf(section)).toBeLessThan(withSection.indexOf('## Capacity planning'));
    expect(withSection.replace(`${section}\n\n`, '')).toBe(markdown(results));
  });

  it("docs/operations.md's figures: the summary's time and the first replay's, from the same rows", () => {
    const [results] = Object.values(FIXTURES);
    if (results === undefined) throw new Error('no fixture');
    expect(deadLetterFigures({ ...results, deadLetters: figures })).toBe(
      'Measured on the emulator, on a shared 2-core machine ([BENCHMARKS.md](../BENCHMARKS.md#dead-letters-summary-and-replay)): a `summary` of 10,000 dead letters took 9.8 s (1,025 a second), a `replay --status 404` of 6,000 of them (the other 4,000 read and left) 12 s (500 a second), process start included.',
    );
    expect(deadLetterFigures(results)).toBe('No dead-letter figures in this run: [BENCHMARKS.md](../BENCHMARKS.md).');
  });
});
