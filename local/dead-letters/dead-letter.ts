/**
 * One message of a dead-letter queue as the `dead-letters` commands read it: its body and
 * attributes as received, and why it is there, from the relay's `relay.dead-letter-reason`
 * attribute (`lambda/dead-letter.ts`) or, without one, because SQS moved it at the backstop.
 */
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { DEAD_LETTER_CAUSES, type DeadLetterCauseName } from '../../lambda/dead-letter-causes';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';

/** A reason attribute that is there but cannot be read (not JSON, or no known cause). */
export const UNREADABLE_REASON = 'reason unreadable';

/** What a dead letter's cause can be: one of the relay's, or its reason unreadable. */
export type CauseOrUnreadable = DeadLetterCauseName | typeof UNREADABLE_REASON;

/** A dead letter, read. */
export interface DeadLetter {
  /** Its id in the DLQ (a relay copy has its own; a message SQS moved keeps the one it had). */
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  /** Its message attributes as received, the reason included. */
  readonly attributes: Readonly<Record<string, MessageAttributeValue>>;
  /** SQS's system attributes (SentTimestamp, MessageGroupId, AWSTraceHeader, …). */
  readonly system: Readonly<Record<string, string>>;
  readonly cause: CauseOrUnreadable;
  /** The webhook's last status (0: no answer); `undefined` without a reason. */
  readonly status: number | undefined;
  /** The start of the webhook's last response, or what went wrong instead. */
  readonly response: string | undefined;
  /** The id the webhook saw: the reason's `originalMessageId`, else the message's own id. */
  readonly originalMessageId: string;
  /** True when the reason carries the relay's seal of that id (the relay then presents it again). */
  readonly sealed: boolean;
  /** The queue it was dead-lettered from, when the reason says. */
  readonly sourceQueue: string | undefined;
  /** Its FIFO message group. */
  readonly groupId: string | undefined;
  /** When SQS took it (`SentTimestamp`), ms: a DLQ's retention counts from then. */
  readonly sentAt: number;
  /** When it was dead-lettered, ms: the reason's `deadLetteredAt`, else {@link sentAt}. */
  readonly deadLetteredAt: number;
}

/** The reason's fields the commands use, as far as they are what the relay writes. */
interface ReasonFields {
  readonly cause: DeadLetterCauseName | undefined;
  readonly status: number | undefined;
  readonly response: string | undefined;
  readonly originalMessageId: string | undefined;
  readonly sealed: boolean;
  readonly sourceQueue: string | undefined;
  readonly deadLetteredAt: number | undefined;
}

const RELAY_CAUSES: ReadonlySet<string> = new Set([DEAD_LETTER_CAUSES.refused, DEAD_LETTER_CAUSES.windowExhausted]);

function readReason(text: string): ReasonFields | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const reason = parsed as Record<string, unknown>;
  const string = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
  const at = Date.parse(string(reason.deadLetteredAt) ?? '');
  return {
    cause: typeof reason.cause === 'string' && RELAY_CAUSES.has(reason.cause) ? (reason.cause as DeadLetterCauseName) : undefined,
    status: Number.isSafeInteger(reason.status) ? (reason.status as number) : undefined,
    response: string(reason.response),
    originalMessageId: string(reason.originalMessageId) || undefined,
    sealed: typeof reason.originalMessageIdSeal === 'string',
    sourceQueue: string(reason.sourceQueue),
    deadLetteredAt: Number.isFinite(at) ? at : undefined,
  };
}

/**
 * Reads a message received from a DLQ (with every system and message attribute).
 * @param now stands in for a missing `SentTimestamp`
 */
export function readDeadLetter(message: Message, now: number): DeadLetter {
  const system = message.Attributes ?? {};
  const attributes = message.MessageAttributes ?? {};
  const messageId = message.MessageId ?? '';
  const sent = Number(system.SentTimestamp);
  const sentAt = Number.isFinite(sent) && sent > 0 ? sent : now;
  const reasonText = attributes[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue;
  const reason = reasonText === undefined ? undefined : readReason(reasonText);
  const cause: CauseOrUnreadable =
    reasonText === undefined ? DEAD_LETTER_CAUSES.backstop : (reason?.cause ?? (UNREADABLE_REASON as CauseOrUnreadable));
  return {
    messageId,
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes,
    system,
    cause,
    status: reason?.status,
    response: reason?.response,
    originalMessageId: reason?.originalMessageId ?? messageId,
    sealed: reason?.sealed ?? false,
    sourceQueue: reason?.sourceQueue,
    groupId: system.MessageGroupId,
    sentAt,
    deadLetteredAt: reason?.deadLetteredAt ?? sentAt,
  };
}
