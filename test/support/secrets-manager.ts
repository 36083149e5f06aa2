/** Moved to testkit/secrets-manager.ts (shared with the bench); this re-export keeps older imports working until the merge. */
export * from '../../testkit/secrets-manager';
