/**
 * Secrets the relay sends with: the signing keys, the `Authorization` value, the OAuth client
 * secret and the client certificate. Read from Secrets Manager through Powertools Parameters
 * (re-read every `SECRETS_REFRESH_SECONDS` so a rotation takes effect without a deploy), given
 * directly for local runs, or read from files (re-read on the same schedule, as a certificate
 * renewed on disk must be).
 *
 * The last good value is kept: a refresh that fails (Secrets Manager unreachable, throttled, or
 * answering a value that does not parse) keeps signing with it, and the next try waits (a
 * backoff doubling from {@link SECRET_RETRY_INITIAL_MS} up to the refresh interval) rather than
 * every record fetching again and waiting out the SDK's retries. With no value ever read, the
 * record fails and is retried, never sent without it. Each fetch is bounded by the caller's abort
 * signal and the SDK's request-handler timeouts. No message ever contains a secret's value.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import type { SecretsGetOptions } from '@aws-lambda-powertools/parameters/secrets/types';
import type { SecretSource } from './config';
import { AWS_REQUEST_HANDLER_OPTIONS, beforeDeadline, DeadlineExceededError } from './deadline';

/** The first wait after a failed read; each further failure doubles it, up to the refresh interval. */
export const SECRET_RETRY_INITIAL_MS = 2_000;

/**
 * How long to wait before reading again after `failures` failed reads in a row (1 or more):
 * {@link SECRET_RETRY_INITIAL_MS}, doubling, at most the refresh interval (and never less than
 * the first wait, so `SECRETS_REFRESH_SECONDS=0` still spaces failed reads out).
 */
export function secretRetryDelayMs(failures: number, refreshSeconds: number): number {
  const ceiling = Math.max(SECRET_RETRY_INITIAL_MS, refreshSeconds * 1000);
  return Math.min(ceiling, SECRET_RETRY_INITIAL_MS * 2 ** Math.min(Math.max(failures - 1, 0), 30));
}

/** Reads one secret's text; `signal` abandons the read. */
export type SecretFetcher = (secretId: string, signal: AbortSignal | undefined) => Promise<string>;

/** What a {@link CachedSecret} may be given besides its source. */
export interface CachedSecretOptions {
  /** Where a failed refresh or a value that does not parse is reported (never the value itself). */
  readonly logger?: Pick<Logger, 'warn' | 'error'>;
  /** Reads the secret; by default Powertools' `SecretsProvider` with bounded timeouts. */
  readonly fetch?: SecretFetcher;
}

/** A secret stored as binary: the relay needs text. */
class BinarySecretError extends Error {
  constructor() {
    super('the secret is binary (SecretBinary), not text');
    this.name = 'BinarySecretError';
  }
}

/** The texts of `files` as one JSON object, keyed as `files` is (see {@link SecretSource}). */
async function readFiles(files: Readonly<Record<string, string>>): Promise<string> {
  const { readFile } = process.getBuiltinModule('node:fs/promises');
  const entries = await Promise.all(Object.entries(files).map(async ([key, path]) => [key, await readFile(path, 'utf8')]));
  return JSON.stringify(Object.fromEntries(entries));
}

/** An error of Node.js's own (a file's, a socket's): its message names a path or an address, never data read. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return (
    error instanceof Error &&
    typeof (error as NodeJS.ErrnoException).code === 'string' &&
    (error as NodeJS.ErrnoException).syscall !== undefined
  );
}

/** The name of what went wrong with a read, never anything the secret might hold. */
function describeReadError(error: unknown): string {
  if (error instanceof DeadlineExceededError || error instanceof BinarySecretError) return error.message;
  // A file's error (ENOENT, EACCES) names the path, never its contents.
  if (isSystemError(error)) return error.message;
  // Powertools wraps the SDK's error (GetParameterError); the cause names what happened. A network failure's
  // (ECONNREFUSED, ENOTFOUND) names the endpoint, where its name alone would be a bare "Error".
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  if (isSystemError(cause)) return cause.message;
  if (cause instanceof Error) return cause.name;
  return error instanceof Error ? error.name : 'error';
}

type ProviderModule = typeof import('@aws-lambda-powertools/parameters/secrets');
type SdkModule = typeof import('@aws-sdk/client-secrets-manager');

/**
 * Powertools' provider, its client bounded by the SDK's request-handler timeouts and each read by
 * the caller's abort signal (which `SecretsProvider.get` does not pass on: its `_get`, the
 * extension point of Powertools providers, is given the signal in the options instead).
 */
function boundedProvider({ SecretsProvider }: ProviderModule, { GetSecretValueCommand }: SdkModule): SecretsProvider {
  class BoundedSecretsProvider extends SecretsProvider {
    protected override async _get(
      name: string,
      options?: NonNullable<SecretsGetOptions> & { abortSignal?: AbortSignal },
    ): Promise<string | Uint8Array | undefined> {
      const abortSignal = options?.abortSignal;
      const result = await this.client.send(
        new GetSecretValueCommand({ SecretId: name }),
        abortSignal === undefined ? {} : { abortSignal },
      );
      return result.SecretString ?? result.SecretBinary;
    }
  }
  return new BoundedSecretsProvider({ clientConfig: { requestHandler: { ...AWS_REQUEST_HANDLER_OPTIONS } } });
}

/**
 * A reader through Powertools Parameters, loaded on its first read: a relay without secrets never
 * pays for it. One client per reader, built then (from the environment as it is at that time).
 */
