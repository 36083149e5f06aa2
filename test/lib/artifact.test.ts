/**
 * The artifact that would be deployed works, not only the TypeScript source: the real
 * `cdk synth` (the CLI, no AWS credentials, no network), then the function's bundle taken out of
 * the cloud assembly and run in a plain `node` process with the environment the template gives
 * it, its DLQ_URL pointed at an SQS emulator built from the template's queue settings, against a
 * webhook on 127.0.0.1.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetFiles, isBuiltin, type ModuleGraph, moduleGraph, sourcesOf, staticClosure } from '../../testkit/asset';
import { deployedEnvironment, startTemplateEmulator } from '../../testkit/deployed';
import type { Emulator } from '../../testkit/emulator';
import {
  type LoadedBundle,
  startBundle,
  type SynthesizedBundle,
  synthesizeBundle,
  type TemplateQueues,
  templateQueues,
} from '../../testkit/synth';
import { type FakeSecretsManager, startSecretsManager } from '../../testkit/secrets-manager';
import { signatureHeadersOf, startWebhook, type TestWebhook } from '../../testkit/webhook';
import { Webhook } from 'standardwebhooks';

/** The body decides what the webhook answers. */
const REPLIES = {
  'deliver me': { status: 200 },
  'later, please': { status: 503, headers: { 'Retry-After': '600' } },
  'never this': { status: 422, body: 'unprocessable: no customer id' },
} as const;
type Body = keyof typeof REPLIES;

let bundle: SynthesizedBundle;
let queues: TemplateQueues;
let emulator: Emulator;
let webhook: TestWebhook;
let relay: LoadedBundle;
let environment: Record<string, string>;
let secretsManager: FakeSecretsManager;
let graph: ModuleGraph;
/** The asset's modules the process had loaded once the handler was imported, before any batch. */
let loadedAtInit: string[];
/** The signing key the stack's generated secret holds (48 letters and digits, as Secrets Manager would generate). */
const SIGNING_KEY = 'Zx8kQ2mN4pR6sT8vW0yA2cE4gI6kM8oQ0sU2wY4aC6eG8iK0';
const SIGNING_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:RelaySigningSecret-AbCdEf';

/** Receives until `count` messages are in flight, as the event source would before invoking. */
async function receiveBatch(count: number): Promise<SQSEvent> {
  const records: SQSEvent['Records'] = [];
  while (records.length < count) {
    const event = await emulator.receiveEvent(count - records.length, 1);
    records.push(...event.Records);
  }
  return { Records: records };
}

beforeAll(async () => {
  bundle = await synthesizeBundle();
  queues = templateQueues(bundle.template);
  emulator = await startTemplateEmulator(queues);
  webhook = await startWebhook((request) => REPLIES[request.body.toString() as Body] ?? { status: 500 });
  secretsManager = await startSecretsManager();
  secretsManager.secrets.set(SIGNING_SECRET_ARN, SIGNING_KEY);
  environment = deployedEnvironment(bundle, queues, emulator, SIGNING_SECRET_ARN, {
    // The only value changed: the deployed URL is not reachable from a test.
    WEBHOOK_URL: webhook.url,
    // Where the SDK finds Secrets Manager, as AWS_ENDPOINT_URL_SQS points it at the emulator.
    AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager.endpoint,
  });
  relay = await startBundle(bundle, { environment, aws: { endpoint: emulator.endpoint, region: emulator.region }, traceModuleLoads: true });
  loadedAtInit = relay.loadedModules();
  graph = await moduleGraph(bundle.bundleDir);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await webhook?.close();
  await secretsManager?.close();
  await emulator?.stop();
  if (bundle !== undefined) rmSync(bundle.assemblyDir, { recursive: true, force: true });
});

/** SDK clients the handler imports with import(): they must load on first use, never at cold start. */
const LAZY_SDK = /^node_modules\/@aws-sdk\/client-(sqs|secrets-manager)\//;

/** The asset's modules whose source maps name a file of the SQS or Secrets Manager client. */
function modulesWithLazySdk(files: Iterable<string>): string[] {
  return [...files].filter((file) => sourcesOf(bundle.bundleDir, file).some((source) => LAZY_SDK.test(source)));
}

