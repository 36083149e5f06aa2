/**
 * The pacing sweep: the pacer (lambda/pace.ts) in the deterministic simulation of test/support/pacing-simulation.ts, against
 * token buckets and windows of requests per second, webhooks that refuse some messages for their own sake, and webhooks that
 * refuse everything for a while, at several latencies, each on several seeds. A minute or two of CPU for what the bench
 * measures in half an hour through `npm start`, and the same every time: a change to the pace is tried here against all these
 * neighbours first, then confirmed by `npm run bench`. Nothing here is a goal (the tests hold the goals): it prints figures to
 * compare.
 *
 *   npx tsx bench/pacing-sweep.ts [--seeds=N] [--only=<part of a case's name>,…]
 *
 * One line per case and figure, tab-separated: the case, the figure, its mean over the seeds, its worst and its best. Two runs
 * side by side (`paste a.tsv b.tsv`) show what a change moved. Per-seed lines: `--each`.
 */
import {
  bucketWebhook,
  fixedWindowWebhook,
  messagesOf,
  outageOf,
  overQuota,
  refusingAtRandom,
  restDrains,
  type SimOptions,
  type SimResult,
  type SimWebhook,
  simulate,
  slidingWindowWebhook,
  tenantRefused,
} from '../test/support/pacing-simulation';

/** A case's figures on one seed: name → value, and whether a higher value is better. */
type Figures = Record<string, { readonly value: number; readonly higherIsBetter: boolean }>;

interface SweepCase {
  readonly name: string;
  readonly run: (seed: number) => Promise<Figures>;
}

/**
 * A token bucket of `rate`/s from a standing start, 15 s of messages, that also refuses `randomShare` of requests at random: the
 * share of requests refused (%) and the drain against N/R. With `ceiling`, the operator's `MAX_REQUESTS_PER_SECOND` at `share`
 * of the bucket's rate, split between the five containers, with pacing or without: given the same rate and started together, the
 * containers would send in step but for the random moment each starts at and the moves their refusals make.
 */
function capacity(
  rate: number,
  latencyMs: number,
  { randomShare = 0, ceiling }: { randomShare?: number; ceiling?: { share: number; adaptive: boolean } } = {},
): SweepCase {
  const refusing = randomShare > 0 ? `, ${100 * randomShare} % refused at random too` : '';
  return {
    name:
      ceiling === undefined
        ? `capacity ${rate}/s at ${latencyMs} ms${refusing}`
        : `ceiling at ${100 * ceiling.share} % of a bucket of ${rate}/s at ${latencyMs} ms${ceiling.adaptive ? '' : ', PACING=false'}`,
    run: (seed) =>
      drain(rate, bucketWebhook(rate, randomShare, seed), {
        latencyMs,
        seed,
        ...(ceiling === undefined ? {} : { pacing: { adaptive: ceiling.adaptive, maxRequestsPerSecond: (ceiling.share * rate) / 5 } }),
      }),
  };
}

/** 15 s of messages at `rate`/s to `webhook` from a standing start: the share of requests refused (%) and the drain against N/R. */
async function drain(rate: number, webhook: SimWebhook, run: Pick<SimOptions, 'latencyMs' | 'seed' | 'pacing'>): Promise<Figures> {
  const count = 15 * rate;
  const result = await simulate({ messages: messagesOf(count), webhook, maxMs: 600_000, ...run });
  return {
    'refused %': { value: (100 * result.refused) / result.requests, higherIsBetter: false },
    'drain × N/R': { value: result.doneMs / 1000 / (count / rate), higherIsBetter: false },
  };
}

/**
 * A window of `rate` requests a second (`429` + `Retry-After: 1` over it) from a standing start, 15 s of messages, as
 * {@link capacity}: a fixed one takes a second's worth at once at each whole second of the clock, a sliding one no more than
 * that in any second. With pacing or without.
 */
function rateWindow(kind: 'fixed' | 'sliding', rate: number, latencyMs: number, adaptive = true): SweepCase {
  return {
    name: `${kind} window of ${rate}/s at ${latencyMs} ms${adaptive ? '' : ', PACING=false'}`,
    run: (seed) =>
      drain(rate, kind === 'fixed' ? fixedWindowWebhook(rate) : slidingWindowWebhook(rate), {
        latencyMs,
        seed,
        pacing: { adaptive },
      }),
  };
}

/**
 * Refusals for the messages' own sake: how fast the messages never refused drain, against `PACING=false` (its drain ÷ theirs),
 * 4,000 messages to a fresh `webhookOf(seed)` each side.
 */
