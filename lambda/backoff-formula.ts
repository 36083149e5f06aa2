/**
 * The arithmetic of the backoff policies that grow with the receive count (`fixed`, `linear`,
 * `fibonacci`, `exponential`) and of jitter: one implementation, used by the relay's retry timing
 * (retry-timing.ts, which adds `none` and `schedule`) and by the webhook kit's retry strategies.
 * Free of imports, so the kit ships it without the settings registry.
 */

/** The policies whose delay is computed from a base and the receive count. */
export type GrowingBackoffPolicy = 'fixed' | 'linear' | 'fibonacci' | 'exponential';

/** Fractional jitter added on top of a backoff delay, at most (docs/contract.md, "What the response means": up to 25 %). */
export const MAX_JITTER_FRACTION = 0.25;

/** The receive count as a number of 1 or more: NaN means "unknown", the first receive; Infinity stays (every cap takes it). */
export function receiveNumber(receiveCount: number): number {
  return Number.isNaN(receiveCount) ? 1 : Math.max(1, Math.floor(receiveCount));
}

function fibonacci(n: number): number {
  let [previous, current] = [0, 1];
  for (let i = 1; i < n && current < Number.MAX_SAFE_INTEGER; i += 1) [previous, current] = [current, previous + current];
  return current;
}

/**
 * `rawSeconds` capped at `capSeconds` and rounded to whole seconds; with `jitter`, up to
 * {@link MAX_JITTER_FRACTION} more (still within the cap).
 * @param random a source of numbers in [0, 1)
 */
export function cappedWithJitter(rawSeconds: number, capSeconds: number, jitter: boolean, random: () => number): number {
  const capped = Math.min(rawSeconds, capSeconds);
  if (!jitter) return Math.min(Math.round(capped), capSeconds);
  // Rounded to whole seconds, but never past +25 %: round(3 · 1.249) would be 4, a third more.
  const jittered = Math.min(Math.round(capped + capped * MAX_JITTER_FRACTION * random()), Math.floor(capped * (1 + MAX_JITTER_FRACTION)));
  return Math.min(jittered, capSeconds);
}

/**
 * The delay before receive number `receiveCount + 1`, in whole seconds: `fixed` = base,
 * `linear` = n·base, `fibonacci` = base·F(n), `exponential` = base·2^(n−1), where n is the
 * receive count (1 on the first failure), never above `maxSeconds` (jitter included).
 * @param random a source of numbers in [0, 1), for the jitter
 */
export function growingBackoffSeconds(
  policy: GrowingBackoffPolicy,
  baseSeconds: number,
  maxSeconds: number,
  jitter: boolean,
  receiveCount: number,
  random: () => number = Math.random,
): number {
  if (baseSeconds === 0) return 0; // 0·∞ would be NaN
  const n = receiveNumber(receiveCount);
  let raw: number;
  switch (policy) {
    case 'fixed':
      raw = baseSeconds;
      break;
    case 'linear':
      raw = n * baseSeconds;
      break;
    case 'fibonacci':
      raw = baseSeconds * fibonacci(n);
      break;
    case 'exponential':
      // 2^(n-1) overflows to Infinity for large n; the cap turns that into maxSeconds.
      raw = baseSeconds * 2 ** (n - 1);
      break;
  }
  return cappedWithJitter(raw, maxSeconds, jitter, random);
}
