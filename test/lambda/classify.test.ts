/**
 * Unit tests of lambda/classify.ts: what every response (docs/contract.md, "What the response means") means for the message.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { classify, isTransientStatus } from '../../lambda/classify';
import type { PermanentFailureMode } from '../../lambda/settings';
import type { BackoffSettings } from '../../lambda/retry-timing';
import type { TransportErrorKind, WebhookResult } from '../../lambda/transmitter';

const NOW = Date.UTC(2015, 9, 21, 7, 26, 0); // two minutes before the date below
const IN_TWO_MINUTES = 'Wed, 21 Oct 2015 07:28:00 GMT';
const TWO_MINUTES_AGO = 'Wed, 21 Oct 2015 07:24:00 GMT';

const exponential: BackoffSettings = { policy: 'exponential', baseSeconds: 2, maxSeconds: 300, jitter: false };
const config = (permanentFailure: PermanentFailureMode = 'dead-letter', backoff: BackoffSettings = exponential) => ({
  backoff,
  permanentFailure,
});
const noRandom = (): number => {
  throw new Error('random must not be called without jitter');
};

const response = (status: number, retryAfter?: string): WebhookResult => ({
  kind: 'response',
  status,
  retryAfter,
  excerpt: '',
  latencyMs: 3,
});
const transport = (error: TransportErrorKind): WebhookResult => ({ kind: 'transport-error', error, message: 'boom', latencyMs: 3 });

/** The exponential backoff for receive count 3: 2 * 2^2. */
const BACKOFF_3 = { kind: 'retry', delaySeconds: 8, delaySource: 'backoff' } as const;
const at = (result: WebhookResult, mode: PermanentFailureMode = 'dead-letter', receiveCount = 3) =>
  classify(result, config(mode), receiveCount, NOW, noRandom);

describe('2xx: delivered', () => {
  test.each([200, 201, 202, 204, 206, 299])('%d', (status) => {
    expect(at(response(status))).toEqual({ kind: 'delivered' });
    expect(at(response(status), 'retry')).toEqual({ kind: 'delivered' });
  });

  test('a 2xx with a Retry-After is still delivered', () => {
    expect(at(response(200, '120'))).toEqual({ kind: 'delivered' });
  });
});

describe('3xx and 4xx: permanent', () => {
  test.each([300, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 409, 410, 413, 415, 422, 431, 451, 499])(
    '%d is permanent by default',
    (status) => {
      expect(at(response(status))).toEqual({ kind: 'permanent' });
    },
  );

  test.each([301, 302, 304, 307, 400, 401, 403, 404, 410, 422])('%d is a backoff retry with PERMANENT_FAILURE=retry', (status) => {
    expect(at(response(status), 'retry')).toEqual(BACKOFF_3);
  });

  test('a Retry-After on a 4xx other than 429 is ignored: still permanent', () => {
    expect(at(response(400, '120'))).toEqual({ kind: 'permanent' });
    expect(at(response(301, '120'))).toEqual({ kind: 'permanent' });
    expect(at(response(404, '60'), 'retry')).toEqual(BACKOFF_3);
  });
});

describe('transient: retry after the backoff delay', () => {
  test.each([408, 429, 500, 501, 502, 503, 504, 507, 599])('%d without Retry-After', (status) => {
    expect(at(response(status))).toEqual(BACKOFF_3);
    expect(at(response(status), 'retry')).toEqual(BACKOFF_3);
  });

  test.each([500, 502, 504, 408])('%d with a Retry-After still uses the backoff (Retry-After is honoured only for 429/503)', (status) => {
    expect(at(response(status, '120'))).toEqual(BACKOFF_3);
    expect(at(response(status, IN_TWO_MINUTES))).toEqual(BACKOFF_3);
  });

  test.each(['timeout', 'connection', 'dns', 'protocol'] as const)('transport error %s', (kind) => {
    expect(at(transport(kind))).toEqual(BACKOFF_3);
    expect(at(transport(kind), 'retry')).toEqual(BACKOFF_3);
  });

  test('the delay follows the receive count', () => {
    expect([1, 2, 3, 4].map((n) => (at(response(503), 'dead-letter', n) as { delaySeconds: number }).delaySeconds)).toEqual([2, 4, 8, 16]);
    expect((at(transport('timeout'), 'dead-letter', 50) as { delaySeconds: number }).delaySeconds).toBe(300);
  });

  test('jitter comes from the injected random source', () => {
    const jittered = { ...exponential, jitter: true };
    expect(classify(response(500), config('dead-letter', jittered), 3, NOW, () => 0)).toEqual(BACKOFF_3);
    expect(classify(response(500), config('dead-letter', jittered), 3, NOW, () => 0.999_999)).toEqual({ ...BACKOFF_3, delaySeconds: 10 });
  });
});

