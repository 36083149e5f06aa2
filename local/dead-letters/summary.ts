/**
 * `dead-letters summary`: what is in a dead-letter queue and why, counted as the scan reads it
 * (nothing is kept of a message but its group's counts and one sample per group), as text for a
 * person or JSON (`--json`).
 */
import { DEAD_LETTER_CAUSE_LIST } from '../../lambda/dead-letter-causes';
import { terminalSafe } from '../log';
import { type CauseOrUnreadable, type DeadLetter, UNREADABLE_REASON } from './dead-letter';
import { count, excerpt, span, table, when } from './text';

/** Characters of a sample body (and response) kept in the JSON summary. */
const JSON_SAMPLE_CHARS = 256;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The age buckets, by time since dead-lettered: the DLQ's 14 days cut where an operator acts differently. */
const AGE_BUCKETS: readonly { readonly under: number; readonly label: string }[] = [
  { under: HOUR, label: 'under 1 hour' },
  { under: DAY, label: '1 hour to 1 day' },
  { under: 3 * DAY, label: '1 to 3 days' },
  { under: 7 * DAY, label: '3 to 7 days' },
  { under: 10 * DAY, label: '7 to 10 days' },
  { under: Number.POSITIVE_INFINITY, label: '10 days or more' },
];

/** A message, as the summary names it: ids, times, and a sample of its body and last response. */
export interface MessageSample {
  readonly messageId: string;
  /** The id the webhook saw (see `DeadLetter.originalMessageId`). */
  readonly originalMessageId: string;
  readonly deadLetteredAt: string;
  readonly body: string;
  readonly response?: string;
}

/** The dead letters of one cause and last status. */
export interface GroupSummary {
  readonly cause: CauseOrUnreadable;
  /** The last status; absent for messages without a reason. */
  readonly status?: number;
  readonly count: number;
  readonly oldest: string;
  readonly newest: string;
  readonly sample: MessageSample;
}

/** What the scan found, and how far it is to be trusted. */
export interface Summary {
  readonly dlqUrl: string;
  readonly queueUrl?: string;
  /** Messages read (each once). */
  readonly read: number;
  /** SQS's own counts just before the scan: visible, and in flight elsewhere. */
  readonly approximate: { readonly visible: number; readonly inFlight: number };
  /** True when the scan read the queue to its end, not stopped by `--limit`, a signal or SQS's in-flight limit. */
  readonly complete: boolean;
  /** Messages read that could not be made visible again: they are when their hold ends (see the notes). */
  readonly notReleased: number;
  readonly byCause: readonly { readonly cause: CauseOrUnreadable; readonly count: number }[];
  /** By last status (`null`: no reason, so no status). */
  readonly byStatus: readonly { readonly status: number | null; readonly count: number }[];
  readonly byAge: readonly { readonly age: string; readonly count: number }[];
  readonly groups: readonly GroupSummary[];
  readonly oldest?: MessageSample;
  readonly newest?: MessageSample;
  /** When SQS deletes the first of them (its `SentTimestamp` plus the DLQ's retention), if known. */
  readonly firstExpiry?: string;
  readonly retentionSeconds?: number;
  /** Everything worth knowing about how the read went, one line each. */
  readonly notes: readonly string[];
  readonly seconds: number;
  readonly messagesPerSecond: number;
}

interface GroupTally {
  readonly cause: CauseOrUnreadable;
  readonly status: number | undefined;
  count: number;
  oldest: number;
  newest: number;
  readonly sample: DeadLetter;
}

function sampleOf(deadLetter: DeadLetter, chars: number): MessageSample {
  return {
    messageId: deadLetter.messageId,
    originalMessageId: deadLetter.originalMessageId,
    deadLetteredAt: new Date(deadLetter.deadLetteredAt).toISOString(),
    body: excerpt(deadLetter.body, chars),
    ...(deadLetter.response === undefined ? {} : { response: excerpt(deadLetter.response, chars) }),
  };
}

