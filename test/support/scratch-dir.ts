/**
 * Vitest global setup: one scratch directory for the whole run, removed when it ends. Without
 * an `outdir`, every CDK `App` that synthesizes makes a `cdk.out…` directory in the system's
 * temporary directory and leaves it there: a few hundred per `npm test`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A directory that lives as long as the test run (see test/support/scratch-dir.ts). */
    scratchDir: string;
  }
}

export default function setup(project: TestProject): () => void {
  const scratchDir = mkdtempSync(join(tmpdir(), 'relay-tests-'));
  project.provide('scratchDir', scratchDir);
  return () => rmSync(scratchDir, { recursive: true, force: true });
}
