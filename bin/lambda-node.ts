/**
 * The Node.js release that stands in for Lambda's runtime (`nodejs24.x`) on this machine: the
 * official binary from the npm registry (bin/node-release.ts). Used by `npm run test:lambda-node`
 * and `npm run bench`.
 */
import { nodeMajor, nodeReleasePath, nodeReleaseUnavailable } from './node-release';

/** The Node.js release the deployed function's runtime line is tested and benchmarked with. */
export const LAMBDA_NODE = '24.9.0';

/** True when `version` (as `process.version` gives it) is of the same major as {@link LAMBDA_NODE}: Lambda's runtime line. */
export function isLambdaNodeMajor(version: string): boolean {
  return nodeMajor(version) === nodeMajor(LAMBDA_NODE);
}

/** Why this machine cannot run {@link LAMBDA_NODE}, or `undefined` when it can. */
export function lambdaNodeUnavailable(): string | undefined {
  return nodeReleaseUnavailable(LAMBDA_NODE);
}

/** The path of the {@link LAMBDA_NODE} binary (fetched first if need be). */
export function lambdaNodePath(): string {
  return nodeReleasePath(LAMBDA_NODE);
}
