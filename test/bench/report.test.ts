/**
 * The report renders each fixture's figures into the Markdown the bench wrote before its text
 * moved into templates (expected/*.md was rendered by that code, with testkit/ paths; the
 * intervals and other-Node.js fixtures' by the report as it was before its tables moved there too):
 * a changed figure, a lost sentence or a misplaced blank line fails here, not in a published
 * BENCHMARKS.md. What the run prints is the summary table and the notes (expected/*.console.txt).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleTable, markdown, performanceSection } from '../../bench/report';
import { FIXTURES } from './fixtures/variants';

const expected = (name: string, output: string): string =>
  readFileSync(join(import.meta.dirname, 'fixtures', 'expected', `${name.replace(/[^a-z0-9]+/g, '-')}.${output}`), 'utf8');

describe.each(Object.entries(FIXTURES))('report of fixture "%s"', (name, results) => {
  it('BENCHMARKS.md', () => expect(markdown(results)).toBe(expected(name, 'BENCHMARKS.md')));
  it("docs/performance.md's figures", () => expect(performanceSection(results)).toBe(expected(name, 'performance.md')));
  it('the console table', () => expect(consoleTable(results)).toBe(expected(name, 'console.txt')));
});
