/**
 * Back-pressure, the relay as a user runs it: `npm start` (local mode, its own emulator) with the stack's fan-out, N messages
 * sent at once to a webhook with a capacity (testkit/rate-limited-webhook.ts), a fresh relay process per run, the defaults
 * against `PACING=false`.
 * `backPressure`: a token bucket of R requests/s answering `429` + `Retry-After: 1` above it.
 * `capacity`: the same at 20, 50, 200 and 1,000 requests/s.
 * `perMessage`: a webhook refusing some messages for their own sake (one tenant's, or some at random), fast or answering in 200 ms.
 * `rateLimitHeaders`: a webhook announcing its limit in `RateLimit` / `RateLimit-Policy`.
 * `perKey`: one tenant limited to 10 requests/s, the others unlimited, with `PACE_KEY=tenant`.
 * `recovery`: a webhook answering `503` (an outage sign) or `500` (server errors, which open the breaker once they have gone on for
 * 5 s) for 40 s, then 2xx: drained within {@link RECOVERY_DRAIN_GOAL_SECONDS} of the first send.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  defaultBurst,
  type RateLimitedResponder,
  type RateLimitedWebhookOptions,
  rateLimitedResponder,
} from '../../testkit/rate-limited-webhook';
import { queueCounts, readyLine, sendMessages, settle, sqsClientFor, startRelayProcess, stopRelay } from '../../testkit/relay-process';
import { seeded } from '../../testkit/seeded-random';
import { startWebhook } from '../../testkit/webhook';
import { log, QUICK, roundOrder } from '../harness';
import { median } from '../stats';

/**
 * One run: N messages sent at once, until each is delivered or dead-lettered (or the run's deadline). `drainSeconds`: from the first send
 * to the last accepted request (NaN if none); `delivered`: distinct messages accepted; `duplicates`: accepted requests beyond each
 * message's first; `left`: messages on the main queue at the deadline (0 when settled); `refused`: requests answered 429 / 5xx.
 */
export interface BackPressureRun {
  readonly drainSeconds: number;
  /**
   * Per-message and per-key scenarios: from the first send to the last first delivery of the messages the goal is about (those
   * never refused; the other tenants'), s.
   */
  readonly restDrainSeconds?: number;
  readonly delivered: number;
  readonly duplicates: number;
  readonly deadLettered: number;
  readonly left: number;
  readonly requests: number;
  readonly refused: number;
}

/** The runs of one configuration of the relay. */
export interface BackPressureSide {
  readonly side: string;
  /** The relay's variables besides {@link RELAY_ENV}. */
  readonly env: Readonly<Record<string, string>>;
  /** The webhook's status while unavailable (recovery only). */
  readonly status?: number;
  readonly runs: readonly BackPressureRun[];
}

/** What a section measures, for its goal and its words in the report (undefined in figures from before there were others). */
export type BackPressureKind = 'token-bucket' | 'recovery' | 'per-message' | 'rate-limit-headers' | 'per-key';

/** What one back-pressure scenario measured. */
export interface BackPressureSection {
  readonly kind?: BackPressureKind;
  /** The webhook's behaviour in words (per-message, per-key). */
  readonly description?: string;
  readonly messages: number;
  /** The webhook's capacity and token bucket (back-pressure only). */
  readonly requestsPerSecond?: number;
  readonly burst?: number;
  /** How long the webhook takes to answer each request, ms, when not at once (per-message). */
  readonly answerAfterMs?: number;
  /** How long the webhook was unavailable, s (recovery only). */
  readonly unavailableSeconds?: number;
  /** The drain each run must meet, s from the first send (recovery only; back-pressure's follows from its rate). */
  readonly drainGoalSeconds?: number;
  readonly relayEnv: Readonly<Record<string, string>>;
  readonly sides: readonly BackPressureSide[];
}

