/**
 * Building the delivery request for one SQS record (docs/contract.md, "The delivery request"): the body byte for byte and the
 * Carrier-compatible headers. Attribute values that are not legal header values are reported
 * back, never sent.
 */
import type { SQSRecord } from 'aws-lambda';
import { isFifoRecord } from './batch';
import type { RelayConfig } from './config';
import {
  HEADER_TOKEN,
  isLegalHeaderValue,
  isTraceParent,
  isTraceState,
  MAX_ATTRIBUTE_HEADER_LENGTH,
  MAX_PRODUCER_HEADER_BYTES,
} from './header-rules';
import { verifyOriginalId } from './message-id';
import { FUNCTION_SETTINGS } from './settings';
import { queueNameOfArn } from './sqs-util';

/** The message attribute whose value becomes the request's `Content-Type`. */
export const CONTENT_TYPE_ATTRIBUTE = 'Body.ContentType';
/** Bytes a header takes on the wire besides its name and value: `: ` and CRLF. */
const HEADER_LINE_OVERHEAD = 4;

/** Where the `Content-Type` value sits in a request's header list (a `Body.ContentType` attribute replaces it). */
const CONTENT_TYPE_VALUE_INDEX = 3;

/** What building a request reads of the configuration, the webhook's URL known (given, or read from its secret). */
export type DeliveryConfig = Pick<RelayConfig, 'headerPrefix' | 'defaultContentType' | 'userAgent'> & { readonly webhookUrl: URL };

/** The request for one record: what is sent, and which attributes had to be left out. */
export interface DeliveryRequest {
  /** The message's idempotency key ({@link idempotencyKeyOf}): the `Message-Id` header, and the id a signature covers. */
  readonly id: string;
  /**
   * The headers in node:http's raw form, `[name, value, name, value, …]`, in the order they are
   * sent, `Host` first: the form the transmitter writes without converting (see transmitter.ts).
   * The request's own list: the relay appends its credentials to it.
   */
  readonly headers: string[];
  readonly body: Buffer;
  /** Attributes not sent, each with the reason (logged at WARN by the caller). */
  readonly skippedAttributes: readonly { readonly name: string; readonly reason: string }[];
  /** The original id a dead-letter reason claimed and {@link id} is not, with why (logged at WARN by the caller). */
  readonly ignoredOriginalId: IgnoredOriginalId | undefined;
}

/** Bytes of each slab that request bodies are encoded into. */
const BODY_SLAB_BYTES = 64 * 1024;
/** UTF-8 takes at most three bytes per UTF-16 code unit (a surrogate pair: four for two). */
const MAX_UTF8_BYTES_PER_CODE_UNIT = 3;
/** The slab bodies are being encoded into, and where its free part starts. */
let bodySlab = { bytes: Buffer.allocUnsafeSlow(0), free: 0 };

/**
 * `text` as UTF-8 bytes, encoded into a shared slab to save `Buffer.from`'s separate length pass
 * (measured: docs/performance.md, "Request bodies encoded into shared slabs"). A slab's bytes are
 * never written twice, so a body stays valid while anything holds it; a big body gets its own.
 */
function utf8Bytes(text: string): Buffer {
  const worstCase = text.length * MAX_UTF8_BYTES_PER_CODE_UNIT;
  if (worstCase > BODY_SLAB_BYTES / 4) return Buffer.from(text, 'utf8');
  if (bodySlab.bytes.length - bodySlab.free < worstCase) bodySlab = { bytes: Buffer.allocUnsafeSlow(BODY_SLAB_BYTES), free: 0 };
  const { bytes, free } = bodySlab;
  const length = bytes.write(text, free, 'utf8');
  // The next body starts 8-byte aligned, as Node's own buffer pool aligns its slices.
  bodySlab.free = (free + length + 7) & ~7;
  return bytes.subarray(free, free + length);
}

/** The `skippedAttributes` of every request that left nothing out. */
const NOTHING_SKIPPED: DeliveryRequest['skippedAttributes'] = Object.freeze([]);

/**
 * The message attribute a dead-letter copy carries (see `dead-letter.ts`): JSON saying why, with
 * the original message id. Defined here because request building reads it back.
 */
export const DEAD_LETTER_REASON_ATTRIBUTE = 'relay.dead-letter-reason';

