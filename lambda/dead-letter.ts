/**
 * Dead-lettering a permanent failure (docs/contract.md, "What the response means"): a copy of the message goes to the DLQ with an
 * attribute saying why, and only once SQS has accepted the copy may the original be
 * acknowledged. A copy that fails leaves the original to be retried: nothing is lost.
 *
 * The copy always fits: its body and the producer's attributes are the message's own, which SQS
 * already took; only the relay's reason is fitted around them (see {@link fitReason}), for
 * SQS's 1 MiB. A DLQ set to a smaller `MaximumMessageSize` (an existing queue's) that refuses
 * the copy with its reason gets it once more without the reason.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { MAX_MESSAGE_ATTRIBUTES, MAX_MESSAGE_BYTES } from './aws-limits';
import { isFifoRecord, receiveCountOf } from './batch';
import { sealOriginalId } from './message-id';
import type { QueueDirectory } from './queues';
import type { SqsGateway } from './sqs-gateway';
import { DEAD_LETTER_REASON_ATTRIBUTE } from './request';
import { errorText, queueNameOfArn } from './sqs-util';

/** Characters of the webhook's response kept in the reason, at most. */
export const MAX_REASON_RESPONSE_CHARS = 256;
/** The data type of the reason attribute. */
const REASON_DATA_TYPE = 'String';
/**
 * The errors with which SQS refuses a message for its content: too big for the queue's
 * `MaximumMessageSize` (`InvalidParameterValue`, "Message must be shorter than …"), or a
 * character it does not take (`InvalidMessageContents`). Definite refusals: nothing was stored.
 */
const REFUSED_CONTENT_ERRORS: ReadonlySet<string> = new Set(['InvalidParameterValue', 'InvalidMessageContents']);

/** True for {@link REFUSED_CONTENT_ERRORS}, named plainly or in the query-compatible form (`AWS.SimpleQueueService.InvalidParameterValue`). */
function isContentRefusal(error: unknown): error is Error {
  return error instanceof Error && REFUSED_CONTENT_ERRORS.has(error.name.slice(error.name.lastIndexOf('.') + 1));
}

/** Why the relay gave up on a message: the webhook refused it for good, or its failures outlasted the retry window. */
export type DeadLetterCause = 'refused permanently' | 'retry window exhausted';

/** Why a message was dead-lettered, as stored in {@link DEAD_LETTER_REASON_ATTRIBUTE}. */
export interface DeadLetterReason {
  readonly cause: DeadLetterCause;
  /** The webhook's HTTP status in its last answer; 0 when there was none (a timeout, a refused connection, the breaker open). */
  readonly status: number;
  /** The start of the webhook's last response body, or what went wrong instead (characters SQS refuses replaced by U+FFFD; cut to fit). */
  readonly response: string;
  /** The id the webhook saw: the message's SQS id (the DLQ copy gets a new one), or for a redriven copy whose seal verified, the first message's. */
  readonly originalMessageId: string;
  /** Vouches for {@link originalMessageId} and the body (see `message-id.ts`); absent when the relay does not sign. */
  readonly originalMessageIdSeal?: string;
  readonly sourceQueue: string;
  readonly receiveCount: number;
  /** Requests the relay made for the message, the last included: its receive count, since every attempt is a receive. */
  readonly attempts: number;
  /** ISO-8601 time of the dead-lettering. */
  readonly deadLetteredAt: string;
}

/** What a copy left out of its reason to be accepted by SQS (logged at WARN). */
export interface LeftOut {
  /** Characters of the response excerpt SQS refuses in attribute values, replaced by U+FFFD. */
  readonly replacedCharacters: number;
  /** Characters cut off the (already capped) response excerpt to fit the message size. */
  readonly responseCharactersCut: number;
  /** Set when the reason attribute was not attached at all, saying why. */
  readonly reasonDropped?: string;
}

/** The outcome of a dead-letter attempt. */
export type DeadLetterResult =
  | { readonly ok: true; readonly reasonAttached: boolean; readonly leftOut: LeftOut | undefined }
  | { readonly ok: false; readonly error: string };

/**
 * Characters SQS refuses in a message (body or attribute value): everything but #x9, #xA, #xD,
 * #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF. With the `u` flag a lone surrogate is one code
 * point outside the class, so it is matched too.
 */
const REFUSED_BY_SQS = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** `text` with every character SQS refuses replaced by U+FFFD (as SQS itself does in bodies), and how many were. */
export function sanitizeForSqs(text: string): { readonly text: string; readonly replaced: number } {
  let replaced = 0;
  const sanitized = text.replace(REFUSED_BY_SQS, () => {
    replaced += 1;
    return '\uFFFD';
  });
  return { text: sanitized, replaced };
}

