import { describe, expect, it } from 'vitest';
import { isLambdaNodeMajor, LAMBDA_NODE } from '../../bin/lambda-node';

describe('isLambdaNodeMajor', () => {
  it("says whether a run's Node.js is of Lambda's runtime line: that run's reports are BENCHMARKS.md and the README's", () => {
    const [major] = LAMBDA_NODE.split('.');
    expect(isLambdaNodeMajor(`v${LAMBDA_NODE}`)).toBe(true);
    expect(isLambdaNodeMajor(`v${major}.0.1`)).toBe(true);
    expect(isLambdaNodeMajor('v20.20.2')).toBe(false);
    expect(isLambdaNodeMajor(`v${major}0.1.0`)).toBe(false); // 240 is not 24
  });
});
