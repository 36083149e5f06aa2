/**
 * `dead-letters replay`: each dead letter that matches the filters goes back to the main queue as
 * a fresh message, then is deleted from the DLQ, and only then (a send that fails leaves it in
 * the DLQ). Run again after an interruption, it goes on with what is left: nothing is lost, and
 * at most the batches in flight when it stopped are sent twice (on a FIFO queue, not even those
 * within SQS's 5-minute deduplication window).
 *
 * What goes back: the body, every message attribute (the content type, the relay's reason with
 * the sealed original id, so the webhook sees the id it saw before: `lambda/message-id.ts`), the
 * X-Ray trace header; on a FIFO queue its message group, and a deduplication id of its own. As a
 * new message it has a new retry window and a fresh receive count.
 */
import {
  DeleteMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  type MessageSystemAttributeValue,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { MAX_BATCH_CALL_ENTRIES, MAX_MESSAGE_ATTRIBUTES, MAX_MESSAGE_BYTES } from '../../lambda/aws-limits';
import { DEAD_LETTER_CAUSES } from '../../lambda/dead-letter-causes';
import { messageBytes } from '../../lambda/dead-letter';
import { sealOriginalId } from '../../lambda/message-id';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import { type BatchCallOutput, batchEntryId, type FailedBatchItem, sendInBatches } from '../../lambda/sqs-util';
import { DELETE_TIMEOUT_MS, withAnswerTimeout } from '../answer-timeout';
import { type CauseOrUnreadable, type DeadLetter, readDeadLetter } from './dead-letter';
import { describeFilters, type Filters, matches } from './filters';
import type { Pace } from './pace';
import type { DeadLetterScan } from './scan';
import { count, span } from './text';

/** The queue dead letters go back to. */
export interface ReplayTarget {
  readonly queueUrl: string;
  /** Its name: a reason naming another source queue is skipped (a DLQ shared by several queues). */
  readonly queueName: string;
  readonly fifo: boolean;
}

/** What a replay does. */
export interface ReplayOptions {
  readonly sqs: SQSClient;
  readonly dlqUrl: string;
  readonly target: ReplayTarget;
  readonly filters: Filters;
  /** Replay at most this many. */
  readonly limit?: number;
  /** Count what would go; send and delete nothing. */
  readonly dryRun: boolean;
  readonly pace?: Pace;
  /** The relay's signing keys: seal the id of the messages SQS moved (which carry no reason), so the webhook sees it again. */
  readonly signingKeys?: readonly Buffer[];
  readonly signal?: AbortSignal;
}

/** The dead letters of one cause and last status that went (or would go) back. */
export interface ReplayedGroup {
  readonly cause: CauseOrUnreadable;
  readonly status?: number;
  readonly count: number;
}

/** A replay's tally. */
export interface ReplayTally {
  readonly dryRun: boolean;
  readonly filters: string;
  /** Sent back and deleted from the DLQ (dry run: would be). */
  readonly replayed: number;
  readonly byGroup: readonly ReplayedGroup[];
  /** Read and left in the DLQ: they do not match the filters. */
  readonly skipped: number;
  /** Left in the DLQ: their reason names another source queue. */
  readonly fromAnotherQueue: number;
  /** Matching, left in the DLQ by `--limit`. */
  readonly overLimit: number;
  /** Left in the DLQ: sent back by this run and dead-lettered again while it ran (the webhook still refuses them). */
  readonly deadLetteredAgain: number;
  /** Not sent (SQS refused, or the call failed): still in the DLQ. */
  readonly failed: number;
  /** Sent, and SQS never answered: still in the DLQ, and perhaps on the queue too (a rerun may send them twice). */
  readonly unanswered: number;
  /** Sent, but not deleted from the DLQ: they are in both queues (a rerun sends them again). */
  readonly sentNotDeleted: number;
  /** Replayed under a new message id: no sealed original id (signing off when dead-lettered, or moved by SQS with no key given). */
  readonly newMessageId: number;
  /** The first failures, with why. */
  readonly failures: readonly { readonly messageId: string; readonly reason: string }[];
}

/** Failures kept with their reason, at most. */
const FAILURES_KEPT = 10;
/** Wait before a second try at deleting what SQS did not delete, ms. */
const DELETE_RETRY_MS = 500;
/**
 * The longest a SendMessageBatch or DeleteMessageBatch may go unanswered, ms (the SDK waits for
 * ever): an SQS that took the call and went quiet must not hang the replay, nor a Ctrl-C with it.
 */
const ANSWER_TIMEOUT_MS = DELETE_TIMEOUT_MS;

/** A batch call SQS took and never answered: whether it acted is unknown. */
class NoAnswerError extends Error {
  override readonly name = 'NoAnswer';
  constructor() {
    super(`no answer from SQS within ${ANSWER_TIMEOUT_MS / 1000} s`);
  }
}

/** `call` bounded by {@link ANSWER_TIMEOUT_MS}: past it, it rejects with a {@link NoAnswerError}. */
async function answered<T extends BatchCallOutput>(call: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
  return withAnswerTimeout(ANSWER_TIMEOUT_MS, async (abortSignal) => {
    try {
      return await call(abortSignal);
    } catch (error) {
      throw abortSignal.aborted ? new NoAnswerError() : error;
    }
  });
}

/** A dead letter's message attributes as SendMessage takes them (the list forms, which SQS does not implement, left out). */
function sendableAttributes(attributes: Readonly<Record<string, MessageAttributeValue>>): Record<string, MessageAttributeValue> {
  // Without a prototype: a producer's attribute named `__proto__` is an attribute like any other.
  const copied: Record<string, MessageAttributeValue> = Object.create(null);
  for (const [name, value] of Object.entries(attributes)) {
    copied[name] =
      value.BinaryValue !== undefined
        ? { DataType: value.DataType, BinaryValue: value.BinaryValue }
        : { DataType: value.DataType, StringValue: value.StringValue };
  }
  return copied;
}

/** The message that replays `deadLetter`, and whether the webhook will see its original id. */
function replayMessage(
  deadLetter: DeadLetter,
  target: ReplayTarget,
  signingKeys: readonly Buffer[] | undefined,
  now: number,
): { readonly entry: Omit<SendMessageBatchRequestEntry, 'Id'>; readonly bytes: number; readonly keepsId: boolean } {
  const attributes = sendableAttributes(deadLetter.attributes);
  let keepsId = deadLetter.sealed;
  // A message SQS moved has no reason: with the relay's key, its id (SQS kept it) is sealed in one, as the relay would have.
  if (deadLetter.cause === DEAD_LETTER_CAUSES.backstop && signingKeys !== undefined && signingKeys.length > 0) {
    const reason = JSON.stringify({
      cause: DEAD_LETTER_CAUSES.backstop,
      originalMessageId: deadLetter.messageId,
      originalMessageIdSeal: sealOriginalId(signingKeys, deadLetter.messageId, deadLetter.body),
      sourceQueue: target.queueName,
      replayedAt: new Date(now).toISOString(),
    });
    const value: MessageAttributeValue = { DataType: 'String', StringValue: reason };
    const bytes = messageBytes(deadLetter.body, attributes) + messageBytes('', { [DEAD_LETTER_REASON_ATTRIBUTE]: value });
    // Only where it fits: all ten attribute slots the producer's, or no room under the size limit, and it goes without.
    if (Object.keys(attributes).length < MAX_MESSAGE_ATTRIBUTES && bytes <= MAX_MESSAGE_BYTES) {
      attributes[DEAD_LETTER_REASON_ATTRIBUTE] = value;
      keepsId = true;
    }
  }
  const trace = deadLetter.system.AWSTraceHeader;
  const systemAttributes: Record<string, MessageSystemAttributeValue> | undefined =
    trace === undefined ? undefined : { AWSTraceHeader: { DataType: 'String', StringValue: trace } };
  return {
    entry: {
      MessageBody: deadLetter.body,
      MessageAttributes: attributes,
      ...(systemAttributes === undefined ? {} : { MessageSystemAttributes: systemAttributes }),
      // Its own deduplication id, from its id in the DLQ: a rerun within 5 minutes does not send it twice.
      ...(target.fifo
        ? { MessageGroupId: deadLetter.groupId ?? 'replayed', MessageDeduplicationId: `replay-${deadLetter.messageId}` }
        : {}),
    },
    bytes: messageBytes(deadLetter.body, attributes),
    keepsId,
  };
}

/** `items` in calls of at most ten entries and {@link MAX_MESSAGE_BYTES} (SQS's limit on a batch's total). */
function sendChunks<T extends { readonly bytes: number }>(items: readonly T[]): T[][] {
  const result: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    if (current.length === MAX_BATCH_CALL_ENTRIES || (current.length > 0 && bytes + item.bytes > MAX_MESSAGE_BYTES)) {
      result.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += item.bytes;
  }
  if (current.length > 0) result.push(current);
  return result;
}

/** Replays the batches a {@link DeadLetterScan} reads: pass {@link handle} to its `run`. */
export class Replayer {
  private replayed = 0;
  private skipped = 0;
  private fromAnotherQueue = 0;
  private overLimit = 0;
  private deadLetteredAgain = 0;
  private failed = 0;
  private unanswered = 0;
  private sentNotDeleted = 0;
  private newMessageId = 0;
  /** Matching dead letters taken so far (under `limit`). */
  private taken = 0;
  private readonly groups = new Map<string, { cause: CauseOrUnreadable; status: number | undefined; count: number }>();
  private readonly failures: { messageId: string; reason: string }[] = [];
  /**
   * The ids the webhook sees for what this run sent back: the original id it keeps, or the new
   * one SQS gave it. A dead letter naming one of them was refused again while the run went on:
   * sent again, it would go round for as long as the relay runs and the webhook refuses it.
   */
  private readonly sentIds = new Set<string>();

  constructor(
    private readonly options: ReplayOptions,
    private readonly scan: DeadLetterScan,
  ) {}

  /** The scan's batch handler: resolves with the ids deleted from the DLQ. */
  readonly handle = async (messages: readonly Message[]): Promise<ReadonlySet<string>> => {
    const { filters, target, limit, dryRun, pace, signal, signingKeys } = this.options;
    const now = Date.now();
    const chosen: DeadLetter[] = [];
    for (const message of messages) {
      const deadLetter = readDeadLetter(message, now);
      if (this.sentIds.has(deadLetter.originalMessageId)) this.deadLetteredAgain += 1;
      else if (!matches(deadLetter, filters)) this.skipped += 1;
      else if (deadLetter.sourceQueue !== undefined && deadLetter.sourceQueue !== target.queueName) this.fromAnotherQueue += 1;
      else if (limit !== undefined && this.taken >= limit) {
        this.overLimit += 1;
        this.scan.stop('limit');
      } else {
        this.taken += 1;
        chosen.push(deadLetter);
      }
    }
    if (chosen.length === 0) return new Set();
    if (dryRun) {
      for (const deadLetter of chosen) this.count(deadLetter, replayMessage(deadLetter, target, signingKeys, now).keepsId);
      return new Set();
    }
    // Interrupted while waiting for its turn: nothing of this batch was sent, and all of it stays in the DLQ.
    if (pace !== undefined && !(await pace.take(chosen.length, signal))) {
      this.taken -= chosen.length;
      return new Set();
    }
    const outgoing = chosen.map((deadLetter) => ({ deadLetter, ...replayMessage(deadLetter, target, signingKeys, now) }));
    const sent: typeof outgoing = [];
    await Promise.all(
      sendChunks(outgoing).map(async (chunk) => {
        // One call per chunk (at most ten entries): a call that went unanswered leaves all of its entries in doubt.
        let noAnswer = false;
        const failed = await sendInBatches(chunk, async (entries) => {
          for (const item of entries) this.sentIds.add(item.deadLetter.originalMessageId);
          const output = await answered((abortSignal) =>
            this.options.sqs.send(
              new SendMessageBatchCommand({
                QueueUrl: target.queueUrl,
                Entries: entries.map((item, index) => ({ Id: batchEntryId(index), ...item.entry })),
              }),
              { abortSignal },
            ),
          ).catch((error: unknown) => {
            noAnswer = error instanceof NoAnswerError;
            throw error;
          });
          for (const { MessageId } of output.Successful ?? []) if (MessageId !== undefined) this.sentIds.add(MessageId);
          return output;
        });
        const notSent = new Set(failed.map((failure) => failure.item));
        // Unanswered, it may have been sent: it stays in the DLQ all the same, where nothing is lost.
        for (const failure of failed)
          if (noAnswer) {
            this.unanswered += 1;
            this.note(failure.item.deadLetter, `sent, never answered (${failure.reason}): still in the DLQ, perhaps on the queue too`);
          } else this.fail(failure.item.deadLetter, `not sent: ${failure.reason}`);
        sent.push(...chunk.filter((item) => !notSent.has(item)));
      }),
    );
    const deleted = await this.deleteFromDlq(sent.map((item) => item.deadLetter));
    for (const item of sent) if (deleted.has(item.deadLetter.messageId)) this.count(item.deadLetter, item.keepsId);
    return deleted;
  };

  /** Deletes what was sent from the DLQ, trying twice; resolves with the ids deleted. */
  private async deleteFromDlq(deadLetters: readonly DeadLetter[]): Promise<Set<string>> {
    const remove = (items: readonly DeadLetter[]): Promise<FailedBatchItem<DeadLetter>[]> =>
      sendInBatches(items, (chunk) =>
        answered((abortSignal) =>
          this.options.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: this.options.dlqUrl,
              Entries: chunk.map((deadLetter, index) => ({
                Id: batchEntryId(index),
                // The handle of its latest receive: a second one (a lapsed hold) replaces the first.
                ReceiptHandle: this.scan.receiptHandleOf(deadLetter.messageId) ?? deadLetter.receiptHandle,
              })),
            }),
            { abortSignal },
          ),
        ),
      );
    let failed = await remove(deadLetters);
    if (failed.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, DELETE_RETRY_MS));
      failed = await remove(failed.map((failure) => failure.item));
    }
    for (const failure of failed) {
      this.sentNotDeleted += 1;
      this.note(failure.item, `sent, but not deleted from the DLQ: ${failure.reason}`);
    }
    const notDeleted = new Set(failed.map((failure) => failure.item.messageId));
    return new Set(deadLetters.map((deadLetter) => deadLetter.messageId).filter((id) => !notDeleted.has(id)));
  }

  private count(deadLetter: DeadLetter, keepsId: boolean): void {
    this.replayed += 1;
    if (!keepsId) this.newMessageId += 1;
    const key = `${deadLetter.cause}\u0000${deadLetter.status ?? ''}`;
    const group = this.groups.get(key) ?? { cause: deadLetter.cause, status: deadLetter.status, count: 0 };
    group.count += 1;
    this.groups.set(key, group);
  }

  private fail(deadLetter: DeadLetter, reason: string): void {
    this.failed += 1;
    this.note(deadLetter, reason);
  }

  private note(deadLetter: DeadLetter, reason: string): void {
    if (this.failures.length < FAILURES_KEPT) this.failures.push({ messageId: deadLetter.messageId, reason });
  }

  /** The tally so far. */
  tally(): ReplayTally {
    return {
      dryRun: this.options.dryRun,
      filters: describeFilters(this.options.filters),
      replayed: this.replayed,
      byGroup: [...this.groups.values()]
        .sort((a, b) => b.count - a.count)
        .map((group) => ({ cause: group.cause, ...(group.status === undefined ? {} : { status: group.status }), count: group.count })),
      skipped: this.skipped,
      fromAnotherQueue: this.fromAnotherQueue,
      overLimit: this.overLimit,
      deadLetteredAgain: this.deadLetteredAgain,
      failed: this.failed,
      unanswered: this.unanswered,
      sentNotDeleted: this.sentNotDeleted,
      newMessageId: this.newMessageId,
      failures: this.failures,
    };
  }
}

