/**
 * A deterministic simulation of the relay's pacing (lambda/pacer.ts) against model webhooks, on a clock of its own: containers
 * (concurrent invocations, or local mode's pollers) each with a pacer, receiving batches from a model SQS queue (visibility, receive
 * counts, a refused message back after its `Retry-After`) and sending each record once, as the relay does. Minutes of traffic run in
 * a second of real time, the same way every time, so a pacing design can be tried against many webhooks before the slower end-to-end
 * runs. What it models of the relay: a batch's records at most `maxInFlight` at once, the next batch only once the last record of
 * the previous is done; a record the pace kept from starting goes back for what the pace asks; a refusal's `Retry-After`, else a
 * backoff, is its visibility; each record's receive count (a first receive may probe a long hold, a refusal of a message received
 * before is no evidence for one).
 */
import { type PaceClock, Pacer, type PacingSettings, paceSignalOf } from '../../lambda/pacer';
import { type Quota, quotaOf } from '../../lambda/rate-limit-headers';
import type { WebhookResponse, WebhookResult } from '../../lambda/transmitter';
import { seeded } from '../../testkit/seeded-random';

/** Where the simulation's clock starts, ms. */
export const SIMULATION_START = 1_000_000;

/** A timed callback of the simulation's clock. */
interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly run: () => void;
  cancelled: boolean;
}

/** The simulation's clock: discrete events in time order, the promises each one settles run before the next. */
export class SimulatedClock implements PaceClock {
  private time: number;
  private seq = 0;
  private readonly heap: Timer[] = [];

  /** @param random the pacers' draws (a seeded stream: the same run every time) */
  constructor(
    start = SIMULATION_START,
    readonly random: () => number = seeded(1),
  ) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(run: () => void, ms: number): Timer {
    const timer: Timer = { at: this.time + Math.max(0, ms), seq: this.seq++, run, cancelled: false };
    this.push(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    if (handle !== undefined) (handle as Timer).cancelled = true;
  }

  /** Resolves `ms` later on this clock. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }

  /** Runs events until `until` (this clock's time) or until none is left; the promises of each run before the next. */
  async run(until: number): Promise<void> {
    for (;;) {
      // Everything the last event set off (promise chains of any depth) runs before the clock moves.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const next = this.pop();
      if (next === undefined) return;
      if (next.at > until) {
        this.push(next);
        this.time = until;
        return;
      }
      this.time = Math.max(this.time, next.at);
      next.run();
    }
  }

  private push(timer: Timer): void {
    const heap = this.heap;
    heap.push(timer);
    for (let i = heap.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!earlier(heap[i] as Timer, heap[parent] as Timer)) break;
      [heap[i], heap[parent]] = [heap[parent] as Timer, heap[i] as Timer];
      i = parent;
    }
  }

  private pop(): Timer | undefined {
    const heap = this.heap;
    while (heap.length > 0) {
      const top = heap[0] as Timer;
      const last = heap.pop() as Timer;
      if (heap.length > 0) {
        heap[0] = last;
        for (let i = 0; ; ) {
          const [left, right] = [2 * i + 1, 2 * i + 2];
          let least = i;
          if (left < heap.length && earlier(heap[left] as Timer, heap[least] as Timer)) least = left;
          if (right < heap.length && earlier(heap[right] as Timer, heap[least] as Timer)) least = right;
          if (least === i) break;
          [heap[i], heap[least]] = [heap[least] as Timer, heap[i] as Timer];
          i = least;
        }
      }
      if (!top.cancelled) return top;
    }
    return undefined;
  }
}

const earlier = (a: Timer, b: Timer): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/** One message of the model queue. */
export interface SimMessage {
  readonly id: string;
  /** Its tenant (the pace key, when the run paces per key). */
  readonly tenant: string;
  /** When it is next visible (this clock's ms). */
  visibleAt: number;
  receiveCount: number;
  /** When the webhook first took it, if it did (an answer the relay timed out on included). */
  deliveredAt: number | undefined;
  /** The relay saw it taken, and deleted it from the queue. */
  deleted?: boolean;
  /** Accepted requests for it. */
  accepted: number;
  /** Requests for it answered with a slow-down signal. */
  refusals: number;
}

