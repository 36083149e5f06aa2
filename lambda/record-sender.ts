/**
 * One record's attempt (docs/contract.md, "The batch"): ask the breaker and the pacer, build the request with its
 * secrets and token, send it once, judge the answer, and dead-letter the record if the webhook refused it for good or
 * it is still failing past its retry window (window-end.ts). A refusal's `Retry-After` is never waited out here but
 * handed to SQS as the record's visibility: each attempt is a receive, and `X-Carrier-Receive-Count` counts attempts.
 */
import type { SQSRecord } from 'aws-lambda';
import { type NotAttempted, receiveCountOf } from './batch';
import { type BatchReporter, transportErrorText } from './batch-report';
import { type CircuitBreaker, isServerFailure } from './breaker';
import { classify, type Verdict } from './classify';
import type { RelayConfig } from './config';
import { addCredentials, type Credentials, type RequestCredentials, secretsSentIn } from './credentials';
import type { DeadLetterWriter } from './dead-letter';
import type { Deadline } from './deadline';
import { type AccessToken, type OAuthTokens, type TokenUnavailable, tokenRetry } from './oauth-tokens';
import { type Pacer, paceKeyOf, paceSignalOf } from './pacer';
import { quotaOf } from './rate-limit-headers';
import type { AttemptOutcome, RetryOutcome } from './record-outcome';
import { buildDeliveryRequest, type DeliveryRequest } from './request';
import { backoffDelay } from './retry-timing';
import { withoutSecrets } from './scrub';
import { errorText } from './sqs-util';
import type { WebhookResult, WebhookTransmitter } from './transmitter';
import type { WebhookTarget } from './webhook-target';
import type { RetryWindowEnd } from './window-end';

/** No request starts with less than this left before the deadline margin: it could not finish. */
export const MIN_REQUEST_TIME_MS = 100;
/** An invocation with this many times the webhook's latency of late, or more, starts no request with less time than that left. */
const ROOM_FOR_A_REQUEST = 1.25;

/** A record's request, ready to send: its secrets added, its target and OAuth token (when configured) known. */
interface ReadyRequest {
  readonly request: DeliveryRequest;
  readonly credentials: Credentials;
  readonly transmitter: WebhookTransmitter;
  readonly token: AccessToken | undefined;
}

/** A request that went out: the webhook's answer (or the transport's failure) and its verdict. */
interface JudgedAnswer {
  readonly kind: 'answered';
  readonly result: WebhookResult;
  readonly verdict: Verdict;
  readonly answeredAt: number;
  readonly ready: ReadyRequest;
  /** No answer came within a timeout the invocation's deadline cut (see {@link RecordSender.cutShortByDeadline}). */
  readonly cutShort: boolean;
}

/** The batch's bounds on one record's attempt. */
export interface AttemptBounds {
  /** The request's timeout as of now (it shrinks while waiting on a probe, a secret, the pace). */
  readonly timeoutMs: () => number;
  /** The timeout a request started with the invocation got: `REQUEST_TIMEOUT_MS`, or less when the invocation was shorter. */
  readonly longestTimeoutMs: number;
  /** The batch's request latencies, to which this one's is added. */
  readonly latenciesMs: number[];
  /** When requests, secret reads and dead-letter copies are abandoned (the record is then retried). */
  readonly requestsEnd: Deadline;
}

/** What {@link RecordSender} works with: one of each per warm container. */
export interface RecordSenderParts {
  readonly breaker: CircuitBreaker;
  readonly pacer: Pacer;
  /** The webhook's URL (given, or read from Secrets Manager) and the connections to it. */
  readonly target: WebhookTarget;
  readonly credentials: RequestCredentials;
  /** OAuth 2.0 client credentials (oauth-tokens.ts), when `OAUTH_TOKEN_URL` is set. */
  readonly tokens: OAuthTokens | undefined;
  readonly reporter: BatchReporter;
  readonly windowEnd: RetryWindowEnd;
  /** The dead-letter writer whose SQS calls are abandoned when `signal` aborts. */
  readonly deadLettersUntil: (signal: AbortSignal) => DeadLetterWriter;
  /** Jitter source. */
  readonly random: () => number;
}

/** Sends records to the webhook, one attempt each. */
export class RecordSender {
  constructor(
    private readonly config: RelayConfig,
    private readonly parts: RecordSenderParts,
  ) {}