/** Whether a tally has failures: the command then exits non-zero. */
export function replayFailed(tally: ReplayTally): boolean {
  return tally.failed > 0 || tally.unanswered > 0 || tally.sentNotDeleted > 0;
}

/** The tally for a person. */
export function formatReplay(
  tally: ReplayTally,
  facts: {
    readonly dlqUrl: string;
    readonly queueUrl: string;
    readonly seconds: number;
    readonly interrupted: boolean;
    readonly notes: readonly string[];
    readonly rerun: string;
  },
): string {
  const lines: string[] = [];
  const groups = tally.byGroup
    .map((group) => `${group.cause}${group.status === undefined ? '' : ` ${group.status}`} × ${count(group.count)}`)
    .join(', ');
  const rate = tally.replayed > 0 && facts.seconds > 0 ? `, ${count(tally.replayed / facts.seconds)}/s` : '';
  if (tally.dryRun) {
    lines.push(
      `Dry run: ${count(tally.replayed)} dead letter(s) would go back from ${facts.dlqUrl} to ${facts.queueUrl} (${tally.filters}); nothing was moved.`,
    );
  } else {
    lines.push(
      `Replayed ${count(tally.replayed)} dead letter(s) from ${facts.dlqUrl} to ${facts.queueUrl} (${tally.filters}) in ${span(facts.seconds * 1000)}${rate}.`,
    );
  }
  const rows: [string, number, string][] = [
    [tally.dryRun ? 'would replay' : 'replayed', tally.replayed, groups],
    ['skipped by the filters', tally.skipped, 'left in the DLQ'],
  ];
  if (tally.fromAnotherQueue > 0)
    rows.push(['from another queue', tally.fromAnotherQueue, 'their reason names another source queue: left in the DLQ']);
  // The scan stops at the limit: this counts what it had read past it, not all that is left.
  if (tally.overLimit > 0)
    rows.push([
      'over --limit',
      tally.overLimit,
      'matching, read past the limit and left in the DLQ; the scan stopped there, so more may wait',
    ]);
  if (tally.deadLetteredAgain > 0)
    rows.push(['dead-lettered again', tally.deadLetteredAgain, 'sent back by this run and refused again: left in the DLQ']);
  rows.push(['failed', tally.failed, tally.failed > 0 ? 'not sent: still in the DLQ' : '']);
  if (tally.unanswered > 0)
    rows.push(['sent, no answer', tally.unanswered, 'still in the DLQ, and perhaps on the queue too: a rerun may send them twice']);
  if (tally.sentNotDeleted > 0)
    rows.push(['sent, not deleted', tally.sentNotDeleted, 'in both queues: delete them from the DLQ, or a rerun sends them again']);
  const width = Math.max(...rows.map(([label]) => label.length));
  for (const [label, value, note] of rows)
    lines.push(`  ${label.padEnd(width)}  ${count(value).padStart(7)}${note === '' ? '' : `  ${note}`}`);
  if (tally.newMessageId > 0)
    lines.push(
      `  ${count(tally.newMessageId)} of them ${tally.dryRun ? 'would reach' : 'reach'} the webhook under a new message id: no sealed original id ` +
        '(signing was off when they were dead-lettered, or SQS moved them and no signing key was given: SIGNING_SECRET or --signing-secret-arn)',
    );
  for (const failure of tally.failures) lines.push(`  ${failure.messageId}: ${failure.reason}`);
  for (const note of facts.notes) lines.push(`  Note: ${note}`);
  if (facts.interrupted) lines.push(`Interrupted: what was not replayed is in the DLQ, visible again. To go on: ${facts.rerun}`);
  else if (tally.dryRun && tally.replayed > 0) lines.push(`To send them: ${facts.rerun}`);
  return `${lines.join('\n')}\n`;
}
