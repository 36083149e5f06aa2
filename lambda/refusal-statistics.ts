/**
 * The statistics a pace (lambda/pace.ts) judges refused shares by: whether a share fell when the pace slowed down, beyond the
 * noise of so few answers, and the highest share it will learn as refusals that persist at any pace.
 */

/** Standard errors by which two refused shares must differ for the refusals to have fallen with the pace. */
export const SIGNIFICANT = 2;
/** No floor is learned above this share: a webhook refusing most requests of a mix it also takes is congested, not choosy. */
export const MAX_FLOOR = 0.5;
/** The fewest answers a refused share is judged on (a pace's window grows until it holds this many, as far as its meter keeps). */
export const MIN_ANSWERS = 16;

/** Refusals among some answers. */
export interface RefusalCount {
  readonly refused: number;
  readonly answers: number;
}

/**
 * The standard error of the difference between the refused shares of `a` and `b`, from their pooled share (taken as at least
 * about 1 %: a few answers with no refusal among them are no proof that none will be).
 */
export function differenceError(a: RefusalCount, b: RefusalCount): number {
  const pooled = (a.refused + b.refused) / (a.answers + b.answers);
  return Math.sqrt(Math.max(pooled * (1 - pooled), 0.01) * (1 / a.answers + 1 / b.answers));
}