/** The bytes one message attribute counts toward the message size: name, data type and value. */
function attributeBytes(name: string, attribute: MessageAttributeValue): number {
  const value =
    attribute.StringValue !== undefined ? Buffer.byteLength(attribute.StringValue, 'utf8') : (attribute.BinaryValue?.byteLength ?? 0);
  return Buffer.byteLength(name, 'utf8') + Buffer.byteLength(attribute.DataType ?? '', 'utf8') + value;
}

/** The size SQS counts for a message: the body's UTF-8 bytes plus every attribute's. */
export function messageBytes(body: string, attributes: Readonly<Record<string, MessageAttributeValue>>): number {
  let bytes = Buffer.byteLength(body, 'utf8');
  for (const [name, attribute] of Object.entries(attributes)) bytes += attributeBytes(name, attribute);
  return bytes;
}

/** The reason attribute's value, fitted, and what was left out to fit it. */
export interface FittedReason {
  /** The attribute's JSON; `undefined` when it was dropped. */
  readonly value: string | undefined;
  /** `undefined` when nothing was left out. */
  readonly leftOut: LeftOut | undefined;
}

/**
 * Fits the reason into what the message leaves free, in this order:
 *  1. characters SQS refuses in attribute values are replaced by U+FFFD in the response excerpt
 *     (the other fields cannot hold one: ids, queue name, numbers, a date);
 *  2. the excerpt is capped at {@link MAX_REASON_RESPONSE_CHARS} characters (always: a policy,
 *     not a loss, so not reported);
 *  3. if the reason still does not fit in `freeBytes`, the excerpt is cut further, to nothing
 *     if need be (whole characters: a surrogate pair is never split);
 *  4. if it does not fit even with no excerpt, or `slotFree` is false (all ten attribute slots
 *     are the producer's), the attribute is dropped: the reason is then only in the log line.
 * Pure: the property tests check that whatever goes in, the value is legal and fits.
 * @param reason the reason, its `response` being the excerpt as the webhook sent it
 * @param freeBytes bytes the message leaves for this attribute: name, data type and value
 */
export function fitReason(reason: DeadLetterReason, freeBytes: number, slotFree: boolean): FittedReason {
  const { text: sanitized, replaced } = sanitizeForSqs(reason.response);
  const characters = Array.from(sanitized).slice(0, MAX_REASON_RESPONSE_CHARS);
  const valueWith = (kept: number): string => JSON.stringify({ ...reason, response: characters.slice(0, kept).join('') });
  const budget = freeBytes - Buffer.byteLength(DEAD_LETTER_REASON_ATTRIBUTE, 'utf8') - Buffer.byteLength(REASON_DATA_TYPE, 'utf8');
  const fits = (kept: number): boolean => Buffer.byteLength(valueWith(kept), 'utf8') <= budget;
  const dropped = (why: string): FittedReason => ({
    value: undefined,
    leftOut: { replacedCharacters: replaced, responseCharactersCut: characters.length, reasonDropped: why },
  });
  if (!slotFree) return dropped(`all ${MAX_MESSAGE_ATTRIBUTES} message attributes are the producer's`);
  if (!fits(0)) return dropped(`no room left under the ${MAX_MESSAGE_BYTES}-byte message limit`);
  // The longest excerpt that fits: the value grows with every character kept, so a binary search.
  let low = 0;
  let high = characters.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(middle)) low = middle;
    else high = middle - 1;
  }
  const value = valueWith(low);
  const cut = characters.length - low;
  // JSON.stringify escapes controls and lone surrogates; U+FFFE/U+FFFF were replaced above.
  return { value, leftOut: replaced === 0 && cut === 0 ? undefined : { replacedCharacters: replaced, responseCharactersCut: cut } };
}

function copyAttributes(record: SQSRecord): Record<string, MessageAttributeValue> {
  // Without a prototype: a producer's attribute named `__proto__` is an attribute like any other.
  const copied: Record<string, MessageAttributeValue> = Object.create(null);
  for (const [name, attribute] of Object.entries(record.messageAttributes ?? {})) {
    if (typeof attribute !== 'object' || attribute === null) continue;
    const dataType = typeof attribute.dataType === 'string' ? attribute.dataType : 'String';
    if (dataType.startsWith('Binary')) {
      if (attribute.binaryValue !== undefined)
        copied[name] = { DataType: dataType, BinaryValue: Buffer.from(attribute.binaryValue, 'base64') };
    } else if (attribute.stringValue !== undefined) {
      copied[name] = { DataType: dataType, StringValue: attribute.stringValue };
    }
  }
  return copied;
}

/** Who the copied message is and why it is given up on, for its reason. */
export interface DeadLetterIdentity {
  /** Default: `refused permanently`. */
  readonly cause?: DeadLetterCause;
  /** The id the webhook saw (`DeliveryRequest.id`): the first message's for a verified redriven copy. Default: the SQS id. */
  readonly originalId?: string;
  /** The webhook signing keys: the first seals the original id (none: the copy is not sealed). */
  readonly signingKeys?: readonly Buffer[];
}