/** The stack's default fan-out: 5 concurrent invocations of 10 records, 10 requests in flight each. */
const RELAY_ENV = { POLLERS: '5', MAX_CONCURRENCY: '10', BATCH_SIZE: '10' };
const REQUESTS_PER_SECOND = 200;
const MESSAGES = 3_000;
const RECOVERY_MESSAGES = 500;
/** An outage past five attempts: the default backoff (2, 4, 8, 16 s, up to 25 % jitter) puts a fifth at 30–37.5 s, so 30 s would not outlast it. */
const UNAVAILABLE_SECONDS = 40;
/** The recovery's goal: the backlog draining within 10 s of the webhook's return at 40 s, then a few seconds to deliver it. */
export const RECOVERY_DRAIN_GOAL_SECONDS = 55;
/** The goal of each run at a token bucket: drain within 1.25 × N/R, at most 10 % of requests refused. */
export const DRAIN_GOAL_FACTOR = 1.25;
export const REFUSED_GOAL = 0.1;
/** … and at a webhook that announces its limit: within 1.15 × N/R, at most 1 % refused. */
export const ANNOUNCED_DRAIN_GOAL_FACTOR = 1.15;
export const ANNOUNCED_REFUSED_GOAL = 0.01;
/** Per-message and per-key: the messages the goal is about drain at least this fast against `PACING=false` (its drain ÷ theirs). */
export const SPEED_GOAL = 0.9;
/** Per-message and per-key: messages sent, and the token buckets of the capacity scenario with theirs (15 s of each rate, 10 s of the last). */
const REST_MESSAGES = 4_000;
/**
 * Runs of each side where the goal is a ratio of two speeds (per-message, per-key): a run of a few seconds on two shared cores
 * varies by ±10 %, so the medians of three could miss a 0.9 goal either way.
 */
const SPEED_RUNS = 5;
const CAPACITIES = [
  [20, 300],
  [50, 750],
  [200, 3_000],
  [1_000, 10_000],
] as const;

/**
 * A configuration to measure: the relay's variables and the webhook's behaviour (a fresh one per run, when a function), and
 * how many of the scenario's runs it takes part in (all, unless fewer).
 */
type SideSpec = Omit<BackPressureSide, 'runs'> & {
  readonly webhook: RateLimitedWebhookOptions | (() => RateLimitedWebhookOptions);
  readonly runs?: number;
};

/** How a run ends and what else it measures, when not as the token bucket's (settled: every message delivered or dead-lettered). */
interface RunShape {
  /** The messages' `tenant` attribute. */
  readonly tenantOf?: (index: number) => string;
  /** Whether message `index` (of id `id`) is one the goal is about: its drain is `restDrainSeconds`. */
  readonly rest: (limit: RateLimitedResponder, id: string, index: number) => boolean;
  /** The run is over: `rest`'s messages delivered and the others refused at least once (they wait on the queue for their time). */
  readonly done: (limit: RateLimitedResponder, ids: readonly string[]) => boolean;
}

/**
 * `runs` runs of each side, the sides' order alternating from run to run, each against a fresh webhook and a fresh relay; a run ends
 * once settled, or `deadlineMs` after the first send.
 */
