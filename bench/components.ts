/**
 * Where the relay's per-record CPU goes, outside the HTTP client: each step the relay takes for
 * one record, timed alone in a loop (nanoseconds per call, median of several rounds). Run in its
 * own process by `run.ts` (its stdout takes the EMF and log lines the steps print); run alone
 * with `npx tsx bench/components.ts`.
 *
 * The steps come from the TypeScript source (the same code the bundle is built from); the
 * Powertools calls are the ones `relay.ts` makes per record.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Console } from 'node:console';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { CircuitBreaker } from '../lambda/breaker';
import { classify } from '../lambda/classify';
import { loadConfig } from '../lambda/config';
import { latencySample } from '../lambda/latency';
import { buildDeliveryRequest } from '../lambda/request';
import { CachedSecret } from '../lambda/secrets';
import { parseSigningKeys, signDelivery } from '../lambda/signing';
import { startSecretsManager } from '../testkit/secrets-manager';
import type { WebhookResult } from '../lambda/transmitter';
import { median } from './stats';
import { recordOf } from './records';

/** One measured step. */
export interface ComponentCost {
  readonly step: string;
  /** What the relay does that costs this. */
  readonly where: string;
  /** Nanoseconds per call, median of the rounds. */
  readonly nanos: number;
  /** How often the relay pays it: per record, or per record not delivered. */
  readonly per: 'record' | 'failed record';
}

/** The marker of the one line of JSON results a child run prints last. */
export const RESULT_MARKER = 'BENCH_COMPONENTS ';

function time(iterations: number, rounds: number, step: (index: number) => unknown): number {
  let sink: unknown;
  for (let i = 0; i < Math.min(iterations, 2_000); i += 1) sink = step(i); // warm up (JIT)
  const perRound: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i += 1) sink = step(i);
    perRound.push(Number(process.hrtime.bigint() - start) / iterations);
  }
  if (sink === Symbol.for('never')) console.log(sink);
  return median(perRound);
}

/**
 * The signing key as the deployed relay reads it for every record: `CachedSecret.get()` from
 * Secrets Manager (the fake, on 127.0.0.1), a Powertools Parameters cache hit after the first.
 */
async function measureSecretReads(iterations: number, rounds: number, secret: string): Promise<ComponentCost[]> {
  const fake = await startSecretsManager();
  try {
    process.env.AWS_REGION ??= 'us-east-1';
    process.env.AWS_ACCESS_KEY_ID ??= 'test';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
    const secretId = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:bench';
    fake.secrets.set(secretId, secret);
    const fromSecretsManager = new CachedSecret({ kind: 'secrets-manager', secretId }, 'signing secret', parseSigningKeys, 300);
    const literal = new CachedSecret({ kind: 'literal', value: secret }, 'signing secret', parseSigningKeys, 300);
    await fromSecretsManager.get();
    return [
      {
        step: 'read the signing key',
        where: 'secrets.ts CachedSecret.peek(), Secrets Manager source, value cached',
        per: 'record',
        nanos: time(iterations, rounds, () => fromSecretsManager.peek()),
      },
      {
        step: '(same, key given as a value)',
        where: 'secrets.ts CachedSecret.peek(), literal source (`SIGNING_SECRET`)',
        per: 'record',
        nanos: time(iterations, rounds, () => literal.peek()),
      },
    ];
  } finally {
    await fake.close();
  }
}

/** Measures every step; `iterations` calls per round. */
export async function measureComponents(iterations = 20_000, rounds = 5): Promise<ComponentCost[]> {
  const secret = randomBytes(36).toString('base64');
  const config = loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/in', SIGNING_SECRET: secret });
  const keys = parseSigningKeys(secret);
  const records = Array.from({ length: 1_000 }, (_, index) => recordOf(index));
  const requests = records.map((record) => buildDeliveryRequest(record, config));
  const ok: WebhookResult = { kind: 'response', status: 200, retryAfter: undefined, excerpt: '', latencyMs: 1.2 };
  const refused: WebhookResult = { kind: 'response', status: 429, retryAfter: '600', excerpt: '', latencyMs: 1.2 };
  // The relay's own Metrics and Logger setup (relay.ts), writing where Lambda's stdout would be.
  const metrics = new Metrics({ namespace: 'SqsWebhookRelay', serviceName: 'SqsWebhookRelay' });
  const logger = new Logger({ serviceName: 'SqsWebhookRelay' });
  const breaker = new CircuitBreaker(config.breaker);
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  // A discarding stream in place of stdout: the formatting is the relay's cost, the write the runtime's.
  Object.defineProperty(logger, 'console', { value: new Console({ stdout: sink, stderr: sink }) });
  const now = Date.now();
  const costs: ComponentCost[] = [];
  const add = (step: string, where: string, per: ComponentCost['per'], fn: (index: number) => unknown, count = iterations): void => {
    costs.push({ step, where, per, nanos: time(count, rounds, fn) });
  };
  add('build the request', 'request.ts buildDeliveryRequest (headers, body Buffer)', 'record', (i) =>
    buildDeliveryRequest(records[i % 1_000] as (typeof records)[number], config),
  );
  add('sign it', 'signing.ts signDelivery (HMAC-SHA256 over id.timestamp.body)', 'record', (i) => {
    const request = requests[i % 1_000] as (typeof requests)[number];
    return signDelivery(keys, records[i % 1_000]?.messageId ?? '', Math.floor(now / 1000), request.body);
  });
  costs.push(...(await measureSecretReads(iterations, rounds, secret)));
  // Per batch: the 10,000 latencies reduced to 99 values, added to the batch's one metric line.
  const batchLatencies = Array.from({ length: 10_000 }, (_, index) => (index * 7_919) % 997);
  costs.push({
    step: 'latency metric',
    where: 'relay.ts + latency.ts: latencySample() of a 10,000-record batch, 100 metrics.addMetric(WebhookLatency), one flush; ÷ 10,000',
    per: 'record',
    nanos:
      time(20, rounds, () => {
        for (const value of latencySample(batchLatencies)) metrics.addMetric('WebhookLatency', MetricUnit.Milliseconds, value);
        metrics.publishStoredMetrics();
      }) / batchLatencies.length,
  });
  add('breaker permit + record', 'breaker.ts permit() and record() of a 200', 'record', () => {
    breaker.permit(now);
    return breaker.record(ok, false, now);
  });
  add('classify', 'classify.ts classify() of a 200', 'record', () => classify(ok, config, 1, now));
  add('classify a 429', 'classify.ts classify() of a 429 + Retry-After', 'failed record', () => classify(refused, config, 1, now));
  add('log line', 'relay.ts logger.info("Message not delivered…") — Powertools Logger, JSON', 'failed record', (i) =>
    logger.info('Message not delivered; returned to the queue', {
      messageId: records[i % 1_000]?.messageId,
      outcome: 'retry',
      receiveCount: 1,
      status: 429,
      delaySeconds: 600,
    }),
  );
  return costs;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('components.ts')) {
  const costs = await measureComponents();
  if (process.argv.includes('--json')) {
    process.stdout.write(`\n${RESULT_MARKER}${JSON.stringify(costs)}\n`);
  } else {
    for (const cost of costs)
      console.log(`${(cost.nanos / 1000).toFixed(2).padStart(8)} µs  per ${cost.per.padEnd(13)} ${cost.step} — ${cost.where}`);
  }
}
