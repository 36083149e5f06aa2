/**
 * Secrets cut out of text the relay passes on: a webhook's or a token endpoint's answer may quote
 * back what it was sent (a token, the client secret, the URL's query), and that text is logged and
 * may become a dead letter's reason.
 */
import type { WebhookResult } from './transmitter';

/** `text` with every occurrence of each of `secrets` (4 characters or more) replaced by `…`. */
export function scrub(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) if (secret !== undefined && secret.length >= 4) out = out.split(secret).join('…');
  return out;
}

/** `result` with each of `secrets` cut out of the webhook's answer ({@link scrub}); the same object when none is in it. */
export function withoutSecrets(result: WebhookResult, secrets: readonly string[]): WebhookResult {
  if (result.kind !== 'response') return result;
  const excerpt = scrub(result.excerpt, secrets);
  return excerpt === result.excerpt ? result : { ...result, excerpt };
}
