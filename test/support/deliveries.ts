/**
 * What a test of the relay's local mode asserts of a {@link RateLimitedResponder} at the end: every message it was sent
 * accepted, and each exactly once.
 */
import { expect } from 'vitest';
import type { RateLimitedResponder } from '../../testkit/rate-limited-webhook';

/** Every one of `ids` accepted by `limit`, none twice, no other. */
export function expectDeliveredOnce(limit: RateLimitedResponder, ids: readonly string[]): void {
  expect(limit.duplicates()).toBe(0);
  expect(new Set(limit.delivered.keys())).toEqual(new Set(ids));
}
