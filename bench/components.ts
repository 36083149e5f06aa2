/**
 * Where the relay's per-record CPU goes, outside the HTTP client: each step the relay takes for
 * one record, from the TypeScript source the bundle is built from, timed alone in a loop
 * (nanoseconds per call, median of several rounds). Run in its own process by
 * scenarios/components.ts, since the steps print EMF lines; alone, `npx tsx bench/components.ts`.
 */
import { Console } from 'node:console';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { CircuitBreaker } from '../lambda/breaker';
import { classify } from '../lambda/classify';
import { loadConfig } from '../lambda/config';
import { latencySample } from '../lambda/latency';
import { buildDeliveryRequest } from '../lambda/request';
import { CachedSecret } from '../lambda/secrets';
import { parseSigningKeys, signDelivery } from '../lambda/signing';
import type { WebhookResult } from '../lambda/transmitter';
import { startSecretsManager } from '../testkit/secrets-manager';
import { recordOf } from './records';
import { median } from './stats';

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

/** The marker of the line of JSON results the measuring process prints last. */
export const RESULT_MARKER = 'BENCH_COMPONENTS ';

/** Measures every step; `iterations` calls per round. */
export async function measureComponents(iterations = 20_000, rounds = 5): Promise<ComponentCost[]> {
  const secret = randomBytes(36).toString('base64');
  const config = loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/in', SIGNING_SECRET: secret });
  const keys = parseSigningKeys(secret);
  const deliveries = Array.from({ length: 1_000 }, (_, index) => {
    const record = recordOf(index);
    return { record, request: buildDeliveryRequest(record, config) };
  });
  const delivery = (index: number): (typeof deliveries)[number] => deliveries[index % deliveries.length] as (typeof deliveries)[number];
  const ok: WebhookResult = { kind: 'response', status: 200, retryAfter: undefined, excerpt: '', latencyMs: 1.2 };
  const refused: WebhookResult = { kind: 'response', status: 429, retryAfter: '600', excerpt: '', latencyMs: 1.2 };
  // The relay's own Metrics and Logger setup (relay.ts); the Logger writes to a discarding stream
  // in place of stdout: the formatting is the relay's cost, the write the runtime's.
  const metrics = new Metrics({ namespace: 'SqsWebhookRelay', serviceName: 'SqsWebhookRelay' });
  const logger = new Logger({ serviceName: 'SqsWebhookRelay' });
  const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
  Object.defineProperty(logger, 'console', { value: new Console({ stdout: discard, stderr: discard }) });
  const breaker = new CircuitBreaker(config.breaker);
  const now = Date.now();
  // The signing key as the deployed relay reads it for every record: from Secrets Manager (the
  // fake, on 127.0.0.1), a Powertools Parameters cache hit after the first read.
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  const secretId = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:bench';
  const storedKey = new CachedSecret({ kind: 'secrets-manager', secretId }, 'signing secret', parseSigningKeys, 300);
  const givenKey = new CachedSecret({ kind: 'literal', value: secret }, 'signing secret', parseSigningKeys, 300);
  const secretsManager = await startSecretsManager();
  secretsManager.secrets.set(secretId, secret);
  await storedKey.get().finally(() => secretsManager.close());
  // Per batch: the 10,000 latencies reduced to 99 values, added to the batch's one metric line.
  const batchLatencies = Array.from({ length: 10_000 }, (_, index) => (index * 7_919) % 997);

  const costs: ComponentCost[] = [];
  /** Times `step` over `calls` calls a round, after a warm-up for the JIT; per record of the `records` a call handles. */
  const add = (step: string, where: string, per: ComponentCost['per'], run: (i: number) => unknown, calls = iterations, records = 1) => {
    let sink: unknown;
    for (let i = 0; i < Math.min(calls, 2_000); i += 1) sink = run(i);
    const perRound: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < calls; i += 1) sink = run(i);
      perRound.push(Number(process.hrtime.bigint() - start) / calls / records);
    }
    // Keeps the results alive, so that the JIT cannot drop the calls.
    if (sink === Symbol.for('never')) console.log(sink);
    costs.push({ step, where, per, nanos: median(perRound) });
  };
  add('build the request', 'request.ts buildDeliveryRequest (headers, body Buffer)', 'record', (i) =>
    buildDeliveryRequest(delivery(i).record, config),
  );
  add('sign it', 'signing.ts signDelivery (HMAC-SHA256 over id.timestamp.body)', 'record', (i) =>
    signDelivery(keys, delivery(i).record.messageId, Math.floor(now / 1000), delivery(i).request.body),
  );
  const peek = 'secrets.ts CachedSecret.peek()';
  add('read the signing key', `${peek}, Secrets Manager source, value cached`, 'record', () => storedKey.peek());
  add('(same, key given as a value)', `${peek}, literal source (\`SIGNING_SECRET\`)`, 'record', () => givenKey.peek());
  const latencyWhere = `relay.ts + latency.ts: latencySample() of a 10,000-record batch, 100 metrics.addMetric(WebhookLatency), one flush; ÷ 10,000`;
  const flushBatch = (): void => {
    for (const value of latencySample(batchLatencies)) metrics.addMetric('WebhookLatency', MetricUnit.Milliseconds, value);
    metrics.publishStoredMetrics();
  };
  add('latency metric', latencyWhere, 'record', flushBatch, 20, batchLatencies.length);
  add('breaker permit + record', 'breaker.ts permit() and record() of a 200', 'record', () => {
    breaker.permit(now);
    return breaker.record(ok, false, now);
  });
  add('classify', 'classify.ts classify() of a 200', 'record', () => classify(ok, config, 1, now));
  add('classify a 429', 'classify.ts classify() of a 429 + Retry-After', 'failed record', () => classify(refused, config, 1, now));
  add('log line', 'relay.ts logger.info("Message not delivered…") — Powertools Logger, JSON', 'failed record', (i) =>
    logger.info('Message not delivered; returned to the queue', {
      messageId: delivery(i).record.messageId,
      outcome: 'retry',
      receiveCount: 1,
      status: 429,
      delaySeconds: 600,
    }),
  );
  return costs;
}

if (process.argv[1]?.endsWith(join('bench', 'components.ts')))
  process.stdout.write(`\n${RESULT_MARKER}${JSON.stringify(await measureComponents())}\n`);
