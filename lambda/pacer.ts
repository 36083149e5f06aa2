/**
 * Pacing (docs/webhook-owners.md, "Back-pressure"): each container's requests toward the webhook wait here for their turn. One
 * pace for the endpoint (lambda/pace.ts) and, when `PACE_KEY` names a key, one per key, the least recently used of them dropped
 * beyond {@link MAX_KEYS}: a request starts when both have room. Requests wait in arrival order for the endpoint; one whose key
 * has no room within {@link KEY_WAIT_MS}, or whose wait would outlast its deadline, is not sent at all (`false`): its record goes
 * back to the queue for {@link Pacer.retryInSeconds}. Like the circuit breaker, a pacer lives for the warm container.
 */
import type { SQSRecord } from 'aws-lambda';
import { isLongWait, KEPT_BACK_MS } from './endpoint-hold';
import { Pace, type PacedAnswer, type PaceLimits, type PaceSignal, type PaceSnapshot } from './pace';
import { FUNCTION_SETTINGS } from './settings';
import type { WebhookResult } from './transmitter';

/** How a container paces its requests. */
export interface PacingSettings {
  /** `PACING`: adapt the pace to the webhook's answers; when false only the two ceilings apply. */
  readonly adaptive: boolean;
  /** `MAX_CONCURRENCY`: requests in flight at once, at most. */
  readonly maxInFlight: number;
  /** This container's share of `MAX_REQUESTS_PER_SECOND`; `undefined`: no ceiling. */
  readonly maxRequestsPerSecond: number | undefined;
  /** `CONCURRENT_INVOCATIONS`: the containers that share what the webhook's rate-limit headers announce. @default 1 */
  readonly sharedBy?: number;
  /** `REQUEST_TIMEOUT_MS`: how long a request may take. @default 10 s */
  readonly requestTimeoutMs?: number;
}

/** The clock, timers and random draws a pacer runs on: the process's, or a simulation's. */
export interface PaceClock {
  now(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** A number in [0, 1). */
  random(): number;
}

/** The process's clock, timers and random draws. */
export const SYSTEM_CLOCK: PaceClock = {
  // Looked up at each call, so that a test's fake timers are the ones used.
  now: () => Date.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  random: () => Math.random(),
};

/** Keys paced at once, at most: the least recently used is forgotten beyond this (a few hundred bytes each). */
export const MAX_KEYS = 4_096;
/** The longest a request waits for its key's pace, ms: longer, and its record goes back to the queue rather than hold up the batch. */
export const KEY_WAIT_MS = 5;

/** What an answer says about the pace: a slow-down signal, an acceptance, or nothing either way. */
export function paceSignalOf(result: WebhookResult): PaceSignal {
  if (result.kind === 'transport-error') return result.error === 'timeout' ? 'slow-down' : 'neutral';
  const { status } = result;
  if (status >= 200 && status <= 299) return 'accepted';
  return status === 429 || status === 503 || status === 504 || status === 408 ? 'slow-down' : 'neutral';
}

/** `PACE_KEY`'s value that names the message group rather than an attribute. */
export const MESSAGE_GROUP_KEY = 'MessageGroupId';

/**
 * A record's pace key: the value of its message attribute `name`, or its message group for {@link MESSAGE_GROUP_KEY};
 * `undefined` when it has none (it is then paced by the endpoint alone).
 */
export function paceKeyOf(record: Pick<SQSRecord, 'messageAttributes' | 'attributes'>, name: string): string | undefined {
  if (name === MESSAGE_GROUP_KEY) return record.attributes?.MessageGroupId;
  return record.messageAttributes?.[name]?.stringValue;
}

interface Waiter {
  readonly resolve: (started: boolean) => void;
  readonly deadlineMs: number;
  /** Its record is received for the first time: in a long hold, it may wait for the answer to the probe out. */
  readonly firstReceive: boolean;
  /** Its key's pace, when paced per key. */
  readonly keyPace: Pace | undefined;
}

/** One container's pace toward one webhook, and per key when asked. */
export class Pacer {
  private readonly endpoint: Pace;
  private readonly keys = new Map<string, Pace>();
  private readonly limits: PaceLimits;
  private readonly waiters: Waiter[] = [];
  private timer: unknown;
  private refused = 0;

  constructor(
    settings: PacingSettings,
    private readonly clock: PaceClock = SYSTEM_CLOCK,
  ) {
    this.limits = {
      adaptive: settings.adaptive,
      maxInFlight: settings.maxInFlight,
      maxRequestsPerSecond: settings.maxRequestsPerSecond,
      sharedBy: settings.sharedBy ?? 1,
      requestTimeoutMs: settings.requestTimeoutMs ?? FUNCTION_SETTINGS.REQUEST_TIMEOUT_MS.default,
    };
    this.endpoint = new Pace(this.limits, clock.now(), () => clock.random());
  }

