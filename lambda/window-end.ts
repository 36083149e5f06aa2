/**
 * The end of a record's retry window (docs/webhook-owners.md, "Outages"): a record still failing there, or still kept
 * unsent by the breaker's hold or the endpoint's, is copied to the dead-letter queue with the reason
 * `retry window exhausted`. If the copy fails, the record goes back to the queue as it would have.
 */
import type { SQSRecord } from 'aws-lambda';
import type { NotAttempted } from './batch';
import type { RelayConfig } from './config';
import type { RequestCredentials } from './credentials';
import type { DeadLetterWriter } from './dead-letter';
import type { Deadline } from './deadline';
import type { AttemptOutcome, DeadLetteredOutcome, HeldByBreaker, RetryOutcome } from './record-outcome';
import { idempotencyKeyOf } from './request';
import { windowStartOf } from './retry-window';
import { errorText } from './sqs-util';

/** The dead-letter reason's `response` for a record past its window that the open breaker kept from being sent. */
const HELD_BY_BREAKER = 'not sent: the circuit breaker is open (the webhook looks down)';
/** … and for one the endpoint's hold kept (the webhook's refusals asked for a pause). */
const HELD_BY_ENDPOINT = "not sent: the webhook's refusals put the whole endpoint on hold (Retry-After)";

/** A copy that SQS did not take, and why. */
interface CopyFailed {
  readonly kind: 'copy-failed';
  readonly error: string;
}

/** What {@link RetryWindowEnd} works with. */
export interface RetryWindowEndParts {
  readonly credentials: RequestCredentials;
  /** The dead-letter writer whose SQS calls are abandoned when `signal` aborts. */
  readonly deadLettersUntil: (signal: AbortSignal) => DeadLetterWriter;
}

/** Dead-letters the records whose retry window is over while they still fail or wait. */
export class RetryWindowEnd {
  constructor(
    private readonly config: Pick<RelayConfig, 'retryWindowSeconds'>,
    private readonly parts: RetryWindowEndParts,
  ) {}

  /**
   * The outcome as it stands or, for a record still failing (or held by the breaker) past its retry window, its
   * dead-lettering. Synchronous but for that: no extra promise per record.
   * @param requestsEnd when the copy is abandoned (the record is then returned as it was)
   */
  ended(record: SQSRecord, outcome: AttemptOutcome, requestsEnd: Deadline): AttemptOutcome | Promise<AttemptOutcome> {
    if ((outcome.kind !== 'retry' && outcome.kind !== 'held') || !this.isPast(record)) return outcome;
    return this.giveUp(record, outcome, requestsEnd);
  }

  /**
   * A record the pace kept from being sent: `paced` as it is or, when the endpoint's hold (`endpointHoldSeconds`, 0:
   * none) kept it past its retry window, dead-lettered like a record failing there. If the copy fails, `paced`.
   */
  async pacedOut(
    record: SQSRecord,
    paced: NotAttempted,
    endpointHoldSeconds: number,
    requestsEnd: Deadline,
  ): Promise<DeadLetteredOutcome | NotAttempted> {
    if (endpointHoldSeconds === 0 || !this.isPast(record)) return paced;
    const copied = await this.copy(record, 0, HELD_BY_ENDPOINT, requestsEnd);
    return copied.kind === 'dead-lettered' ? copied : paced;
  }

  /** Whether `record`'s retry window is on and over. */
  private isPast(record: SQSRecord): boolean {
    if (this.config.retryWindowSeconds === 0) return false;
    const now = Date.now();
    return now >= windowStartOf(record, now) + this.config.retryWindowSeconds * 1000;
  }

  /**
   * Dead-letters a record whose failures, or the breaker's holds, outlasted its retry window, its reason naming the
   * last answer (or the breaker). If the copy fails, the record is returned as it was, the failure its error.
   */
  private async giveUp(record: SQSRecord, outcome: RetryOutcome | HeldByBreaker, requestsEnd: Deadline): Promise<AttemptOutcome> {
    const status = outcome.kind === 'retry' ? (outcome.status ?? 0) : 0;
    const response = outcome.kind === 'held' ? HELD_BY_BREAKER : (outcome.response ?? outcome.error ?? '');
    const copied = await this.copy(record, status, response, requestsEnd);
    return copied.kind === 'dead-lettered' ? copied : { ...outcome, error: copied.error };
  }

  /** Copies `record` to the dead-letter queue with the cause `retry window exhausted`, `status` and `response` its reason's. */
  private async copy(
    record: SQSRecord,
    status: number,
    response: string,
    requestsEnd: Deadline,
  ): Promise<DeadLetteredOutcome | CopyFailed> {
    try {
      const credentials = this.parts.credentials.cached() ?? (await this.parts.credentials.fetch(requestsEnd.signal));
      const id = idempotencyKeyOf(record, credentials.signingKeys);
      const copied = await this.parts.deadLettersUntil(requestsEnd.signal).send(record, status, response, {
        originalId: id,
        signingKeys: credentials.signingKeys,
        cause: 'retry window exhausted',
      });
      if (copied.ok) return { kind: 'dead-lettered', status, response, cause: 'retry window exhausted' };
      return { kind: 'copy-failed', error: `retry window exhausted, but the dead-letter copy failed: ${copied.error}` };
    } catch (error) {
      return { kind: 'copy-failed', error: `retry window exhausted, but the dead-letter copy failed: ${errorText(error)}` };
    }
  }
}
