import { describe, expect, it } from 'vitest';
import { estimatedCycles, sha256BlockCounts, totalsOf } from '../../bench/instructions';

const EVENTS = ['Ir', 'Dr', 'Dw', 'I1mr', 'D1mr', 'D1mw', 'ILmr', 'DLmr', 'DLmw', 'Bc', 'Bcm', 'Bi', 'Bim'];

// Lines of `callgrind_annotate --threshold=100 --auto=no --show-percs=no --show=<EVENTS>` over a
// dump of a process signing with createHmac (Node.js 20, cache and branch simulation on).
const LISTING = `Ir          Dr          Dw         I1mr      D1mr      D1mw    ILmr   DLmr   DLmw    Bc         Bcm       Bi        Bim
571,007,997 138,011,631 74,982,623 2,458,201 1,742,945 397,751 37,876 52,355 124,579 80,635,985 3,615,137 5,463,340 993,567  PROGRAM TOTALS
Ir         Dr        Dw        I1mr   D1mr    D1mw    ILmr  DLmr   DLmw   Bc        Bcm     Bi      Bim      file:function
11,161,800   612,900   155,700 33,508   2,955     419    80     10      0    34,500   1,545       .       .  ???:sha256_block_data_order_avx2 [/usr/bin/node]
 9,876,543 1,000,000   500,000  1,000   2,000     300     5      6      7   100,000   2,000     100      10  ???:v8::internal::Heap::Scavenge() [/usr/bin/node]
    19,800     6,000     6,600  1,800       2       1     3      0      0     1,200       .       .       .  ???:sha256_dupctx [/usr/bin/node]
    16,200     5,400         0    603      31       0     1      0      0     3,600      40       .       .  ???:sha256_block_data_order [/usr/bin/node]
`;

describe('totalsOf', () => {
  it('names each number of the totals line by the events line', () => {
    const dump = 'version: 1\ncreator: callgrind-3.19.0\nevents: Ir I1mr Bcm\nfn=(1) main\n1 2 3 4\ntotals: 571007950 2458198 3615137\n';
    expect(totalsOf(dump)).toEqual({ Ir: 571_007_950, I1mr: 2_458_198, Bcm: 3_615_137 });
  });

  it('fails on a file that is not a callgrind dump', () => {
    expect(() => totalsOf('not a dump')).toThrow(/no events or totals line/);
  });
});

describe('estimatedCycles', () => {
  it('weighs L1 misses and mispredicted branches 10, last-level misses 100', () => {
    const counts = { Ir: 1000, I1mr: 1, D1mr: 2, D1mw: 3, ILmr: 1, DLmr: 1, DLmw: 1, Bcm: 4, Bim: 5 };
    expect(estimatedCycles(counts)).toBe(1000 + 10 * (1 + 2 + 3 + 4 + 5) + 100 * 3);
  });

  it('is NaN without the simulated events: instructions alone are no estimate', () => {
    expect(estimatedCycles({ Ir: 1000 })).toBeNaN();
  });
});

describe('sha256BlockCounts', () => {
  it('adds up every event of the SHA-256 block functions, whichever CPU variant, and nothing else', () => {
    const counts = sha256BlockCounts(LISTING, EVENTS);
    expect(counts.Ir).toBe(11_161_800 + 16_200);
    expect(counts.I1mr).toBe(33_508 + 603);
    expect(counts.Bcm).toBe(1_545 + 40);
    expect(counts.Bim).toBe(0); // written "." by callgrind_annotate
  });

  it('is 0 for every event of a dump without hashing (an unsigned side)', () => {
    const counts = sha256BlockCounts(LISTING.replaceAll('sha256_block', 'memcpy_block'), EVENTS);
    expect(Object.values(counts).every((count) => count === 0)).toBe(true);
  });
});
