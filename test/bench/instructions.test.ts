import { describe, expect, it } from 'vitest';
import { sha256BlockInstructions } from '../../bench/instructions';

// The function lines of `callgrind_annotate --threshold=100 --auto=no` over a signed relay's dump (Node.js 24).
const LISTING = `--------------------------------------------------------------------------------
Ir                     file:function
--------------------------------------------------------------------------------
436,321,757 (100.0%)  PROGRAM TOTALS
74,412,000 (17.05%)  ???:sha256_block_data_order_avx2 [/usr/bin/node]
 9,876,543 ( 2.26%)  ???:v8::internal::Heap::Scavenge() [/usr/bin/node]
   116,000 ( 0.03%)  ???:sha256_internal_final [/usr/bin/node]
   108,000 ( 0.02%)  ???:sha256_block_data_order [/usr/bin/node]
    62,000 ( 0.01%)  ???:sha256_dupctx [/usr/bin/node]
`;

describe('sha256BlockInstructions', () => {
  it('adds up the SHA-256 block functions, whichever CPU variant, and nothing else', () => {
    expect(sha256BlockInstructions(LISTING)).toBe(74_412_000 + 108_000);
  });

  it('is 0 for a dump without hashing (an unsigned side)', () => {
    expect(sha256BlockInstructions(LISTING.replaceAll('sha256_block', 'memcpy_block'))).toBe(0);
  });
});