/** What a model webhook answers one request. */
export interface SimAnswer {
  readonly status: number;
  readonly retryAfterSeconds?: number;
  /** Rate-limit headers, by lower-case name. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A model webhook: its answer to `message` at `now` (it keeps its own state: buckets, counters). */
export type SimWebhook = (message: SimMessage, now: number) => SimAnswer;

/** A simulated run. */
export interface SimOptions {
  readonly messages: readonly SimMessage[];
  readonly webhook: SimWebhook;
  /** Containers (concurrent invocations, local mode's pollers). @default 5 */
  readonly containers?: number;
  /** @default 10 */
  readonly batchSize?: number;
  /** The pacer's settings (`maxRequestsPerSecond` is this container's share). */
  readonly pacing?: Partial<PacingSettings>;
  /** The webhook's latency, ms: each request takes 0.5–1.5 × this. @default 5 */
  readonly latencyMs?: number;
  /**
   * A webhook whose latency depends on its load: the time, ms, a request takes when it arrives with `inFlight` others already
   * in flight at the webhook (from every container), given a uniform draw in [0, 1). Replaces `latencyMs`.
   */
  readonly latencyOf?: (inFlight: number, draw: number) => number;
  /** The relay's bound on one request (`REQUEST_TIMEOUT_MS`): a request longer than this times out, though the webhook goes on. @default 10 s */
  readonly requestTimeoutMs?: number;
  /** An invocation's time, ms, and the margin the relay keeps before it. @default 30 s, 1 s */
  readonly functionTimeoutMs?: number;
  readonly deadlineMarginMs?: number;
  /** The time between the end of a batch and the next one's records, ms (SQS's receive). @default 10 */
  readonly receiveMs?: number;
  /** The run stops at this time, ms from its start, if it has not ended by then. */
  readonly maxMs: number;
  /** The run ends once these messages (by default all) are delivered. */
  readonly done?: (messages: readonly SimMessage[]) => boolean;
  readonly seed?: number;
  /**
   * Which visible messages a receive hands out first: the lowest-numbered (the worst case for a backlog at the head: records
   * kept back come back before the rest), or those visible the longest, as fauxqs does (a record kept back goes to the back).
   * @default 'lowest-numbered'
   */
  readonly order?: 'lowest-numbered' | 'oldest-visible';
  /** Per-key pacing: the key of a message. */
  readonly keyOf?: (message: SimMessage) => string | undefined;
  /** Another pacer to try in its place (a design being compared). */
  readonly pacerOf?: (settings: PacingSettings, clock: PaceClock) => Pacer;
}

/** What a run measured. */
export interface SimResult {
  /** When `done` held, ms from the start; NaN if it never did. */
  readonly doneMs: number;
  readonly requests: number;
  /** Requests answered with a slow-down signal (429 and the like). */
  readonly refused: number;
  /** Records handed back unsent because the pace (a hold, a key's pace) kept them from starting. */
  readonly notAttempted: number;
  /** Requests that timed out on the relay's side (the webhook finished them all the same). */
  readonly timeouts: number;
  /** Deliveries of a message after its first. */
  readonly duplicates: number;
  /** Requests per second over the run, from the webhook's side, by 1 s bins. */
  readonly requestsBySecond: readonly number[];
  /** The pacers, for their state at the end. */
  readonly pacers: readonly Pacer[];
}

/** Backoff of a refusal without `Retry-After`: the relay's default exponential policy, without jitter. */
const backoffSeconds = (receiveCount: number): number => Math.min(300, 2 * 2 ** (receiveCount - 1));

/** Mixed into the seed of the simulation's own draws (latencies, receive times), and of the pacers' (their phase moves). */
const SIMULATION_STREAM = 0x5bd1e995;
const PACER_STREAM = 0x27d4eb2f;

/**
 * Undelivered messages by when they became visible, then by number: the oldest visible first, as fauxqs hands them out (a record
 * kept back goes behind those waiting). A heap of (visibleAt, index) entries; an entry is stale once its message's changed.
 */
class OldestVisibleFirst {
  private readonly heap: (readonly [at: number, index: number])[] = [];
  private readonly indexOf = new Map<SimMessage, number>();

  constructor(private readonly messages: readonly SimMessage[]) {
    for (const [index, message] of messages.entries()) {
      this.indexOf.set(message, index);
      this.push([message.visibleAt, index]);
    }
  }