function perMessage(
  name: string,
  latencyMs: number,
  tenantOf: (index: number) => string,
  webhookOf: (seed: number) => SimWebhook,
  order?: SimOptions['order'],
): SweepCase {
  return {
    name: `${name} at ${latencyMs} ms${order === undefined ? '' : `, ${order} first`}`,
    run: async (seed) => {
      const [paced, unpaced] = await restDrains(seed, 4_000, tenantOf, webhookOf, { maxMs: 900_000, latencyMs, order });
      return { 'speed × PACING=false': { value: unpaced / paced, higherIsBetter: true } };
    },
  };
}

/**
 * A webhook refusing everything for an hour (`429` + `Retry-After: 3600`, a maintenance window) with 4,000 messages queued: how
 * often it is asked, requests a second in all over the first minute after its first 10 s (a hold's evidence and first probes).
 */
function refusingEverything(latencyMs: number): SweepCase {
  return {
    name: `everything refused for an hour, 4000 queued, at ${latencyMs} ms`,
    run: async (seed) => {
      const result = await simulate({
        messages: messagesOf(4_000),
        webhook: () => ({ status: 429, retryAfterSeconds: 3600 }),
        maxMs: 70_000,
        latencyMs,
        seed,
      });
      const after = result.requestsBySecond.slice(10, 70);
      const requests = after.reduce((sum, count) => sum + (count ?? 0), 0);
      return { 'requests/s after 10 s': { value: requests / 60, higherIsBetter: false } };
    },
  };
}

/**
 * An outage answering `429` + `Retry-After: 1` to everything for 40 s, 500 messages queued (the recovery goal's neighbour: no
 * breaker): requests a second during it, and how long after its end the backlog is drained.
 */
function outage(latencyMs: number): SweepCase {
  return {
    name: `40 s of 429 + Retry-After: 1 to everything, 500 queued, at ${latencyMs} ms`,
    run: async (seed) => {
      const outage = outageOf(40_000);
      const result = await simulate({ messages: messagesOf(500), webhook: outage.webhook, maxMs: 600_000, latencyMs, seed });
      return {
        'requests/s during it': { value: outage.refused() / 40, higherIsBetter: false },
        's drained after its end': { value: result.doneMs / 1000 - 40, higherIsBetter: false },
      };
    },
  };
}

/**
 * A webhook that refuses nothing, whose latency depends on the requests in flight at it (`latencyOf`, as the simulation's): N
 * messages with pacing and with `PACING=false`. The drain against `PACING=false`'s, and the requests that outlived the 10 s
 * request timeout (the webhook took them all the same: each is a duplicate once the message comes back).
 */
function loaded(name: string, count: number, latencyOf: (inFlight: number, draw: number) => number): SweepCase {
  return {
    name: `${name}, ${count} queued`,
    run: async (seed) => {
      const [paced, unpaced] = await Promise.all(
        [true, false].map((adaptive) =>
          simulate({
            messages: messagesOf(count),
            webhook: () => ({ status: 200 }),
            maxMs: 600_000,
            latencyOf,
            seed,
            pacing: { adaptive },
          }),
        ),
      );
      return {
        'speed × PACING=false': { value: (unpaced as SimResult).doneMs / (paced as SimResult).doneMs, higherIsBetter: true },
        timeouts: { value: (paced as SimResult).timeouts, higherIsBetter: false },
        'timeouts, PACING=false': { value: (unpaced as SimResult).timeouts, higherIsBetter: false },
      };
    },
  };
}

