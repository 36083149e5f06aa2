/**
 * V8 settings for a Lambda function whose work is relaying batches, applied by the handler
 * module (handler.ts) when the function starts.
 */

/** The V8 flag that turns allocation-site pretenuring off. */
export const NO_ALLOCATION_SITE_PRETENURING = '--no-allocation-site-pretenuring';

/**
 * Turns off V8's allocation-site pretenuring in this process.
 *
 * Why: V8 counts how many of the objects made at each allocation site (an object or array
 * literal) survive a collection, and once a site looks long-lived it makes that site's objects
 * in the old generation directly. A 10,000-record batch misleads it: the major collection that
 * falls inside such a batch keeps the requests of the moment alive, their sites look long-lived,
 * and from the next batch on the per-request objects of node:http and the relay (response
 * streams, promises, closures) are made in the old generation. There they keep every young
 * object they point to alive through each scavenge until the next major collection, so the whole
 * of every request is copied and promoted. Measured on Node.js 24 with a 256 MB function's heap
 * limits, over a 10,000-record batch: about 2.7 MB promoted per scavenge and 100-300 ms of
 * scavenges and 2-3 major collections per batch with pretenuring, against under 0.1 MB, 10-70 ms
 * and 0-1 without (`--trace-gc`; the bare client loops, which make fewer such objects, were not
 * misled under those limits).
 *
 * Nothing in the relay depends on pretenuring: its long-lived objects are few and made once.
 * `NODE_OPTIONS` cannot carry the flag (Node.js allows only a short list of V8 flags there), so it
 * is set at run time. V8 honours it there: after it is set, no collection makes a pretenuring
 * decision (test/lambda/v8-tuning.test.ts watches V8's own trace of them).
 */
export function disableAllocationSitePretenuring(): void {
  process.getBuiltinModule('node:v8').setFlagsFromString(NO_ALLOCATION_SITE_PRETENURING);
}
