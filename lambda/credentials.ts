/**
 * The secrets every request carries, each when configured: the Standard Webhooks signing keys and the `Authorization`
 * value, read from Secrets Manager (secrets.ts) and kept for the warm container.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { checkAuthorizationValue, type RelayConfig } from './config';
import type { DeliveryRequest } from './request';
import { CachedSecret } from './secrets';
import { parseSigningKeys, signDelivery } from './signing';

/** The secrets a request carries: its signing keys and `Authorization` value, each when configured. */
export interface Credentials {
  readonly signingKeys: readonly Buffer[] | undefined;
  readonly authorization: string | undefined;
}

/** Adds the Standard Webhooks signature and `Authorization` to the request's (own, fresh) headers. */
export function addCredentials(request: DeliveryRequest, { signingKeys, authorization }: Credentials): void {
  const { headers } = request;
  if (signingKeys !== undefined) {
    const signature = signDelivery(signingKeys, request.id, Math.floor(Date.now() / 1000), request.body);
    headers.push(
      'webhook-id',
      signature['webhook-id'],
      'webhook-timestamp',
      signature['webhook-timestamp'],
      'webhook-signature',
      signature['webhook-signature'],
    );
  }
  if (authorization !== undefined) headers.push('Authorization', authorization);
}

/**
 * The secrets a request's headers carry, as an answer may quote them back: its `Authorization` value (and the
 * credentials after its scheme) and each of its signatures. An answer is logged and may become a dead letter's reason.
 * @param headers a request's headers in node:http's raw form, its credentials added
 */
export function secretsSentIn(headers: readonly string[]): string[] {
  const secrets: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = (headers[i] as string).toLowerCase();
    const value = headers[i + 1] as string;
    if (name === 'authorization') {
      secrets.push(value);
      const credentials = value.slice(value.indexOf(' ') + 1).trim();
      if (credentials !== value) secrets.push(credentials);
    } else if (name === 'webhook-signature') {
      // `v1,<base64>`, space-separated: the base64 is the secret part.
      for (const signature of value.split(' ')) secrets.push(signature.slice(signature.indexOf(',') + 1));
    }
  }
  return secrets;
}

/** The configured request secrets of one container, cached and refreshed. */
export class RequestCredentials {
  private readonly signingKeys: CachedSecret<Buffer[]> | undefined;
  private readonly authorization: CachedSecret<string> | undefined;
  /** What {@link cached} returned last. */
  private last: Credentials | undefined;

  constructor(config: Pick<RelayConfig, 'signingSecret' | 'authorization' | 'secretsRefreshSeconds'>, logger: Logger) {
    const refresh = config.secretsRefreshSeconds;
    const secretOptions = { logger };
    this.signingKeys =
      config.signingSecret && new CachedSecret(config.signingSecret, 'signing secret', parseSigningKeys, refresh, secretOptions);
    this.authorization =
      config.authorization &&
      new CachedSecret(config.authorization, 'Authorization secret', checkAuthorizationValue, refresh, secretOptions);
  }

  /** The secrets every request carries, if all are in memory and current; `undefined` if one must be fetched. */
  cached(): Credentials | undefined {
    const signingKeys = this.signingKeys?.peek();
    const authorization = this.authorization?.peek();
    if ((this.signingKeys !== undefined && signingKeys === undefined) || (this.authorization !== undefined && authorization === undefined))
      return undefined;
    // The same secrets as the last record's, almost always: their object again rather than a new one per record.
    const last = this.last;
    if (last !== undefined && last.signingKeys === signingKeys && last.authorization === authorization) return last;
    this.last = { signingKeys, authorization };
    return this.last;
  }

  /** The secrets every request carries, fetched where not cached; `signal` abandons the reads. */
  async fetch(signal: AbortSignal): Promise<Credentials> {
    const [signingKeys, authorization] = await Promise.all([this.signingKeys?.get(signal), this.authorization?.get(signal)]);
    return { signingKeys, authorization };
  }
}
