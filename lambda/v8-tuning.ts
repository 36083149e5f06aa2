/**
 * V8 settings for a Lambda function whose work is relaying batches, applied by the handler
 * module (handler.ts) when the function starts.
 */

/** The V8 flag that turns allocation-site pretenuring off. */
export const NO_ALLOCATION_SITE_PRETENURING = '--no-allocation-site-pretenuring';

/**
 * Turns off V8's allocation-site pretenuring in this process: a big batch misleads it into making
 * every request's objects in the old generation, where they cost scavenges and major collections.
 * Set at run time because `NODE_OPTIONS` cannot carry the flag
 * (measured: docs/performance.md, "Allocation-site pretenuring is off").
 */
export function disableAllocationSitePretenuring(): void {
  process.getBuiltinModule('node:v8').setFlagsFromString(NO_ALLOCATION_SITE_PRETENURING);
}
