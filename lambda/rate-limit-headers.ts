/**
 * A webhook's rate-limit headers (docs/webhook-owners.md, "Back-pressure"), read into one {@link Quota}: how many more requests
 * it takes before when, and at what rate it takes them in the long run. The forms read:
 * - `RateLimit` and `RateLimit-Policy` of the IETF draft (draft-ietf-httpapi-ratelimit-headers, -08 onward): lists of items,
 *   `RateLimit: "default";r=50;t=30` (50 more within 30 s) and `RateLimit-Policy: "default";q=100;w=60` (100 per 60 s);
 * - the draft's earlier `RateLimit: limit=100, remaining=50, reset=30` with `RateLimit-Policy: 100;w=60` (-07);
 * - `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds) of its first drafts;
 * - `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds, or a Unix time in seconds or ms, as GitHub and
 *   others send it).
 * A malformed field is ignored, as the draft asks; quotas counted in another unit than requests (`qu="content-bytes"`) are
 * left out. Where several policies are given, the one closest to running out binds.
 */

/** What a webhook's rate-limit headers say, as of the answer that carried them. */
export interface Quota {
  /** Requests it takes, at most, before {@link resetSeconds} have passed; undefined when only the policy was given. */
  readonly remaining: number | undefined;
  /** Seconds until the quota is restored (the effective window). */
  readonly resetSeconds: number | undefined;
  /** The quota per window: requests per second in the long run is `limit / windowSeconds`. */
  readonly limit: number | undefined;
  readonly windowSeconds: number | undefined;
}

/** The rate-limit headers an answer carried, by lower-case name (the transmitter keeps only these). */
export type RateLimitHeaders = Readonly<Record<string, string>>;

/** The lower-case names of the headers read here; the transmitter keeps these, and only when one is present. */
export const RATE_LIMIT_HEADER_NAMES: ReadonlySet<string> = new Set([
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
]);

/** A reset above this is a Unix time in seconds, not a number of seconds (a year and more: no quota window is that long). */
const UNIX_SECONDS_ABOVE = 1e9;
/** … and above this, a Unix time in milliseconds. */
const UNIX_MS_ABOVE = 1e12;

/** One member of a structured-field list: its bare item (as text) and its parameters (RFC 9651, read leniently). */
interface Member {
  readonly item: string;
  readonly params: ReadonlyMap<string, string>;
}

/**
 * The members of a structured-field list or dictionary (`a;x=1, "b";y=2` or `limit=1, reset=2`). Enough of RFC 9651 for these
 * fields: commas inside quoted strings are kept, parameters split on `;`, keys lower-cased. A dictionary member `key=value` comes
 * out with `item` `key=value`.
 */
function membersOf(field: string): Member[] {
  const members: Member[] = [];
  let current = '';
  let quoted = false;
  const flush = (): void => {
    const parts = splitOutsideQuotes(current, ';').map((part) => part.trim());
    const [item = '', ...rest] = parts;
    const params = new Map<string, string>();
    for (const param of rest) {
      const eq = param.indexOf('=');
      if (eq < 0) params.set(param.toLowerCase(), '?1');
      else params.set(param.slice(0, eq).trim().toLowerCase(), unquote(param.slice(eq + 1).trim()));
    }
    if (item !== '' || params.size > 0) members.push({ item, params });
    current = '';
  };
  for (const char of field) {
    if (char === '"') quoted = !quoted;
    if (char === ',' && !quoted) flush();
    else current += char;
  }
  flush();
  return members;
}