async function measure(
  name: string,
  section: Omit<BackPressureSection, 'sides'>,
  runs: number,
  sides: readonly SideSpec[],
  deadlineMs: number,
  shape?: RunShape,
): Promise<BackPressureSection> {
  const results = sides.map((): BackPressureRun[] => []);
  for (let run = 0; run < runs; run += 1) {
    for (const index of roundOrder(sides.length, run)) {
      const { side, env, webhook: behaviour, runs: sideRuns = runs } = sides[index] as SideSpec;
      if (run >= sideRuns) continue;
      const limit = rateLimitedResponder(typeof behaviour === 'function' ? behaviour() : behaviour);
      const webhook = await startWebhook(limit.respond);
      const relay = startRelayProcess({ ...RELAY_ENV, ...env, WEBHOOK_URL: webhook.url, LOG_FORMAT: 'json' });
      let sqs: SQSClient | undefined;
      try {
        const ready = await readyLine(relay);
        sqs = sqsClientFor(ready);
        const startedAt = Date.now();
        const tenantOf = shape?.tenantOf;
        const ids = await sendMessages(sqs, ready.queueUrl, section.messages, undefined, tenantOf && ((i) => ({ tenant: tenantOf(i) })));
        const { deadLettered, left } =
          shape === undefined
            ? await settle(sqs, ready, section.messages, () => limit.delivered.size, startedAt + deadlineMs)
            : await ended(sqs, ready, () => shape.done(limit, ids), startedAt + deadlineMs);
        const rest = shape === undefined ? undefined : ids.filter((id, i) => shape.rest(limit, id, i));
        const result = {
          drainSeconds: ((limit.lastDeliveryAt() ?? Number.NaN) - startedAt) / 1000,
          ...(rest === undefined
            ? {}
            : { restDrainSeconds: (Math.max(...rest.map((id) => limit.deliveredAt.get(id) ?? Number.NaN)) - startedAt) / 1000 }),
          delivered: limit.delivered.size,
          duplicates: limit.duplicates(),
          deadLettered,
          left,
          requests: webhook.requests.length,
          refused: limit.refused(),
        };
        results[index]?.push(result);
        log(
          `  ${name}, ${side}, run ${run + 1}/${Math.min(runs, sideRuns)}: drain ${result.drainSeconds.toFixed(1)} s` +
            `${result.restDrainSeconds === undefined ? '' : ` (the rest ${result.restDrainSeconds.toFixed(2)} s)`}, delivered ${result.delivered}, ` +
            `duplicates ${result.duplicates}, dead-lettered ${deadLettered}, left ${left}, refused ${result.refused} of ${result.requests}`,
        );
      } finally {
        sqs?.destroy();
        // A settled relay stops at once; one still retrying at the deadline is not waited for.
        await Promise.race([stopRelay(relay), new Promise((resolve) => setTimeout(resolve, 10_000))]);
        await stopRelay(relay, 'SIGKILL');
        await webhook.close();
      }
    }
  }
  return {
    ...section,
    sides: sides.map(({ webhook: _behaviour, runs: _runs, ...side }, index) => ({ ...side, runs: results[index] ?? [] })),
  };
}

/** Waits until `done`, or `deadline`: then the DLQ's count and what is left on the main queue (the refused wait there). */
async function ended(
  sqs: SQSClient,
  queues: { readonly queueUrl: string; readonly dlqUrl: string },
  done: () => boolean,
  deadline: number,
): Promise<{ deadLettered: number; left: number }> {
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  const main = await queueCounts(sqs, queues.queueUrl);
  return { deadLettered: (await queueCounts(sqs, queues.dlqUrl)).visible, left: main.visible + main.inFlight + main.delayed };
}

/**
 * Whether one run met its goal: every message delivered (at a token bucket or an announced limit, within the drain and refused
 * bounds), none dead-lettered; per-message and per-key, none dead-lettered (the speed is the section's, see {@link speedOf}).
 */
export function goalMet(section: BackPressureSection, run: BackPressureRun): boolean {
  if (section.kind === 'per-message' || section.kind === 'per-key') return run.deadLettered === 0;
  const rate = section.requestsPerSecond;
  const [drainFactor, refused] =
    section.kind === 'rate-limit-headers' ? [ANNOUNCED_DRAIN_GOAL_FACTOR, ANNOUNCED_REFUSED_GOAL] : [DRAIN_GOAL_FACTOR, REFUSED_GOAL];
  const bounded =
    rate === undefined || (run.drainSeconds <= (drainFactor * section.messages) / rate && run.refused <= refused * run.requests);
  const inTime = section.drainGoalSeconds === undefined || run.drainSeconds <= section.drainGoalSeconds;
  return run.delivered === section.messages && run.deadLettered === 0 && run.left === 0 && bounded && inTime;
}

