/**
 * Back-pressure (issue 21), the relay as a user runs it: `npm start` (local mode, its own emulator) with the stack's fan-out,
 * N messages sent at once to a webhook with a capacity (testkit/rate-limited-webhook.ts), a fresh relay process per run.
 * `backPressure`: a token bucket of R requests/s answering `429` + `Retry-After: 1` above it, the defaults against `PACING=false`.
 * `recovery`: a webhook answering `503` (an outage sign) or `500` (server errors, which open the breaker once they have gone on for
 * 5 s) for 40 s, then 2xx: drained within {@link RECOVERY_DRAIN_GOAL_SECONDS} of the first send.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { defaultBurst, type RateLimitedWebhookOptions, rateLimitedResponder } from '../../testkit/rate-limited-webhook';
import { readyLine, sendMessages, settle, sqsClientFor, startRelayProcess, stopRelay } from '../../testkit/relay-process';
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

/** What one back-pressure scenario measured. */
export interface BackPressureSection {
  readonly messages: number;
  /** The webhook's capacity and token bucket (back-pressure only). */
  readonly requestsPerSecond?: number;
  readonly burst?: number;
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
/** Issue 21 says 30 s, but the default backoff (2, 4, 8, 16 s, up to 25 % jitter) puts a fifth attempt at 30–37.5 s: 40 s outlasts five. */
const UNAVAILABLE_SECONDS = 40;
/** The recovery's goal: the backlog draining within 10 s of the webhook's return at 40 s, then a few seconds to deliver it. */
export const RECOVERY_DRAIN_GOAL_SECONDS = 55;
/** Issue 21's goal for each run: drain within 1.25 × N/R, at most 10 % of requests refused. */
export const DRAIN_GOAL_FACTOR = 1.25;
export const REFUSED_GOAL = 0.1;

/** A configuration to measure: the relay's variables and the webhook's behaviour. */
type SideSpec = Omit<BackPressureSide, 'runs'> & { readonly webhook: RateLimitedWebhookOptions };

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
): Promise<BackPressureSection> {
  const results = sides.map((): BackPressureRun[] => []);
  for (let run = 0; run < runs; run += 1) {
    for (const index of roundOrder(sides.length, run)) {
      const { side, env, webhook: options } = sides[index] as SideSpec;
      const limit = rateLimitedResponder(options);
      const webhook = await startWebhook(limit.respond);
      const relay = startRelayProcess({ ...RELAY_ENV, ...env, WEBHOOK_URL: webhook.url, LOG_FORMAT: 'json' });
      let sqs: SQSClient | undefined;
      try {
        const ready = await readyLine(relay);
        sqs = sqsClientFor(ready);
        const startedAt = Date.now();
        await sendMessages(sqs, ready.queueUrl, section.messages);
        const { deadLettered, left } = await settle(sqs, ready, section.messages, () => limit.delivered.size, startedAt + deadlineMs);
        const result = {
          drainSeconds: ((limit.lastDeliveryAt() ?? Number.NaN) - startedAt) / 1000,
          delivered: limit.delivered.size,
          duplicates: limit.duplicates(),
          deadLettered,
          left,
          requests: webhook.requests.length,
          refused: limit.refused(),
        };
        results[index]?.push(result);
        log(
          `  ${name}, ${side}, run ${run + 1}/${runs}: drain ${result.drainSeconds.toFixed(1)} s, delivered ${result.delivered}, ` +
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
  return { ...section, sides: sides.map(({ webhook, ...side }, index) => ({ ...side, runs: results[index] ?? [] })) };
}

/** Whether one run met issue 21's goal (the drain and refused bounds only where the webhook has a rate). */
export function goalMet(section: BackPressureSection, run: BackPressureRun): boolean {
  const rate = section.requestsPerSecond;
  const bounded =
    rate === undefined || (run.drainSeconds <= (DRAIN_GOAL_FACTOR * section.messages) / rate && run.refused <= REFUSED_GOAL * run.requests);
  const inTime = section.drainGoalSeconds === undefined || run.drainSeconds <= section.drainGoalSeconds;
  return run.delivered === section.messages && run.deadLettered === 0 && run.left === 0 && bounded && inTime;
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
  const section = { messages: MESSAGES, requestsPerSecond: REQUESTS_PER_SECOND, burst, relayEnv: RELAY_ENV };
  return measure('back-pressure', section, QUICK ? 1 : 3, sides, (10 * 1000 * MESSAGES) / REQUESTS_PER_SECOND);
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
    messages: RECOVERY_MESSAGES,
    unavailableSeconds: UNAVAILABLE_SECONDS,
    drainGoalSeconds: RECOVERY_DRAIN_GOAL_SECONDS,
    relayEnv: RELAY_ENV,
  };
  return measure('recovery', section, 1, sides, (UNAVAILABLE_SECONDS + 300) * 1000);
}