  /** One record's attempt, to its outcome. Never throws. */
  async attempt(record: SQSRecord, bounds: AttemptBounds): Promise<AttemptOutcome | NotAttempted> {
    const { breaker, windowEnd } = this.parts;
    let permit = breaker.permit(Date.now());
    while (permit === 'wait') {
      await breaker.probeSettled();
      permit = breaker.permit(Date.now());
    }
    if (permit === 'hold') {
      const countsReceives = this.config.retryWindowSeconds <= 0;
      const delaySeconds = breaker.recordHoldSeconds(Date.now(), receiveCountOf(record), countsReceives);
      return windowEnd.ended(record, { kind: 'held', delaySeconds }, bounds.requestsEnd);
    }
    const key = this.config.paceKey === undefined ? undefined : paceKeyOf(record, this.config.paceKey);
    try {
      const answer = await this.exchange(record, key, permit === 'probe', bounds);
      if (answer.kind !== 'answered') return answer;
      return await this.conclude(record, answer, bounds.requestsEnd);
    } catch (error) {
      const retry: AttemptOutcome = { kind: 'retry', delaySeconds: this.backoff(record), delaySource: 'backoff', error: errorText(error) };
      return windowEnd.ended(record, retry, bounds.requestsEnd);
    }
  }

  /**
   * Readies the request, takes a pace slot, sends, and has the breaker judge the answer. A probe that never reached
   * the webhook (no time, no secret, no slot, an error) is abandoned, so that the others do not wait on it.
   * @param key the record's pace key, when paced per key
   */
  private async exchange(
    record: SQSRecord,
    key: string | undefined,
    probe: boolean,
    bounds: AttemptBounds,
  ): Promise<JudgedAnswer | AttemptOutcome | NotAttempted> {
    const { requestsEnd } = bounds;
    const { credentials, target, tokens, pacer } = this.parts;
    let judged = false;
    try {
      // Awaited only when a secret is not in memory: an await per record costs more than the check.
      // Before the request is built: the signing keys vouch for a redriven copy's original id.
      const secrets = credentials.cached() ?? (await credentials.fetch(requestsEnd.signal));
      const { config, transmitter } = target.peek() ?? (await target.get(requestsEnd.signal));
      const request = buildDeliveryRequest(record, config, secrets.signingKeys);
      this.parts.reporter.warnAboutRequest(record, request);
      addCredentials(request, secrets);
      // OAuth (oauth-tokens.ts): the container's token; when none can be had the record is retried, never for its own fault.
      const token = tokens && (tokens.peek() ?? (await tokens.get(requestsEnd.signal)));
      if (token?.kind === 'unavailable') return tokenRetry(token, this.backoff(record));
      if (token !== undefined) request.headers.push('Authorization', token.header);
      const slot = pacer.acquire(requestsEnd.at - MIN_REQUEST_TIME_MS, key, receiveCountOf(record) === 1);
      if (slot !== true && !(await slot)) return this.pacedOut(record, key, requestsEnd);
      const answer = await this.sendInSlot(record, { request, credentials: secrets, transmitter, token }, key, bounds);
      if (answer.kind !== 'answered') return answer;
      bounds.latenciesMs.push(Math.round(answer.result.latencyMs));
      // No answer within a timeout the deadline cut says nothing of a webhook that had less than REQUEST_TIMEOUT_MS: no outage
      // sign (a probe so cut never reached a verdict, and is abandoned below).
      if (answer.cutShort) return answer;
      judged = true;
      const transition = this.parts.breaker.record(answer.result, probe, answer.answeredAt, record.messageId);
      this.parts.reporter.announceBreaker(transition, answer.result);
      return answer;
    } finally {
      if (probe && !judged) this.parts.breaker.abandonProbe(Date.now());
    }
  }

  /**
   * True when a request that timed out had a timeout the invocation's deadline cut below `REQUEST_TIMEOUT_MS`, when the
   * invocation had room for the whole of it (with less, every request is cut, and a webhook that never answers must still count).
   */
  private cutShortByDeadline(timeoutMs: number, { longestTimeoutMs }: AttemptBounds): boolean {
    const { requestTimeoutMs } = this.config;
    return timeoutMs < requestTimeoutMs && longestTimeoutMs >= requestTimeoutMs;
  }

  /** A record the pace kept from starting: back for what is left of the endpoint's hold or its key's wait, or dead-lettered. */
  private pacedOut(record: SQSRecord, key: string | undefined, requestsEnd: Deadline): Promise<AttemptOutcome | NotAttempted> {
    const { pacer } = this.parts;
    const receiveCount = receiveCountOf(record);
    const paced: NotAttempted = { kind: 'not-attempted', reason: 'paced', delaySeconds: pacer.retryInSeconds(key, receiveCount) };
    return this.parts.windowEnd.pacedOut(record, paced, pacer.retryInSeconds(undefined, receiveCount), requestsEnd);
  }

