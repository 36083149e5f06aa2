/**
 * The handler module turns V8's allocation-site pretenuring off (see lambda/v8-tuning.ts). V8
 * itself is the witness: with `--trace-pretenuring-statistics` it prints a `pretenuring:` line for
 * each allocation site it weighs at a collection, and none once the flag is off.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REQUIRE_BANNER } from '../../lib/bundle';

/**
 * The modules under test, bundled to plain JavaScript: loaded through a TypeScript loader, the
 * loader's own thread (an isolate of its own) would add V8 traces of its own to the child's.
 */
let bundleDir: string;
const bundled = (module: string): string => pathToFileURL(join(bundleDir, `${module}.mjs`)).href;

beforeAll(() => {
  bundleDir = mkdtempSync(join(tmpdir(), 'v8-tuning-'));
  buildSync({
    entryPoints: ['lambda/handler.ts', 'lambda/v8-tuning.ts'],
    outdir: bundleDir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    banner: { js: REQUIRE_BANNER },
    logLevel: 'silent',
  });
});
afterAll(() => rmSync(bundleDir, { recursive: true, force: true }));

/**
 * Runs `setup` (ES module code) in a fresh Node.js process with V8's pretenuring trace on, then
 * allocates a million small literals and keeps them, which makes V8 weigh their site at every
 * scavenge; returns how many pretenuring lines V8 printed.
 */
function pretenuringTraceLines(setup: string): number {
  const workload = 'const keep = []; for (let i = 0; i < 1_000_000; i += 1) keep.push([i, { i }]); console.log(keep.length);';
  const result = spawnSync(process.execPath, ['--trace-pretenuring-statistics', '--input-type=module', '-e', `${setup}\n${workload}`], {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH, WEBHOOK_URL: 'https://webhook.example.com/hook', AWS_REGION: 'us-east-1' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(result.stderr).not.toMatch(/Error/);
  expect(result.stdout).toContain('1000000');
  return result.stdout.split('\n').filter((line) => line.includes('pretenuring:')).length;
}

describe('V8 tuning', () => {
  test('without it, V8 weighs allocation sites for pretenuring (the trace this test reads works)', () => {
    expect(pretenuringTraceLines('')).toBeGreaterThan(0);
  });

  test('loading the handler module turns pretenuring off: V8 weighs no allocation site', () => {
    expect(pretenuringTraceLines(`await import('${bundled('handler')}');`)).toBe(0);
  });

  test('disableAllocationSitePretenuring alone does it', () => {
    expect(
      pretenuringTraceLines(
        `const { disableAllocationSitePretenuring } = await import('${bundled('v8-tuning')}'); disableAllocationSitePretenuring();`,
      ),
    ).toBe(0);
  });
});