/** A claimed original id the relay did not believe, and why (the caller logs it at WARN). */
export interface IgnoredOriginalId {
  /** The id the dead-letter reason claimed, cut to {@link MAX_LOGGED_CLAIM_LENGTH} characters. */
  readonly claimed: string;
  readonly reason: string;
}

/** Longest claimed id quoted in a log line: the claim is a producer's text. */
export const MAX_LOGGED_CLAIM_LENGTH = 128;

/** The message's idempotency key, and the claim it did not take if there was one. */
interface Identity {
  readonly id: string;
  readonly ignored: IgnoredOriginalId | undefined;
}

/** The identity of a record that carries a dead-letter reason attribute. */
function identify(record: SQSRecord, reason: string | undefined, signingKeys: readonly Buffer[] | undefined): Identity {
  let claim: { originalMessageId?: unknown; originalMessageIdSeal?: unknown };
  try {
    claim = JSON.parse(reason ?? '') as typeof claim;
  } catch {
    return { id: record.messageId, ignored: undefined };
  }
  const original = claim?.originalMessageId;
  if (typeof original !== 'string' || original === record.messageId) return { id: record.messageId, ignored: undefined };
  const ignored = (why: string): Identity => ({
    id: record.messageId,
    ignored: { claimed: original.slice(0, MAX_LOGGED_CLAIM_LENGTH), reason: why },
  });
  if (original === '' || !isLegalHeaderValue(original)) return ignored('not a legal message id');
  if (signingKeys === undefined || signingKeys.length === 0) return ignored('no signing key is configured to verify it');
  const seal = claim.originalMessageIdSeal;
  if (typeof seal !== 'string') return ignored('it carries no seal');
  if (!verifyOriginalId(signingKeys, original, record.body ?? '', seal))
    return ignored('its seal does not verify for this body under the current signing keys');
  return { id: original, ignored: undefined };
}

/**
 * The message's idempotency key: its SQS message id, or, for a dead-letter copy redriven to the
 * queue (which SQS gave a new id), the id of the message it is a copy of, but only when the
 * copy's reason carries a seal that verifies under a current signing key (see `message-id.ts`):
 * a producer cannot choose the id the webhook sees. The webhook then sees one id for one
 * message however it came back.
 * @param signingKeys the relay's current webhook signing keys; without them the SQS id is used
 */
export function idempotencyKeyOf(record: SQSRecord, signingKeys?: readonly Buffer[]): string {
  const reason = record.messageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE];
  return reason === undefined ? record.messageId : identify(record, reason.stringValue, signingKeys).id;
}

/**
 * Whole seconds since the epoch from an SQS millisecond timestamp string; `undefined` if not a
 * number. Cut from the digits rather than parsed: the same text as `Math.floor(ms / 1000)`,
 * without converting 13 digits to a double and back for two headers of every record.
 */
function epochSeconds(milliseconds: string | undefined): string | undefined {
  if (milliseconds === undefined || milliseconds.length === 0 || milliseconds.length > 15) return undefined;
  let firstSignificant = -1;
  for (let i = 0; i < milliseconds.length; i += 1) {
    const code = milliseconds.charCodeAt(i);
    if (code < 48 || code > 57) return undefined;
    if (firstSignificant === -1 && code !== 48) firstSignificant = i;
  }
  const end = milliseconds.length - 3;
  return firstSignificant === -1 || firstSignificant >= end ? '0' : milliseconds.slice(firstSignificant, end);
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
let headerNames = carrierHeaderNames(FUNCTION_SETTINGS.HEADER_PREFIX.default);
// Every record of a batch comes from the same queue: its name, legality and FIFO-ness, worked out once.
let lastQueue = { arn: '', name: '', legal: true, fifo: false };

/**
 * Builds the POST for `record`. Pure: the same record, configuration and keys always give the
 * same request, which the property tests rely on.
 * @param signingKeys the webhook signing keys, which vouch for a redriven copy's original id ({@link idempotencyKeyOf})
 */
export function buildDeliveryRequest(record: SQSRecord, config: DeliveryConfig, signingKeys?: readonly Buffer[]): DeliveryRequest {
  if (headerNames.prefix !== config.headerPrefix) headerNames = carrierHeaderNames(config.headerPrefix);
  const names = headerNames;
  const body = utf8Bytes(record.body ?? '');
  const headers: string[] = [
    'Host',
    config.webhookUrl.host,
    'Content-Type',
    config.defaultContentType,
    'Content-Length',
    String(body.length),
    'User-Agent',
    config.userAgent,
  ];
  const reason = record.messageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE];
  // Parsed only for the rare record that carries a reason: the others keep their SQS id.
  const identity = reason === undefined ? undefined : identify(record, reason.stringValue, signingKeys);
  const messageId = identity === undefined ? record.messageId : identity.id;
  pushCarrierHeaders(headers, record, names, messageId);
  const skippedAttributes = pushProducerHeaders(headers, record.messageAttributes ?? {}, names);
  return { id: messageId, headers, body, skippedAttributes: skippedAttributes ?? NOTHING_SKIPPED, ignoredOriginalId: identity?.ignored };
}

