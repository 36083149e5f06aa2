/**
 * Building the delivery request for one SQS record (SPEC §1): the body byte for byte and the
 * Carrier-compatible headers. Attribute values that are not legal header values are reported
 * back, never sent.
 */
import type { SQSRecord } from 'aws-lambda';
import { isFifoRecord } from './batch';
import type { RelayConfig } from './config';

/** The message attribute whose value becomes the request's `Content-Type`. */
export const CONTENT_TYPE_ATTRIBUTE = 'Body.ContentType';
/** W3C trace-context attributes copied to headers of the same name. */
export const TRACE_ATTRIBUTES = ['traceparent', 'tracestate'] as const;
/**
 * Longest attribute value sent as a header. Common servers reject header lines over 8 KiB
 * (nginx's default buffer, Node's 16 KiB for all headers), turning one long attribute into a
 * 431 and a dead-lettered message; skipping it with a warning is the lesser harm.
 */
export const MAX_ATTRIBUTE_HEADER_LENGTH = 4_096;

/** The request for one record: what is sent, and which attributes had to be left out. */
export interface DeliveryRequest {
  /** The message's idempotency key ({@link idempotencyKeyOf}): the `Message-Id` header, and the id a signature covers. */
  readonly id: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** Attributes not sent, each with the reason (logged at WARN by the caller). */
  readonly skippedAttributes: readonly { readonly name: string; readonly reason: string }[];
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Visible ASCII, space and tab. obs-text (0x80-0xFF) is legal in theory but read differently by
// different servers, and anything else (CR, LF, NUL, non-Latin-1) is a header-injection risk.
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/** True when `value` can be sent as a header value unchanged and read back the same way. */
export function isLegalHeaderValue(value: string): boolean {
  return value.length <= MAX_ATTRIBUTE_HEADER_LENGTH && HEADER_VALUE.test(value) && value.trim() === value;
}

/**
 * The message attribute a dead-letter copy carries (see `dead-letter.ts`): JSON saying why, with
 * the original message id. Defined here because request building reads it back.
 */
export const DEAD_LETTER_REASON_ATTRIBUTE = 'relay.dead-letter-reason';

/**
 * The message's idempotency key: its SQS message id, or, for a dead-letter copy redriven to the
 * queue (which SQS gave a new id), the id of the message it is a copy of. The webhook then sees
 * one id for one message however it came back.
 */
export function idempotencyKeyOf(record: SQSRecord): string {
  const reason = record.messageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE]?.stringValue;
  if (reason === undefined) return record.messageId;
  try {
    const original = (JSON.parse(reason) as { originalMessageId?: unknown }).originalMessageId;
    return typeof original === 'string' && original !== '' && isLegalHeaderValue(original) ? original : record.messageId;
  } catch {
    return record.messageId;
  }
}

/** The queue name of an SQS queue ARN (`arn:aws:sqs:<region>:<account>:<name>`). */
export function queueNameOfArn(queueArn: string): string {
  return queueArn.slice(queueArn.lastIndexOf(':') + 1);
}

/** Whole seconds since the epoch from an SQS millisecond timestamp string; `undefined` if not a number. */
function epochSeconds(milliseconds: string | undefined): string | undefined {
  if (milliseconds === undefined || !/^[0-9]{1,15}$/.test(milliseconds)) return undefined;
  return String(Math.floor(Number(milliseconds) / 1000));
}

/** The Carrier header names for one `HEADER_PREFIX`. */
interface CarrierHeaderNames {
  readonly prefix: string;
  readonly receiveCount: string;
  readonly firstReceiveTime: string;
  readonly messageId: string;
  readonly sentTime: string;
  readonly queue: string;
  readonly messageGroupId: string;
  readonly sequenceNumber: string;
  readonly attribute: string;
}

function carrierHeaderNames(prefix: string): CarrierHeaderNames {
  return {
    prefix,
    receiveCount: `${prefix}Receive-Count`,
    firstReceiveTime: `${prefix}First-Receive-Time`,
    messageId: `${prefix}Message-Id`,
    sentTime: `${prefix}Sent-Time`,
    queue: `${prefix}Queue`,
    messageGroupId: `${prefix}Message-Group-Id`,
    sequenceNumber: `${prefix}Sequence-Number`,
    attribute: `${prefix}Attr-`,
  };
}