/** Counts dead letters as they are read. */
export class SummaryBuilder {
  private readonly groups = new Map<string, GroupTally>();
  private readonly ages = AGE_BUCKETS.map(() => 0);
  private oldest: DeadLetter | undefined;
  private newest: DeadLetter | undefined;
  private firstSent: number | undefined;
  private total = 0;

  /** @param now the time ages are counted to */
  constructor(private readonly now: number) {}

  /** Counts one dead letter. */
  add(deadLetter: DeadLetter): void {
    this.total += 1;
    const key = `${deadLetter.cause}\u0000${deadLetter.status ?? ''}`;
    const group = this.groups.get(key);
    if (group === undefined) {
      const at = deadLetter.deadLetteredAt;
      this.groups.set(key, { cause: deadLetter.cause, status: deadLetter.status, count: 1, oldest: at, newest: at, sample: deadLetter });
    } else {
      group.count += 1;
      group.oldest = Math.min(group.oldest, deadLetter.deadLetteredAt);
      group.newest = Math.max(group.newest, deadLetter.deadLetteredAt);
    }
    const age = this.now - deadLetter.deadLetteredAt;
    const bucket = AGE_BUCKETS.findIndex((candidate) => age < candidate.under);
    this.ages[bucket] = (this.ages[bucket] ?? 0) + 1;
    if (this.oldest === undefined || deadLetter.deadLetteredAt < this.oldest.deadLetteredAt) this.oldest = deadLetter;
    if (this.newest === undefined || deadLetter.deadLetteredAt > this.newest.deadLetteredAt) this.newest = deadLetter;
    this.firstSent = Math.min(this.firstSent ?? deadLetter.sentAt, deadLetter.sentAt);
  }

  /** The summary of what was added. */
  result(facts: Omit<Summary, 'read' | 'byCause' | 'byStatus' | 'byAge' | 'groups' | 'oldest' | 'newest' | 'firstExpiry'>): Summary {
    const groups = [...this.groups.values()];
    const causes = [...DEAD_LETTER_CAUSE_LIST, UNREADABLE_REASON] as CauseOrUnreadable[];
    const byCause = causes
      .map((cause) => ({ cause, count: groups.filter((group) => group.cause === cause).reduce((sum, group) => sum + group.count, 0) }))
      .filter((entry) => entry.count > 0);
    const statuses = new Map<number | null, number>();
    for (const group of groups) statuses.set(group.status ?? null, (statuses.get(group.status ?? null) ?? 0) + group.count);
    const byStatus = [...statuses]
      .map(([status, total]) => ({ status, count: total }))
      .sort((a, b) => b.count - a.count || (a.status ?? 1000) - (b.status ?? 1000));
    const retention = facts.retentionSeconds;
    return {
      ...facts,
      read: this.total,
      byCause,
      byStatus,
      byAge: AGE_BUCKETS.map((bucket, index) => ({ age: bucket.label, count: this.ages[index] ?? 0 })).filter((entry) => entry.count > 0),
      groups: groups
        .sort((a, b) => b.count - a.count || causes.indexOf(a.cause) - causes.indexOf(b.cause) || (a.status ?? 0) - (b.status ?? 0))
        .map((group) => ({
          cause: group.cause,
          ...(group.status === undefined ? {} : { status: group.status }),
          count: group.count,
          oldest: new Date(group.oldest).toISOString(),
          newest: new Date(group.newest).toISOString(),
          sample: sampleOf(group.sample, JSON_SAMPLE_CHARS),
        })),
      ...(this.oldest === undefined ? {} : { oldest: sampleOf(this.oldest, JSON_SAMPLE_CHARS) }),
      ...(this.newest === undefined ? {} : { newest: sampleOf(this.newest, JSON_SAMPLE_CHARS) }),
      ...(this.firstSent === undefined || retention === undefined
        ? {}
        : { firstExpiry: new Date(this.firstSent + retention * 1000).toISOString() }),
    };
  }
}

