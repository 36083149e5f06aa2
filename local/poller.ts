/**
 * What Lambda's SQS event source mapping does, on this machine: long-poll the queue, gather a
 * batch, invoke the handler with Lambda's event and a context that counts down the function
 * timeout, then delete every record the handler did not report in `batchItemFailures` and leave
 * those in flight (the handler has set their visibility). An invocation that throws, times out or
 * answers something that is not a valid batch response deletes nothing: the whole batch comes
 * back after the queue's visibility timeout, as with Lambda.
 *
 * Several pollers run side by side, like concurrent invocations; each has its own handler
 * instance (its own "warm container"), so per-container state is not shared between them.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { MAX_MESSAGES_PER_RECEIVE, MAX_WAIT_TIME_SECONDS } from '../lambda/aws-limits';
import { batchEntryId, errorText, type FailedBatchItem, sendInBatches } from '../lambda/sqs-util';
import { createLambdaContext, RECEIVE_ALL_ATTRIBUTES, toSqsEvent } from './event-source';
import { DELETE_TIMEOUT_MS, RECEIVE_ANSWER_SLACK_MS, RELEASE_TIMEOUT_MS, withAnswerTimeout } from './answer-timeout';
import { sleep } from './sleep';

/** Lambda's handler signature as the poller calls it. */
// biome-ignore lint/suspicious/noConfusingVoidType: a Lambda handler may return nothing (every record succeeded), as Lambda's own type says
export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | null | undefined | void>;

/**
 * A batch whose queue visibility timeout would run out with less than this left of the function
 * timeout has its visibility extended before it is invoked; the same margin ends a batching
 * window that early before the visibility timeout. It covers the answer's trip from SQS.
 */
export const VISIBILITY_SLACK_MS = 1_000;
/** Seconds beyond the function timeout a batch is kept invisible for when extended: the deletes after the handler answers. */
export const EXTENSION_RESERVE_SECONDS = 5;
/** The pause after a failed receive doubles from the first to the last of these. */
export const RECEIVE_RETRY_MS = { first: 1_000, max: 20_000 } as const;

/** Why an invocation counts as failed as a whole. */
export type InvocationFailure = 'error' | 'timeout' | 'invalid-response';

/** What the mapping reports as it works; every callback is optional. */
export interface MappingObserver {
  /** A batch is about to be handed to the handler. */
  invoking?(poller: number, records: readonly SQSRecord[]): void;
  /** The handler answered; `acknowledged` were deleted, `failed` left in flight. */
  completed?(poller: number, result: InvocationResult): void;
  /** The invocation failed as a whole; every record stays on the queue. */
  invocationFailed?(poller: number, records: readonly SQSRecord[], failure: InvocationFailure, detail: string): void;
  /** Receiving failed; the poller tries again after `retryInMs`. */
  receiveFailed?(poller: number, error: unknown, retryInMs: number): void;
  /** Messages received after stop() was called, handed straight back (visibility 0), never invoked. */
  released?(poller: number, messages: number): void;
  /** The visibility of these records could not be extended to the function timeout: they may be received again while in flight. */
  extensionFailed?(poller: number, failures: readonly { readonly record: Message; readonly reason: string }[]): void;
}

/** The outcome of one successful invocation. */
export interface InvocationResult {
  readonly records: readonly SQSRecord[];
  /** Records deleted from the queue. */
  readonly acknowledged: readonly SQSRecord[];
  /** Records named in `batchItemFailures`, left in flight. */
  readonly failed: readonly SQSRecord[];
  /** Records the handler acknowledged but SQS did not delete: they will be received again. */
  readonly deleteFailures: readonly { readonly record: SQSRecord; readonly reason: string }[];
}

