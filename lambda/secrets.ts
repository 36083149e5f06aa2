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

  /** The current value. */
  async get(): Promise<T> {
    if (this.source.kind === 'literal') {
      if (this.lastGood === undefined) this.lastGood = { value: this.parse(this.source.value), raw: this.source.value };
      return this.lastGood.value;
    }
    let raw: string;
    try {
      raw = await this.fetch(this.source.secretId);
    } catch (error) {
      if (this.lastGood !== undefined) return this.lastGood.value;
      throw new Error(`could not read the ${this.what} from Secrets Manager (${this.source.secretId}): ${error instanceof Error ? error.name : 'error'}`);
    }
    if (this.lastGood?.raw !== raw) this.lastGood = { value: this.parse(raw), raw };
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
