/**
 * The report's dead-letters section (`npm run bench -- --only=dead-letters`, and every full run):
 * the figures of `bench/scenarios/dead-letters.ts` as a table in BENCHMARKS.md, before the
 * capacity planning; absent from a report of results measured before the scenario existed.
 */
import { describe, expect, it } from 'vitest';
import { deadLettersText, markdown } from '../../bench/report';
import { FIXTURES } from './fixtures/variants';

const figures = {
  messages: 10_000,
  rounds: 3,
  date: '2026-11-26T14:44:57Z',
  commit: 'b15a941',
  node: 'v20.20.2',
  startupMs: 1_757.1,
  rows: [
    {
      label: 'summary: all 10,000 read, counted, made visible again',
      messages: 10_000,
      runsMs: [15_638.1, 8_225, 9_751.5],
      medianMs: 9_751.5,
      perSecond: 1_025.48,
    },
    { label: 'replay of the other 4,000', messages: 4_000, runsMs: [8_143.2, 11_892.3, 8_486.1], medianMs: 8_486.1, perSecond: 471.36 },
  ],
};

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
});
