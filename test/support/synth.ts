/** Moved to testkit/synth.ts (shared with the bench); this re-export keeps older imports working until the merge. */
export * from '../../testkit/synth';