  /**
   * Sends the request in the pace slot taken for it, judges the answer and ends the slot with what the answer says of
   * the pace; a slot taken for a request that never went (no time left, no token, an error) is given back without one.
   */
  private async sendInSlot(
    record: SQSRecord,
    ready: ReadyRequest,
    key: string | undefined,
    bounds: AttemptBounds,
  ): Promise<JudgedAnswer | AttemptOutcome | NotAttempted> {
    const { pacer } = this.parts;
    let paced = true;
    try {
      // Worked out once (each call reads the clock), after any wait: on a probe, a secret, the pace.
      const requestTimeoutMs = bounds.timeoutMs();
      if (requestTimeoutMs < MIN_REQUEST_TIME_MS) return { kind: 'not-attempted', reason: 'deadline' };
      // Time left under what the webhook's answers take of late: the request would time out, and the webhook, taking it all
      // the same, would see it again. Unless the invocation never had much more than that (its requests all cut, what they
      // took is about what it had): the webhook would never be asked again.
      const typicalMs = pacer.typicalLatencyMs();
      if (requestTimeoutMs < typicalMs && bounds.longestTimeoutMs > ROOM_FOR_A_REQUEST * typicalMs)
        return { kind: 'not-attempted', reason: 'deadline' };
      const result = await this.send(ready, requestTimeoutMs, bounds);
      if (result.kind === 'unavailable') return tokenRetry(result, this.backoff(record));
      const answeredAt = Date.now();
      const receiveCount = receiveCountOf(record);
      const verdict = classify(result, this.config, receiveCount, answeredAt, this.parts.random);
      const timedOut = result.kind === 'transport-error' && result.error === 'timeout';
      const cutShort = timedOut && this.cutShortByDeadline(requestTimeoutMs, bounds);
      pacer.release(
        {
          signal: paceSignalOf(result),
          latencyMs: result.latencyMs,
          retryAfterSeconds: verdict.kind === 'retry' && verdict.delaySource === 'retry-after' ? verdict.delaySeconds : undefined,
          messageId: record.messageId,
          receivedBefore: receiveCount > 1,
          timedOut: timedOut && !cutShort,
          // Read only when the answer carried rate-limit headers: most carry none, and cost nothing here.
          quota: result.kind === 'response' && result.rateLimit !== undefined ? quotaOf(result.rateLimit, answeredAt) : undefined,
        },
        key,
        answeredAt,
      );
      paced = false;
      return { kind: 'answered', result, verdict, answeredAt, ready, cutShort };
    } finally {
      if (paced) pacer.giveBack(key);
    }
  }

  /** Posts the request once or, with OAuth, resends it once with a renewed token after a `401`. */
  private send(
    { request, transmitter, token }: ReadyRequest,
    requestTimeoutMs: number,
    bounds: AttemptBounds,
  ): Promise<WebhookResult | TokenUnavailable> {
    const { tokens } = this.parts;
    if (token === undefined || tokens === undefined) return transmitter.post(request.headers, request.body, requestTimeoutMs);
    return tokens.send(token, request, transmitter, {
      firstTimeoutMs: requestTimeoutMs,
      timeoutNow: bounds.timeoutMs,
      minimumMs: MIN_REQUEST_TIME_MS,
      signal: bounds.requestsEnd.signal,
    });
  }

  /** The outcome of an answered request: delivered, back to the queue, or dead-lettered (refused for good, or past its window). */
  private async conclude(record: SQSRecord, answer: JudgedAnswer, requestsEnd: Deadline): Promise<AttemptOutcome> {
    const { verdict } = answer;
    const outage = isServerFailure(answer.result);
    // An answer quoting the request's Authorization or signature would pass it on to the log and the dead letter.
    const result =
      verdict.kind === 'delivered' ? answer.result : withoutSecrets(answer.result, secretsSentIn(answer.ready.request.headers));
    if (result.kind === 'transport-error') {
      const retry: RetryOutcome = {
        kind: 'retry',
        delaySeconds: verdict.kind === 'retry' ? verdict.delaySeconds : undefined,
        delaySource: 'backoff',
        // No HTTP answer: 0, as a dead letter's reason says it, so the refusals query counts timeouts and refused connections.
        status: 0,
        error: transportErrorText(result),
        outage,
      };
      return this.parts.windowEnd.ended(record, retry, requestsEnd);
    }
    const { status } = result;
    if (verdict.kind === 'delivered') return { kind: 'delivered', status };
    if (verdict.kind === 'retry') {
      const { delaySeconds, delaySource } = verdict;
      const retry: RetryOutcome = { kind: 'retry', delaySeconds, delaySource, status, response: result.excerpt, outage };
      return this.parts.windowEnd.ended(record, retry, requestsEnd);
    }
    // A copy abandoned at the deadline leaves the original to be retried, never acknowledged without it.
    const copied = await this.parts.deadLettersUntil(requestsEnd.signal).send(record, status, result.excerpt, {
      originalId: answer.ready.request.id,
      signingKeys: answer.ready.credentials.signingKeys,
    });
    if (copied.ok) return { kind: 'dead-lettered', status, response: result.excerpt, cause: 'refused permanently' };
    return {
      kind: 'retry',
      delaySeconds: this.backoff(record),
      delaySource: 'backoff',
      status,
      error: `dead-letter copy failed, will retry: ${copied.error}`,
    };
  }

  /** The backoff policy's delay for the record's next attempt, seconds. */
  private backoff(record: SQSRecord): number | undefined {
    return backoffDelay(this.config.backoff, receiveCountOf(record), this.parts.random);
  }
}
