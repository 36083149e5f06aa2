/**
 * The known name nearest to a mistyped one, for errors and warnings that say "did you mean …?"
 * (unknown `-c` context keys, environment variables one typo away from a setting's).
 * Import-free: the CDK app and the local runner load it too.
 */

/**
 * Edits (insertions, deletions, substitutions, swaps of two neighbours) between `a` and `b`,
 * ignoring case: `webhookUrll` is one from `webhookUrl`, `WEBHOOK_ULR` one from `WEBHOOK_URL`.
 */
export function editDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  // Three rows of the optimal-string-alignment table: the swap looks two rows back.
  let before = new Array<number>(y.length + 1).fill(0);
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= y.length; j += 1) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      let best = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) best = Math.min(best, (before[j - 2] as number) + 1);
      current.push(best);
    }
    before = previous;
    previous = current;
  }
  return previous[y.length] as number;
}

/**
 * The candidate nearest to `name` (the first of equals), or `undefined` when none is within
 * `maxDistance` edits.
 */
export function nearestName(name: string, candidates: Iterable<string>, maxDistance = Number.POSITIVE_INFINITY): string | undefined {
  let nearest: string | undefined;
  let nearestDistance = maxDistance + 1;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (distance < nearestDistance) {
      nearest = candidate;
      nearestDistance = distance;
    }
  }
  return nearest;
}

/** Edits within which an unknown name is taken for a typo of a known one. */
export const TYPO_DISTANCE = 2;

/**
 * The names of `names` that are not `known` but within {@link TYPO_DISTANCE} edits of a known
 * one (ignoring case), each with that known name: `WEBHOOK_ULR` → `WEBHOOK_URL`. Names shorter
 * than six characters are left out: two edits would make too many of them look like typos.
 */
export function likelyTypos(names: Iterable<string>, known: readonly string[]): Map<string, string> {
  const exact = new Set(known);
  const typos = new Map<string, string>();
  for (const name of names) {
    if (exact.has(name) || name.length < 6) continue;
    const nearest = nearestName(name, known, TYPO_DISTANCE);
    if (nearest !== undefined) typos.set(name, nearest);
  }
  return typos;
}
