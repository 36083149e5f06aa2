/**
 * The SQS helpers the function, the local runner and the CDK construct share: queue ARNs, queue
 * host names, queue names and dead-letter queue names, batch calls of at most ten entries with their
 * per-entry failures, and an error as one line of text. It imports only aws-limits.ts (itself
 * import-free), so every part of the project can load it without the function's dependencies.
 */
import { MAX_ATTRIBUTE_NAME_LENGTH, MAX_BATCH_CALL_ENTRIES, MAX_QUEUE_NAME_LENGTH } from './aws-limits';

/** The parts of an SQS queue ARN. */
export interface QueueArnParts {
  readonly region: string;
  readonly account: string;
  readonly name: string;
}

/** Splits `arn:<partition>:sqs:<region>:<account>:<name>`; throws for anything else. */
export function parseQueueArn(arn: string): QueueArnParts {
  const parts = arn.split(':');
  const [prefix, , service, region, account, name] = parts;
  if (parts.length !== 6 || prefix !== 'arn' || service !== 'sqs' || !region || !account || !name) {
    throw new Error(`not an SQS queue ARN: ${JSON.stringify(arn)}`);
  }
  return { region, account, name };
}

/**
 * True for an ARN of a queue on AWS: `arn:<partition>:sqs:<region>:<12-digit account>:<queue name>`
 * ({@link parseQueueArn} reads emulators' ARNs too).
 */
export function isQueueArn(arn: string): boolean {
  const name = /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:(.+)$/.exec(arn)?.[1];
  return name !== undefined && isQueueName(name);
}

/**
 * The queue name of an SQS queue ARN: what follows its last `:`. Not validated, so it never
 * throws on a record's `eventSourceARN`, and one `slice` rather than {@link parseQueueArn}'s split:
 * request building asks it whenever the batch's queue changes.
 */
export function queueNameOfArn(queueArn: string): string {
  return queueArn.slice(queueArn.lastIndexOf(':') + 1);
}

/** A queue URL as the examples of messages show one. */
export const QUEUE_URL_EXAMPLE = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders';

/**
 * True for text shaped as a queue URL: `http(s)`, the account and the queue's name as its path
 * (`https://sqs.<region>.amazonaws.com/<account>/<name>`, an emulator's `http://127.0.0.1:4566/000000000000/<name>`).
 */
export function isQueueUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.pathname.split('/').filter((segment) => segment !== '').length >= 2;
}

/** The region in an SQS host name: `sqs.<region>.amazonaws.com`, `<region>.queue.amazonaws.com`, `sqs.<region>.localhost`. */
export function regionOfQueueHost(hostname: string): string | undefined {
  const match = /^sqs\.([a-z0-9-]+)\./.exec(hostname) ?? /^([a-z]{2}(?:-[a-z]+)+-\d+)\.queue\./.exec(hostname);
  return match?.[1];
}

/** The suffix SQS requires of a FIFO queue's name. */
export const FIFO_SUFFIX = '.fifo';

/** SQS's rule for a queue's name: letters, digits, `-` and `_`, a FIFO queue's ending in `.fifo`, 80 characters at most. */
export function isQueueName(name: string): boolean {
  return name.length <= MAX_QUEUE_NAME_LENGTH && /^[A-Za-z0-9_-]+(\.fifo)?$/.test(name);
}

/**
 * SQS's rule for a message attribute's name: letters, digits, `_`, `-` and `.`, 256 characters at
 * most, not starting with `AWS.` or `Amazon.` (reserved) nor with a `.`, and no `..` in it.
 */
export function isAttributeName(name: string): boolean {
  return (
    name.length <= MAX_ATTRIBUTE_NAME_LENGTH &&
    /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(name) &&
    !name.includes('..') &&
    !name.endsWith('.') &&
    !/^(aws|amazon)\./i.test(name)
  );
}

/** What a DLQ's name adds to its main queue's (before `.fifo`). */
export const DEAD_LETTER_SUFFIX = '-dlq';

/** The DLQ's name for a main queue's name: `<name>-dlq`, keeping `.fifo` at the end (as SQS requires). */
export function deadLetterQueueName(queueName: string): string {
  return queueName.endsWith(FIFO_SUFFIX)
    ? `${queueName.slice(0, -FIFO_SUFFIX.length)}${DEAD_LETTER_SUFFIX}${FIFO_SUFFIX}`
    : `${queueName}${DEAD_LETTER_SUFFIX}`;
}

/** An error as one line of text for a log field or a failure reason: `Name: message`, or the value as a string. */
export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** What every SQS `…Batch` call answers about the entries it did not process. */
export interface BatchCallOutput {
  readonly Failed?: readonly { readonly Id?: string; readonly Code?: string; readonly Message?: string }[];
}

/** An item of a batch call that SQS did not process, and why. */
export interface FailedBatchItem<T> {
  readonly item: T;
  readonly reason: string;
}

/**
 * The `Id` of a chunk's entry `index`. Positional, not the message id: entry ids allow only
 * [A-Za-z0-9_-] up to 80 characters, and a record from elsewhere must not fail the whole call.
 */
export function batchEntryId(index: number): string {
  return `e${index}`;
}

/**
 * Sends `items` in calls of at most {@link MAX_BATCH_CALL_ENTRIES}, all in parallel; `call` builds
 * one chunk's entries with ids from {@link batchEntryId}. Resolves (never rejects) with the items
 * not processed: each entry a call reports `Failed`, and every item of a call that failed as a whole.
 */
export async function sendInBatches<T>(
  items: readonly T[],
  call: (chunk: readonly T[]) => Promise<BatchCallOutput>,
): Promise<FailedBatchItem<T>[]> {
  const calls: Promise<FailedBatchItem<T>[]>[] = [];
  for (let start = 0; start < items.length; start += MAX_BATCH_CALL_ENTRIES) {
    calls.push(sendChunk(items.slice(start, start + MAX_BATCH_CALL_ENTRIES), call));
  }
  return (await Promise.all(calls)).flat();
}

async function sendChunk<T>(chunk: readonly T[], call: (chunk: readonly T[]) => Promise<BatchCallOutput>): Promise<FailedBatchItem<T>[]> {
  let output: BatchCallOutput;
  try {
    output = await call(chunk);
  } catch (error) {
    const reason = errorText(error);
    return chunk.map((item) => ({ item, reason }));
  }
  const failed: FailedBatchItem<T>[] = [];
  for (const failure of output.Failed ?? []) {
    // An id SQS made up names no entry: nothing to report it against.
    const item = chunk[Number(failure.Id?.slice(1))];
    if (item !== undefined) failed.push({ item, reason: `${failure.Code ?? 'error'}: ${failure.Message ?? 'no message'}` });
  }
  return failed;
}
