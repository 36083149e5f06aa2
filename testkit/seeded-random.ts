/** Seeded pseudo-random numbers for the bench's model webhooks and the pacing simulation: the same run for the same seed. */

/** A small seeded generator (mulberry32): numbers in [0, 1), the same sequence every time for a seed. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