describe('the synthesized artifact', () => {
  it('is what the template deploys: Node.js 24 running index.handler from a minified ESM bundle with a source map', () => {
    expect(bundle.runtime).toBe('nodejs24.x');
    expect(bundle.handlerFile).toBe(join(bundle.bundleDir, 'index.mjs'));
    expect(bundle.handlerExport).toBe('handler');
    const code = readFileSync(bundle.handlerFile, 'utf8');
    expect(code.length / code.split('\n').length).toBeGreaterThan(1000); // minified: a few very long lines
    expect(code).toMatch(/\/\/# sourceMappingURL=index\.mjs\.map\s*$/);
    expect(bundle.environment.NODE_OPTIONS).toBe('--enable-source-maps');
    // The maps name the project's files as the task root sees them, not this machine's paths.
    expect(sourcesOf(bundle.bundleDir, 'index.mjs')).toContain('lambda/handler.ts');
  });

  it('holds index.mjs, the chunks it loads and a source map beside each, nothing else (no node_modules)', () => {
    const files = assetFiles(bundle.bundleDir);
    const modules = files.filter((file) => file.endsWith('.mjs'));
    expect(modules).toContain('index.mjs');
    expect(modules.length).toBeGreaterThan(1); // split: the lazily loaded SDK clients are chunks of their own
    for (const file of modules) expect(file).toMatch(/^(index|chunks\/[\w-]+)\.mjs$/);
    expect(files).toEqual(modules.flatMap((file) => [file, `${file}.map`]).sort());
    // Every chunk is one some module imports: none is dead weight, none is missing.
    expect([...graph.keys()].sort()).toEqual(modules);
    for (const file of modules) {
      const name = file.split('/').pop() ?? file;
      expect(readFileSync(join(bundle.bundleDir, file), 'utf8').trimEnd().endsWith(`//# sourceMappingURL=${name}.map`)).toBe(true);
    }
  });

  it('carries the AWS SDK inside (no import the runtime would have to satisfy but Node.js built-ins)', () => {
    for (const module of graph.values()) {
      for (const specifier of [...module.externalStaticImports, ...module.externalDynamicImports])
        expect({ module: module.file, specifier, builtin: isBuiltin(specifier) }).toMatchObject({ builtin: true });
    }
    const sources = [...graph.keys()].flatMap((file) => sourcesOf(bundle.bundleDir, file));
    expect(sources.some((source) => source.startsWith('node_modules/@aws-sdk/client-sqs/'))).toBe(true);
    expect(sources.some((source) => source.startsWith('node_modules/@aws-sdk/client-secrets-manager/'))).toBe(true);
  });

  it('loads none of the SQS and Secrets Manager client code when the handler is imported: only index.mjs and what it imports statically', () => {
    expect(loadedAtInit[0]).toBe('index.mjs');
    expect(new Set(loadedAtInit)).toEqual(staticClosure(graph, 'index.mjs'));
    expect(modulesWithLazySdk(loadedAtInit)).toEqual([]);
    // What a cold start reads is a fraction of the asset.
    const bytes = (files: Iterable<string>): number => [...files].reduce((sum, file) => sum + (graph.get(file)?.bytes ?? 0), 0);
    expect(bytes(loadedAtInit)).toBeLessThan(bytes(graph.keys()) / 2);
  });

  it('passes cdk synth with no AWS credentials, no warnings and no cdk-nag finding', () => {
    expect(bundle.output).not.toMatch(/\[Warning|WARNING|ERROR|AwsSolutions-/);
  });

  it('gets its DLQ by URL and its redrive count from the template', () => {
    expect(environment.DLQ_URL).toBe(emulator.dlq.url);
    expect(environment.MAX_RECEIVE_COUNT).toBe(String(queues.maxReceiveCount));
  });
});

describe('a real batch through the artifact', () => {
  let ids: Record<Body, string>;
  let outcome: Awaited<ReturnType<LoadedBundle['invoke']>>;

  beforeAll(async () => {
    const bodies = Object.keys(REPLIES) as Body[];
    const sent = await Promise.all(
      bodies.map((body) => emulator.send(body, { attributes: { tenant: { DataType: 'String', StringValue: 'acme' } } })),
    );
    ids = Object.fromEntries(bodies.map((body, i) => [body, sent[i]])) as Record<Body, string>;
    const event = await receiveBatch(bodies.length);
    outcome = await relay.invoke(event, bundle.timeoutSeconds * 1000);
  });

  it('returns exactly the record to retry as a batch item failure', () => {
    expect(outcome).toEqual({ ok: true, response: { batchItemFailures: [{ itemIdentifier: ids['later, please'] }] } });
  });

  it('POSTs every message to the webhook, body byte for byte, with the Carrier headers of the template prefix', () => {
    expect(webhook.requests.map((r) => r.body.toString()).sort()).toEqual(Object.keys(REPLIES).sort());
    const prefix = String(bundle.environment.HEADER_PREFIX).toLowerCase();
    for (const request of webhook.requests) {
      expect(request.method).toBe('POST');
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers[`${prefix}message-id`]).toBe(ids[request.body.toString() as Body]);
      expect(request.headers[`${prefix}queue`]).toBe(emulator.queue.name);
      expect(request.headers[`${prefix}attr-tenant`]).toBe('acme');
      expect(request.headers['user-agent']).toMatch(/^sqs-webhook-relay\//);
    }
  });

  it('signs every request with the key in the stack’s Secrets Manager secret, verifiable by standardwebhooks', () => {
    expect(environment.SIGNING_SECRET_ARN).toBe(SIGNING_SECRET_ARN);
    const verifier = new Webhook(`whsec_${SIGNING_KEY}`);
    for (const request of webhook.requests) {
      expect(() => verifier.verify(request.body.toString(), signatureHeadersOf(request), { jsonParse: false })).not.toThrow();
    }
    expect(secretsManager.calls.count).toBeGreaterThanOrEqual(1);
    expect(secretsManager.calls.count).toBeLessThanOrEqual(3); // read once per cold start and cached, not per record
    expect(JSON.stringify(relay.jsonLogs())).not.toContain(SIGNING_KEY);
  });

  it('loaded the SQS and Secrets Manager clients from their chunks when the batch first needed them', () => {
    const loadedByBatch = relay.loadedModules().filter((file) => !loadedAtInit.includes(file));
    // The retry and the dead letter need SQS; the signature needs the key from Secrets Manager.
    const clients = loadedByBatch.flatMap((file) => sourcesOf(bundle.bundleDir, file)).filter((source) => LAZY_SDK.test(source));
    expect(clients.some((source) => source.startsWith('node_modules/@aws-sdk/client-sqs/'))).toBe(true);
    expect(clients.some((source) => source.startsWith('node_modules/@aws-sdk/client-secrets-manager/'))).toBe(true);
  });

  it('dead-letters the permanently refused message to the DLQ, saying why', async () => {
    const dead = await emulator.receive(emulator.dlq, 10, 1);
    expect(dead.map((m) => m.Body)).toEqual(['never this']);
    const reason = JSON.parse(dead[0]?.MessageAttributes?.['relay.dead-letter-reason']?.StringValue ?? '{}') as {
      status?: number;
      originalMessageId?: string;
    };
    expect(reason).toMatchObject({ status: 422, originalMessageId: ids['never this'] });
  });

  it('hides the retried message for the Retry-After the webhook asked for, beyond the queue default', () => {
    const state = emulator.server.inspectQueue(emulator.queue.name);
    const inflight = state?.messages.inflight ?? [];
    const later = inflight.find((m) => m.message.messageId === ids['later, please']);
    expect(later).toBeDefined();
    // 600 s asked for; the queue default (what SQS would use otherwise) is 180 s.
    expect((later?.visibilityDeadline ?? 0) - Date.now()).toBeGreaterThan(queues.visibilityTimeout * 1000);
  });

  it('emits the metrics the dashboard graphs: namespace, service (and cause) dimensions and names match the template', () => {
    const emf = relay.jsonLogs().filter((line) => typeof line._aws === 'object');
    expect(emf.length).toBeGreaterThan(0);
    const directives = emf.flatMap(
      (line) =>
        (line._aws as { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] })
          .CloudWatchMetrics,
    );
    expect(new Set(directives.map((d) => d.Namespace))).toEqual(new Set([bundle.environment.POWERTOOLS_METRICS_NAMESPACE]));
    // The batch's line by service; the dead letters also by cause (the dashboard's by-cause graph), a line each.
    const byCause = emf.filter((line) => line.cause !== undefined);
    for (const d of directives) expect([[['service']], [['service', 'cause']]]).toContainEqual(d.Dimensions);
    expect(byCause.map((line) => [line.cause, line.DeadLettered])).toEqual([['refused permanently', 1]]);
    for (const line of emf) expect(line.service).toBe(bundle.environment.POWERTOOLS_SERVICE_NAME);
    const total = (name: string): number =>
      emf
        .filter((line) => line.cause === undefined)
        .reduce((sum, line) => sum + (typeof line[name] === 'number' ? (line[name] as number) : 0), 0);
    expect({ delivered: total('Delivered'), retried: total('Retried'), deadLettered: total('DeadLettered') }).toEqual({
      delivered: 1,
      retried: 1,
      deadLettered: 1,
    });
    expect(directives.flatMap((d) => d.Metrics.map((m) => m.Name))).toContain('WebhookLatency');
  });

  it('logs JSON with the template service name and no message body at INFO', () => {
    const lines = relay.jsonLogs().filter((line) => typeof line.level === 'string');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line.service).toBe(bundle.environment.POWERTOOLS_SERVICE_NAME);
    const info = lines.filter((line) => line.level === 'INFO').map((line) => JSON.stringify(line));
    for (const body of Object.keys(REPLIES)) for (const line of info) expect(line).not.toContain(body);
  });
});

describe('the artifact with a configuration it must refuse', () => {
  it('fails its initialisation naming the variable, before any record', async () => {
    await expect(
      startBundle(bundle, {
        environment: { ...environment, WEBHOOK_URL: 'http://hooks.example.com/in' },
        aws: { endpoint: emulator.endpoint, region: emulator.region },
      }),
    ).rejects.toThrow(/WEBHOOK_URL/);
  });

  it('names a WEBHOOK_URL it cannot parse without its user:password, even one with a "/" in the password', async () => {
    const failure = startBundle(bundle, {
      environment: { ...environment, WEBHOOK_URL: 'https://admin:TOP/SECRET@hooks.example.com/in?token=abc123' },
      aws: { endpoint: emulator.endpoint, region: emulator.region },
    });
    await expect(failure).rejects.toThrow('WEBHOOK_URL must be an absolute https:// URL');
    const message = await failure.catch((error: Error) => error.message);
    expect(message).toContain('got "https://…@hooks.example.com/in?…"');
    expect(message).not.toMatch(/admin|TOP|SECRET|abc123/);
  });
});
