/**
 * The first part of `npm test`: typecheck (tsc), lint (Biome) and the whole suite (vitest), on
 * the oldest Node.js the package supports, the official binary from the npm registry, whatever
 * this machine's Node.js is: what passes here passes for every user the `engines` field admits.
 * The function's tests then run again on Lambda's Node.js (bin/test-on-lambda-node.ts).
 */
import { nodeMajor, nodeReleasePath, nodeReleaseUnavailable, OLDEST_SUPPORTED_NODE, runOnNode } from './node-release';

const STEPS: readonly (readonly string[])[] = [
  ['node_modules/typescript/bin/tsc', '--noEmit'],
  ['node_modules/@biomejs/biome/bin/biome', 'ci', '.'],
  ['node_modules/vitest/vitest.mjs', 'run'],
];

const unavailable = nodeReleaseUnavailable(OLDEST_SUPPORTED_NODE);
let node = process.execPath;
if (unavailable === undefined) node = nodeReleasePath(OLDEST_SUPPORTED_NODE);
else if (Number(nodeMajor(process.version)) >= Number(nodeMajor(OLDEST_SUPPORTED_NODE)))
  console.log(`test: on this machine's Node.js ${process.version} (${unavailable})`);
else {
  console.error(
    `test: Node.js ${OLDEST_SUPPORTED_NODE} cannot be fetched here (${unavailable}), and this machine's ${process.version} is older than supported`,
  );
  process.exit(1);
}
const expected = node === process.execPath ? process.version : `v${OLDEST_SUPPORTED_NODE}`;
const check = `if (process.version !== '${expected}') { console.error('expected Node.js ${expected}, got ' + process.version); process.exit(1); } console.log('test: running on Node.js ' + process.version)`;
if (runOnNode(node, ['-e', check]) !== 0) process.exit(1);
for (const step of STEPS) {
  const status = runOnNode(node, step);
  if (status !== 0) process.exit(status);
}