const CASES: readonly SweepCase[] = [
  // At 1,000/s, 50 ms answers would let five containers of ten in flight send no more than that.
  ...[20, 50, 100, 200].flatMap((rate) => [5, 50, 200].map((latencyMs) => capacity(rate, latencyMs))),
  capacity(1_000, 5),
  // A bucket that also refuses some messages for their own sake.
  ...[0.05, 0.1].flatMap((randomShare) => [
    capacity(100, 20, { randomShare }),
    capacity(200, 20, { randomShare }),
    capacity(1_000, 5, { randomShare }),
  ]),
  perMessage('5 % at random, Retry-After: 1', 5, ...refusingAtRandom(0.05, 1)),
  perMessage('20 % at random, Retry-After 1 s to 1 h', 5, ...refusingAtRandom(0.2, 'any')),
  ...[50, 100, 200].map((latencyMs) => perMessage('10 % at random, Retry-After: 1', latencyMs, ...refusingAtRandom(0.1, 1))),
  ...[0.2, 0.3, 0.4, 0.5].map((share) => perMessage(`${100 * share} % at random, Retry-After: 1`, 50, ...refusingAtRandom(share, 1))),
  perMessage('30 % at random, Retry-After: 1', 200, ...refusingAtRandom(0.3, 1)),
  perMessage('30 % at random, Retry-After: 5', 50, ...refusingAtRandom(0.3, 5)),
  perMessage('45 % at random, no Retry-After', 5, ...refusingAtRandom(0.45)),
  ...[20, 10, 5, 3].map((every) => perMessage(`one tenant in ${every} over a quota of 10/s`, 50, ...overQuota(every))),
  ...[10, 5].map((every) => perMessage(`one tenant in ${every} over a quota of 10/s`, 200, ...overQuota(every))),
  // Refusals that begin after a clean start (the first 1,000 messages taken), as a token bucket's flood does.
  ...[5, 200].map((latencyMs) => perMessage('10 % at random from the 1,000th message', latencyMs, ...refusingAtRandom(0.1, 1, 1_000))),
  perMessage('40 % at random from the 1,000th message', 5, ...refusingAtRandom(0.4, 1, 1_000)),
  ...[5, 50].map((latencyMs) => perMessage('one tenant in 3 over a quota of 10/s, 200 deep', latencyMs, ...overQuota(3, 200))),
  perMessage('one tenant in 20 always refused, Retry-After: 3600', 5, ...tenantRefused(20, 3600)),
  ...[5, 200].map((latencyMs) => perMessage("one tenant's 20 %, Retry-After 1 s to 1 h", latencyMs, ...tenantRefused(5, 'any'))),
  // That tenant's backlog at the head of the queue, long enough to hold the endpoint: in both orders a queue may hand it out.
  ...[2_000, 3_500].flatMap((backlog) =>
    [5, 50, 200].flatMap((latencyMs) =>
      (['lowest-numbered', 'oldest-visible'] as const).map((order) =>
        perMessage(
          `that tenant's backlog of ${backlog} first, Retry-After: 3600`,
          latencyMs,
          (i) => (i < backlog ? 'refused' : `t${i % 7}`),
          tenantRefused(20, 3600)[1],
          order,
        ),
      ),
    ),
  ),
  // The operator's ceiling at a small bucket, with and without pacing.
  ...[10, 20].flatMap((rate) =>
    [5, 200].flatMap((latencyMs) => [true, false].map((adaptive) => capacity(rate, latencyMs, { ceiling: { share: 0.9, adaptive } }))),
  ),
  // Other capacity limiters: windows of requests per second, fixed to the clock or sliding (5 containers of 10 in flight at
  // 200 ms send no more than 250/s: 1,000/s at 5 ms only).
  ...(['fixed', 'sliding'] as const).flatMap((kind) => [
    ...[50, 200].flatMap((rate) => [5, 200].map((latencyMs) => rateWindow(kind, rate, latencyMs))),
    rateWindow(kind, 1_000, 5),
    rateWindow(kind, 200, 5, false),
  ]),
  // The hold's own neighbours: a webhook refusing everything is asked little, and drained soon once it takes requests again.
  ...[5, 50].map(refusingEverything),
  ...[5, 100].map(outage),
  // Webhooks that slow down rather than refuse: more in flight only queues at one that takes 4/s (250 ms a request, one at a
  // time) or 160/s (eight workers of 50 ms); none at one that is slow, or uneven, whatever the load.
  loaded('one at a time, 250 ms each', 150, (inFlight, draw) => (inFlight + 1) * 250 + 20 * draw),
  loaded('eight workers of 50 ms', 2_000, (inFlight, draw) => Math.ceil((inFlight + 1) / 8) * 50 + 10 * draw),
  loaded('1 s, whatever the load', 1_000, (_, draw) => 900 + 200 * draw),
  loaded('5 s, whatever the load', 300, (_, draw) => 4_500 + 1_000 * draw),
  loaded('50 to 950 ms, whatever the load', 1_000, (_, draw) => 50 + 900 * draw),
];

async function main(): Promise<void> {
  const option = (name: string): string | undefined => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const seeds = Array.from({ length: Number(option('seeds') ?? 8) }, (_, i) => i + 1);
  const only = option('only')?.split(',');
  const each = process.argv.includes('--each');
  for (const sweepCase of CASES) {
    if (only !== undefined && !only.some((part) => sweepCase.name.includes(part))) continue;
    const bySeed: Figures[] = [];
    for (const seed of seeds) {
      const figures = await sweepCase.run(seed);
      bySeed.push(figures);
      if (each)
        for (const [name, { value }] of Object.entries(figures))
          console.log(`${sweepCase.name} (seed ${seed})\t${name}\t${value.toFixed(3)}`);
    }
    for (const [name, { higherIsBetter }] of Object.entries(bySeed[0] ?? {})) {
      const values = bySeed.map((figures) => (figures[name] as { value: number }).value);
      const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
      const [worst, best] = higherIsBetter ? [Math.min(...values), Math.max(...values)] : [Math.max(...values), Math.min(...values)];
      console.log([sweepCase.name, name, mean.toFixed(3), worst.toFixed(3), best.toFixed(3)].join('\t'));
    }
  }
}

await main();
