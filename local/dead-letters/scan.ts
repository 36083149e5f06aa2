/**
 * Reading a whole dead-letter queue once, without deleting anything it is not told to.
 *
 * SQS has no "peek": reading a message is receiving it, which makes it invisible for a visibility
 * timeout and counts a receive. To read every message once, and not the same ones again, what is
 * read is kept invisible (held) until the scan ends, then made visible again at once
 * (`ChangeMessageVisibilityBatch` to 0). Several readers receive in parallel; each stops when a
 * long poll finds nothing left to read. The trade-off, documented in docs/operations.md:
 *
 * - while a scan runs, what it has read is invisible to everyone else (the console's poll, a
 *   redrive, another replay), and each read counts one receive (a DLQ with a redrive policy of
 *   its own could move a message on: the command warns);
 * - a scan that dies without releasing (SIGKILL, a lost network) leaves its messages invisible
 *   until their hold ends: at first `holdSeconds`, and for a long scan about as long as it has
 *   run, since a hold about to end is extended by the time the scan has taken so far (a few
 *   calls per message over the longest scan, rather than one per message every minute);
 * - SQS keeps at most 120,000 messages of a standard queue in flight: a bigger queue is read up
 *   to that, and the result says so;
 * - a FIFO queue returns no message of a group while another of that group is in flight, so a
 *   scan reads the first message(s) of each group only; replay, which deletes as it goes, moves on.
 *
 * A message read twice (its hold lapsed, or SQS delivered it twice, as a standard queue may) is
 * recognised by its id: counted once, and deleted again if it was deleted already.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { MAX_BATCH_CALL_ENTRIES, MAX_VISIBILITY_SECONDS } from '../../lambda/aws-limits';
import { batchEntryId, errorText, sendInBatches } from '../../lambda/sqs-util';
import { DELETE_TIMEOUT_MS, RECEIVE_ANSWER_SLACK_MS, RELEASE_TIMEOUT_MS, withAnswerTimeout } from '../answer-timeout';
import { RECEIVE_ALL_ATTRIBUTES } from '../event-source';

/** How a scan reads. */
export interface ScanOptions {
  readonly sqs: SQSClient;
  /** The queue scanned (the DLQ). */
  readonly queueUrl: string;
  /** Readers receiving in parallel. */
  readonly readers: number;
  /** Messages per receive, 1 to 10. */
  readonly batchSize: number;
  /** The visibility timeout of what is read, seconds: how long a message stays hidden if the scan dies at once. */
  readonly holdSeconds: number;
  /** Each receive's long poll, seconds: a reader whose poll finds nothing stops. */
  readonly waitSeconds: number;
  /** Read at most this many messages. */
  readonly limit?: number;
  /** Aborted: no more receives; what is read is released as at the end. */
  readonly signal?: AbortSignal;
  /** Told the number of messages read so far, after each batch. */
  readonly onProgress?: (read: number) => void;
}

/**
 * Handles a batch of messages read for the first time; resolves with the ids of those it deleted
 * from the queue (the scan stops holding them). Every other message stays held until the scan ends.
 */
export type BatchHandler = (messages: readonly Message[]) => Promise<ReadonlySet<string>>;

/** Why a scan ended. */
export type ScanEnd = 'read all' | 'limit' | 'stopped' | 'interrupted' | 'in-flight limit';

/** What a scan did. */
export interface ScanResult {
  /** Distinct messages read. */
  readonly read: number;
  /** Receives of a message already read (a lapsed hold, or a second delivery): not counted in `read`. */
  readonly readAgain: number;
  readonly ended: ScanEnd;
  /** Messages whose release failed: they are visible again when their hold ends. */
  readonly notReleased: number;
  /** What went wrong without stopping the scan, one line each. */
  readonly problems: readonly string[];
}

/** A message the scan holds invisible. */
interface Held {
  receiptHandle: string;
  /** When the receive that holds it was, ms (SQS holds a message at most 12 hours from a receive). */
  receivedAt: number;
  /** When its visibility ends, ms. */
  until: number;
}

/** Errors with which SQS refuses a receive because too many messages are in flight. */
const OVER_LIMIT = /OverLimit/;
/** A hold is extended once less than this share of its first length is left. */
const EXTEND_WHEN_LEFT = 0.5;
/** Seconds kept short of SQS's 12 hours from a receive, the longest a message may be held. */
const LONGEST_HOLD_MARGIN_SECONDS = 60;

