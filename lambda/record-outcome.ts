/**
 * What happened to one record of a batch: the relay's attempt decides it (record-sender.ts), the visibility it goes
 * back with follows from it (return-visibility.ts), and the batch's lines and metrics count it (batch-report.ts).
 *
 * Four things keep a record away from the webhook for a while, each named apart:
 * - the **breaker's hold** (`CircuitBreaker.holdSeconds`, `breakerHoldSeconds`): while the breaker is open, no
 *   record is sent and each comes back after this long;
 * - the **endpoint's hold** (`Pacer.retryInSeconds()`, `endpointHoldSeconds`): the webhook's `Retry-After`
 *   pausing the whole endpoint;
 * - a **key's wait** (`Pacer.retryInSeconds(key)`): what is left of one pace key's hold, or of its wait for the
 *   key's pace (`PACE_KEY`);
 * - the **`held` outcome** ({@link HeldByBreaker}): one record the open breaker kept from being sent.
 */
import type { NotAttempted } from './batch';
import type { DeadLetterCause } from './dead-letter';

/** Sent, and the webhook took it. */
export interface DeliveredOutcome {
  readonly kind: 'delivered';
  readonly status: number;
}

/** Copied to the dead-letter queue: refused for good, or still failing past its retry window. */
export interface DeadLetteredOutcome {
  readonly kind: 'dead-lettered';
  readonly status: number;
  readonly response: string;
  readonly cause: DeadLetterCause;
}

/** Failed, or could not be sent for a reason not its own: back to the queue, to be tried again after its delay. */
export interface RetryOutcome {
  readonly kind: 'retry';
  /** Seconds until SQS should hand the message back; `undefined` keeps the queue's default. */
  readonly delaySeconds: number | undefined;
  /** Whether the delay is the webhook's own `Retry-After` (honoured even past the retry window). */
  readonly delaySource: 'retry-after' | 'backoff';
  /** The webhook's status; 0 when the request got no HTTP answer (a timeout, a refused connection). */
  readonly status?: number;
  /** The start of the webhook's response. */
  readonly response?: string;
  readonly error?: string;
  /** A failure the breaker counts (see `isServerFailure`): while it is open, parked at least for its hold. */
  readonly outage?: boolean;
}

/** The `held` outcome: not sent, the circuit breaker is open. Comes back after the breaker's hold. */
export interface HeldByBreaker {
  readonly kind: 'held';
  /** The breaker's hold for this record, seconds. */
  readonly delaySeconds: number;
  readonly error?: string;
}

/** A record that the relay's attempt brought to a conclusion (sent or not). */
export type AttemptOutcome = DeliveredOutcome | DeadLetteredOutcome | RetryOutcome | HeldByBreaker;

/** What happened to one record of a batch. */
export type RecordOutcome = AttemptOutcome | NotAttempted;

/** True when the record must go back to the queue (it is in `batchItemFailures`). */
export function isFailure(outcome: RecordOutcome): boolean {
  return outcome.kind === 'retry' || outcome.kind === 'not-attempted' || outcome.kind === 'held';
}
