import { describe, expect, it } from 'vitest';
import { annotatedCounts } from '../../bench/scenarios/instructions';

// Lines of `callgrind_annotate --threshold=100 --auto=no --show-percs=no --show=Ir` (valgrind 3.19)
// over a dump of a client signing with createHmac.
const LISTING = `--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
252,362,324  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir          file:function
--------------------------------------------------------------------------------
28,798,459  ???:void v8::internal::MarkingVisitorBase<v8::internal::MainMarkingVisitor>::ProcessStrongHeapObject(…) [/usr/bin/node]
18,603,000  ???:sha256_block_data_order_avx2 [/usr/bin/node]
 9,666,178  ???:Builtins_RecordWriteIgnoreFP [/usr/bin/node]
    19,800  ???:sha256_dupctx [/usr/bin/node]
    27,000  ???:sha256_block_data_order [/usr/bin/node]
`;

describe('annotatedCounts', () => {
  it("reads the program's total and adds up the SHA-256 block functions, whichever CPU variant, and nothing else", () => {
    expect(annotatedCounts(LISTING)).toEqual({ total: 252_362_324, sha256: 18_603_000 + 27_000 });
  });

  it('counts no hashing in a listing without it (an unsigned side)', () => {
    expect(annotatedCounts(LISTING.replaceAll('sha256_block', 'memcpy_block')).sha256).toBe(0);
  });

  it('fails on a listing without the total', () => {
    expect(() => annotatedCounts(LISTING.replace('PROGRAM TOTALS', ''))).toThrow(/no PROGRAM TOTALS/);
  });
});
