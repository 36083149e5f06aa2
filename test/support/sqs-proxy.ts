/** Moved to testkit/sqs-proxy.ts (shared with the bench); this re-export keeps older imports working until the merge. */
export * from '../../testkit/sqs-proxy';
