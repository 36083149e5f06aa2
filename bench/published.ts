/**
 * The published run: the figures of the last full `npm run bench` on Lambda's Node.js major, kept in
 * bench/published-results.json, and every text of the repository rendered from them: BENCHMARKS.md whole, and the figures
 * of docs/performance.md and the README between their markers. `npm run bench` writes them all; `npm run docs` rewrites the
 * texts from the kept figures (after a change to the report's words); test/docs/figures.test.ts fails when one is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { markdown, PERFORMANCE_DOC, performanceSection, README_FIGURES, readmeFigures } from './report';
import type { BenchResults } from './results';

/** Where the published run's figures are kept, relative to the repository. */
export const PUBLISHED_RESULTS = 'bench/published-results.json';

/** A generated part of a hand-written file: the text between two marker lines. */
interface Block {
  readonly path: string;
  readonly start: string;
  readonly end: string;
}

/**
 * `text` with what lies between `block`'s markers replaced by `content`.
 * @throws when the markers are missing
 */
function withBlock(text: string, block: Block, content: string): string {
  const [start, end] = [text.indexOf(block.start), text.indexOf(block.end)];
  if (start < 0 || end < start) throw new Error(`${block.path} has no ${block.start} … ${block.end} markers`);
  return `${text.slice(0, start + block.start.length)}\n${content.trim()}\n${text.slice(end)}`;
}

/** Each file the published figures are written to, with its text rendered from `results`: path (relative to `root`) → text. */
export function publishedTexts(results: BenchResults, root: string): ReadonlyMap<string, string> {
  const read = (path: string): string => readFileSync(join(root, path), 'utf8');
  return new Map([
    ['BENCHMARKS.md', markdown(results)],
    [PERFORMANCE_DOC.path, withBlock(read(PERFORMANCE_DOC.path), PERFORMANCE_DOC, performanceSection(results))],
    [README_FIGURES.path, withBlock(read(README_FIGURES.path), README_FIGURES, readmeFigures(results))],
  ]);
}

/** The published run's figures, or undefined before the first run published any. */
export function readPublishedResults(root: string): BenchResults | undefined {
  try {
    return JSON.parse(readFileSync(join(root, PUBLISHED_RESULTS), 'utf8')) as BenchResults;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Publishes a run: keeps its figures and rewrites every text rendered from them. @returns the files written */
export function publish(results: BenchResults, root: string): string[] {
  // Every text rendered before anything is written: a file without its markers leaves the published run as it was.
  const texts = publishedTexts(results, root);
  writeFileSync(join(root, PUBLISHED_RESULTS), `${JSON.stringify(results, null, 2)}\n`);
  for (const [path, text] of texts) writeFileSync(join(root, path), text);
  return [PUBLISHED_RESULTS, ...texts.keys()];
}
