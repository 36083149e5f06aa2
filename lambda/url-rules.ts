/**
 * The rules of the URLs the relay is given: where it sends requests (the webhook, the token
 * endpoint, the daemon's health check and SQS endpoint), its proxies, and how a URL is shown in a
 * message. One rule each, for the function's configuration, the construct and the daemon alike;
 * each words a refusal in its own voice. Free of the function's dependencies (only `node:net`).
 */
import { isIP } from 'node:net';

/**
 * True for hosts that can only be this machine: `localhost`, 127.0.0.0/8 and `::1`. Not every
 * `*.localhost` name: many resolvers (glibc, most corporate DNS) send those to DNS like any name,
 * so plain http to one may leave the machine.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1';
  return false;
}

/**
 * A URL as it may be printed: user:password and everything after `?` or `#` replaced by `…`
 * (tokens travel there). Works on text that is not a valid URL too, as error messages need:
 * there, everything between `scheme://` (or the start) and the last `@` counts as user:password
 * (a password may hold `/`, `?`, `#` or `@`): over-redacting an odd path is the lesser harm.
 */
export function redactUrl(raw: string): string {
  // The user-info starts after "scheme://" (or a leading "//"); in anything else, at the start.
  const start = /^([a-z][a-z0-9+.-]*:)?\/\//i.exec(raw)?.[0].length ?? 0;
  let parsed: URL | undefined;
  try {
    // Only a URL with an authority ("scheme://host"): "user:pass@host" parses too, as an opaque path.
    parsed = start > 2 ? new URL(raw) : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed !== undefined) {
    const userInfo = parsed.username !== '' || parsed.password !== '' ? '…@' : '';
    const rest = parsed.search !== '' ? '?…' : parsed.hash !== '' ? '#…' : '';
    // Nothing to hide: shown as typed, not as the parser rewrites it (`ftp://x/`, a default port dropped).
    if (userInfo === '' && rest === '') return raw;
    return `${parsed.protocol}//${userInfo}${parsed.host}${parsed.pathname}${rest}`;
  }
  const at = raw.lastIndexOf('@');
  const withoutUserInfo = at >= start ? `${raw.slice(0, start)}…${raw.slice(at)}` : raw;
  return withoutUserInfo.replace(/([?#]).*$/s, '$1…');
}

/** Why a URL the relay sends to was refused, in the order the rules are checked. */
export type UrlProblem = 'not-a-url' | 'not-http' | 'plain-http' | 'credentials';

/**
 * `raw` as a URL the relay sends signed requests to (the webhook, the token endpoint, the daemon's
 * health check and SQS endpoint), or why not: `http(s)` only, and plain `http` only to a loopback
 * host or with `ALLOW_INSECURE_HTTP`, since what travels there (a signed body, SigV4-signed SQS
 * calls with session tokens) must not cross a network in clear unless the operator says that
 * network is private.
 */
export function checkHttpsOrLoopback(raw: string, allowInsecureHttp: boolean): URL | Exclude<UrlProblem, 'credentials'> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not-a-url';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'not-http';
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !allowInsecureHttp) return 'plain-http';
  return url;
}

/**
 * `raw` as the URL of the webhook or the token endpoint, or why not: {@link checkHttpsOrLoopback}'s
 * rule, and no user:password, which would end up in the template, the environment and logs (they
 * belong in a secret).
 */
export function checkSendUrl(raw: string, allowInsecureHttp: boolean): URL | UrlProblem {
  const url = checkHttpsOrLoopback(raw, allowInsecureHttp);
  if (url instanceof URL && (url.username !== '' || url.password !== '')) return 'credentials';
  return url;
}

/**
 * A forward proxy's URL (`HTTPS_PROXY`, `HTTP_PROXY`), or `undefined` when it is none: `host:port`
 * alone means `http://host:port`, as curl reads it; `http(s)` with a host only.
 */
export function parseProxyUrl(raw: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`);
  } catch {
    return undefined;
  }
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' ? url : undefined;
}

/** The shortest path segment taken for a token in a secret URL: common words (`hook`, `api`, `v1`) are shorter. */
const TOKEN_SEGMENT_CHARS = 8;

/**
 * The parts of the webhook's URL that a log must never show, as a webhook's answer may quote them
 * back (a 404 page echoing the path it was asked for): its query string and each of its values
 * and, for a URL that is itself a secret (`WEBHOOK_URL_SECRET_ARN`: a token in its path), its
 * path and every path segment long enough to be a token. Each as written in the URL and decoded.
 */
export function urlSecretsOf(url: URL, urlIsSecret: boolean): string[] {
  const parts: string[] = [];
  if (url.search.length > 1) {
    const query = url.search.slice(1);
    parts.push(query, ...query.split('&').map((pair) => pair.slice(pair.indexOf('=') + 1)), ...url.searchParams.values());
  }
  if (urlIsSecret && url.pathname !== '/') {
    parts.push(url.pathname);
    for (const segment of url.pathname.split('/')) if (segment.length >= TOKEN_SEGMENT_CHARS) parts.push(segment);
  }
  const decoded = parts.map((part) => percentDecoded(part) ?? part);
  // The longest first: a value is cut out of the whole query before it could be cut out of it alone.
  return [...new Set([...parts, ...decoded])].filter((part) => part.length >= 4).sort((a, b) => b.length - a.length);
}

/** `text` with its percent-encoding decoded, or `undefined` when a `%` starts no `%XX` of UTF-8. */
export function percentDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