/** Per-message and per-key: `PACING=false`'s median drain of the messages the goal is about ÷ the first side's (≥ {@link SPEED_GOAL}). */
export function speedOf(section: BackPressureSection): number {
  const rest = (side: BackPressureSide | undefined): number => median((side?.runs ?? []).map((run) => run.restDrainSeconds ?? Number.NaN));
  const unpaced = section.sides.find((side) => side.env.PACING === 'false');
  return rest(unpaced) / rest(section.sides[0]);
}

/** The median drain of a side's runs, s. */
export const medianDrain = (side: BackPressureSide): number => median(side.runs.map((run) => run.drainSeconds));

/** The relay's defaults and `PACING=false` against a webhook of {@link REQUESTS_PER_SECOND} requests/s. */
export async function backPressure(): Promise<BackPressureSection> {
  const webhook = { requestsPerSecond: REQUESTS_PER_SECOND };
  const burst = defaultBurst(REQUESTS_PER_SECOND);
  log(
    `back-pressure: ${MESSAGES} messages at once, webhook ${REQUESTS_PER_SECOND} requests/s (burst ${burst}), 429 + Retry-After: 1 above`,
  );
  const sides: SideSpec[] = [
    { side: 'defaults', env: {}, webhook },
    { side: 'PACING=false', env: { PACING: 'false' }, webhook },
  ];
  // Ten times the goal: a relay that floods the webhook still ends, by delivering or dead-lettering.
  const section = { kind: 'token-bucket' as const, messages: MESSAGES, requestsPerSecond: REQUESTS_PER_SECOND, burst, relayEnv: RELAY_ENV };
  return measure('back-pressure', section, QUICK ? 1 : 3, sides, (10 * 1000 * MESSAGES) / REQUESTS_PER_SECOND);
}

/** The share of a small webhook's rate docs/webhook-owners.md asks its operator to set as `MAX_REQUESTS_PER_SECOND`. */
export const SMALL_WEBHOOK_CEILING_SHARE = 0.95;
/** Webhooks this small or smaller are also measured with that ceiling: a bucket of a few requests, shared by five containers. */
const SMALL_WEBHOOK_RATE = 50;

/**
 * Token buckets of 20, 50, 200 and 1,000 requests/s, 15 s of messages each (10 s of the last): the defaults, three runs (one run
 * at 1,000/s refused anywhere from 5 to 13 %, around the goal's 10 %), against `PACING=false`, one run (its figures are far off);
 * at the small ones, also the defaults with the ceiling the docs ask for there, three runs.
 */
export async function capacity(): Promise<BackPressureSection[]> {
  const sections: BackPressureSection[] = [];
  for (const [rate, messages] of CAPACITIES) {
    const burst = defaultBurst(rate);
    log(`capacity: ${messages} messages at once, webhook ${rate} requests/s (burst ${burst}), 429 + Retry-After: 1 above`);
    const webhook = { requestsPerSecond: rate };
    const ceiling = String(Math.floor(SMALL_WEBHOOK_CEILING_SHARE * rate));
    const sides: SideSpec[] = [
      { side: 'defaults', env: {}, webhook },
      { side: 'PACING=false', env: { PACING: 'false' }, webhook, runs: 1 },
      ...(rate <= SMALL_WEBHOOK_RATE
        ? [{ side: `MAX_REQUESTS_PER_SECOND=${ceiling}`, env: { MAX_REQUESTS_PER_SECOND: ceiling }, webhook }]
        : []),
    ];
    const section = { kind: 'token-bucket' as const, messages, requestsPerSecond: rate, burst, relayEnv: RELAY_ENV };
    // Ten times the goal, and a minute at least: PACING=false at 20 requests/s takes a while.
    sections.push(await measure(`capacity ${rate}/s`, section, QUICK ? 1 : 3, sides, Math.max(60_000, (10 * 1000 * messages) / rate)));
  }
  return sections;
}

/** A `Retry-After` from 1 s to an hour, even over its logarithm. */
const anyRetryAfter = (random: () => number): number => Math.round(Math.exp(random() * Math.log(3600)));

