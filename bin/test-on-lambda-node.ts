/**
 * Runs the function's tests (its unit, property and end-to-end tests, the webhook kit,
 * and the synthesized artifact) once more on the Node.js major Lambda runs (`nodejs24.x`), with
 * the official Node.js binary from the npm registry, so the code is proven on Lambda's runtime
 * and not only on the oldest Node.js the package supports. Part of `npm test`.
 */
import { LAMBDA_NODE, lambdaNodePath, lambdaNodeUnavailable } from './lambda-node';
import { runOnNode } from './node-release';

// The handler's fault tests too (not local mode's): hung endpoints, frozen containers and the like are Lambda's runtime's business.
const SUITES = [
  'test/lambda',
  'test/webhook-kit',
  'test/lib/artifact.test.ts',
  'test/faults/dead-letter.fault.test.ts',
  'test/faults/frozen-container.fault.test.ts',
  'test/faults/hung-aws.fault.test.ts',
  'test/faults/secret-rotation.fault.test.ts',
];

const unavailable = lambdaNodeUnavailable();
if (unavailable !== undefined) {
  console.log(`test:lambda-node: skipped (${unavailable})`);
  process.exit(0);
}
const node = lambdaNodePath();
const check = `if (process.version !== 'v${LAMBDA_NODE}') { console.error('expected Node.js v${LAMBDA_NODE}, got ' + process.version); process.exit(1); } console.log('test:lambda-node: running on Node.js ' + process.version)`;
if (runOnNode(node, ['-e', check]) !== 0) process.exit(1);
process.exit(runOnNode(node, ['node_modules/vitest/vitest.mjs', 'run', ...SUITES]));
