/**
 * Regenerates the generated parts of the documentation: the settings tables of docs/configuration.md from the registry
 * (`lambda/settings.ts`), and the benchmark's texts (BENCHMARKS.md, the figures of docs/performance.md, docs/operations.md and the README) from
 * the published run's figures (bench/published.ts). `npx tsx bin/docs.ts`; `--check` exits 1 when a file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PUBLISHED_RESULTS, publishedTexts, readPublishedResults } from '../bench/published';
import { withSettingsTables } from '../lib/configuration-docs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const configuration = 'docs/configuration.md';
const published = readPublishedResults(root);
const texts = new Map([
  [configuration, withSettingsTables(readFileSync(join(root, configuration), 'utf8'))],
  ...(published === undefined ? [] : publishedTexts(published, root)),
]);
for (const [path, next] of texts) {
  const current = readFileSync(join(root, path), 'utf8');
  if (next === current) continue;
  if (process.argv.includes('--check')) {
    console.error(`${path} is stale: run npm run docs`);
    process.exitCode = 1;
  } else {
    writeFileSync(join(root, path), next);
    console.log(`${path}: rewritten from ${path === configuration ? 'the settings registry' : PUBLISHED_RESULTS}`);
  }
}