/**
 * A fast webhook refusing some messages for their own sake, six ways: one tenant in 20 always (`Retry-After: 3600`), one
 * tenant's 20 % (1 s to 1 h), 5 % of requests at random (`Retry-After: 1`), 20 % at random (1 s to 1 h), and the first tenant's
 * backlog of 200, then of 2,000, arriving first (an hour); and a webhook answering in 200 ms, as production ones do, refusing 10 %
 * at random (`Retry-After: 1`). The goal is about the messages never refused: their drain against `PACING=false`'s.
 */
export async function perMessage(): Promise<BackPressureSection[]> {
  const over = 'over-quota';
  const cases: {
    description: string;
    tenantOf: (index: number) => string;
    refuse: () => NonNullable<RateLimitedWebhookOptions['refuse']>;
    answerAfterMs?: number;
  }[] = [
    {
      description: 'one tenant in 20 (5 % of the messages) always refused with `429` + `Retry-After: 3600`',
      tenantOf: (i) => (i % 20 === 0 ? over : `tenant-${i % 7}`),
      refuse:
        () =>
        ({ tenant }) =>
          tenant === over ? 3600 : undefined,
    },
    {
      description: "one tenant's messages, 20 % of them, always refused with a `Retry-After` from 1 s to 1 h",
      tenantOf: (i) => (i % 5 === 0 ? over : `tenant-${i % 7}`),
      refuse: () => {
        const random = seeded(2);
        return ({ tenant }) => (tenant === over ? anyRetryAfter(random) : undefined);
      },
    },
    {
      description: '5 % of requests refused at random with `429` + `Retry-After: 1`',
      tenantOf: (i) => `tenant-${i % 7}`,
      refuse: () => {
        const random = seeded(5);
        return () => (random() < 0.05 ? 1 : undefined);
      },
    },
    {
      description: '20 % of requests refused at random with a `Retry-After` from 1 s to 1 h',
      tenantOf: (i) => `tenant-${i % 7}`,
      refuse: () => {
        const random = seeded(20);
        return () => (random() < 0.2 ? anyRetryAfter(random) : undefined);
      },
    },
    {
      description: "the refused tenant's backlog of 200 messages arriving first, refused with `Retry-After: 3600`",
      tenantOf: (i) => (i < 200 ? over : `tenant-${i % 7}`),
      refuse:
        () =>
        ({ tenant }) =>
          tenant === over ? 3600 : undefined,
    },
    {
      description:
        "the refused tenant's backlog of 2,000 messages arriving first (long enough to hold the endpoint), refused with `Retry-After: 3600`",
      tenantOf: (i) => (i < 2_000 ? over : `tenant-${i % 7}`),
      refuse:
        () =>
        ({ tenant }) =>
          tenant === over ? 3600 : undefined,
    },
    {
      description: '10 % of requests refused at random with `429` + `Retry-After: 1`',
      tenantOf: (i) => `tenant-${i % 7}`,
      refuse: () => {
        const random = seeded(10);
        return () => (random() < 0.1 ? 1 : undefined);
      },
      // A container sends a few dozen requests a second here, too few for its dips to give a verdict in a doubt's time.
      answerAfterMs: 200,
    },
  ];
  const shape: Omit<RunShape, 'tenantOf'> = {
    rest: (limit, id) => !limit.refusedIds.has(id),
    done: (limit, ids) => ids.every((id) => limit.deliveredAt.has(id) || limit.refusedIds.has(id)),
  };
  const sections: BackPressureSection[] = [];
  for (const { description, tenantOf, refuse, answerAfterMs } of cases) {
    log(
      `per-message: ${REST_MESSAGES} messages at once, ${answerAfterMs === undefined ? 'a fast webhook' : `a webhook answering in ${answerAfterMs} ms`}, ${description}`,
    );
    const webhook = (): RateLimitedWebhookOptions => ({ refuse: refuse(), answerAfterMs });
    const sides: SideSpec[] = [
      { side: 'defaults', env: {}, webhook },
      { side: 'PACING=false', env: { PACING: 'false' }, webhook },
    ];
    const section = { kind: 'per-message' as const, description, messages: REST_MESSAGES, answerAfterMs, relayEnv: RELAY_ENV };
    sections.push(await measure('per-message', section, QUICK ? 1 : SPEED_RUNS, sides, 120_000, { ...shape, tenantOf }));
  }
  return sections;
}