/** Runs `work` on every item, at most `limit` at once. */
async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Chunks of at most {@link MAX_BATCH_CALL_ENTRIES}. */
function chunks<T>(items: readonly T[]): T[][] {
  const result: T[][] = [];
  for (let start = 0; start < items.length; start += MAX_BATCH_CALL_ENTRIES)
    result.push(items.slice(start, start + MAX_BATCH_CALL_ENTRIES));
  return result;
}

/** One scan of one queue: {@link run} it once. */
export class DeadLetterScan {
  private readonly held = new Map<string, Held>();
  /** Ids the handler deleted: read again, they are deleted again. */
  private readonly deleted = new Set<string>();
  private readonly problems: string[] = [];
  private read = 0;
  private readAgain = 0;
  /** Messages receives may still return under `limit`: claimed before a receive, given back after. */
  private claimed = 0;
  private ended: ScanEnd | undefined;
  private extending: Promise<void> | undefined;

  constructor(private readonly options: ScanOptions) {}

  /** Stops receiving (the batches being handled finish); `run` then releases and resolves. */
  stop(reason: ScanEnd = 'stopped'): void {
    this.ended ??= reason;
  }

  /** The receipt handle that now holds message `id` (a second receive replaces the first). */
  receiptHandleOf(id: string): string | undefined {
    return this.held.get(id)?.receiptHandle;
  }

  /**
   * Reads the queue to its end (or `limit`, or `stop()`, or the signal), handing each batch read
   * for the first time to `handle`, then makes everything still held visible again.
   * @throws what a receive or `handle` threw, after the release
   */
  async run(handle: BatchHandler): Promise<ScanResult> {
    const { holdSeconds, readers } = this.options;
    const heartbeat = setInterval(() => this.extendHolds(), Math.max(1, Math.min(30, holdSeconds / 4)) * 1000);
    heartbeat.unref();
    let failure: unknown;
    try {
      const results = await Promise.allSettled(Array.from({ length: readers }, () => this.reader(handle)));
      const rejected = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (rejected !== undefined) failure = rejected.reason;
    } finally {
      clearInterval(heartbeat);
      await this.extending;
    }
    const notReleased = await this.releaseAll();
    if (failure !== undefined) throw failure;
    return {
      read: this.read,
      readAgain: this.readAgain,
      ended:
        this.ended ?? (this.options.signal?.aborted === true ? 'interrupted' : this.read === this.options.limit ? 'limit' : 'read all'),
      notReleased,
      problems: this.problems,
    };
  }