  /** `message` is visible from `at` (it was given that `visibleAt`). */
  visibleFrom(message: SimMessage, at: number): void {
    this.push([at, this.indexOf.get(message) as number]);
  }

  /** The undelivered message visible the longest at `now`, if any, taken off the heap. */
  next(now: number): SimMessage | undefined {
    for (let top = this.heap[0]; top !== undefined && top[0] <= now; top = this.heap[0]) {
      this.pop();
      const message = this.messages[top[1]] as SimMessage;
      if (message.deleted !== true && message.visibleAt === top[0]) return message;
    }
    return undefined;
  }

  private static before(a: readonly [number, number], b: readonly [number, number]): boolean {
    return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  }

  private swap(i: number, j: number): void {
    const heap = this.heap;
    [heap[i], heap[j]] = [heap[j] as [number, number], heap[i] as [number, number]];
  }

  private push(entry: readonly [number, number]): void {
    const heap = this.heap;
    heap.push(entry);
    for (let i = heap.length - 1, parent = (i - 1) >> 1; i > 0 && OldestVisibleFirst.before(entry, heap[parent] as [number, number]); ) {
      this.swap(i, parent);
      i = parent;
      parent = (i - 1) >> 1;
    }
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop() as [number, number];
    if (heap.length === 0) return;
    heap[0] = last;
    for (let i = 0; ; ) {
      let least = i;
      for (const child of [2 * i + 1, 2 * i + 2])
        if (child < heap.length && OldestVisibleFirst.before(heap[child] as [number, number], heap[least] as [number, number]))
          least = child;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }
}

/** Runs `options` to its end and returns what it measured. */
export async function simulate(options: SimOptions): Promise<SimResult> {
  const clock = new SimulatedClock(SIMULATION_START, seeded((options.seed ?? 1) ^ PACER_STREAM));
  // A stream of its own: the model webhooks draw from seeded(seed), and sharing it tied a request's refusal to the latency of
  // another, and so to when the next requests started.
  const random = seeded((options.seed ?? 1) ^ SIMULATION_STREAM);
  const start = clock.now();
  const end = start + options.maxMs;
  const messages = options.messages;
  for (const message of messages) message.visibleAt = Math.max(message.visibleAt, start);
  const containers = options.containers ?? 5;
  const batchSize = options.batchSize ?? 10;
  const latencyMs = options.latencyMs ?? 5;
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const timeoutMs = options.functionTimeoutMs ?? 30_000;
  const marginMs = options.deadlineMarginMs ?? 1_000;
  const done = options.done ?? ((all: readonly SimMessage[]) => all.every((message) => message.deliveredAt !== undefined));
  const settings: PacingSettings = {
    adaptive: true,
    maxInFlight: 10,
    maxRequestsPerSecond: undefined,
    sharedBy: containers,
    requestTimeoutMs,
    ...options.pacing,
  };
  let requests = 0;
  let refused = 0;
  let notAttempted = 0;
  let timeouts = 0;
  /** Requests the webhook is working on: those the relay gave up on included. */
  let atWebhook = 0;
  let doneAt = Number.NaN;
  const bySecond: number[] = [];
  /** The first undelivered message's index: messages before it need no look. */
  let firstOpen = 0;

  const oldestFirst = options.order === 'oldest-visible' ? new OldestVisibleFirst(messages) : undefined;
  const setVisibleAt = (message: SimMessage, at: number): void => {
    message.visibleAt = at;
    oldestFirst?.visibleFrom(message, at);
  };

  const receive = (): SimMessage[] => {
    const now = clock.now();
    const batch: SimMessage[] = [];
    // Received: invisible for the queue's visibility timeout, as SQS makes it.
    const take = (message: SimMessage): void => {
      setVisibleAt(message, now + 180_000);
      message.receiveCount += 1;
      batch.push(message);
    };
    if (oldestFirst !== undefined) {
      for (
        let message = oldestFirst.next(now);
        message !== undefined;
        message = batch.length < batchSize ? oldestFirst.next(now) : undefined
      )
        take(message);
      return batch;
    }
    while (firstOpen < messages.length && (messages[firstOpen] as SimMessage).deleted === true) firstOpen += 1;
    for (let i = firstOpen; i < messages.length && batch.length < batchSize; i += 1) {
      const message = messages[i] as SimMessage;
      if (message.deleted !== true && message.visibleAt <= now) take(message);
    }
    return batch;
  };

  /** The webhook's answer to a request for `message` reaching it now, counted (one the relay stopped waiting for too). */
  const webhookAnswers = (message: SimMessage): SimAnswer => {
    requests += 1;
    const second = Math.floor((clock.now() - start) / 1000);
    bySecond[second] = (bySecond[second] ?? 0) + 1;
    return options.webhook(message, clock.now());
  };

  const attempt = async (pacer: Pacer, message: SimMessage, requestsEnd: number): Promise<void> => {
    const key = options.keyOf?.(message);
    const slot = pacer.acquire(requestsEnd - 100, key, message.receiveCount === 1);
    if (slot !== true && !(await slot)) {
      notAttempted += 1;
      setVisibleAt(message, clock.now() + pacer.retryInSeconds(key, message.receiveCount) * 1000);
      return;
    }
    const took = options.latencyOf?.(atWebhook, random()) ?? latencyMs * (0.5 + random());
    atWebhook += 1;
    if (took > requestTimeoutMs) {
      // The relay gives up; the webhook takes the request all the same, to no one: a delivery the relay will make again.
      void clock.sleep(took / 2).then(async () => {
        const answer = webhookAnswers(message);
        await clock.sleep(took / 2);
        atWebhook -= 1;
        if (answer.status < 200 || answer.status > 299) return;
        message.accepted += 1;
        message.deliveredAt ??= clock.now();
        if (Number.isNaN(doneAt) && done(messages)) doneAt = clock.now();
      });
      await clock.sleep(requestTimeoutMs);
      timeouts += 1;
      const failure: WebhookResult = { kind: 'transport-error', error: 'timeout', message: 'timed out', latencyMs: requestTimeoutMs };
      const answer = {
        signal: paceSignalOf(failure),
        latencyMs: requestTimeoutMs,
        messageId: message.id,
        receivedBefore: message.receiveCount > 1,
      };
      pacer.release(answer, key, clock.now());
      setVisibleAt(message, clock.now() + backoffSeconds(message.receiveCount) * 1000);
      return;
    }
    await clock.sleep(took / 2);
    const answer = webhookAnswers(message);
    await clock.sleep(took / 2);
    atWebhook -= 1;
    const now = clock.now();
    const response: WebhookResponse = {
      kind: 'response',
      status: answer.status,
      retryAfter: answer.retryAfterSeconds === undefined ? undefined : String(answer.retryAfterSeconds),
      excerpt: '',
      latencyMs: took,
      rateLimit: answer.headers,
    };
    const signal = paceSignalOf(response);
    if (signal === 'slow-down') {
      refused += 1;
      message.refusals += 1;
    }
    const quota: Quota | undefined = answer.headers === undefined ? undefined : quotaOf(answer.headers, now);
    pacer.release(
      {
        signal,
        latencyMs: took,
        retryAfterSeconds: answer.retryAfterSeconds,
        messageId: message.id,
        quota,
        receivedBefore: message.receiveCount > 1,
      },
      key,
      now,
    );
    if (answer.status >= 200 && answer.status <= 299) {
      message.accepted += 1;
      message.deliveredAt ??= now;
      message.deleted = true;
      if (Number.isNaN(doneAt) && done(messages)) doneAt = now;
      return;
    }
    const delaySeconds = answer.retryAfterSeconds ?? backoffSeconds(message.receiveCount);
    setVisibleAt(message, now + Math.min(43_200, delaySeconds) * 1000);
  };

  const container = async (pacer: Pacer): Promise<void> => {
    await clock.sleep(random() * 20);
    while (clock.now() < end && Number.isNaN(doneAt)) {
      const batch = receive();
      if (batch.length === 0) {
        await clock.sleep(20);
        continue;
      }
      const requestsEnd = clock.now() + timeoutMs - marginMs;
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < batch.length) await attempt(pacer, batch[next++] as SimMessage, requestsEnd);
      };
      await Promise.all(Array.from({ length: Math.min(settings.maxInFlight, batch.length) }, worker));
      await clock.sleep(options.receiveMs ?? 10);
    }
  };

