/**
 * The Dockerfile's supply chain, read from the file (no Docker daemon here): every base image is
 * pinned by digest, and the image installs the lockfile's versions of the production dependencies
 * (`npm ci`), never ranges resolved at build time, with no install scripts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../testkit/synth';

const dockerfile = readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
/** The instructions, continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'));

test('every stage starts from an image pinned by digest, the same in both, with a note on updating it', () => {
  const bases = instructions.filter((line) => /^FROM\s/i.test(line)).map((line) => line.split(/\s+/)[1] ?? '');
  expect(bases.length).toBeGreaterThanOrEqual(2);
  for (const base of bases) expect(base).toMatch(/^node:24-bookworm-slim@sha256:[0-9a-f]{64}$/);
  expect(new Set(bases).size).toBe(1);
  expect(dockerfile).toMatch(/#.*docker buildx imagetools inspect node:24-bookworm-slim/);
});

test('the run stage installs with npm ci from the lockfile: production dependencies only, no install scripts, no ranges', () => {
  const runStage = instructions.slice(instructions.findLastIndex((line) => /^FROM\s/i.test(line)));
  const installs = runStage.filter((line) => /\bnpm (ci|install|i)\b/.test(line));
  expect(installs).toHaveLength(1);
  expect(installs[0]).toMatch(/\bnpm ci\b/);
  for (const flag of ['--omit=dev', '--omit=peer', '--ignore-scripts']) expect(installs[0]).toContain(flag);
  expect(dockerfile).not.toContain('--no-package-lock');
  expect(runStage.some((line) => /^COPY\s+package-lock\.json\s/.test(line))).toBe(true);
});