  private async reader(handle: BatchHandler): Promise<void> {
    const { sqs, queueUrl, batchSize, holdSeconds, waitSeconds, limit, signal } = this.options;
    while (this.ended === undefined) {
      if (signal?.aborted === true) {
        this.stop('interrupted');
        return;
      }
      // Under a limit, what other readers' receives may still return is claimed: this reader
      // stops when that covers the limit (a receive returning fewer leaves its reader to go on).
      const want = limit === undefined ? batchSize : Math.min(batchSize, limit - this.read - this.claimed);
      if (want <= 0) return;
      this.claimed += want;
      let messages: Message[];
      // The SDK waits for ever: a receive SQS took and never answers would hang the scan, and a Ctrl-C with it.
      try {
        const output = await withAnswerTimeout(waitSeconds * 1000 + RECEIVE_ANSWER_SLACK_MS, (abortSignal) =>
          sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: queueUrl,
              MaxNumberOfMessages: want,
              VisibilityTimeout: holdSeconds,
              WaitTimeSeconds: waitSeconds,
              ...RECEIVE_ALL_ATTRIBUTES,
            }),
            { abortSignal },
          ),
        );
        messages = output.Messages ?? [];
      } catch (error) {
        this.claimed -= want;
        if (error instanceof Error && OVER_LIMIT.test(error.name)) {
          this.problems.push(`SQS refused to hold more messages in flight (${errorText(error)}): the rest of the queue was not read`);
          this.stop('in-flight limit');
          return;
        }
        throw error;
      }
      const fresh = this.admit(messages);
      this.claimed -= want;
      // Nothing left to read for this reader (whatever the others are still handling).
      if (messages.length === 0) return;
      if (fresh.length > 0) {
        const deleted = await handle(fresh);
        for (const id of deleted) {
          this.held.delete(id);
          this.deleted.add(id);
        }
      }
      this.options.onProgress?.(this.read);
    }
  }

  /** Registers what a receive returned; returns the messages read for the first time. */
  private admit(messages: readonly Message[]): Message[] {
    const now = Date.now();
    const fresh: Message[] = [];
    const deleteAgain: Message[] = [];
    for (const message of messages) {
      const id = message.MessageId ?? '';
      const receiptHandle = message.ReceiptHandle ?? '';
      const known = this.held.get(id);
      if (known !== undefined) {
        this.readAgain += 1;
        known.receiptHandle = receiptHandle;
        known.receivedAt = now;
        known.until = now + this.options.holdSeconds * 1000;
      } else if (this.deleted.has(id)) {
        this.readAgain += 1;
        deleteAgain.push(message);
      } else {
        this.read += 1;
        this.held.set(id, { receiptHandle, receivedAt: now, until: now + this.options.holdSeconds * 1000 });
        fresh.push(message);
      }
    }
    if (deleteAgain.length > 0) void this.deleteAgain(deleteAgain);
    return fresh;
  }

  /** A message deleted before and read again (a standard queue's second delivery): deleted again. */
  private async deleteAgain(messages: readonly Message[]): Promise<void> {
    const { sqs, queueUrl } = this.options;
    const failed = await sendInBatches(messages, (chunk) =>
      withAnswerTimeout(DELETE_TIMEOUT_MS, (abortSignal) =>
        sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map((message, index) => ({ Id: batchEntryId(index), ReceiptHandle: message.ReceiptHandle })),
          }),
          { abortSignal },
        ),
      ),
    );
    for (const { item, reason } of failed)
      this.problems.push(`message ${item.MessageId}, read again after it was deleted, not deleted again: ${reason}`);
  }

  /** Extends the holds about to end, each by the time the scan has held it so far (at least `holdSeconds`). */
  private extendHolds(): void {
    if (this.extending !== undefined) return;
    const { holdSeconds, readers } = this.options;
    const now = Date.now();
    const due = [...this.held].filter(([, held]) => held.until - now < holdSeconds * 1000 * EXTEND_WHEN_LEFT);
    if (due.length === 0) return;
    this.extending = inParallel(chunks(due), readers, async (chunk) => {
      const entries = chunk.map(([id, held], index) => {
        const heldSeconds = Math.ceil((now - held.receivedAt) / 1000);
        const hold = Math.min(Math.max(holdSeconds, heldSeconds), MAX_VISIBILITY_SECONDS - heldSeconds - LONGEST_HOLD_MARGIN_SECONDS);
        return { id, held, hold, entry: { Id: batchEntryId(index), ReceiptHandle: held.receiptHandle, VisibilityTimeout: hold } };
      });
      const extendable = entries.filter(({ hold }) => hold > 0);
      if (extendable.length === 0) return;
      try {
        // Unanswered, it is given up like a refusal: the scan's end waits for it, and must come.
        const { Failed } = await withAnswerTimeout(RELEASE_TIMEOUT_MS, (abortSignal) =>
          this.options.sqs.send(
            new ChangeMessageVisibilityBatchCommand({
              QueueUrl: this.options.queueUrl,
              Entries: extendable.map(({ entry }) => entry),
            }),
            { abortSignal },
          ),
        );
        const failed = new Set((Failed ?? []).map((failure) => failure.Id));
        for (const { held, hold, entry } of extendable) if (!failed.has(entry.Id)) held.until = now + hold * 1000;
        if (failed.size > 0)
          this.problems.push(`${failed.size} hold(s) not extended (${Failed?.[0]?.Code}): those messages may be read again`);
      } catch (error) {
        this.problems.push(`holds not extended (${errorText(error)}): those messages may be read again`);
      }
    }).finally(() => {
      this.extending = undefined;
    });
  }

  /** Makes every held message visible again; returns how many could not be. */
  private async releaseAll(): Promise<number> {
    const { sqs, queueUrl, readers } = this.options;
    const all = [...this.held.values()];
    this.held.clear();
    let notReleased = 0;
    let firstReason: string | undefined;
    await inParallel(chunks(all), Math.max(readers, 4), async (chunk) => {
      // An SQS that no longer answers must not hold up the end: the messages come back when their hold ends.
      const failed = await sendInBatches(chunk, (entries) =>
        withAnswerTimeout(RELEASE_TIMEOUT_MS, (abortSignal) =>
          sqs.send(
            new ChangeMessageVisibilityBatchCommand({
              QueueUrl: queueUrl,
              Entries: entries.map((held, index) => ({ Id: batchEntryId(index), ReceiptHandle: held.receiptHandle, VisibilityTimeout: 0 })),
            }),
            { abortSignal },
          ),
        ),
      );
      notReleased += failed.length;
      firstReason ??= failed[0]?.reason;
    });
    if (notReleased > 0)
      this.problems.push(`${notReleased} message(s) not made visible again (${firstReason}): they are visible again when their hold ends`);
    return notReleased;
  }
}