/** Appends the Carrier headers of `record` (those its values allow), `messageId` its `Message-Id`. */
function pushCarrierHeaders(headers: string[], record: SQSRecord, names: CarrierHeaderNames, messageId: string): void {
  const system = record.attributes ?? {};
  const receiveCount = system.ApproximateReceiveCount;
  if (receiveCount !== undefined && isLegalHeaderValue(receiveCount)) headers.push(names.receiveCount, receiveCount);
  // Digits only, by construction: no header check needed.
  const firstReceiveTime = epochSeconds(system.ApproximateFirstReceiveTimestamp);
  if (firstReceiveTime !== undefined) headers.push(names.firstReceiveTime, firstReceiveTime);
  if (isLegalHeaderValue(messageId)) headers.push(names.messageId, messageId);
  const sentTime = epochSeconds(system.SentTimestamp);
  if (sentTime !== undefined) headers.push(names.sentTime, sentTime);
  const queueArn = record.eventSourceARN ?? '';
  if (lastQueue.arn !== queueArn) {
    const name = queueNameOfArn(queueArn);
    lastQueue = { arn: queueArn, name, legal: isLegalHeaderValue(name), fifo: isFifoRecord(record) };
  }
  if (lastQueue.legal) headers.push(names.queue, lastQueue.name);
  if (lastQueue.fifo) {
    if (system.MessageGroupId !== undefined && isLegalHeaderValue(system.MessageGroupId))
      headers.push(names.messageGroupId, system.MessageGroupId);
    if (system.SequenceNumber !== undefined && isLegalHeaderValue(system.SequenceNumber))
      headers.push(names.sequenceNumber, system.SequenceNumber);
  }
}

/** The producer's headers as they are appended: their bytes so far, and what was left out. */
interface ProducerTally {
  /** Counted as they go (a sum, no allocation). */
  bytes: number;
  /** Allocated for the rare record that leaves something out: most have none, and share NOTHING_SKIPPED. */
  skipped: { name: string; reason: string }[] | undefined;
}

/** Notes an attribute (or trace header) not sent, and why. */
function skip(tally: ProducerTally, name: string, reason: string): void {
  // biome-ignore lint/suspicious/noAssignInExpressions: the list is allocated only for the rare record that skips something
  (tally.skipped ??= []).push({ name, reason });
}

/**
 * Appends the producer's headers: the message's text attributes, `Body.ContentType` as the `Content-Type`, W3C Trace
 * Context; the largest left out when together they are too big. Returns what was not sent, if anything.
 */
