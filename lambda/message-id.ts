/**
 * The seal that lets a dead-letter copy keep its original message id across a redrive, in a
 * form no producer can forge (docs/contract.md, "What the response means").
 *
 * A redriven copy gets a new SQS message id, so the dead-letter reason records the original one
 * and the relay presents it again (as `X-Carrier-Message-Id`, the signed `webhook-id`): the
 * webhook sees one id for one message. That attribute arrives on the queue like any other, so
 * a producer could put one on a new message and choose the id the webhook deduplicates on. The
 * relay therefore trusts a claimed original id only when it carries a seal:
 *
 *   seal = base64url(HMAC-SHA256(K, "v1" NUL originalId NUL body))
 *   K    = HMAC-SHA256(signing key, "sqs-webhook-relay original-message-id v1")
 *
 * - Keyed by the webhook signing key(s), which only the relay (and the webhook) hold: the stack
 *   signs by default, and no new secret has to be provisioned. The key is derived rather than
 *   used as is, so a seal is never a Standard Webhooks signature of anything.
 * - Over the body as well: a genuine reason copied onto another body does not verify, so a
 *   producer that can read the DLQ can at most replay the very same body under its own id.
 * - Made with the first key, accepted under any current key: the same rotation rule as the
 *   webhook signatures, so a copy sealed before a rotation still verifies while the old key is
 *   listed.
 * Without signing keys nothing is sealed and nothing verifies: a redriven copy is presented
 * under its new SQS id.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** What the sealing key is derived with (domain separation from the webhook signatures). */
const DERIVATION_LABEL = 'sqs-webhook-relay original-message-id v1';
/** The MAC's version and field separator; ids are legal header values, so they never hold NUL. */
const VERSION_PREFIX = 'v1\u0000';
const SEPARATOR = '\u0000';
/** Bytes of an HMAC-SHA256. */
const MAC_BYTES = 32;

/** Derived keys by signing key: the same `Buffer` objects live as long as the secret's value. */
const derivedKeys = new WeakMap<Buffer, Buffer>();

function sealingKey(signingKey: Buffer): Buffer {
  let key = derivedKeys.get(signingKey);
  if (key === undefined) {
    key = createHmac('sha256', signingKey).update(DERIVATION_LABEL, 'utf8').digest();
    derivedKeys.set(signingKey, key);
  }
  return key;
}

function mac(signingKey: Buffer, originalId: string, body: string): Buffer {
  return createHmac('sha256', sealingKey(signingKey))
    .update(VERSION_PREFIX, 'utf8')
    .update(originalId, 'utf8')
    .update(SEPARATOR, 'utf8')
    .update(body, 'utf8')
    .digest();
}

/**
 * The seal of `originalId` for a message whose body is `body`, made with the first key;
 * `undefined` without keys (an unsigned relay cannot vouch for an id).
 */
export function sealOriginalId(signingKeys: readonly Buffer[] | undefined, originalId: string, body: string): string | undefined {
  const first = signingKeys?.[0];
  return first === undefined ? undefined : mac(first, originalId, body).toString('base64url');
}

/** True when `seal` is the seal of `originalId` and `body` under any of `signingKeys`. */
export function verifyOriginalId(signingKeys: readonly Buffer[] | undefined, originalId: string, body: string, seal: string): boolean {
  if (signingKeys === undefined || signingKeys.length === 0) return false;
  const claimed = Buffer.from(seal, 'base64url');
  // Buffer.from drops what is not base64url: a seal that does not re-encode to itself is forged.
  if (claimed.length !== MAC_BYTES || claimed.toString('base64url') !== seal) return false;
  let verified = false;
  // Every key is tried (no early return): the time taken does not say which key matched.
  for (const key of signingKeys) verified = timingSafeEqual(mac(key, originalId, body), claimed) || verified;
  return verified;
}