/** How the mapping polls and invokes. */
export interface EventSourceMappingOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  /** The queue's ARN, as the records' `eventSourceARN`. */
  readonly queueArn: string;
  /** Builds the handler of one poller (called once per poller, at start). */
  readonly createHandler: (poller: number) => SqsHandler;
  readonly pollers: number;
  /** Records per invocation, at most (1 to 10,000). */
  readonly batchSize: number;
  /** How long to keep gathering records for a batch once the first arrived, ms; 0 = send what one receive returns. */
  readonly maxBatchingWindowMs: number;
  /** The function timeout: the invocation's deadline, and the limit after which it counts as failed. */
  readonly functionTimeoutMs: number;
  /**
   * The queue's visibility timeout, seconds. When a batch would become visible again before its
   * invocation could end (a queue of someone else's, with a shorter one than the function timeout
   * plus the batching window), the batching window ends early and the batch's visibility is
   * extended before it is invoked: else another poller receives it while it is sent, and the
   * deletes, made with receipt handles SQS has replaced, leave each message to be sent again.
   */
  readonly visibilityTimeoutSeconds?: number;
  /** Awaited before every receive: polling pauses while it is pending (the health check). */
  readonly beforeReceive?: (signal: AbortSignal) => Promise<void>;
  /** Long-poll wait, seconds (default 20, as Lambda). */
  readonly waitTimeSeconds?: number;
  /**
   * On stop, let the receives under way end by themselves (within their wait plus
   * {@link RECEIVE_ANSWER_SLACK_MS}) and hand back what they return, instead of aborting them.
   * SQS gives a receive's messages to the request even when its client has gone, so an aborted
   * long poll can leave messages invisible for a whole visibility timeout. Worth it whenever the
   * queue outlives this process; the default (false) aborts at once, for a queue that dies with it.
   */
  readonly finishReceivesOnStop?: boolean;
  /** How long a DeleteMessageBatch may take (default {@link DELETE_TIMEOUT_MS}). */
  readonly deleteTimeoutMs?: number;
  readonly observer?: MappingObserver;
}

/** A running mapping. */
export interface EventSourceMapping {
  /** Batches being handled right now. */
  readonly inFlight: number;
  /**
   * Stops polling and resolves once every batch in flight has been handled and acknowledged.
   * Messages a pending receive returns after this are handed back at once, never invoked.
   */
  stop(): Promise<void>;
}

/**
 * Reads a handler's response as Lambda does with `ReportBatchItemFailures`: no response or an
 * empty/absent `batchItemFailures` is complete success; anything malformed, or an identifier
 * that names no record of the batch, fails the whole batch.
 * @returns the failed message ids, or a description of why the response is invalid
 */
export function interpretBatchResponse(
  records: readonly SQSRecord[],
  response: unknown,
): { ok: true; failed: Set<string> } | { ok: false; reason: string } {
  if (response === undefined || response === null) return { ok: true, failed: new Set() };
  if (typeof response !== 'object' || Array.isArray(response))
    return { ok: false, reason: `the response is not an object: ${JSON.stringify(response)}` };
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return { ok: true, failed: new Set() };
  if (!Array.isArray(failures)) return { ok: false, reason: 'batchItemFailures is not an array' };
  const ids = new Set(records.map((record) => record.messageId));
  const failed = new Set<string>();
  for (const failure of failures as unknown[]) {
    const id = typeof failure === 'object' && failure !== null ? (failure as { itemIdentifier?: unknown }).itemIdentifier : undefined;
    if (typeof id !== 'string' || id === '')
      return { ok: false, reason: `batchItemFailures has an entry without an itemIdentifier: ${JSON.stringify(failure)}` };
    if (!ids.has(id)) return { ok: false, reason: `batchItemFailures names ${id}, which is not in the batch` };
    failed.add(id);
  }
  return { ok: true, failed };
}

class TimedOut extends Error {}