function pushProducerHeaders(
  headers: string[],
  attributes: NonNullable<SQSRecord['messageAttributes']>,
  names: CarrierHeaderNames,
): { name: string; reason: string }[] | undefined {
  const tally: ProducerTally = { bytes: 0, skipped: undefined };
  // Attribute headers sent so far, lower-cased: attribute names are case-sensitive, header names
  // are not, so "Tenant" after "tenant" would merge into one header.
  let attributeHeaders: Set<string> | undefined;
  // The producer's headers start here.
  const firstProducerHeader = headers.length;
  // Checked once both are known: a tracestate means nothing without a valid traceparent.
  let traceparent: string | undefined;
  let tracestate: string | undefined;
  for (const name of Object.keys(attributes)) {
    const attribute = attributes[name];
    const dataType = attribute?.dataType ?? '';
    // Custom types ("Number.float", "String.json") keep their base type's rules.
    const isText = dataType === 'String' || dataType.startsWith('String.') || dataType === 'Number' || dataType.startsWith('Number.');
    // Binary attributes have no header representation; the dead-letter reason is the relay's own bookkeeping.
    if (!isText || name === DEAD_LETTER_REASON_ATTRIBUTE) continue;
    const value = attribute?.stringValue ?? '';
    if (!isLegalHeaderValue(value)) {
      const tooLong = value.length > MAX_ATTRIBUTE_HEADER_LENGTH;
      skip(tally, name, tooLong ? 'value too long for a header' : 'value has characters not allowed in a header');
      continue;
    }
    if (name === CONTENT_TYPE_ATTRIBUTE) {
      if (value !== '') {
        headers[CONTENT_TYPE_VALUE_INDEX] = value;
        tally.bytes += 'Content-Type'.length + value.length + HEADER_LINE_OVERHEAD;
      }
    } else if (name === 'traceparent') {
      traceparent = value;
    } else if (name === 'tracestate') {
      tracestate = value;
    } else if (!HEADER_TOKEN.test(name)) {
      skip(tally, name, 'name not allowed in a header');
    } else {
      const header = `${names.attribute}${name}`;
      const folded = header.toLowerCase();
      attributeHeaders ??= new Set();
      if (attributeHeaders.has(folded)) {
        skip(tally, name, 'name differs only in case from another attribute');
      } else {
        attributeHeaders.add(folded);
        headers.push(header, value);
        tally.bytes += header.length + value.length + HEADER_LINE_OVERHEAD;
      }
    }
  }
  if (traceparent !== undefined || tracestate !== undefined) pushTraceHeaders(headers, traceparent, tracestate, tally);
  if (tally.bytes > MAX_PRODUCER_HEADER_BYTES) {
    // biome-ignore lint/suspicious/noAssignInExpressions: the list is allocated only for the rare record that skips something
    leaveOutLargest(headers, firstProducerHeader, tally.bytes, names.attribute.length, (tally.skipped ??= []));
  }
  return tally.skipped;
}

/** Appends W3C Trace Context, or leaves it out: a tracestate means nothing without a valid traceparent. */
function pushTraceHeaders(headers: string[], traceparent: string | undefined, tracestate: string | undefined, tally: ProducerTally): void {
  const traced = traceparent !== undefined && isTraceParent(traceparent);
  if (traced && traceparent !== undefined) {
    headers.push('traceparent', traceparent);
    tally.bytes += 'traceparent'.length + traceparent.length + HEADER_LINE_OVERHEAD;
  } else if (traceparent !== undefined) {
    skip(tally, 'traceparent', 'not a W3C Trace Context traceparent');
  }
  if (tracestate !== undefined) {
    if (traced && isTraceState(tracestate)) {
      headers.push('tracestate', tracestate);
      tally.bytes += 'tracestate'.length + tracestate.length + HEADER_LINE_OVERHEAD;
    } else {
      skip(tally, 'tracestate', traced ? 'not a W3C Trace Context tracestate' : 'tracestate without a valid traceparent');
    }
  }
}

/**
 * Leaves out the largest of the producer's headers (from `first` on: attribute and trace headers)
 * until they fit {@link MAX_PRODUCER_HEADER_BYTES} with a `Body.ContentType`, which is never left
 * out. Each is reported in `skipped` under its attribute's name. For the rare record over it only.
 * @param attributePrefixLength the length of `<prefix>Attr-`, to name an attribute header's attribute
 */
function leaveOutLargest(
  headers: string[],
  first: number,
  producerBytes: number,
  attributePrefixLength: number,
  skipped: { name: string; reason: string }[],
): void {
  const candidates: { index: number; bytes: number }[] = [];
  for (let index = first; index < headers.length; index += 2) {
    candidates.push({ index, bytes: (headers[index] as string).length + (headers[index + 1] as string).length + HEADER_LINE_OVERHEAD });
  }
  // Largest first; of equal ones, the last sent.
  candidates.sort((a, b) => b.bytes - a.bytes || b.index - a.index);
  const left = new Set<number>();
  let excess = producerBytes - MAX_PRODUCER_HEADER_BYTES;
  for (const { index, bytes } of candidates) {
    if (excess <= 0) break;
    left.add(index);
    excess -= bytes;
    const header = headers[index] as string;
    skipped.push({
      name: header === 'traceparent' || header === 'tracestate' ? header : header.slice(attributePrefixLength),
      reason: `the message's attribute headers together are over ${MAX_PRODUCER_HEADER_BYTES} bytes: the largest are left out`,
    });
  }
  let kept = first;
  for (let index = first; index < headers.length; index += 2) {
    if (left.has(index)) continue;
    headers[kept] = headers[index] as string;
    headers[kept + 1] = headers[index + 1] as string;
    kept += 2;
  }
  headers.length = kept;
}
