import { describe, expect, it } from 'vitest';
import { lambdaHeapFlags } from '../../bench/scenarios/warm-memory';

describe('lambdaHeapFlags', () => {
  it("gives the heap limits Lambda's Node.js runtime starts a function of that memory size with", () => {
    // The stack's default, 256 MB: 25 MB young generation (12 per semi-space), 231 MB old.
    expect(lambdaHeapFlags(256)).toEqual(['--max-semi-space-size=12', '--max-old-space-size=231']);
    // The smallest function, and one vCPU's worth: the bootstrap's integer division rounds down.
    expect(lambdaHeapFlags(128)).toEqual(['--max-semi-space-size=6', '--max-old-space-size=116']);
    expect(lambdaHeapFlags(1769)).toEqual(['--max-semi-space-size=88', '--max-old-space-size=1593']);
  });
});
