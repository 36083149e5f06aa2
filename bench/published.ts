/**
 * The published run: the figures of the last full `npm run bench` on Lambda's Node.js major, kept in
 * bench/published-results.json, and every text of the repository rendered from them: BENCHMARKS.md whole, and the figures
 * of docs/performance.md, docs/operations.md and the README between their markers ({@link FIGURE_BLOCKS}). `npm run bench` writes them all; `npm run docs` rewrites the
 * texts from the kept figures (after a change to the report's words); test/docs/figures.test.ts fails when one is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deadLetterFigures, markdown, performanceSection, readmeFigures, recoveryFigures } from './report';
import type { BenchResults } from './results';

/** Where the published run's figures are kept, relative to the repository. */
export const PUBLISHED_RESULTS = 'bench/published-results.json';

/** A generated part of a hand-written page: the text between two marker lines, and what fills it. */
interface Block {
  /** The page, relative to the repository. */
  readonly path: string;
  /** Its markers' name. */
  readonly name: string;
  readonly start: string;
  readonly end: string;
  readonly render: (results: BenchResults) => string;
}

/** The markers of the block `name`. */
const markers = (name: string) => ({ name, start: `<!-- ${name}:start (written by npm run bench) -->`, end: `<!-- ${name}:end -->` });

/** Every page's generated parts; BENCHMARKS.md is generated whole. */
export const FIGURE_BLOCKS: readonly Block[] = [
  { path: 'docs/performance.md', ...markers('performance'), render: performanceSection },
  { path: 'README.md', ...markers('figures'), render: readmeFigures },
  { path: 'docs/operations.md', ...markers('figures:recovery'), render: recoveryFigures },
  { path: 'docs/operations.md', ...markers('figures:dead-letters'), render: deadLetterFigures },
];

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
  const texts = new Map([['BENCHMARKS.md', markdown(results)]]);
  for (const block of FIGURE_BLOCKS) {
    const text = texts.get(block.path) ?? readFileSync(join(root, block.path), 'utf8');
    texts.set(block.path, withBlock(text, block, block.render(results)));
  }
  return texts;
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

/** Every block's text for a run that is not published, one section per block: to read, or to compare with the pages. */
export function unpublishedFigures(results: BenchResults): string {
  return FIGURE_BLOCKS.map((block) => `## ${block.path}, ${block.name}\n\n${block.render(results).trim()}\n`).join('\n');
}