/** A webhook announcing a fixed window of 200 requests a second (`RateLimit`, `RateLimit-Policy`): the defaults against `PACING=false`. */
export async function rateLimitHeaders(): Promise<BackPressureSection> {
  log(`rate-limit headers: ${MESSAGES} messages at once, a fixed window of ${REQUESTS_PER_SECOND} a second, announced`);
  const webhook = { requestsPerSecond: REQUESTS_PER_SECOND, announce: true };
  const sides: SideSpec[] = [
    { side: 'defaults', env: {}, webhook },
    { side: 'PACING=false', env: { PACING: 'false' }, webhook },
  ];
  const section = { kind: 'rate-limit-headers' as const, messages: MESSAGES, requestsPerSecond: REQUESTS_PER_SECOND, relayEnv: RELAY_ENV };
  return measure('rate-limit headers', section, QUICK ? 1 : 3, sides, (10 * 1000 * MESSAGES) / REQUESTS_PER_SECOND);
}

/**
 * One tenant in 20 limited to 10 requests a second, the others unlimited: `PACE_KEY=tenant`, the defaults (no key) and
 * `PACING=false`. The goal is about the other tenants: their drain against `PACING=false`'s.
 */
export async function perKey(): Promise<BackPressureSection> {
  const limited = 'limited';
  const description =
    'one tenant in 20 (5 % of the messages) limited to 10 requests a second (`429` + `Retry-After: 1` above), the others unlimited';
  log(`per-key: ${REST_MESSAGES} messages at once, ${description}`);
  const tenantOf = (i: number): string => (i % 20 === 0 ? limited : `tenant-${i % 7}`);
  const webhook = (): RateLimitedWebhookOptions => ({ tenantLimits: { [limited]: 10 } });
  const sides: SideSpec[] = [
    { side: 'PACE_KEY=tenant', env: { PACE_KEY: 'tenant' }, webhook },
    { side: 'defaults', env: {}, webhook },
    { side: 'PACING=false', env: { PACING: 'false' }, webhook },
  ];
  const section = { kind: 'per-key' as const, description, messages: REST_MESSAGES, relayEnv: RELAY_ENV };
  const shape: RunShape = {
    tenantOf,
    rest: (_limit, _id, index) => tenantOf(index) !== limited,
    done: (limit, ids) => ids.every((id, index) => tenantOf(index) === limited || limit.deliveredAt.has(id)),
  };
  return measure('per-key', section, QUICK ? 1 : SPEED_RUNS, sides, 120_000, shape);
}

/** A webhook unavailable for {@link UNAVAILABLE_SECONDS}, then healthy with no limit. */
export async function recovery(): Promise<BackPressureSection> {
  log(`recovery: ${RECOVERY_MESSAGES} messages at once, webhook 503 / 500 without Retry-After for ${UNAVAILABLE_SECONDS} s`);
  const sides = [503, 500].map((status) => ({
    side: `webhook ${status}`,
    env: {},
    status,
    webhook: { unavailableForMs: UNAVAILABLE_SECONDS * 1000, unavailableStatus: status },
  }));
  // One run each: where the messages end, and how soon after the webhook's return.
  const section = {
    kind: 'recovery' as const,
    messages: RECOVERY_MESSAGES,
    unavailableSeconds: UNAVAILABLE_SECONDS,
    drainGoalSeconds: RECOVERY_DRAIN_GOAL_SECONDS,
    relayEnv: RELAY_ENV,
  };
  return measure('recovery', section, 1, sides, (UNAVAILABLE_SECONDS + 300) * 1000);
}
