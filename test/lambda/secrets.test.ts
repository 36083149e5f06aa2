/**
 * Unit tests of CachedSecret (lambda/secrets.ts) with a stand-in reader: the last good value is
 * kept through failed reads and values that do not parse, failed reads are spaced out (backoff),
 * a read is abandoned at its signal, and no message holds a secret's value.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { afterEach, describe, expect, type Mock, test, vi } from 'vitest';
import { DeadlineExceededError } from '../../lambda/deadline';
import { CachedSecret, SECRET_RETRY_INITIAL_MS, type SecretFetcher, secretRetryDelayMs } from '../../lambda/secrets';
import { parseSigningKeys } from '../../lambda/signing';

const ID = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:unit';

/** A parser that refuses anything not starting with "good". */
const parse = (raw: string): string => {
  if (!raw.startsWith('good')) throw new Error('not of the expected form');
  return raw.toUpperCase();
};

/** A reader answering from `answers` in turn (a string, or an Error to throw), counting reads. */
function reader(...answers: (string | Error)[]): SecretFetcher & { reads: number } {
  const fetch = Object.assign(
    async (): Promise<string> => {
      const answer = answers[Math.min(fetch.reads, answers.length - 1)] as string | Error;
      fetch.reads += 1;
      if (answer instanceof Error) throw answer;
      return answer;
    },
    { reads: 0 },
  );
  return fetch;
}

function logger(): { warn: Mock<Logger['warn']>; error: Mock<Logger['error']> } {
  return { warn: vi.fn<Logger['warn']>(), error: vi.fn<Logger['error']>() };
}

const secretFrom = (fetch: SecretFetcher, log = logger(), refreshSeconds = 60): CachedSecret<string> =>
  new CachedSecret({ kind: 'secrets-manager', secretId: ID }, 'test secret', parse, refreshSeconds, { fetch, logger: log });

afterEach(() => {
  vi.useRealTimers();
});

describe('secretRetryDelayMs: doubling from a few seconds up to the refresh interval', () => {
  test.each([
    [1, 300, 2_000],
    [2, 300, 4_000],
    [3, 300, 8_000],
    [8, 300, 256_000],
    [9, 300, 300_000],
    [1_000, 300, 300_000],
    [1, 0, SECRET_RETRY_INITIAL_MS],
    [5, 0, SECRET_RETRY_INITIAL_MS], // refresh 0 (read every time) still spaces failed reads out
    [3, 5, 5_000],
  ])('failure %i, refresh %i s: %i ms', (failures, refreshSeconds, expected) => {
    expect(secretRetryDelayMs(failures, refreshSeconds)).toBe(expected);
  });
});

describe('the last good value is kept', () => {
  test('a value that does not parse keeps the good one, with one ERROR naming the secret and never the value', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const log = logger();
    const fetch = reader('good-1', 'bad-value-xyz', 'bad-value-xyz', 'good-2');
    const secret = secretFrom(fetch, log);
    expect(await secret.get()).toBe('GOOD-1');
    vi.advanceTimersByTime(60_000);
    expect(await secret.get()).toBe('GOOD-1'); // read 'bad-value-xyz': refused, the good one kept
    expect(secret.peek()).toBe('GOOD-1'); // and served from memory while the next read is waited for
    expect(log.error).toHaveBeenCalledTimes(1);
    const [message, attributes] = log.error.mock.calls[0] as unknown as [string, Record<string, unknown>];
    expect(attributes).toMatchObject({ secret: ID, error: expect.stringContaining('not valid (not of the expected form)') });
    expect(JSON.stringify([message, attributes])).not.toContain('bad-value');

    vi.advanceTimersByTime(SECRET_RETRY_INITIAL_MS);
    expect(await secret.get()).toBe('GOOD-1'); // the same bad value again: no second ERROR
    expect(log.error).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(2 * SECRET_RETRY_INITIAL_MS);
    expect(await secret.get()).toBe('GOOD-2');
    expect(fetch.reads).toBe(4);
  });

  test('a failed read keeps the good value (WARN) and the next read waits, doubling, until one succeeds', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const log = logger();
    const fetch = reader('good-1', new Error('unreachable'), new Error('unreachable'), 'good-2', new Error('unreachable'));
    const secret = secretFrom(fetch, log);
    await secret.get();
    vi.advanceTimersByTime(60_000);
    expect(await secret.get()).toBe('GOOD-1');
    expect(fetch.reads).toBe(2);
    expect(log.warn).toHaveBeenCalledWith(expect.any(String), expect.objectContaining({ secret: ID, failures: 1, retryInSeconds: 2 }));
    vi.advanceTimersByTime(SECRET_RETRY_INITIAL_MS - 1);
    expect(await secret.get()).toBe('GOOD-1');
    expect(fetch.reads).toBe(2); // still waiting
    vi.advanceTimersByTime(1);
    await secret.get();
    expect(fetch.reads).toBe(3);
    expect(log.warn).toHaveBeenLastCalledWith(expect.any(String), expect.objectContaining({ failures: 2, retryInSeconds: 4 }));
    vi.advanceTimersByTime(4_000);
    expect(await secret.get()).toBe('GOOD-2');
    // A success resets the wait: the next failure waits the first interval again.
    vi.advanceTimersByTime(60_000);
    await secret.get();
    expect(log.warn).toHaveBeenLastCalledWith(expect.any(String), expect.objectContaining({ failures: 1, retryInSeconds: 2 }));
    expect(log.error).not.toHaveBeenCalled();
  });

  test('with no good value, a failed read fails every caller until the wait is over, without reading again', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const log = logger();
    const fetch = reader(new Error('throttled'), 'good-1');
    const secret = secretFrom(fetch, log);
    await expect(secret.get()).rejects.toThrow(`could not read the test secret from Secrets Manager (${ID}): Error`);
    for (let record = 0; record < 50; record += 1) await expect(secret.get()).rejects.toThrow(/could not read/);
    expect(secret.peek()).toBeUndefined();
    expect(fetch.reads).toBe(1);
    expect(log.error).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(SECRET_RETRY_INITIAL_MS);
    expect(await secret.get()).toBe('GOOD-1');
  });

  test("a network failure under Powertools' error names what failed and where, not a bare Error", async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
    });
    const log = logger();
    const secret = secretFrom(reader(Object.assign(new Error(refused.message), { name: 'GetParameterError', cause: refused })), log);
    const expected = `could not read the test secret from Secrets Manager (${ID}): connect ECONNREFUSED 10.0.0.1:443`;
    await expect(secret.get()).rejects.toThrow(expected);
    expect(log.error).toHaveBeenCalledWith(expect.any(String), expect.objectContaining({ error: expected }));
  });

  test('callers finding the value due share one read', async () => {
    let release: (value: string) => void = () => {};
    let reads = 0;
    const secret = secretFrom(() => {
      reads += 1;
      return new Promise<string>((resolve) => {
        release = resolve;
      });
    });
    const waiting = Array.from({ length: 20 }, () => secret.get());
    release('good-shared');
    expect(await Promise.all(waiting)).toEqual(Array(20).fill('GOOD-SHARED'));
    expect(reads).toBe(1);
  });
});

