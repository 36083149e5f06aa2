import { describe, expect, it } from 'vitest';
import { isLambdaNodeMajor, LAMBDA_NODE, nodeMajor } from '../../bin/lambda-node';

describe('nodeMajor', () => {
  it('reads the major from a version with or without its v', () => {
    expect(nodeMajor('v24.9.0')).toBe('24');
    expect(nodeMajor('20.20.2')).toBe('20');
  });

  it('gives back what is not a version, rather than a wrong major', () => {
    expect(nodeMajor('nightly')).toBe('nightly');
  });
});

describe('isLambdaNodeMajor', () => {
  it("says whether a run's Node.js is of Lambda's runtime line: that run's reports are BENCHMARKS.md and the README's", () => {
    const [major] = LAMBDA_NODE.split('.');
    expect(isLambdaNodeMajor(`v${LAMBDA_NODE}`)).toBe(true);
    expect(isLambdaNodeMajor(`v${major}.0.1`)).toBe(true);
    expect(isLambdaNodeMajor('v20.20.2')).toBe(false);
    expect(isLambdaNodeMajor(`v${major}0.1.0`)).toBe(false); // 240 is not 24
  });
});