  /** `key`'s pace, made when new and marked as the most recently used. */
  private keyPace(key: string, now: number): Pace {
    let pace = this.keys.get(key);
    if (pace === undefined) {
      // A key's own ceiling would be the endpoint's again: a key is paced only by what its answers say.
      // Nor a slow start: the endpoint's keeps the webhook from a fresh container's flood; a key's would only hold a tenant back.
      pace = new Pace({ ...this.limits, maxRequestsPerSecond: undefined, slowStart: false }, now, () => this.clock.random());
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
    } else this.keys.delete(key);
    this.keys.set(key, pace);
    return pace;
  }

  /**
   * A slot for one request: `true` at once when one is free (no await), otherwise a promise of `true` once one is, or `false`
   * if none is before `deadlineMs` (its record then goes back to the queue for {@link retryInSeconds}). Waiters start in arrival
   * order, but for a key's pace: a request whose key has no room does not hold up the others.
   * @param key the request's pace key (`PACE_KEY`), when paced per key
   * @param firstReceive the record is received for the first time: in a long hold, it may go as a probe sooner, or wait for
   * the answer to the probe out
   */
  acquire(deadlineMs: number, key?: string, firstReceive = false): true | Promise<boolean> {
    const now = this.clock.now();
    const keyPace = key === undefined ? undefined : this.keyPace(key, now);
    // The waiters go first: the endpoint's state is read only when none is waiting (each read refills its tokens).
    const endpoint = this.endpoint;
    if (
      this.waiters.length === 0 &&
      (endpoint.free(now) || (firstReceive && endpoint.freshProbeDue(now))) &&
      (keyPace === undefined || keyPace.free(now))
    ) {
      endpoint.take(now);
      keyPace?.take(now);
      return true;
    }
    // A hold that outlasts the deadline, or a key's pace that would hold up the batch: the record goes back (see retryInSeconds).
    if (now >= deadlineMs || this.heldPast(deadlineMs, now, firstReceive)) {
      this.endpoint.keptBackInHold(now);
      return Promise.resolve(false);
    }
    if (keyPace !== undefined && keyPace.waitMs(now) > Math.min(KEY_WAIT_MS, deadlineMs - now)) return Promise.resolve(false);
    // In a long hold, a record received for the first time waits for the answer to the probe out, no longer.
    const waitUntil = firstReceive ? Math.min(deadlineMs, endpoint.probeAnswerDueAt(now) ?? deadlineMs) : deadlineMs;
    return new Promise<boolean>((resolve) => {
      this.waiters.push({ resolve, deadlineMs: waitUntil, firstReceive, keyPace });
      this.pump();
    });
  }

  /**
   * True when the endpoint's hold keeps a request from starting before `deadlineMs`, or is a long one and no probe is due: a
   * record does not sit through a long hold, it goes back to the queue for it (the probes come from later batches). One
   * received for the first time waits only for the answer to a probe out, which may end the hold.
   */
  private heldPast(deadlineMs: number, now: number, firstReceive: boolean): boolean {
    const endpoint = this.endpoint;
    if (firstReceive && endpoint.probeAnswerDueAt(now) !== undefined) return false;
    return endpoint.heldLong(now) || (endpoint.heldUntilMs > deadlineMs && endpoint.waitMs(now) > 0);
  }

  /** Starts whichever waiters may start now, gives up on those past their deadline or held past it, and sets a timer for the rest. */
  private pump(): void {
    if (this.timer !== undefined) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
    const now = this.clock.now();
    for (let i = this.waiters.length - 1; i >= 0; i -= 1) {
      const waiter = this.waiters[i] as Waiter;
      const keyHeldUntil = waiter.keyPace?.heldUntilMs ?? 0;
      if (now >= waiter.deadlineMs || this.heldPast(waiter.deadlineMs, now, waiter.firstReceive) || keyHeldUntil > waiter.deadlineMs) {
        this.endpoint.keptBackInHold(now);
        this.waiters.splice(i, 1);
        waiter.resolve(false);
      }
    }
    let soonestMs = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.waiters.length && this.endpoint.hasRoom(); ) {
      const waiter = this.waiters[i] as Waiter;
      const { keyPace } = waiter;
      if (keyPace !== undefined && !keyPace.free(now)) {
        // Its key's turn comes with a release or a token: the next waiter may go meanwhile.
        if (keyPace.hasRoom()) soonestMs = Math.min(soonestMs, keyPace.waitMs(now));
        i += 1;
        continue;
      }
      const wait = this.endpoint.waitMs(now);
      if (wait > 0) {
        soonestMs = Math.min(soonestMs, wait);
        break;
      }
      this.endpoint.take(now);
      keyPace?.take(now);
      this.waiters.splice(i, 1);
      waiter.resolve(true);
    }
    if (this.waiters.length > 0) {
      // Waiting on a free slot (a release signals it) or a token; the timer also enforces the deadlines.
      let earliestDeadline = Number.POSITIVE_INFINITY;
      for (const waiter of this.waiters) earliestDeadline = Math.min(earliestDeadline, waiter.deadlineMs);
      this.timer = this.clock.setTimeout(() => this.pump(), Math.max(1, Math.min(soonestMs, earliestDeadline - now)));
    }
  }