describe('a read is bounded by its signal', () => {
  test('abandoned when the signal aborts, the reader told to stop; the record fails, the next read waits', async () => {
    let seen: AbortSignal | undefined;
    let reads = 0;
    const secret = secretFrom((_id, signal) => {
      reads += 1;
      seen = signal;
      return new Promise<string>(() => {}); // a Secrets Manager that never answers
    });
    const controller = new AbortController();
    const pending = secret.get(controller.signal);
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toThrow(/GetSecretValue abandoned/);
    expect(seen?.aborted).toBe(true);
    await expect(secret.get(new AbortController().signal)).rejects.toThrow(/GetSecretValue abandoned/);
    expect(reads).toBe(1);
  });

  test('a signal already aborted reads nothing', async () => {
    const fetch = reader('good-1');
    await expect(secretFrom(fetch).get(AbortSignal.abort())).rejects.toThrow(new DeadlineExceededError('GetSecretValue').message);
    expect(fetch.reads).toBe(0);
  });
});

test('a literal is parsed once and never read from anywhere', async () => {
  const fetch = reader('unused');
  const secret = new CachedSecret({ kind: 'literal', value: 'good-literal' }, 'test secret', parse, 0, { fetch });
  expect(secret.peek()).toBeUndefined();
  expect(await secret.get()).toBe('GOOD-LITERAL');
  expect(secret.peek()).toBe('GOOD-LITERAL');
  expect(fetch.reads).toBe(0);
});

describe('a signing key in Secrets Manager shorter than 24 bytes', () => {
  test('is never signed with: with none before, the read fails (records are retried) and one ERROR says why; a good key before is kept', async () => {
    const short = `whsec_${Buffer.from('twenty-three bytes long').toString('base64')}`;
    const good = `whsec_${Buffer.from('a signing key of thirty-two bytes').toString('base64')}`;
    const log = logger();
    const fresh = new CachedSecret({ kind: 'secrets-manager', secretId: ID }, 'signing secret', parseSigningKeys, 60, {
      fetch: reader(short),
      logger: log,
    });
    await expect(fresh.get()).rejects.toThrow(/signing secret #1 is a key of 23 bytes; Standard Webhooks asks for at least 24/);
    expect(log.error).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(log.error.mock.calls)).not.toContain(short.slice(6));

    vi.useFakeTimers();
    const rotated = new CachedSecret({ kind: 'secrets-manager', secretId: ID }, 'signing secret', parseSigningKeys, 60, {
      fetch: reader(good, short),
      logger: logger(),
    });
    const before = await rotated.get();
    vi.advanceTimersByTime(61_000);
    expect(await rotated.get()).toBe(before); // the last good key, not the short one
  });
});
