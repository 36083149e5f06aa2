/**
 * The limits of SQS and of Lambda's SQS event source that more than one part of the project
 * enforces (the function, the CDK construct, the local runner), and the one rule derived from
 * them. Free of imports, so the CDK app and the local runner can load it without the function's
 * dependencies: one source for each number.
 */

/** SQS's ceiling on a message's visibility timeout, counted from its receive: 12 hours. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/** A queue's visibility timeout when none is set (SQS's default), seconds. */
export const DEFAULT_VISIBILITY_SECONDS = 30;

/** The longest SQS keeps a message (a queue's `MessageRetentionPeriod` at most), days. */
export const MAX_RETENTION_DAYS = 14;

/** {@link MAX_RETENTION_DAYS} in seconds. */
export const MAX_RETENTION_SECONDS = MAX_RETENTION_DAYS * 86_400;

/** A queue's retention when none is set (SQS's default): 4 days. */
export const DEFAULT_RETENTION_SECONDS = 345_600;

/** The longest queue name SQS takes, a FIFO queue's `.fifo` included. */
export const MAX_QUEUE_NAME_LENGTH = 80;

/** The longest message attribute name SQS takes. */
export const MAX_ATTRIBUTE_NAME_LENGTH = 256;

/** The largest `maxReceiveCount` of a redrive policy. */
export const MAX_REDRIVE_RECEIVE_COUNT = 1_000;

/** Entries in one SQS batch call (`ChangeMessageVisibilityBatch`, `DeleteMessageBatch`, …). */
export const MAX_BATCH_CALL_ENTRIES = 10;

/** Messages one `ReceiveMessage` returns at most. */
export const MAX_MESSAGES_PER_RECEIVE = 10;

/** SQS's longest long poll (`WaitTimeSeconds`), seconds; Lambda's pollers use it. */
export const MAX_WAIT_TIME_SECONDS = 20;

/** Message attributes one message may carry. */
export const MAX_MESSAGE_ATTRIBUTES = 10;

/** The largest batch Lambda's SQS event source hands over (standard queues). */
export const MAX_EVENT_SOURCE_BATCH_SIZE = 10_000;

/** The largest batch Lambda's SQS event source hands over from a FIFO queue. */
export const MAX_FIFO_EVENT_SOURCE_BATCH_SIZE = 10;

/** The longest a Lambda function may run, seconds (15 minutes). */
export const MAX_FUNCTION_TIMEOUT_SECONDS = 900;

/** The longest batching window of Lambda's SQS event source, seconds. */
export const MAX_BATCHING_WINDOW_SECONDS = 300;

/**
 * The queue's visibility timeout is at least this many times the function timeout (Lambda's
 * recommendation): the stack derives it so, and the local runner copies the stack.
 */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/**
 * The largest SQS message, bytes: the body plus, for each message attribute, its name, its data
 * type and its value (1 MiB since August 2025; queues may set a lower `MaximumMessageSize`).
 */
export const MAX_MESSAGE_BYTES = 1_048_576;

/**
 * The main queue's visibility timeout for a function timeout and a batching window, seconds:
 * {@link VISIBILITY_TIMEOUT_FACTOR} × timeout + window (a batch may wait out the window before
 * its invocation starts), capped at SQS's ceiling. The stack and the local runner both use it.
 */
export function visibilityTimeoutSecondsFor(functionTimeoutSeconds: number, batchingWindowSeconds: number): number {
  return Math.min(MAX_VISIBILITY_SECONDS, VISIBILITY_TIMEOUT_FACTOR * functionTimeoutSeconds + batchingWindowSeconds);
}