  const pacers = Array.from({ length: containers }, () => options.pacerOf?.(settings, clock) ?? new Pacer(settings, clock));
  const running = Promise.all(pacers.map(container));
  await clock.run(end + 1);
  // Nothing is left to run past the end: every container is idle or waiting on a timer that will not fire.
  void running;
  return {
    doneMs: doneAt - start,
    requests,
    refused,
    notAttempted,
    timeouts,
    duplicates: messages.reduce((sum, message) => sum + Math.max(0, message.accepted - 1), 0),
    requestsBySecond: Array.from(bySecond, (count) => count ?? 0),
    pacers,
  };
}

/** `count` messages, message `i` of tenant `tenantOf(i)`. */
export function messagesOf(count: number, tenantOf: (index: number) => string = () => 'any'): SimMessage[] {
  return Array.from({ length: count }, (_, index) => ({
    id: `m${index}`,
    tenant: tenantOf(index),
    visibleAt: 0,
    receiveCount: 0,
    deliveredAt: undefined,
    accepted: 0,
    refusals: 0,
  }));
}

/** A token bucket of `rate` requests/s holding `burst` (default a tenth of a second's worth): `429` + `Retry-After: 1` without a token. */
export function tokenBucket(rate: number, burst = Math.max(1, rate / 10)): (now: number) => boolean {
  let tokens = burst;
  let filledAt: number | undefined;
  return (now) => {
    filledAt ??= now;
    tokens = Math.min(burst, tokens + ((now - filledAt) / 1000) * rate);
    filledAt = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
}

/**
 * A fixed window of `limit` requests per `windowSeconds` of the clock that says so: every answer carries `RateLimit-Policy` and
 * `RateLimit` (the IETF draft's current form), and one over the limit gets `429` with a `Retry-After` to the window's end.
 */
export function announcedWindow(limit: number, windowSeconds = 1): (now: number) => SimAnswer {
  let windowStart = Number.NEGATIVE_INFINITY;
  let used = 0;
  return (now) => {
    const start = Math.floor(now / (windowSeconds * 1000)) * windowSeconds * 1000;
    if (start !== windowStart) {
      windowStart = start;
      used = 0;
    }
    const resetSeconds = Math.max(1, Math.ceil((start + windowSeconds * 1000 - now) / 1000));
    const ok = used < limit;
    if (ok) used += 1;
    const headers = {
      'ratelimit-policy': `"default";q=${limit};w=${windowSeconds}`,
      ratelimit: `"default";r=${limit - used};t=${resetSeconds}`,
    };
    return ok ? { status: 200, headers } : { status: 429, retryAfterSeconds: resetSeconds, headers };
  };
}

/** A `Retry-After` from 1 s to an hour, spread evenly over its logarithm. */
export const anyRetryAfter = (random: () => number): number => Math.round(Math.exp(random() * Math.log(3600)));

/**
 * A webhook refusing `share` of requests at random (drawn from `seeded(seed)`), with `retryAfterSeconds`: a number, `'any'` (1 s
 * to an hour, drawn after the refusal), or none: tenant of message i, and the webhook. With `from`, only messages from the
 * `from`th on are refused (tenant `t`; those before, `early`): refusals that begin after a clean start.
 */
export const refusingAtRandom = (
  share: number,
  retryAfterSeconds?: number | 'any',
  from = 0,
): readonly [(index: number) => string, (seed: number) => SimWebhook] => [
  (i) => (i >= from ? 't' : 'early'),
  (seed) => {
    const random = seeded(seed);
    return (m) => {
      if (m.tenant !== 't' || random() >= share) return { status: 200 };
      return { status: 429, retryAfterSeconds: retryAfterSeconds === 'any' ? anyRetryAfter(random) : retryAfterSeconds };
    };
  },
];

/**
 * One tenant in `every` over a quota of 10 a second (`429` + `Retry-After: 1` above it), a bucket `burst` deep, the others
 * unlimited: tenant of message i, and the webhook.
 */
export const overQuota = (every: number, burst = 1): readonly [(index: number) => string, () => SimWebhook] => [
  (i) => (i % every === 0 ? 'over' : `t${i % 7}`),
  () => {
    const take = tokenBucket(10, burst);
    return (m, now) => (m.tenant === 'over' && !take(now) ? { status: 429, retryAfterSeconds: 1 } : { status: 200 });
  },
];

/**
 * An outage that answers `429` + `Retry-After: 1` to everything for the first `ms` of the run (no breaker: the holds' business),
 * then takes every request; and how many requests it refused.
 */
export function outageOf(ms: number): { readonly webhook: SimWebhook; readonly refused: () => number } {
  let refused = 0;
  const webhook: SimWebhook = (_message, now) => {
    if (now - SIMULATION_START >= ms) return { status: 200 };
    refused += 1;
    return { status: 429, retryAfterSeconds: 1 };
  };
  return { webhook, refused: () => refused };
}

/**
 * A token bucket of `rate`/s (a tenth of a second's burst) answering `429` + `Retry-After: 1` without a token, and refusing
 * `randomShare` of requests at random besides (drawn from `seeded(seed)`; no draw when there is no share).
 */
export const bucketWebhook = (rate: number, randomShare = 0, seed = 1): SimWebhook => {
  const take = tokenBucket(rate);
  const random = seeded(seed);
  return (_message, now) =>
    (randomShare === 0 || random() >= randomShare) && take(now) ? { status: 200 } : { status: 429, retryAfterSeconds: 1 };
};

/**
 * A fixed window of `limit` requests per whole second of the clock, announced nowhere ({@link announcedWindow} without its
 * headers): `429` + `Retry-After: 1` over it. Unlike a token bucket it takes a second's worth at once at the start of each
 * second, and refuses everything after that until the next.
 */
export const fixedWindowWebhook = (limit: number): SimWebhook => {
  const window = announcedWindow(limit);
  return (_message, now) => {
    const { status, retryAfterSeconds } = window(now);
    return { status, retryAfterSeconds };
  };
};

/**
 * A sliding window (a log of what it took): at most `limit` requests taken in any second, announced nowhere; `429` +
 * `Retry-After: 1` over it. Refused requests do not count toward it.
 */
export const slidingWindowWebhook = (limit: number): SimWebhook => {
  // When each of the latest `limit` requests taken was taken: a ring, the oldest at `next`.
  const takenAt = new Array<number>(limit).fill(Number.NEGATIVE_INFINITY);
  let next = 0;
  return (_message, now) => {
    if (now - (takenAt[next] as number) < 1000) return { status: 429, retryAfterSeconds: 1 };
    takenAt[next] = now;
    next = (next + 1) % limit;
    return { status: 200 };
  };
};

/** One tenant in `every` always refused with `retryAfterSeconds` (`'any'`: 1 s to an hour, drawn from `seeded(seed)`), the others taken: tenant of message i, and the webhook. */
export const tenantRefused = (
  every: number,
  retryAfterSeconds: number | 'any',
): readonly [(index: number) => string, (seed: number) => SimWebhook] => [
  (i) => (i % every === 0 ? 'refused' : `t${i % 7}`),
  (seed) => {
    const random = seeded(seed);
    const wait = (): number => (retryAfterSeconds === 'any' ? anyRetryAfter(random) : retryAfterSeconds);
    return (m) => (m.tenant === 'refused' ? { status: 429, retryAfterSeconds: wait() } : { status: 200 });
  },
];

/** When the last of `messages` that were never refused was delivered, ms from the start of the run. */
export const restDeliveredMs = (messages: readonly SimMessage[]): number =>
  Math.max(...messages.filter((m) => m.refusals === 0 && m.deliveredAt !== undefined).map((m) => m.deliveredAt as number)) -
  SIMULATION_START;

/**
 * The rest's drain, ms, paced and with PACING=false: `count` messages to a fresh `webhookOf(seed)` each run, done once each
 * message was delivered or refused once (the rest's drain is then known).
 */
export async function restDrains(
  seed: number,
  count: number,
  tenantOf: (index: number) => string,
  webhookOf: (seed: number) => SimWebhook,
  run: { readonly maxMs: number; readonly latencyMs?: number; readonly order?: SimOptions['order'] },
): Promise<[paced: number, unpaced: number]> {
  const times: number[] = [];
  for (const adaptive of [true, false]) {
    const messages = messagesOf(count, tenantOf);
    const done = (all: readonly SimMessage[]): boolean => all.every((m) => m.refusals > 0 || m.deliveredAt !== undefined);
    await simulate({ messages, webhook: webhookOf(seed), ...run, pacing: { adaptive }, done, seed });
    times.push(restDeliveredMs(messages));
  }
  return times as [number, number];
}