function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (const char of text) {
    if (char === '"') quoted = !quoted;
    if (char === separator && !quoted) {
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  return parts;
}

const unquote = (value: string): string => (value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value);

/** A non-negative whole number as a field gives it, or undefined (a malformed value is ignored). */
function count(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (!/^[0-9]{1,16}$/.test(text)) return undefined;
  return Number(text);
}

/** Seconds from now of a reset given as seconds or as a Unix time (s or ms). */
function resetSecondsOf(value: number | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  if (value > UNIX_MS_ABOVE) return Math.max(0, (value - nowMs) / 1000);
  if (value > UNIX_SECONDS_ABOVE) return Math.max(0, value - nowMs / 1000);
  return value;
}

/** A policy's quota per window, counted in requests (its unit, when named, is `requests`). */
interface Policy {
  readonly name: string;
  readonly limit: number;
  readonly windowSeconds: number | undefined;
}

/** A `RateLimit-Policy` field, read: its quotas counted in requests, and the names of those counted in another unit. */
interface Policies {
  readonly requests: Policy[];
  /** A `RateLimit` item naming one of these says what remains of bytes or the like, not of requests: it is left out too. */
  readonly otherUnits: ReadonlySet<string>;
}

/** `RateLimit-Policy`: `"name";q=100;w=60` (current) or `100;w=60` (-07). */
function policiesOf(field: string | undefined): Policies {
  const requests: Policy[] = [];
  const otherUnits = new Set<string>();
  if (field === undefined) return { requests, otherUnits };
  for (const { item, params } of membersOf(field)) {
    const unit = params.get('qu');
    if (unit !== undefined && unit !== 'requests' && unit !== 'request') {
      otherUnits.add(unquote(item));
      continue;
    }
    const limit = count(params.get('q')) ?? count(item);
    if (limit === undefined) continue;
    requests.push({ name: unquote(item), limit, windowSeconds: count(params.get('w')) });
  }
  return { requests, otherUnits };
}

/** Requests per second a policy allows in the long run (Infinity without a window). */
const sustained = (limit: number | undefined, windowSeconds: number | undefined): number =>
  limit === undefined || windowSeconds === undefined || windowSeconds === 0 ? Number.POSITIVE_INFINITY : limit / windowSeconds;

/** Requests per second the remaining quota allows until its reset (Infinity when either is unknown). */
const spread = (remaining: number | undefined, resetSeconds: number | undefined): number =>
  remaining === undefined || resetSeconds === undefined ? Number.POSITIVE_INFINITY : remaining / Math.max(resetSeconds, 1);

/** The tighter of two quotas: the one that leaves the fewer requests per second, over its window or until its reset. */
function tighter(a: Quota | undefined, b: Quota): Quota {
  if (a === undefined) return b;
  const pace = (quota: Quota): number => Math.min(sustained(quota.limit, quota.windowSeconds), spread(quota.remaining, quota.resetSeconds));
  return pace(b) < pace(a) ? b : a;
}

/**
 * What `headers` (an answer's rate-limit headers, by lower-case name) say, or undefined when they say nothing usable.
 * @param nowMs the time a reset given as a Unix time is measured from
 */
export function quotaOf(headers: RateLimitHeaders, nowMs: number): Quota | undefined {
  const { requests: policies, otherUnits } = policiesOf(headers['ratelimit-policy']);
  let quota: Quota | undefined;
  const field = headers.ratelimit;
  if (field !== undefined) {
    const members = membersOf(field);
    const dictionary = new Map(
      members.filter(({ item }) => item.includes('=')).map(({ item }) => [item.slice(0, item.indexOf('=')).trim().toLowerCase(), item]),
    );
    if (dictionary.has('remaining') || dictionary.has('limit') || dictionary.has('reset')) {
      // -07: a dictionary of limit, remaining and reset.
      const value = (key: string): number | undefined => {
        const member = dictionary.get(key);
        return member === undefined ? undefined : count(member.slice(member.indexOf('=') + 1));
      };
      const policy = policies[0];
      quota = {
        remaining: value('remaining'),
        resetSeconds: resetSecondsOf(value('reset'), nowMs),
        limit: value('limit') ?? policy?.limit,
        windowSeconds: policy?.windowSeconds,
      };
    } else {
      for (const { item, params } of members) {
        const remaining = count(params.get('r'));
        const name = unquote(item);
        if (remaining === undefined || otherUnits.has(name)) continue;
        const policy = policies.find((candidate) => candidate.name === name) ?? (policies.length === 1 ? policies[0] : undefined);
        quota = tighter(quota, {
          remaining,
          resetSeconds: count(params.get('t')),
          limit: policy?.limit,
          windowSeconds: policy?.windowSeconds,
        });
      }
    }
  }
  if (quota === undefined) {
    for (const prefix of ['ratelimit-', 'x-ratelimit-']) {
      const remaining = count(headers[`${prefix}remaining`]);
      // The first drafts allowed a policy list after the limit (`RateLimit-Limit: 10, 10;w=1`): the first number is the limit.
      const limit = count(headers[`${prefix}limit`]?.split(',')[0]);
      const resetSeconds = resetSecondsOf(count(headers[`${prefix}reset`]), nowMs);
      if (remaining === undefined && limit === undefined) continue;
      quota = { remaining, resetSeconds, limit, windowSeconds: policies[0]?.windowSeconds };
      break;
    }
  }
  if (quota === undefined) {
    // A policy alone still says the long-run rate.
    for (const { limit, windowSeconds } of policies)
      quota = tighter(quota, { remaining: undefined, resetSeconds: undefined, limit, windowSeconds });
  }
  return quota;
}
