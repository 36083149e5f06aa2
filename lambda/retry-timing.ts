/**
 * Retry timing: when a message that was not delivered should be seen again. Three sources, in
 * order of authority: the webhook's `Retry-After`, the configured backoff policy, and SQS's own
 * limit on how long a received message may stay invisible.
 */
import { MAX_VISIBILITY_SECONDS } from './aws-limits';
import { cappedWithJitter, growingBackoffSeconds, receiveNumber } from './backoff-formula';
import { type BACKOFF_POLICIES, FUNCTION_SETTINGS } from './settings';

// The policies' names are declared with the settings (`BACKOFF`); their types live with the policy.

/** One of {@link BACKOFF_POLICIES}. */
export type BackoffPolicyName = (typeof BACKOFF_POLICIES)[number];

/** How the delay before a retry is computed when the webhook did not name one. */
export interface BackoffSettings {
  readonly policy: BackoffPolicyName;
  /** `BACKOFF_BASE_SECONDS`: the unit every policy multiplies. */
  readonly baseSeconds: number;
  /** `BACKOFF_MAX_SECONDS`: no computed delay (jitter included) exceeds this. */
  readonly maxSeconds: number;
  /** `BACKOFF_JITTER`: add up to 25 % random jitter so retries of one burst spread out. */
  readonly jitter: boolean;
  /** `BACKOFF_SCHEDULE`: the `schedule` policy's delay after each receive, seconds; the last repeats (default {@link DEFAULT_BACKOFF_SCHEDULE}). */
  readonly schedule?: readonly number[];
}

/**
 * Seconds kept back from {@link MAX_VISIBILITY_SECONDS} for the time between SQS handing the
 * message to Lambda's poller and the handler starting: Lambda may hold a batch for up to its
 * 300 s maximum batching window before invoking. Without it a 12-hour `Retry-After` could
 * overshoot the limit, and SQS would reject the visibility change.
 */
export const RECEIVE_TO_INVOKE_SLACK_SECONDS = 300;

/**
 * The least delay a refusal's `Retry-After` gives its record, seconds: the smallest visibility SQS can set above "at once".
 * A `Retry-After: 0` (or a date in the past) would otherwise bring the message straight back, receive after receive.
 */
export const MIN_RETRY_AFTER_SECONDS = 1;

/**
 * The default `BACKOFF_SCHEDULE`: 1 min, 10 min, 1 h, 10 h, 12 h. With the default
 * `maxReceiveCount` of 5 a message is retried for about a day (83,460 s) before the DLQ,
 * like the schedules webhook services publish.
 */
export const DEFAULT_BACKOFF_SCHEDULE: readonly number[] = FUNCTION_SETTINGS.BACKOFF_SCHEDULE.default;

/**
 * Parses a `Retry-After` header: delta-seconds (`120`) or an HTTP-date. Returns whole seconds
 * from `nowMs` (a date in the past gives 0), capped at {@link MAX_VISIBILITY_SECONDS}, or
 * `undefined` when the value is absent or unusable (negative, fractional, garbage), so the
 * caller falls back to its backoff policy.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^[0-9]+$/.test(text)) {
    // Compare as a number only after the digit check: `Number` would accept " 1e3" or "0x10".
    return Math.min(Number(text), MAX_VISIBILITY_SECONDS);
  }
  const at = parseHttpDate(text);
  if (at === undefined) return undefined;
  return Math.min(Math.max(0, Math.ceil((at - nowMs) / 1000)), MAX_VISIBILITY_SECONDS);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const HTTP_DATE_FORMS: readonly RegExp[] = [
  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?<day>\d{2}) (?<month>[A-Z][a-z]{2}) (?<year>\d{4}) (?<time>\d{2}:\d{2}:\d{2}) GMT$/,
  // obsolete RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
  /^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (?<day>\d{2})-(?<month>[A-Z][a-z]{2})-(?<year>\d{2}) (?<time>\d{2}:\d{2}:\d{2}) GMT$/,
  // obsolete asctime: Sun Nov  6 08:49:37 1994 (always GMT, though it does not say so)
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?<month>[A-Z][a-z]{2}) (?<day>[ \d]\d) (?<time>\d{2}:\d{2}:\d{2}) (?<year>\d{4})$/,
];

/**
 * Milliseconds since the epoch of an HTTP-date in any of the three forms RFC 9110 §5.6.7 says a
 * recipient must accept, always read as GMT; `undefined` for anything else. Deliberately not
 * `Date.parse`, which reads far more than HTTP-dates (and zoneless ones in local time).
 */
export function parseHttpDate(text: string): number | undefined {
  for (const form of HTTP_DATE_FORMS) {
    const groups = form.exec(text)?.groups;
    if (groups === undefined) continue;
    const month = MONTHS.indexOf(groups.month ?? '');
    const [hours, minutes, seconds] = (groups.time ?? '').split(':').map(Number) as [number, number, number];
    let year = Number(groups.year);
    // RFC 850's two-digit year: a year that looks more than 50 years ahead is in the past century.
    if ((groups.year ?? '').length === 2) year += year + 2000 > new Date().getUTCFullYear() + 50 ? 1900 : 2000;
    const day = Number((groups.day ?? '').trim());
    if (month < 0 || day < 1 || day > 31 || hours > 23 || minutes > 59 || seconds > 60) return undefined;
    return Date.UTC(year, month, day, hours, minutes, seconds);
  }
  return undefined;
}

/**
 * The backoff delay before receive number `receiveCount + 1`, in whole seconds, or `undefined`
 * for the `none` policy (leave the queue's own visibility timeout in place).
 *
 * `schedule` = the n-th entry of the schedule (the last one repeating), where n is the receive
 * count (1 on the first failure), capped by SQS's 12 hours; the other policies are
 * backoff-formula.ts's, capped by `maxSeconds`. With jitter, up to 25 % is added, within the cap.
 * @param random a source of numbers in [0, 1), injectable for tests
 */
export function backoffDelay(settings: BackoffSettings, receiveCount: number, random: () => number = Math.random): number | undefined {
  switch (settings.policy) {
    case 'none':
      return undefined;
    case 'schedule': {
      // An explicit schedule is its own cap; only SQS's limit bounds it.
      const schedule = settings.schedule ?? DEFAULT_BACKOFF_SCHEDULE;
      const raw = schedule[Math.min(receiveNumber(receiveCount), schedule.length) - 1] ?? settings.baseSeconds;
      return cappedWithJitter(raw, MAX_VISIBILITY_SECONDS, settings.jitter, random);
    }
    default:
      return growingBackoffSeconds(settings.policy, settings.baseSeconds, settings.maxSeconds, settings.jitter, receiveCount, random);
  }
}

/**
 * The visibility timeout SQS will accept for a message received about `elapsedSeconds` ago:
 * `requestedSeconds` clamped to 0 … (12 h − elapsed − {@link RECEIVE_TO_INVOKE_SLACK_SECONDS}).
 * Never throws and never returns a value SQS would reject.
 */
export function clampVisibility(requestedSeconds: number, elapsedSeconds: number): number {
  const elapsed = Number.isNaN(elapsedSeconds) ? 0 : Math.max(0, elapsedSeconds);
  const ceiling = Math.max(0, MAX_VISIBILITY_SECONDS - RECEIVE_TO_INVOKE_SLACK_SECONDS - Math.ceil(elapsed));
  if (!Number.isFinite(requestedSeconds)) return requestedSeconds > 0 ? ceiling : 0; // NaN and −∞ give 0
  return Math.min(Math.max(0, Math.round(requestedSeconds)), ceiling);
}
