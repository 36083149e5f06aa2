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
