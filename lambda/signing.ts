/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` = `v1,` + base64(HMAC-SHA256(key, id.timestamp.body)),
 * the key being the base64 part of a `whsec_…` secret. Several secrets (space-separated) give
 * several signatures, so a webhook owner can rotate keys without a gap.
 */
import { createHmac } from 'node:crypto';

/** The prefix of a Standard Webhooks secret. */
export const SECRET_PREFIX = 'whsec_';

/**
 * The shortest signing key accepted, in bytes: Standard Webhooks asks for 24 to 64. A shorter key
 * is refused at start, at synth where the key is known, and when read from Secrets Manager.
 */
export const MIN_SIGNING_KEY_BYTES = 24;

/** The three signature headers of one request. */
export interface SignatureHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

/**
 * Decodes a secret value holding one or more `whsec_<base64>` secrets separated by whitespace.
 * The prefix may be left out (as Standard Webhooks libraries also accept): Secrets Manager
 * generates a bare alphanumeric key, which is valid base64. Each key must decode to at least
 * {@link MIN_SIGNING_KEY_BYTES} bytes. Throws a message that never contains the secret itself.
 */
export function parseSigningKeys(value: string): Buffer[] {
  const secrets = value
    .trim()
    .split(/\s+/)
    .filter((part) => part !== '');
  if (secrets.length === 0) throw new Error('the signing secret is empty');
  return secrets.map((secret, index) => {
    const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
    const key = Buffer.from(encoded, 'base64');
    // Buffer.from ignores bad characters; re-encoding shows whether the text really was base64.
    if (key.length === 0 || key.toString('base64').replace(/=+$/, '') !== encoded.replace(/=+$/, '')) {
      throw new Error(`signing secret #${index + 1} is not of the form whsec_<base64> (or bare base64)`);
    }
    if (key.length < MIN_SIGNING_KEY_BYTES) {
      throw new Error(
        `signing secret #${index + 1} is a key of ${key.length} bytes; Standard Webhooks asks for at least ${MIN_SIGNING_KEY_BYTES} (${Math.ceil((MIN_SIGNING_KEY_BYTES * 4) / 3)} base64 characters)`,
      );
    }
    return key;
  });
}

/**
 * Signs one delivery.
 * @param id the message id (stable across retries, as the scheme asks)
 * @param timestampSeconds the time of this attempt, whole seconds since the epoch
 * @param body the exact bytes sent
 */
export function signDelivery(keys: readonly Buffer[], id: string, timestampSeconds: number, body: Buffer): SignatureHeaders {
  const timestamp = String(timestampSeconds);
  const prefix = `${id}.${timestamp}.`;
  // Two updates rather than a concatenated copy of the body for every request; the signatures
  // joined as they come rather than mapped and joined (one key, the usual case, is one string).
  let signatures = '';
  for (const key of keys) {
    const signature = `v1,${createHmac('sha256', key).update(prefix, 'utf8').update(body).digest('base64')}`;
    signatures = signatures === '' ? signature : `${signatures} ${signature}`;
  }
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures };
}
