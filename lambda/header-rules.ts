/**
 * What may be sent as an HTTP header: one rule for names and one for values, used by request
 * building (attribute headers, on every record) and by the configuration (`HEADER_PREFIX`,
 * `DEFAULT_CONTENT_TYPE`, the `Authorization` value), so what start-up accepts is what a
 * request may carry. Import-free: the CDK app and the local runner can load it too.
 */

/** A header name: an RFC 9110 token. */
export const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Longest attribute value sent as a header. Common servers reject header lines over 8 KiB
 * (nginx's default buffer, Node's 16 KiB for all headers), turning one long attribute into a
 * 431 and a dead-lettered message; skipping it with a warning is the lesser harm.
 */
export const MAX_ATTRIBUTE_HEADER_LENGTH = 4_096;

/**
 * True when `value` can be sent as a header value unchanged and read back the same way: visible
 * ASCII, space and tab, no space or tab at either end, at most `maxLength` characters. obs-text
 * (0x80-0xFF) is legal in theory but read differently by different servers, and anything else
 * (CR, LF, NUL, non-Latin-1) is a header-injection risk. A loop rather than a regular
 * expression: it runs on two or three values of every record.
 * @param maxLength the attribute limit by default; settings pass `Infinity` (their length is the operator's choice)
 */
export function isLegalHeaderValue(value: string, maxLength = MAX_ATTRIBUTE_HEADER_LENGTH): boolean {
  const { length } = value;
  if (length > maxLength) return false;
  for (let i = 0; i < length; i += 1) {
    const code = value.charCodeAt(i);
    if (code > 0x7e || (code < 0x20 && code !== 0x09)) return false;
  }
  // No space or tab at either end: a server would strip it, and read a different value.
  return length === 0 || (value.charCodeAt(0) > 0x20 && value.charCodeAt(length - 1) > 0x20);
}

/**
 * The most bytes the producer's headers may take together (`<prefix>Attr-*`, `traceparent`,
 * `tracestate`, a `Body.ContentType`), counted as on the wire: name, `: `, value, CRLF. Node.js
 * answers `431` to a request whose header block passes 16 KiB (its default); this leaves half of
 * that to the request line, the relay's own headers and `Authorization`. Over it, the largest
 * attribute headers are left out with a WARN, as over-long values are: a message is never
 * dead-lettered for a size the relay chose to send.
 */
export const MAX_PRODUCER_HEADER_BYTES = 8_192;

/** `traceparent`'s fields (W3C Trace Context): version, trace id, parent id, flags, in lower-case hex; a later version may add more. */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$/;
const ALL_ZERO_TRACE_ID = '0'.repeat(32);
const ALL_ZERO_PARENT_ID = '0'.repeat(16);

/**
 * True when `value` is a W3C Trace Context `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`, ids not
 * all zero, version not `ff`; a version above `00` may carry more fields after a `-`. No
 * allocation; a regular expression rather than a loop over the characters, which V8 runs slower
 * (docs/performance.md, "Trace context checked, the producer's headers counted").
 */
export function isTraceParent(value: string): boolean {
  if (!TRACEPARENT.test(value) || value.startsWith('ff')) return false;
  if (value.startsWith('00') && value.length !== 55) return false;
  return !value.startsWith(ALL_ZERO_TRACE_ID, 3) && !value.startsWith(ALL_ZERO_PARENT_ID, 36);
}

/** One `tracestate` list member (W3C Trace Context): a simple or multi-tenant key, `=`, a value of printable ASCII but `,` and `=`. */
const TRACESTATE_MEMBER =
  /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
/** The most list members a `tracestate` may have. */
const MAX_TRACESTATE_MEMBERS = 32;

/** True when `value` is a W3C Trace Context `tracestate`: up to 32 `key=value` members, comma-separated, each key once. */
export function isTraceState(value: string): boolean {
  const keys = new Set<string>();
  for (const part of value.split(',')) {
    const member = part.trim();
    if (member === '') continue; // empty members are allowed
    if (!TRACESTATE_MEMBER.test(member)) return false;
    const key = member.slice(0, member.indexOf('='));
    if (keys.has(key)) return false;
    keys.add(key);
  }
  return keys.size <= MAX_TRACESTATE_MEMBERS;
}
