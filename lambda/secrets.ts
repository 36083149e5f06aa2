/**
 * Secrets the relay sends with: the signing keys and the `Authorization` value. Read from
 * Secrets Manager through Powertools Parameters (cached, re-read every `SECRETS_REFRESH_SECONDS`
 * so a rotation takes effect without a deploy), or given directly for local runs. A failed
 * refresh keeps the last good value rather than failing deliveries; with no value ever read,
 * the record fails and is retried. No error message ever contains a secret's value.
 */
import type { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';

/** Where a secret comes from. */
export type SecretSource = { readonly kind: 'literal'; readonly value: string } | { readonly kind: 'secrets-manager'; readonly secretId: string };

/** A secret read when first needed and then kept fresh. */
export class CachedSecret<T> {
  private lastGood: { value: T; raw: string } | undefined;
  /** When the value from Secrets Manager is due to be read again (ms since the epoch). */
  private freshUntil = 0;
  /** The read in progress, shared by every record that finds the value due. */
  private refreshing: Promise<T> | undefined;
  private provider: Promise<SecretsProvider> | undefined;

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
  ) {}

  /** The value if it is known and fresh: no promise, for the per-record hot path. */
  peek(): T | undefined {
    if (this.source.kind === 'literal' || Date.now() < this.freshUntil) return this.lastGood?.value;
    return undefined;
  }

  /**
   * The current value. On the hot path (every record) this is a clock check: Secrets Manager is
   * asked only once the value is `refreshSeconds` old, by one record for all that find it due.
   */
  async get(): Promise<T> {
    if (this.source.kind === 'literal') {
      if (this.lastGood === undefined) this.lastGood = { value: this.parse(this.source.value), raw: this.source.value };
      return this.lastGood.value;
    }
    if (this.lastGood !== undefined && Date.now() < this.freshUntil) return this.lastGood.value;
    this.refreshing ??= this.refresh(this.source.secretId).finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async refresh(secretId: string): Promise<T> {
    let raw: string;
    try {
      raw = await this.fetch(secretId);
    } catch (error) {
      if (this.lastGood !== undefined) return this.lastGood.value;
      throw new Error(`could not read the ${this.what} from Secrets Manager (${secretId}): ${error instanceof Error ? error.name : 'error'}`);
    }
    if (this.lastGood?.raw !== raw) this.lastGood = { value: this.parse(raw), raw };
    this.freshUntil = Date.now() + this.refreshSeconds * 1000;
    return this.lastGood.value;
  }

  private async fetch(secretId: string): Promise<string> {
    // Loaded on first use: a relay without secrets never pays for the Secrets Manager client.
    this.provider ??= import('@aws-lambda-powertools/parameters/secrets').then(({ SecretsProvider }) => new SecretsProvider());
    const provider = await this.provider;
    const value = await provider.get(secretId, { maxAge: this.refreshSeconds });
    if (typeof value !== 'string') throw new Error(`the ${this.what} is not a text secret`);
    return value;
  }
}