export function secretsManagerReader(): SecretFetcher {
  let provider: Promise<SecretsProvider> | undefined;
  return async (secretId, signal) => {
    provider ??= Promise.all([import('@aws-lambda-powertools/parameters/secrets'), import('@aws-sdk/client-secrets-manager')]).then(
      ([providers, sdk]) => boundedProvider(providers, sdk),
    );
    // This module keeps the one cache (with its backoff); Powertools' own would answer stale values.
    const options = { forceFetch: true, maxAge: 0, abortSignal: signal };
    const value = await (await provider).get(secretId, options);
    if (typeof value !== 'string') throw new BinarySecretError();
    return value;
  };
}

/** A secret read when first needed and then kept fresh. */
export class CachedSecret<T> {
  private lastGood: { value: T; raw: string } | undefined;
  /** Until when no read is made (ms since the epoch): the value is fresh, or a failed read is being waited out. */
  private freshUntil = 0;
  /** Failed reads in a row. */
  private failures = 0;
  /** Why the last read failed, while there is no good value to fall back on: thrown until the next read. */
  private failure: Error | undefined;
  /** The last value refused as invalid, so that the same bad value is reported once. */
  private rejectedRaw: string | undefined;
  /** The read in progress, shared by every record that finds the value due. */
  private refreshing: Promise<T> | undefined;
  private readonly logger: Pick<Logger, 'warn' | 'error'> | undefined;
  private readonly fetch: SecretFetcher;

  /**
   * @param what a name for messages ("signing secret")
   * @param parse turns the secret's text into what is used; throws (without the value) if invalid
   * @param refreshSeconds how long a value read from Secrets Manager is used before reading again
   */
  constructor(
    private readonly source: SecretSource,
    private readonly what: string,
    private readonly parse: (raw: string) => T,
    private readonly refreshSeconds: number,
    options: CachedSecretOptions = {},
  ) {
    this.logger = options.logger;
    this.fetch = options.fetch ?? secretsManagerReader();
  }

  /** The value if it is known and fresh (or a failed read is being waited out): no promise, for the per-record hot path. */
  peek(): T | undefined {
    if (this.source.kind === 'literal' || Date.now() < this.freshUntil) return this.lastGood?.value;
    return undefined;
  }

  /**
   * The current value. On the hot path (every record) this is a clock check: Secrets Manager is
   * asked only once the value is `refreshSeconds` old (or a failed read's wait is over), by one
   * record for all that find it due.
   * @param signal abandons the read (the invocation's time for it is up); the value read before is then kept
   * @throws when no good value was ever read and none can be now
   */
  async get(signal?: AbortSignal): Promise<T> {
    if (this.source.kind === 'literal') {
      if (this.lastGood === undefined) this.lastGood = { value: this.parse(this.source.value), raw: this.source.value };
      return this.lastGood.value;
    }
    if (Date.now() < this.freshUntil) {
      if (this.lastGood !== undefined) return this.lastGood.value;
      if (this.failure !== undefined) throw this.failure;
    }
    this.refreshing ??= this.refresh(this.source, signal).finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async refresh(source: Exclude<SecretSource, { kind: 'literal' }>, signal: AbortSignal | undefined): Promise<T> {
    const fromFiles = source.kind === 'files';
    const secretId = fromFiles ? Object.values(source.files).join(', ') : source.secretId;
    let raw: string;
    try {
      raw = fromFiles
        ? await readFiles(source.files)
        : await beforeDeadline('GetSecretValue', signal, (bound) => this.fetch(source.secretId, bound));
    } catch (error) {
      const from = fromFiles ? `from ${secretId}` : `from Secrets Manager (${secretId})`;
      return this.failed(secretId, `could not read the ${this.what} ${from}: ${describeReadError(error)}`);
    }
    if (this.lastGood?.raw !== raw) {
      let value: T;
      try {
        value = this.parse(raw);
      } catch (error) {
        // The parser's messages never hold the value (see `parse`); the value is never logged.
        const reason = error instanceof Error ? error.message : 'invalid';
        const report = this.rejectedRaw !== raw;
        this.rejectedRaw = raw;
        const where = fromFiles ? `in ${secretId}` : `in Secrets Manager (${secretId})`;
        return this.failed(secretId, `the ${this.what} ${where} is not valid (${reason})`, {
          report,
          invalid: true,
        });
      }
      this.lastGood = { value, raw };
    }
    this.failures = 0;
    this.failure = undefined;
    this.rejectedRaw = undefined;
    this.freshUntil = Date.now() + this.refreshSeconds * 1000;
    return this.lastGood.value;
  }

  /**
   * A read failed: wait before the next, keep the last good value if there is one, and say so
   * (a bad value is an operator's mistake to fix: ERROR; Secrets Manager unreachable with a good
   * value kept is survived: WARN; no value at all: ERROR).
   * @param report false for a bad value already reported (one ERROR per bad value, not per read)
   * @param invalid the read succeeded but the value does not parse
   */
  private failed(secretId: string, reason: string, { report = true, invalid = false } = {}): T {
    this.failures += 1;
    const retryMs = secretRetryDelayMs(this.failures, this.refreshSeconds);
    this.freshUntil = Date.now() + retryMs;
    const kept = this.lastGood;
    this.failure = kept === undefined ? new Error(reason) : undefined;
    if (report) {
      const attributes = { secret: secretId, what: this.what, error: reason, failures: this.failures, retryInSeconds: retryMs / 1000 };
      if (kept === undefined)
        this.logger?.error(
          `The ${this.what} could not be ${invalid ? 'used' : 'read'}; records are retried, never sent without it`,
          attributes,
        );
      else if (invalid)
        this.logger?.error(
          `The ${this.what} ${this.source.kind === 'files' ? 'in its files' : 'in Secrets Manager'} is not valid; still using the last good value`,
          attributes,
        );
      else this.logger?.warn(`The ${this.what} could not be refreshed; still using the last good value`, attributes);
    }
    if (kept === undefined) throw this.failure as Error;
    return kept.value;
  }
}