  /**
   * Ends a request started with {@link acquire} and adapts the pace (and its key's) to its answer.
   * @param key the key it was acquired with
   * @param now when it was answered, if the caller has read the clock already
   */
  release(answer: PacedAnswer, key?: string, now: number = this.clock.now()): void {
    if (answer.signal === 'slow-down') this.refused += 1;
    const keyPace = key === undefined ? undefined : this.keys.get(key);
    const keyHeld = keyPace?.answered(answer, now);
    // Paced per key, rate-limit headers are the key's (a quota per tenant would otherwise hold back all the others), and so
    // are the refusals of a key already paced to them: the endpoint's pace is for what the other keys meet.
    const keysOwn = keyPace !== undefined && answer.signal === 'slow-down' && keyPace.pacedAt(now);
    const endpointAnswer: PacedAnswer =
      keyPace === undefined ? answer : { ...answer, quota: undefined, signal: keysOwn ? 'neutral' : answer.signal };
    const endpointHeld = this.endpoint.answered(endpointAnswer, now);
    // A long hold that began: the waiters stop waiting now and their records go back to the queue (they are the refused
    // batch's: the probes come from the next ones). A short one: those it outlasts, not at their deadline.
    if (endpointHeld !== undefined && isLongWait((endpointHeld - now) / 1000)) this.dropWaiters();
    if (this.waiters.length > 0 || endpointHeld !== undefined || keyHeld !== undefined) this.pump();
  }

  /** Every waiter gets `false` now: its record goes back to the queue. */
  private dropWaiters(): void {
    const now = this.clock.now();
    for (const waiter of this.waiters.splice(0)) {
      this.endpoint.keptBackInHold(now);
      waiter.resolve(false);
    }
  }

  /** Gives back a slot taken for a request that never went (an error building or sending it), without a verdict. */
  giveBack(key?: string): void {
    this.endpoint.giveBack();
    if (key !== undefined) this.keys.get(key)?.giveBack();
    if (this.waiters.length > 0) this.pump();
  }

  /**
   * Seconds a record the pace kept from starting should stay away (0: none): what is left of the endpoint's hold or, for a
   * record of `key`, of its key's hold or its wait for the key's pace.
   * @param receiveCount the record's `ApproximateReceiveCount`
   */
  retryInSeconds(key?: string, receiveCount = 1): number {
    const now = this.clock.now();
    // A long hold is probed, and a probe taken ends it: its records come back a second later, not after the whole hold. A
    // record kept back again and again is likely one of a backlog at the head of the queue (one tenant's, all refused): from
    // its third receive each doubles its time away (2 s, 4 s, never past the hold), so the receives reach past it to the
    // records behind (docs/pacing.md, "The endpoint hold": 3,500 handed out oldest first kept the rest waiting minutes).
    const keptBackMs = KEPT_BACK_MS * 2 ** Math.max(0, receiveCount - 2);
    let untilMs = this.endpoint.inLongHold(now) ? Math.min(this.endpoint.heldUntilMs, now + keptBackMs) : this.endpoint.heldUntilMs;
    const keyPace = key === undefined ? undefined : this.keys.get(key);
    if (keyPace !== undefined) untilMs = Math.max(untilMs, now + keyPace.waitMs(now));
    return Math.max(0, Math.ceil((untilMs - now) / 1000));
  }

  /** When the endpoint's hold ends (ms of the clock), or 0 when it was never held. */
  holdEndsAt(): number {
    return this.endpoint.heldUntilMs;
  }

  /** The endpoint's pace now. */
  snapshot(): PaceSnapshot {
    return this.endpoint.snapshot();
  }

  /** What the webhook's answers take of late, ms (a moving average; 0 before the first). */
  typicalLatencyMs(): number {
    return this.endpoint.typicalLatencyMs;
  }

  /** The endpoint pace's learned floor of refusals that persist whatever the pace (0 to 1). */
  refusalFloor(): number {
    return this.endpoint.refusalFloor;
  }

  /** Keys paced now. */
  get keyCount(): number {
    return this.keys.size;
  }

  /** Slow-down answers since the last call (for the per-batch metric). */
  takeRefusedCount(): number {
    const refused = this.refused;
    this.refused = 0;
    return refused;
  }
}