/** The reason a copy of `record` carries (see {@link DeadLetterReason}). */
function reasonOf(record: SQSRecord, status: number, responseExcerpt: string, identity: DeadLetterIdentity, now: Date): DeadLetterReason {
  const originalMessageId = identity.originalId ?? record.messageId;
  const seal = sealOriginalId(identity.signingKeys, originalMessageId, record.body ?? '');
  const receiveCount = receiveCountOf(record);
  return {
    cause: identity.cause ?? 'refused permanently',
    status,
    response: responseExcerpt,
    originalMessageId,
    ...(seal === undefined ? {} : { originalMessageIdSeal: seal }),
    sourceQueue: queueNameOfArn(record.eventSourceARN),
    receiveCount,
    attempts: receiveCount,
    deadLetteredAt: now.toISOString(),
  };
}

/**
 * Sends the copy with its fitted reason, or without it when there is none, or when SQS refuses the copy for its content
 * with it; resolves with what was left out of the reason, if anything.
 */
async function sendWithReason(
  send: (messageAttributes: Record<string, MessageAttributeValue>) => Promise<unknown>,
  attributes: Record<string, MessageAttributeValue>,
  fitted: FittedReason,
): Promise<LeftOut | undefined> {
  if (fitted.value === undefined) {
    await send(attributes);
    return fitted.leftOut;
  }
  try {
    await send({ ...attributes, [DEAD_LETTER_REASON_ATTRIBUTE]: { DataType: REASON_DATA_TYPE, StringValue: fitted.value } });
    return fitted.leftOut;
  } catch (error) {
    // Refused for its content: the reason is the only part the relay added, so the copy goes without it.
    if (!isContentRefusal(error)) throw error;
    await send(attributes);
    return {
      replacedCharacters: fitted.leftOut?.replacedCharacters ?? 0,
      responseCharactersCut: fitted.leftOut?.responseCharactersCut ?? 0,
      reasonDropped: `SQS refused the copy with it (${error.name}: ${error.message})`,
    };
  }
}

/** Copies permanently failed messages to their dead-letter queue. */
export class DeadLetterWriter {
  /** @param logger where a copy that left part of its reason out says so (WARN) */
  constructor(
    private readonly sqs: SqsGateway,
    private readonly queues: QueueDirectory,
    private readonly logger?: Pick<Logger, 'warn'>,
  ) {}

  /** Sends the copy; resolves (never rejects) with whether SQS accepted it. */
  async send(
    record: SQSRecord,
    status: number,
    responseExcerpt: string,
    identity: DeadLetterIdentity = {},
    now: Date = new Date(),
  ): Promise<DeadLetterResult> {
    try {
      const queueUrl = await this.queues.deadLetterUrlOf(record.eventSourceARN);
      // A copy of a copy replaces the earlier reason rather than adding a second one.
      const attributes = copyAttributes(record);
      delete attributes[DEAD_LETTER_REASON_ATTRIBUTE];
      const body = record.body ?? '';
      const reason = reasonOf(record, status, responseExcerpt, identity, now);
      // The producer's own attributes come first: with all ten slots taken there is no room for ours.
      const slotFree = Object.keys(attributes).length < MAX_MESSAGE_ATTRIBUTES;
      const fitted = fitReason(reason, MAX_MESSAGE_BYTES - messageBytes(body, attributes), slotFree);
      // Only a FIFO DLQ takes a deduplication id (a fair standard queue's group id stays behind).
      const groupId = isFifoRecord(record) ? record.attributes.MessageGroupId : undefined;
      const send = (messageAttributes: Record<string, MessageAttributeValue>) =>
        this.sqs.sendMessage({
          QueueUrl: queueUrl,
          MessageBody: body,
          MessageAttributes: messageAttributes,
          // The SQS id of this very message, never the original id it carries: a redrive (console,
          // StartMessageMoveTask or by hand) gives the message a new SQS id, so each dead-lettering
          // has its own deduplication id and a copy refused again within SQS's 5-minute window is
          // kept, not dropped. A second copy of the same message (a SendMessage that failed after
          // SQS took it, retried on the next receive) deduplicates within the window.
          ...(groupId === undefined ? {} : { MessageGroupId: groupId, MessageDeduplicationId: record.messageId }),
        });
      const leftOut = await sendWithReason(send, attributes, fitted);
      if (leftOut !== undefined) {
        this.logger?.warn('Dead-letter copy: part of the reason left out so that SQS takes the copy', {
          messageId: record.messageId,
          ...leftOut,
        });
      }
      return { ok: true, reasonAttached: leftOut?.reasonDropped === undefined, leftOut };
    } catch (error) {
      return { ok: false, error: errorText(error) };
    }
  }
}
