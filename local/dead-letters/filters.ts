/**
 * Which dead letters `replay` sends back: `--cause`, `--status`, `--since`/`--until` and
 * `--message-group`, each repeatable or comma-separated; a dead letter must match every filter
 * given, and any one value of each.
 */
import { DEAD_LETTER_CAUSE_LIST, DEAD_LETTER_CAUSES, type DeadLetterCauseName } from '../../lambda/dead-letter-causes';
import { UsageError } from '../errors';
import type { DeadLetter } from './dead-letter';

/** A `--status` value: one status (`404`, `0` for no answer) or a class (`4xx`, `5xx`). */
export interface StatusFilter {
  readonly from: number;
  readonly to: number;
  readonly text: string;
}

/** The filters as given; an absent one lets everything through. */
export interface Filters {
  readonly causes?: ReadonlySet<DeadLetterCauseName>;
  readonly statuses?: readonly StatusFilter[];
  /** Dead-lettered at or after, ms. */
  readonly since?: number;
  /** Dead-lettered before, ms. */
  readonly until?: number;
  readonly groups?: ReadonlySet<string>;
}

/** Short names a person types for the causes. */
const CAUSE_ALIASES: Readonly<Record<string, DeadLetterCauseName>> = {
  refused: DEAD_LETTER_CAUSES.refused,
  permanent: DEAD_LETTER_CAUSES.refused,
  window: DEAD_LETTER_CAUSES.windowExhausted,
  exhausted: DEAD_LETTER_CAUSES.windowExhausted,
  backstop: DEAD_LETTER_CAUSES.backstop,
  sqs: DEAD_LETTER_CAUSES.backstop,
};

/** Every value of a repeatable option, commas splitting them too. */
function listOf(values: readonly string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  return values.flatMap((value) => value.split(',')).map((value) => value.trim());
}

function cause(text: string): DeadLetterCauseName {
  const normalized = text.toLowerCase().replace(/[-_]+/g, ' ').replace(/\s+/g, ' ');
  const found = DEAD_LETTER_CAUSE_LIST.find((name) => name === normalized) ?? CAUSE_ALIASES[normalized];
  if (found === undefined)
    throw new UsageError(
      `--cause must be one of ${DEAD_LETTER_CAUSE_LIST.map((name) => JSON.stringify(name)).join(', ')} (or refused, window, backstop); got ${JSON.stringify(text)}`,
    );
  return found;
}

function status(text: string): StatusFilter {
  // 0 for no answer, else a status HTTP can carry: `--status 40` (a 4 short) would match nothing, silently.
  const exact = /^(0|[1-5]\d\d)$/.exec(text);
  if (exact !== null) return { from: Number(text), to: Number(text), text };
  const range = /^([1-5])xx$/i.exec(text);
  if (range !== null) return { from: Number(range[1]) * 100, to: Number(range[1]) * 100 + 99, text: text.toLowerCase() };
  throw new UsageError(`--status must be an HTTP status (404), a class (4xx, 5xx) or 0 (no answer); got ${JSON.stringify(text)}`);
}

const DURATION_UNITS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A point in time: an ISO-8601 date (`2026-11-20`, `2026-11-20T10:00:00Z`), or a duration ago
 * (`30m`, `6h`, `2d`).
 */
export function parseTime(text: string, flag: string, now: number): number {
  const ago = /^(\d+(?:\.\d+)?)\s*([smhd])$/i.exec(text.trim());
  if (ago !== null) return now - Number(ago[1]) * (DURATION_UNITS[(ago[2] ?? '').toLowerCase()] ?? Number.NaN);
  const at = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(at))
    throw new UsageError(
      `${flag} must be a date (2026-11-20, 2026-11-20T10:00:00Z) or a time ago (30m, 6h, 2d); got ${JSON.stringify(text)}`,
    );
  return at;
}

/** The filters of the command line's values. */
export function parseFilters(
  values: {
    readonly cause?: readonly string[];
    readonly status?: readonly string[];
    readonly since?: string;
    readonly until?: string;
    readonly 'message-group'?: readonly string[];
  },
  now: number,
): Filters {
  const causes = listOf(values.cause)?.map(cause);
  const statuses = listOf(values.status)?.map(status);
  const groups = listOf(values['message-group']);
  const since = values.since === undefined ? undefined : parseTime(values.since, '--since', now);
  const until = values.until === undefined ? undefined : parseTime(values.until, '--until', now);
  if (since !== undefined && until !== undefined && since >= until)
    throw new UsageError(`--since (${new Date(since).toISOString()}) must be before --until (${new Date(until).toISOString()})`);
  return {
    ...(causes === undefined ? {} : { causes: new Set(causes) }),
    ...(statuses === undefined ? {} : { statuses }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
    ...(groups === undefined ? {} : { groups: new Set(groups) }),
  };
}

/** True when `deadLetter` passes every filter. */
export function matches(deadLetter: DeadLetter, filters: Filters): boolean {
  if (filters.causes !== undefined && !filters.causes.has(deadLetter.cause as DeadLetterCauseName)) return false;
  if (filters.statuses !== undefined) {
    const { status } = deadLetter;
    if (status === undefined || !filters.statuses.some((range) => status >= range.from && status <= range.to)) return false;
  }
  if (filters.since !== undefined && deadLetter.deadLetteredAt < filters.since) return false;
  if (filters.until !== undefined && deadLetter.deadLetteredAt >= filters.until) return false;
  if (filters.groups !== undefined && (deadLetter.groupId === undefined || !filters.groups.has(deadLetter.groupId))) return false;
  return true;
}

/** The filters in words, for the tally: "cause refused permanently, status 404". */
export function describeFilters(filters: Filters): string {
  const parts: string[] = [];
  if (filters.causes !== undefined) parts.push(`cause ${[...filters.causes].join(' or ')}`);
  if (filters.statuses !== undefined) parts.push(`status ${filters.statuses.map((range) => range.text).join(' or ')}`);
  if (filters.since !== undefined) parts.push(`dead-lettered since ${new Date(filters.since).toISOString()}`);
  if (filters.until !== undefined) parts.push(`dead-lettered before ${new Date(filters.until).toISOString()}`);
  if (filters.groups !== undefined) parts.push(`message group ${[...filters.groups].join(' or ')}`);
  return parts.length === 0 ? 'every dead letter' : parts.join(', ');
}
