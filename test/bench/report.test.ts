/**
 * The report renders each fixture's figures into the Markdown kept in expected/ (re-rendered and reviewed line
 * by line whenever the report's text is meant to change): a changed figure, a lost sentence or a misplaced blank
 * line fails here, not in a published BENCHMARKS.md. What the run prints is the summary table and the notes
 * (expected/*.console.txt); docs/performance.md's figures show the same table; the README's quote the back-pressure
 * scenarios (expected/*.README.md).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleTable, markdown, performanceSection, readmeFigures } from '../../bench/report';
import { FIXTURES } from './fixtures/variants';

const expected = (name: string, output: string): string =>
  readFileSync(join(import.meta.dirname, 'fixtures', 'expected', `${name.replace(/[^a-z0-9]+/g, '-')}.${output}`), 'utf8');

describe.each(Object.entries(FIXTURES))('report of fixture "%s"', (name, results) => {
  it('BENCHMARKS.md', () => expect(markdown(results)).toBe(expected(name, 'BENCHMARKS.md')));
  it("docs/performance.md's figures", () => expect(performanceSection(results)).toBe(expected(name, 'performance.md')));
  it('the console table', () => expect(consoleTable(results)).toBe(expected(name, 'console.txt')));
  it("the README's figures", () => expect(`${readmeFigures(results)}\n`).toBe(expected(name, 'README.md')));
});