/** The summary for a person. */
export function formatSummary(summary: Summary, now: number, replayCommand: (status: number | undefined, cause: string) => string): string {
  const lines: string[] = [];
  const where = summary.queueUrl === undefined ? summary.dlqUrl : `${summary.dlqUrl} (the DLQ of ${summary.queueUrl})`;
  lines.push(`Dead letters in ${where}`);
  const rate = summary.read > 0 && summary.seconds > 0 ? ` (${count(summary.messagesPerSecond)}/s)` : '';
  lines.push(
    `  ${count(summary.read)} read in ${summary.seconds.toFixed(1)} s${rate}${summary.complete ? '' : ', not all of them'}; ` +
      `SQS counted about ${count(summary.approximate.visible)} before the scan` +
      (summary.approximate.inFlight > 0 ? `, and ${count(summary.approximate.inFlight)} in flight elsewhere (not read)` : '') +
      '.',
  );
  lines.push(
    summary.notReleased === 0
      ? '  Left as found: everything read is visible again, nothing deleted (each read counts one receive).'
      : `  Nothing deleted, but ${count(summary.notReleased)} read could not be made visible again: they are when their hold ends.`,
  );
  for (const note of summary.notes) lines.push(`  Note: ${note}`);
  if (summary.read === 0) return `${lines.join('\n')}\n`;

  const ago = (iso: string): string => `${when(Date.parse(iso))} (${span(now - Date.parse(iso))} ago)`;
  lines.push('');
  if (summary.oldest !== undefined)
    lines.push(`  Oldest:  dead-lettered ${ago(summary.oldest.deadLetteredAt)}, message ${summary.oldest.messageId}`);
  if (summary.newest !== undefined)
    lines.push(`  Newest:  dead-lettered ${ago(summary.newest.deadLetteredAt)}, message ${summary.newest.messageId}`);
  if (summary.firstExpiry !== undefined) {
    const left = Date.parse(summary.firstExpiry) - now;
    lines.push(
      `  Expiry:  SQS deletes the first of them ${left > 0 ? `in ${span(left)}` : 'any moment now'} (${when(Date.parse(summary.firstExpiry))}: ` +
        `${Math.round((summary.retentionSeconds ?? 0) / 86_400)} days of retention from when it was sent)`,
    );
  }

  lines.push('', '  By cause');
  lines.push(
    ...table(
      summary.byCause.map((entry) => [entry.cause, count(entry.count)]),
      new Set([1]),
    ).map((line) => `    ${line}`),
  );
  lines.push('', '  By last status (0: no answer; none: no reason, SQS moved it)');
  lines.push(
    ...table(
      summary.byStatus.map((entry) => [entry.status === null ? 'none' : String(entry.status), count(entry.count)]),
      new Set([1]),
    ).map((line) => `    ${line}`),
  );
  lines.push('', '  By age (since dead-lettered)');
  lines.push(
    ...table(
      summary.byAge.map((entry) => [entry.age, count(entry.count)]),
      new Set([1]),
    ).map((line) => `    ${line}`),
  );

  // Bodies, answers and a reason's ids come from outside: an 8-bit CSI or a `\r` there must not act on the terminal.
  const shown = (text: string): string => terminalSafe(excerpt(text));
  lines.push('', '  By cause and last status: how many, dead-lettered from and to, a sample');
  for (const group of summary.groups) {
    const status = group.status === undefined ? '' : `, ${group.status}`;
    lines.push(
      `    ${group.cause}${status}: ${count(group.count)}, ${when(Date.parse(group.oldest))} to ${when(Date.parse(group.newest))}`,
    );
    lines.push(`      body      ${shown(group.sample.body)}`);
    if (group.sample.response !== undefined) lines.push(`      response  ${shown(group.sample.response) || '(empty)'}`);
    lines.push(
      `      message   ${group.sample.messageId}${group.sample.originalMessageId === group.sample.messageId ? '' : ` (the webhook saw ${shown(group.sample.originalMessageId)})`}`,
    );
  }
  const first = summary.groups[0];
  if (first !== undefined) {
    lines.push(
      '',
      '  Once the cause is fixed, see what would go back, then send it:',
      `    ${replayCommand(first.status, first.cause)} --dry-run`,
    );
  }
  return `${lines.join('\n')}\n`;
}