describe('429 and 503 with Retry-After: retry after that delay', () => {
  test.each([429, 503])('%d with delta-seconds', (status) => {
    expect(at(response(status, '120'))).toEqual({ kind: 'retry', delaySeconds: 120, delaySource: 'retry-after' });
    expect(at(response(status, '0'))).toEqual({ kind: 'retry', delaySeconds: 0, delaySource: 'retry-after' });
    expect(at(response(status, ' 7 '))).toEqual({ kind: 'retry', delaySeconds: 7, delaySource: 'retry-after' });
  });

  test.each([429, 503])('%d with an HTTP-date: future, past', (status) => {
    expect(at(response(status, IN_TWO_MINUTES))).toEqual({ kind: 'retry', delaySeconds: 120, delaySource: 'retry-after' });
    expect(at(response(status, TWO_MINUTES_AGO))).toEqual({ kind: 'retry', delaySeconds: 0, delaySource: 'retry-after' });
  });

  test.each([429, 503])('%d with a Retry-After above 12 h is capped, not rejected', (status) => {
    expect(at(response(status, '999999'))).toEqual({ kind: 'retry', delaySeconds: 43_200, delaySource: 'retry-after' });
  });

  test('Retry-After beats the backoff maximum: the webhook knows best', () => {
    expect(at(response(429, '3600'))).toEqual({ kind: 'retry', delaySeconds: 3600, delaySource: 'retry-after' });
  });

  test.each([429, 503])('%d with a garbage Retry-After falls back to the backoff', (status) => {
    for (const garbage of ['soon', '-5', '1.5', '0x10', '1e3', '', '   ', 'Wed, 32 Oct 2015 07:28:00 GMT']) {
      expect(at(response(status, garbage))).toEqual(BACKOFF_3);
    }
  });

  test('the Retry-After is honoured whatever PERMANENT_FAILURE says', () => {
    expect(at(response(429, '30'), 'retry')).toEqual({ kind: 'retry', delaySeconds: 30, delaySource: 'retry-after' });
  });
});

describe('garbage statuses are transient', () => {
  test.each([0, 1, 99, 100, 101, 103, 199, 600, 999, -1])('%d retries after the backoff', (status) => {
    expect(at(response(status))).toEqual(BACKOFF_3);
    expect(at(response(status, '120'))).toEqual(BACKOFF_3);
  });
});

describe('the none policy', () => {
  const none: BackoffSettings = { policy: 'none', baseSeconds: 2, maxSeconds: 300, jitter: true };
  const withNone = (result: WebhookResult, mode: PermanentFailureMode = 'dead-letter') =>
    classify(result, config(mode, none), 3, NOW, noRandom);

  test('a backoff retry has no delay: the queue keeps its own visibility timeout', () => {
    const queueDefault = { kind: 'retry', delaySeconds: undefined, delaySource: 'backoff' };
    expect(withNone(response(500))).toEqual(queueDefault);
    expect(withNone(response(429))).toEqual(queueDefault);
    expect(withNone(response(408))).toEqual(queueDefault);
    expect(withNone(transport('connection'))).toEqual(queueDefault);
    expect(withNone(response(404), 'retry')).toEqual(queueDefault);
  });

  test('a Retry-After still sets the delay', () => {
    expect(withNone(response(503, '45'))).toEqual({ kind: 'retry', delaySeconds: 45, delaySource: 'retry-after' });
  });

  test('delivered and permanent are unchanged', () => {
    expect(withNone(response(204))).toEqual({ kind: 'delivered' });
    expect(withNone(response(410))).toEqual({ kind: 'permanent' });
  });
});

describe('isTransientStatus', () => {
  test('408, 429 and every 5xx', () => {
    for (let status = 100; status <= 699; status += 1) {
      expect(isTransientStatus(status)).toBe(status === 408 || status === 429 || (status >= 500 && status <= 599));
    }
  });
});

test('property: every status gets exactly the verdict of docs/contract.md, "What the response means"', () => {
  const retryAfter = fc.option(
    fc.oneof(fc.nat({ max: 100_000 }).map(String), fc.constantFrom('soon', IN_TWO_MINUTES, TWO_MINUTES_AGO, '-1')),
    { nil: undefined },
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 1000 }),
      retryAfter,
      fc.constantFrom<PermanentFailureMode>('dead-letter', 'retry'),
      (status, header, mode) => {
        const verdict = at(response(status, header), mode);
        const usable = header !== undefined && header !== 'soon' && header !== '-1';
        const permanent = status >= 300 && status <= 499 && status !== 408 && status !== 429;
        if (status >= 200 && status <= 299) expect(verdict).toEqual({ kind: 'delivered' });
        else if ((status === 429 || status === 503) && usable) expect(verdict).toMatchObject({ kind: 'retry', delaySource: 'retry-after' });
        else if (permanent && mode === 'dead-letter') expect(verdict).toEqual({ kind: 'permanent' });
        else expect(verdict).toEqual(BACKOFF_3);
      },
    ),
  );
});
