/**
 * The circuit breaker's state machine (closed → open → half-open → closed), what trips it and
 * what never does, its probe schedule and its holds.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { CircuitBreaker, countedHoldSeconds, FAILING_SPAN_MS, isOutage, isServerFailure } from '../../lambda/breaker';
import type { WebhookResult } from '../../lambda/transmitter';

const settings = { threshold: 3, probeIntervalSeconds: 10, maxHoldSeconds: 900 };
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

describe('what counts as a server failure (outage signs, and 5xx without a Retry-After honoured)', () => {
  test.each([
    [refused, true],
    [answered(500), true],
    [answered(500, '30'), true], // a 500's Retry-After is not honoured
    [answered(501), true],
    [answered(599), true],
    [answered(503), true],
    [answered(503, '30'), false],
    [answered(429), false],
    [answered(408), false],
    [answered(404), false],
    [answered(200), false],
    [{ kind: 'transport-error', error: 'invalid-request', message: '', latencyMs: 1 } as WebhookResult, false],
  ])('%j → %s', (result, expected) => {
    expect(isServerFailure(result)).toBe(expected);
  });
});

describe('state machine', () => {
  test('closed → open after the threshold; holds; one probe per interval, failed or not; success closes', () => {
    const breaker = new CircuitBreaker(settings);
    let now = 1_000_000;
    expect(breaker.record(refused, false, now)).toBeUndefined();
    expect(breaker.record(refused, false, now)).toBeUndefined();
    expect(breaker.permit(now)).toBe('send');
    expect(breaker.record(refused, false, now)).toEqual({ kind: 'opened', holdSeconds: 10, probeIntervalSeconds: 10, failures: 3 });
    expect(breaker.permit(now)).toBe('hold');
    expect(breaker.holdSeconds(now)).toBe(10);
    now += 9_999;
    expect(breaker.permit(now)).toBe('hold');
    now += 1;
    expect(breaker.permit(now)).toBe('probe');
    expect(breaker.permit(now)).toBe('wait'); // one probe at a time; the others wait for its verdict
    expect(breaker.record(refused, true, now)).toEqual({ kind: 'reopened', holdSeconds: 10, openSeconds: 10 });
    now += 9_999;
    expect(breaker.permit(now)).toBe('hold'); // the next probe one interval later: not doubled
    now += 1;
    expect(breaker.permit(now)).toBe('probe');
    expect(breaker.record(answered(200), true, now)).toEqual({ kind: 'closed', openSeconds: 20 });
    expect(breaker.permit(now)).toBe('send');
    expect(breaker.openSeconds(now)).toBeUndefined();
  });

  test('requests waiting on a probe learn its verdict: closed → send, failed → hold, abandoned → the next is a probe', async () => {
    const breaker = new CircuitBreaker(settings);
    for (let i = 0; i < 3; i += 1) breaker.record(refused, false, 0);
    expect(breaker.permit(10_000)).toBe('probe');
    expect(breaker.permit(10_000)).toBe('wait');
    const waiting = breaker.probeSettled().then(() => breaker.permit(10_001));
    breaker.record(answered(204), true, 10_001);
    expect(await waiting).toBe('send');

    for (let i = 0; i < 3; i += 1) breaker.record(refused, false, 40_000);
    expect(breaker.permit(50_000)).toBe('probe');
    const held = breaker.probeSettled().then(() => breaker.permit(50_001));
    breaker.record(refused, true, 50_001);
    expect(await held).toBe('hold');

    expect(breaker.permit(60_001)).toBe('probe');
    const next = breaker.probeSettled().then(() => breaker.permit(60_002));
    breaker.abandonProbe(60_002);
    expect(await next).toBe('probe'); // a probe that never went out is made again at once
  });

  test('probes stay one interval apart while the hold grows with the outage: a quarter of its length, to the maximum', () => {
    const breaker = new CircuitBreaker(settings);
    let now = 0;
    for (let i = 0; i < 3; i += 1) breaker.record(refused, false, now);
    const probesAt: number[] = [];
    const holds = new Map<number, number>();
    while (now <= 4_000_000) {
      now += 1_000;
      if (breaker.permit(now) === 'probe') {
        probesAt.push(now);
        breaker.record(refused, true, now);
      }
      if (now % 100_000 === 0) holds.set(now / 1000, breaker.holdSeconds(now));
    }
    expect(new Set(probesAt.slice(1).map((at, index) => at - (probesAt[index] as number)))).toEqual(new Set([10_000]));
    expect(Object.fromEntries(holds)).toMatchObject({ 100: 25, 1000: 250, 3600: 900, 4000: 900 });
    expect(breaker.holdSeconds(20_000)).toBe(10); // the probe interval at the least
  });

  test('a normal answer between failures resets the count; a 500 between outage signs resets theirs', () => {
    const breaker = new CircuitBreaker(settings);
    breaker.record(refused, false, 0);
    breaker.record(refused, false, 0);
    breaker.record(answered(404), false, 0);
    breaker.record(refused, false, 0);
    breaker.record(refused, false, 0);
    expect(breaker.permit(0)).toBe('send');
    breaker.record(answered(500), false, 0);
    breaker.record(refused, false, 0);
    breaker.record(refused, false, 0);
    expect(breaker.permit(0)).toBe('send');
    breaker.record(refused, false, 0);
    expect(breaker.permit(0)).toBe('hold');
  });

  test(`server errors such as 500 open it only once they have gone on for ${FAILING_SPAN_MS / 1000} s with nothing else answered`, () => {
    const breaker = new CircuitBreaker(settings);
    // A burst of one tenant's failing messages: many, but over in a moment.
    for (let i = 0; i < 50; i += 1) expect(breaker.record(answered(500), false, i * 10)).toBeUndefined();
    expect(breaker.permit(500)).toBe('send');
    // A success between resets the span as well as the count.
    breaker.record(answered(200), false, 4_000);
    const from = 4_001;
    for (let t = from; t < from + FAILING_SPAN_MS; t += 500) expect(breaker.record(answered(500), false, t)).toBeUndefined();
    expect(breaker.record(answered(500), false, from + FAILING_SPAN_MS)).toMatchObject({ kind: 'opened', failures: 11 });
    expect(breaker.permit(from + FAILING_SPAN_MS)).toBe('hold');
    // While open, a probe answered 500 keeps it open; one answered 404 (the webhook answers) closes it.
    const probeAt = from + FAILING_SPAN_MS + 10_000;
    expect(breaker.permit(probeAt)).toBe('probe');
    expect(breaker.record(answered(500), true, probeAt)).toMatchObject({ kind: 'reopened' });
    expect(breaker.permit(probeAt + 10_000)).toBe('probe');
    expect(breaker.record(answered(404), true, probeAt + 10_000)).toMatchObject({ kind: 'closed' });
  });

  test("one message's 500s, however long it keeps coming back, are its own: a second message's among them open it", () => {
    const breaker = new CircuitBreaker(settings);
    // The only message in the queue, back every second with its 500, for a minute.
    for (let t = 0; t <= 60_000; t += 1_000) expect(breaker.record(answered(500), false, t, 'poison')).toBeUndefined();
    expect(breaker.permit(60_000)).toBe('send');
    // Another message failing too: the webhook fails what it is sent.
    expect(breaker.record(answered(500), false, 61_000, 'another')).toMatchObject({ kind: 'opened' });
    // Outage signs need no second message: nothing answered at all is no message's fault.
    const down = new CircuitBreaker(settings);
    let opened: unknown;
    for (let i = 0; i < settings.threshold; i += 1) opened = down.record(refused, false, i, 'poison');
    expect(opened).toMatchObject({ kind: 'opened' });
  });

  test('fewer server errors than the threshold never open it, however long they go on', () => {
    const breaker = new CircuitBreaker(settings);
    expect(breaker.record(answered(500), false, 0)).toBeUndefined();
    expect(breaker.record(answered(502), false, 60_000)).toBeUndefined();
    expect(breaker.permit(60_000)).toBe('send');
  });

  test('threshold 0 switches it off', () => {
    const breaker = new CircuitBreaker({ ...settings, threshold: 0 });
    for (let i = 0; i < 100; i += 1) expect(breaker.record(refused, false, i * 1000)).toBeUndefined();
    expect(breaker.permit(100_000)).toBe('send');
  });

  test('property: never opens on answers that are not server failures (2xx, 3xx, 4xx, 429 and 503 with Retry-After), whatever the time', () => {
    const normal = fc.oneof(
      fc.integer({ min: 200, max: 499 }).map((status) => answered(status)),
      fc.integer({ min: 0, max: 3600 }).map((seconds) => answered(429, String(seconds))),
      fc.integer({ min: 0, max: 3600 }).map((seconds) => answered(503, String(seconds))),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(normal, fc.integer({ min: 0, max: 60_000 })), { maxLength: 200 }), (results) => {
        const breaker = new CircuitBreaker({ ...settings, threshold: 1 });
        let now = 0;
        return results.every(([result, wait]) => {
          now += wait;
          return breaker.record(result, false, now) === undefined && breaker.permit(now) === 'send';
        });
      }),
    );
  });

  test('property: open exactly when the last `threshold` answers were outage signs, or server failures spanning 5 s; a hold never sends', () => {
    const answer = fc.constantFrom<'outage' | 'error' | 'ok'>('outage', 'error', 'ok');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(answer, fc.integer({ min: 0, max: 3_000 })), { maxLength: 100 }),
        fc.integer({ min: 1, max: 6 }),
        (answers, threshold) => {
          const breaker = new CircuitBreaker({ ...settings, threshold, probeIntervalSeconds: 43_200, maxHoldSeconds: 43_200 });
          let outages = 0;
          let failures = 0;
          let failingSince = 0;
          let open = false;
          let now = 0;
          for (const [kind, wait] of answers) {
            now += wait;
            // Only requests the breaker lets through produce results (no probe is due within the run).
            if (breaker.permit(now) !== 'send') {
              expect(open).toBe(true);
              continue;
            }
            breaker.record(kind === 'outage' ? refused : answered(kind === 'error' ? 500 : 200), false, now);
            outages = kind === 'outage' ? outages + 1 : 0;
            if (kind === 'ok') failures = 0;
            else {
              if (failures === 0) failingSince = now;
              failures += 1;
            }
            if (outages >= threshold || (failures >= threshold && now - failingSince >= FAILING_SPAN_MS)) open = true;
            expect(breaker.permit(now) === 'hold').toBe(open);
          }
        },
      ),
    );
  });
});

describe('countedHoldSeconds (the retry window off: every hold spends a receive)', () => {
  test('the probe interval tripled per receive, up to the longest hold: a count of 5 rides out 20 minutes', () => {
    const holds = [1, 2, 3, 4, 5, 6, 7].map((receive) => countedHoldSeconds(settings, receive));
    expect(holds).toEqual([10, 30, 90, 270, 810, 900, 900]);
    expect(holds.slice(0, 5).reduce((sum, hold) => sum + hold, 0)).toBe(1_210);
    expect(countedHoldSeconds(settings, 10_000)).toBe(900);
    expect(countedHoldSeconds(settings, 0)).toBe(10);
  });
});
