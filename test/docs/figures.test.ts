/**
 * The benchmark's figures in the documentation come from one place, the published run's (bench/published-results.json,
 * written by `npm run bench`): BENCHMARKS.md whole and the figures of docs/performance.md, docs/operations.md and the README are rendered
 * from it, never edited by hand. `npm run docs` rewrites them after a change to the report's words.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIGURE_BLOCKS, PUBLISHED_RESULTS, publishedTexts, readPublishedResults } from '../../bench/published';
import { DEAD_LETTERS, FIXTURES } from '../bench/fixtures/variants';

const ROOT = join(import.meta.dirname, '..', '..');
const published = readPublishedResults(ROOT);

describe("the benchmark's figures in the documentation", () => {
  it('README.md, docs/performance.md and docs/operations.md have the markers a run writes between, and a run changes nothing else', () => {
    // Figures none of the pages quotes: every block changes.
    const slower = DEAD_LETTERS.rows.map((row) => ({ ...row, medianMs: 2 * row.medianMs, perSecond: row.perSecond / 2 }));
    const texts = publishedTexts({ ...FIXTURES['back-pressure and recovery']!, deadLetters: { ...DEAD_LETTERS, rows: slower } }, ROOT);
    for (const path of new Set(FIGURE_BLOCKS.map((block) => block.path))) {
      const blocks = FIGURE_BLOCKS.filter((block) => block.path === path);
      // The page with every block emptied: what is written by hand.
      const byHand = (text: string): string =>
        blocks.reduce((rest, { start, end }) => rest.slice(0, rest.indexOf(start)) + rest.slice(rest.indexOf(end)), text);
      const [current, next] = [readFileSync(join(ROOT, path), 'utf8'), texts.get(path) as string];
      for (const { start, end } of blocks)
        expect(next.slice(next.indexOf(start), next.indexOf(end)), path).not.toBe(
          current.slice(current.indexOf(start), current.indexOf(end)),
        );
      expect(byHand(next), path).toBe(byHand(current));
    }
  });

  it('docs/configuration.md quotes no size of the bundle of its own: the measured one is in docs/performance.md', () => {
    expect(readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8')).not.toMatch(/\d\s*KB\b/);
  });

  // Before the first published run there are no figures to compare with: the first full `npm run bench` writes them.
  it.skipIf(published === undefined)(
    `BENCHMARKS.md and the figures of docs/performance.md, docs/operations.md and README.md are rendered from ${PUBLISHED_RESULTS}`,
    () => {
      for (const [path, text] of publishedTexts(published!, ROOT)) {
        expect(readFileSync(join(ROOT, path), 'utf8'), `${path} is stale: run npm run docs`).toBe(text);
      }
    },
  );
});
