/**
 * The benchmark's figures in the documentation come from one place, the published run's (bench/published-results.json,
 * written by `npm run bench`): BENCHMARKS.md whole and the figures of docs/performance.md and the README are rendered
 * from it, never edited by hand. `npm run docs` rewrites them after a change to the report's words.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PUBLISHED_RESULTS, publishedTexts, readPublishedResults } from '../../bench/published';
import { PERFORMANCE_DOC, README_FIGURES } from '../../bench/report';
import { FIXTURES } from '../bench/fixtures/variants';

const ROOT = join(import.meta.dirname, '..', '..');
const published = readPublishedResults(ROOT);

describe("the benchmark's figures in the documentation", () => {
  it('README.md and docs/performance.md have the markers a run writes between, and a run changes nothing outside them', () => {
    const texts = publishedTexts(FIXTURES['back-pressure and recovery']!, ROOT);
    for (const { path, start, end } of [PERFORMANCE_DOC, README_FIGURES]) {
      const outside = (text: string): string => text.slice(0, text.indexOf(start)) + text.slice(text.indexOf(end));
      const [current, next] = [readFileSync(join(ROOT, path), 'utf8'), texts.get(path) as string];
      expect(next, path).not.toBe(current);
      expect(outside(next), path).toBe(outside(current));
    }
  });

  // Before the first published run there are no figures to compare with: the first full `npm run bench` writes them.
  it.skipIf(published === undefined)(`BENCHMARKS.md, docs/performance.md and README.md are rendered from ${PUBLISHED_RESULTS}`, () => {
    for (const [path, text] of publishedTexts(published!, ROOT)) {
      expect(readFileSync(join(ROOT, path), 'utf8'), `${path} is stale: run npm run docs`).toBe(text);
    }
  });
});
