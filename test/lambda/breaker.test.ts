/**
 * The circuit breaker's state machine (closed → open → half-open → closed), what trips it and
 * what never does.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { CircuitBreaker, isOutage } from '../../lambda/breaker';
import type { WebhookResult } from '../../lambda/transmitter';

const settings = { threshold: 3, initialIntervalSeconds: 30, maxIntervalSeconds: 900 };
const refused: WebhookResult = { kind: 'transport-error', error: 'connection', message: 'ECONNREFUSED', latencyMs: 1 };
const answered = (status: number, retryAfter?: string): WebhookResult => ({
  kind: 'response',
  status,
  retryAfter,
  excerpt: '',
  latencyMs: 1,
});

describe('what counts as an outage', () => {
  test.each([
    [refused, true],
    [{ kind: 'transport-error', error: 'timeout', message: '', latencyMs: 1 } as WebhookResult, true],
    [{ kind: 'transport-error', error: 'dns', message: '', latencyMs: 1 } as WebhookResult, true],
    [answered(502), true],
    [answered(503), true],
    [answered(504), true],
    [answered(503, '30'), false],
    [answered(429, '30'), false],
    [answered(429), false],
    [answered(500), false],
    [answered(404), false],
    [answered(200), false],
  ])('%j → %s', (result, expected) => {
    expect(isOutage(result)).toBe(expected);
  });
});

describe('state machine', () => {
  test('closed → open after the threshold; holds; one probe per interval; probe failure doubles the interval; success closes', () => {
    const breaker = new CircuitBreaker(settings);
    let now = 1_000_000;
    expect(breaker.record(refused, false, now)).toBeUndefined();
    expect(breaker.record(refused, false, now)).toBeUndefined();
    expect(breaker.permit(now)).toBe('send');
    expect(breaker.record(refused, false, now)).toEqual({ kind: 'opened', intervalSeconds: 30, failures: 3 });
    expect(breaker.permit(now)).toBe('hold');
    expect(breaker.holdSeconds).toBe(30);
    now += 29_999;
    expect(breaker.permit(now)).toBe('hold');
    now += 1;
    expect(breaker.permit(now)).toBe('probe');
    expect(breaker.permit(now)).toBe('wait'); // one probe at a time; the others wait for its verdict
    expect(breaker.record(refused, true, now)).toEqual({ kind: 'reopened', intervalSeconds: 60, openSeconds: 30 });
    expect(breaker.holdSeconds).toBe(60);
    now += 60_000;
    expect(breaker.permit(now)).toBe('probe');
    expect(breaker.record(answered(200), true, now)).toEqual({ kind: 'closed', openSeconds: 90 });
    expect(breaker.permit(now)).toBe('send');
    expect(breaker.openSeconds(now)).toBeUndefined();
  });

  test('requests waiting on a probe learn its verdict: closed → send, failed → hold, abandoned → the next is a probe', async () => {
    const breaker = new CircuitBreaker(settings);
    for (let i = 0; i < 3; i += 1) breaker.record(refused, false, 0);
    expect(breaker.permit(30_000)).toBe('probe');
    expect(breaker.permit(30_000)).toBe('wait');
    const waiting = breaker.probeSettled().then(() => breaker.permit(30_001));
    breaker.record(answered(204), true, 30_001);
    expect(await waiting).toBe('send');

    for (let i = 0; i < 3; i += 1) breaker.record(refused, false, 40_000);
    expect(breaker.permit(70_000)).toBe('probe');
    const held = breaker.probeSettled().then(() => breaker.permit(70_001));
    breaker.record(refused, true, 70_001);
    expect(await held).toBe('hold');

    expect(breaker.permit(130_001)).toBe('probe');
    const next = breaker.probeSettled().then(() => breaker.permit(130_002));
    breaker.abandonProbe(130_002);
    expect(await next).toBe('probe'); // the interval is not doubled for a probe that never went out
    expect(breaker.holdSeconds).toBe(60);
  });

  test('the interval grows to the maximum and no further', () => {
    const breaker = new CircuitBreaker(settings);
    let now = 0;
    for (let i = 0; i < 3; i += 1) breaker.record(refused, false, now);
    const intervals: number[] = [breaker.holdSeconds];
    for (let probe = 0; probe < 8; probe += 1) {
      now += breaker.holdSeconds * 1000;
      expect(breaker.permit(now)).toBe('probe');
      breaker.record(refused, true, now);
      intervals.push(breaker.holdSeconds);
    }
    expect(intervals).toEqual([30, 60, 120, 240, 480, 900, 900, 900, 900]);
  });

  test('a normal answer between outage failures resets the count', () => {
    const breaker = new CircuitBreaker(settings);
    breaker.record(refused, false, 0);
    breaker.record(refused, false, 0);
    breaker.record(answered(500), false, 0);
    breaker.record(refused, false, 0);
    breaker.record(refused, false, 0);
    expect(breaker.permit(0)).toBe('send');
  });

  test('threshold 0 switches it off', () => {
    const breaker = new CircuitBreaker({ ...settings, threshold: 0 });
    for (let i = 0; i < 100; i += 1) expect(breaker.record(refused, false, 0)).toBeUndefined();
    expect(breaker.permit(0)).toBe('send');
  });

  test('property: never opens on answers that are not outages (2xx, 4xx, 500, 429 with Retry-After)', () => {
    const normal = fc.oneof(
      fc.integer({ min: 200, max: 299 }).map((status) => answered(status)),
      fc.integer({ min: 400, max: 499 }).map((status) => answered(status)),
      fc.constant(answered(500)),
      fc.integer({ min: 0, max: 3600 }).map((seconds) => answered(429, String(seconds))),
      fc.integer({ min: 0, max: 3600 }).map((seconds) => answered(503, String(seconds))),
    );
    fc.assert(
      fc.property(fc.array(normal, { maxLength: 200 }), (results) => {
        const breaker = new CircuitBreaker({ ...settings, threshold: 1 });
        return results.every((result) => breaker.record(result, false, 0) === undefined && breaker.permit(0) === 'send');
      }),
    );
  });

  test('property: open exactly when the last `threshold` results were all outages since the last normal answer; a hold never sends', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 100 }), fc.integer({ min: 1, max: 6 }), (outages, threshold) => {
        const breaker = new CircuitBreaker({ ...settings, threshold });
        let run = 0;
        let open = false;
        for (const outage of outages) {
          // Only requests the breaker lets through produce results (time stands still: no probes).
          if (breaker.permit(0) !== 'send') {
            expect(open).toBe(true);
            continue;
          }
          breaker.record(outage ? refused : answered(200), false, 0);
          run = outage ? run + 1 : 0;
          if (run >= threshold) open = true;
          expect(breaker.permit(0) === 'hold').toBe(open);
        }
      }),
    );
  });
});