/** Starts `options.pollers` poll-and-invoke loops. */
export function startEventSourceMapping(options: EventSourceMappingOptions): EventSourceMapping {
  const stopping = new AbortController();
  // Aborts the receives under way: at once on stop, or only once they overstay their wait.
  const abortReceives = new AbortController();
  const waitTimeSeconds = Math.min(MAX_WAIT_TIME_SECONDS, options.waitTimeSeconds ?? MAX_WAIT_TIME_SECONDS);
  const observer = options.observer ?? {};
  let inFlight = 0;

  const receive = async (max: number, wait: number): Promise<Message[]> => {
    // The SDK waits for ever: a receive SQS took and never answers would stall this poller for good.
    const { Messages } = await withAnswerTimeout(
      wait * 1000 + RECEIVE_ANSWER_SLACK_MS,
      (abortSignal) =>
        options.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: max,
            WaitTimeSeconds: wait,
            ...RECEIVE_ALL_ATTRIBUTES,
          }),
          { abortSignal },
        ),
      abortReceives.signal,
      RECEIVE_ANSWER_SLACK_MS,
    );
    return Messages ?? [];
  };

  /** When messages received now become visible again, ms since the epoch (never, without the queue's visibility timeout). */
  const visibleAgainAt = (): number =>
    options.visibilityTimeoutSeconds === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.visibilityTimeoutSeconds * 1000;

  /**
   * One batch: a long poll, then more receives while the batch is not full and the window is open.
   * `visibleAt`: when its first messages become visible again.
   */
  const gather = async (): Promise<{ batch: Message[]; visibleAt: number }> => {
    const batch = await receive(Math.min(MAX_MESSAGES_PER_RECEIVE, options.batchSize), waitTimeSeconds);
    const visibleAt = visibleAgainAt();
    if (batch.length === 0) return { batch, visibleAt };
    const windowEnds = Math.min(Date.now() + options.maxBatchingWindowMs, visibleAt - VISIBILITY_SLACK_MS);
    while (batch.length < options.batchSize && !stopping.signal.aborted) {
      const wanted = Math.min(MAX_MESSAGES_PER_RECEIVE, options.batchSize - batch.length);
      const leftMs = windowEnds - Date.now();
      // Without a window, only keep going while the queue has more at once (the last receive was full).
      if (options.maxBatchingWindowMs === 0 && batch.length % MAX_MESSAGES_PER_RECEIVE !== 0) break;
      // Long polls are whole seconds; polling without waiting for the last fraction would only spin.
      if (options.maxBatchingWindowMs > 0 && leftMs < 1_000) break;
      let more: Message[];
      try {
        more = await receive(wanted, options.maxBatchingWindowMs === 0 ? 0 : Math.min(waitTimeSeconds, Math.floor(leftMs / 1000)));
      } catch {
        break; // what is gathered is in flight already: invoke with it rather than lose time
      }
      if (more.length === 0 && options.maxBatchingWindowMs === 0) break;
      batch.push(...more);
    }
    return { batch, visibleAt };
  };

  /**
   * Sets the visibility of `messages` to `seconds`, ≤10 per call, calls in parallel, each bounded by `bounded` (SQS's
   * answer may never come); returns what SQS did not change.
   */
  const changeVisibility = (
    messages: readonly Message[],
    seconds: number,
    bounded: <T>(call: (abortSignal: AbortSignal) => Promise<T>) => Promise<T>,
  ): Promise<FailedBatchItem<Message>[]> =>
    sendInBatches(messages, (chunk) =>
      bounded((abortSignal) =>
        options.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: options.queueUrl,
            Entries: chunk.map((message, index) => ({
              Id: batchEntryId(index),
              ReceiptHandle: message.ReceiptHandle,
              VisibilityTimeout: seconds,
            })),
          }),
          { abortSignal },
        ),
      ),
    );

  /**
   * Keeps a batch invisible for the whole invocation when its visibility timeout would run out
   * first; SQS's answer is awaited no longer than a receive's slack. What was not extended is
   * invoked all the same (it may then be received again: at least once).
   */
  const keepInvisible = async (poller: number, messages: readonly Message[], visibleAt: number): Promise<void> => {
    if (visibleAt - Date.now() >= options.functionTimeoutMs - VISIBILITY_SLACK_MS) return;
    const seconds = Math.ceil(options.functionTimeoutMs / 1000) + EXTENSION_RESERVE_SECONDS;
    const failed = await changeVisibility(messages, seconds, (call) => withAnswerTimeout(RECEIVE_ANSWER_SLACK_MS, call));
    if (failed.length > 0)
      observer.extensionFailed?.(
        poller,
        failed.map(({ item, reason }) => ({ record: item, reason })),
      );
  };

  /** Hands messages back to the queue at once (visibility 0); what SQS does not take comes back after the visibility timeout anyway. */
  const release = async (messages: readonly Message[]): Promise<void> => {
    // A stop must end: an SQS that no longer answers gets the messages back after their visibility timeout.
    await changeVisibility(messages, 0, (call) => call(AbortSignal.timeout(RELEASE_TIMEOUT_MS)));
  };

  /** Deletes acknowledged records, ≤10 per call, calls in parallel; returns the ones not deleted. */
  const acknowledge = async (records: readonly SQSRecord[]): Promise<{ record: SQSRecord; reason: string }[]> => {
    const failed = await sendInBatches(records, (chunk) =>
      withAnswerTimeout(options.deleteTimeoutMs ?? DELETE_TIMEOUT_MS, (abortSignal) =>
        options.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: options.queueUrl,
            Entries: chunk.map((record, index) => ({ Id: batchEntryId(index), ReceiptHandle: record.receiptHandle })),
          }),
          { abortSignal },
        ),
      ),
    );
    return failed.map(({ item, reason }) => ({ record: item, reason }));
  };

  const invoke = async (poller: number, handler: SqsHandler, messages: readonly Message[]): Promise<void> => {
    const event = toSqsEvent(messages, options.queueArn);
    const records = event.Records;
    observer.invoking?.(poller, records);
    let timer: NodeJS.Timeout | undefined;
    let response: unknown;
    try {
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TimedOut()), options.functionTimeoutMs);
      });
      // Lambda would kill a function past its timeout; here the handler's promise is abandoned instead.
      response = await Promise.race([handler(event, createLambdaContext(options.functionTimeoutMs)), deadline]);
    } catch (error) {
      if (error instanceof TimedOut) {
        observer.invocationFailed?.(poller, records, 'timeout', `Task timed out after ${options.functionTimeoutMs / 1000} seconds`);
      } else {
        observer.invocationFailed?.(poller, records, 'error', errorText(error));
      }
      return;
    } finally {
      clearTimeout(timer);
    }
    const verdict = interpretBatchResponse(records, response);
    if (!verdict.ok) {
      observer.invocationFailed?.(poller, records, 'invalid-response', verdict.reason);
      return;
    }
    const acknowledged = records.filter((record) => !verdict.failed.has(record.messageId));
    const failed = records.filter((record) => verdict.failed.has(record.messageId));
    const deleteFailures = await acknowledge(acknowledged);
    observer.completed?.(poller, { records, acknowledged, failed, deleteFailures });
  };

  const loop = async (poller: number): Promise<void> => {
    const handler = options.createHandler(poller);
    let retryMs: number = RECEIVE_RETRY_MS.first;
    while (!stopping.signal.aborted) {
      await options.beforeReceive?.(stopping.signal);
      if (stopping.signal.aborted) break;
      let messages: Message[];
      let visibleAt: number;
      try {
        ({ batch: messages, visibleAt } = await gather());
        retryMs = RECEIVE_RETRY_MS.first;
      } catch (error) {
        if (stopping.signal.aborted) break;
        observer.receiveFailed?.(poller, error, retryMs);
        await sleep(retryMs, stopping.signal);
        retryMs = Math.min(RECEIVE_RETRY_MS.max, retryMs * 2);
        continue;
      }
      if (messages.length === 0) continue;
      if (stopping.signal.aborted) {
        // Received as the stop came in: never given to the handler, so give them back now
        // rather than leave them invisible for a whole visibility timeout.
        await release(messages);
        observer.released?.(poller, messages.length);
        break;
      }
      inFlight += 1;
      try {
        await keepInvisible(poller, messages, visibleAt);
        await invoke(poller, handler, messages);
      } finally {
        inFlight -= 1;
      }
    }
  };

  const loops = Array.from({ length: options.pollers }, (_, poller) => loop(poller));
  const all = Promise.all(loops).then(() => undefined);
  return {
    get inFlight() {
      return inFlight;
    },
    stop() {
      if (!stopping.signal.aborted) {
        stopping.abort();
        if (options.finishReceivesOnStop === true) {
          // Every receive under way asked for at most waitTimeSeconds: it answers by then, with
          // messages to hand back or none. Past that the endpoint is not answering anyway.
          const timer = setTimeout(() => abortReceives.abort(), waitTimeSeconds * 1000 + RECEIVE_ANSWER_SLACK_MS);
          timer.unref();
          const clear = (): void => clearTimeout(timer);
          all.then(clear, clear); // the caller handles a rejection of `all`; this chain must not add one
        } else {
          // Lets Ctrl-C stop at once instead of up to 20 s later, when the queue ends with this process.
          abortReceives.abort();
        }
      }
      return all;
    },
  };
}