// Per record these would be nine string concatenations; a function has one prefix for its life.
let headerNames = carrierHeaderNames('X-Carrier-');
// Every record of a batch comes from the same queue: its name and legality, worked out once.
let lastQueue = { arn: '', name: '', legal: true };

/**
 * Builds the POST for `record`. Pure: the same record and configuration always give the same
 * request, which the property tests rely on.
 */
export function buildDeliveryRequest(record: SQSRecord, config: RelayConfig): DeliveryRequest {
  if (headerNames.prefix !== config.headerPrefix) headerNames = carrierHeaderNames(config.headerPrefix);
  const names = headerNames;
  const body = Buffer.from(record.body ?? '', 'utf8');
  const skippedAttributes: { name: string; reason: string }[] = [];
  const headers: Record<string, string> = {
    'Content-Type': config.defaultContentType,
    'Content-Length': String(body.length),
    'User-Agent': config.userAgent,
  };
  const system = record.attributes ?? {};
  const receiveCount = system.ApproximateReceiveCount;
  if (receiveCount !== undefined && isLegalHeaderValue(receiveCount)) headers[names.receiveCount] = receiveCount;
  // Digits only, by construction: no header check needed.
  const firstReceiveTime = epochSeconds(system.ApproximateFirstReceiveTimestamp);
  if (firstReceiveTime !== undefined) headers[names.firstReceiveTime] = firstReceiveTime;
  const messageId = idempotencyKeyOf(record);
  if (isLegalHeaderValue(messageId)) headers[names.messageId] = messageId;
  const sentTime = epochSeconds(system.SentTimestamp);
  if (sentTime !== undefined) headers[names.sentTime] = sentTime;
  const queueArn = record.eventSourceARN ?? '';
  if (lastQueue.arn !== queueArn) {
    const name = queueNameOfArn(queueArn);
    lastQueue = { arn: queueArn, name, legal: isLegalHeaderValue(name) };
  }
  if (lastQueue.legal) headers[names.queue] = lastQueue.name;
  if (isFifoRecord(record)) {
    if (system.MessageGroupId !== undefined && isLegalHeaderValue(system.MessageGroupId)) headers[names.messageGroupId] = system.MessageGroupId;
    if (system.SequenceNumber !== undefined && isLegalHeaderValue(system.SequenceNumber)) headers[names.sequenceNumber] = system.SequenceNumber;
  }

  for (const [name, attribute] of Object.entries(record.messageAttributes ?? {})) {
    const dataType = attribute?.dataType ?? '';
    // Custom types ("Number.float", "String.json") keep their base type's rules.
    const isText = dataType === 'String' || dataType.startsWith('String.') || dataType === 'Number' || dataType.startsWith('Number.');
    // Binary attributes have no header representation; the dead-letter reason is the relay's own bookkeeping.
    if (!isText || name === DEAD_LETTER_REASON_ATTRIBUTE) continue;
    const value = attribute.stringValue ?? '';
    if (!isLegalHeaderValue(value)) {
      skippedAttributes.push({ name, reason: value.length > MAX_ATTRIBUTE_HEADER_LENGTH ? 'value too long for a header' : 'value has characters not allowed in a header' });
      continue;
    }
    if (name === CONTENT_TYPE_ATTRIBUTE) {
      if (value !== '') headers['Content-Type'] = value;
    } else if ((TRACE_ATTRIBUTES as readonly string[]).includes(name)) {
      headers[name] = value;
    } else if (!HEADER_NAME.test(name)) {
      skippedAttributes.push({ name, reason: 'name not allowed in a header' });
    } else if (Object.keys(headers).some((taken) => taken.toLowerCase() === `${names.attribute}${name}`.toLowerCase())) {
      // Attribute names are case-sensitive, header names are not: "Tenant" after "tenant" would merge into one header.
      skippedAttributes.push({ name, reason: 'name differs only in case from another attribute' });
    } else {
      headers[`${names.attribute}${name}`] = value;
    }
  }
  return { id: messageId, headers, body, skippedAttributes };
}
