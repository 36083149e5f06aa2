/**
 * A client under test in a plain `node` process, serving `run`: one invocation, with its wall time, CPU and failures. Its environment
 * says what it runs: `BENCH_KIND` ({@link ClientKind}); `BENCH_HANDLER_FILE` and `BENCH_HANDLER_EXPORT`, the relay's bundle, imported as
 * Lambda's runtime does; `WEBHOOK_URL` and `MAX_CONCURRENCY`, as the relay reads them, for every kind; `BENCH_SIGNING_SECRET` (bare
 * base64), the key the bare loop signs with before the clock starts, or per request inside it with `BENCH_SIGN_IN_LOOP=1`.
 */
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { pathToFileURL } from 'node:url';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { loadConfig } from '../lambda/config';
import { buildDeliveryRequest } from '../lambda/request';
import { disableAllocationSitePretenuring } from '../lambda/v8-tuning';
import { createLambdaContext } from '../local/event-source';
import { type ClientApi, type ClientKind, type RunRequest, type RunResult, serveParent } from './protocol';

// biome-ignore lint/suspicious/noConfusingVoidType: a Lambda handler may return nothing (every record succeeded), as Lambda's own type says
type Handler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined | void>;
/** Gets an invocation ready (untimed) and returns its timed part, which resolves with the number of records that failed. */
type Client = (event: SQSEvent, started: BigInt64Array | undefined, timeoutMs: number) => () => Promise<number>;

const env = process.env;
const kind = env.BENCH_KIND as ClientKind;
const webhookUrl = new URL(env.WEBHOOK_URL ?? '');
const concurrency = Number(env.MAX_CONCURRENCY ?? '10');

/** A handler, invoked as Lambda's runtime does; a stamp run records when it first reads each record's `attributes` (its first step). */
function handlerClient(handler: Handler): Client {
  return (event, started, timeoutMs) => {
    if (started !== undefined) {
      event.Records.forEach((record, index) => {
        const attributes = record.attributes;
        let seen = false;
        Object.defineProperty(record, 'attributes', {
          enumerable: true,
          configurable: true,
          get: () => {
            if (!seen) started[index] = process.hrtime.bigint();
            seen = true;
            return attributes;
          },
        });
      });
    }
    const context = createLambdaContext(timeoutMs, env.AWS_LAMBDA_FUNCTION_NAME);
    return async () => (await handler(event, context))?.batchItemFailures.length ?? 0;
  };
}

/**
 * The relay's POSTs and nothing else: its requests built before the clock starts, sent with node:http and the transmitter's agent
 * settings (keep-alive, one socket per concurrent request, LIFO) by `concurrency` workers from one cursor (the relay's pool's shape).
 * The relay's limit, so it runs with the V8 setting the relay's handler applies to itself (lambda/v8-tuning.ts): a ratio then
 * compares the work per record, not which of them V8's pretenuring misled. (The peer runs as Node.js starts it.)
 */
function bareHttpClient(): Client {
  disableAllocationSitePretenuring();
  const relayConfig = loadConfig(env);
  const deliveryConfig = { ...relayConfig, webhookUrl: new URL(env.WEBHOOK_URL ?? '') };
  const key = env.BENCH_SIGNING_SECRET ? Buffer.from(env.BENCH_SIGNING_SECRET, 'base64') : undefined;
  const signInLoop = env.BENCH_SIGN_IN_LOOP === '1';
  /** The headers plus the Standard Webhooks ones computed now, as the relay does per request (none without a key). */
  const signed = (id: string, headers: string[], body: Buffer): string[] => {
    if (key === undefined) return headers;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
    return [...headers, 'webhook-id', id, 'webhook-timestamp', timestamp, 'webhook-signature', `v1,${signature}`];
  };
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, scheduling: 'lifo' });
  const { hostname, port, pathname, search } = webhookUrl;
  const options = { hostname, port, path: pathname + search, method: 'POST', agent };
  const post = (headers: string[], body: Buffer): Promise<number> =>
    new Promise((resolve, reject) => {
      const request = httpRequest({ ...options, headers }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', reject);
      request.end(body);
    });
  return (event, started) => {
    const prepared = event.Records.map((record) => {
      const { headers, body } = buildDeliveryRequest(record, deliveryConfig);
      return { id: record.messageId, body, headers: signInLoop ? headers : signed(record.messageId, headers, body) };
    });
    return async () => {
      let next = 0;
      let failures = 0;
      const worker = async (): Promise<void> => {
        while (next < prepared.length) {
          const index = next++;
          const { id, headers, body } = prepared[index] as (typeof prepared)[number];
          if (started !== undefined) started[index] = process.hrtime.bigint();
          const status = await post(signInLoop ? signed(id, headers, body) : headers, body);
          if (status < 200 || status > 299) failures += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, prepared.length) }, worker));
      return failures;
    };
  };
}

const CLIENTS: Readonly<Record<ClientKind, () => Promise<Client>>> = {
  async relay() {
    const module = (await import(pathToFileURL(env.BENCH_HANDLER_FILE ?? '').href)) as Record<string, unknown>;
    const handler = module[env.BENCH_HANDLER_EXPORT ?? 'handler'];
    if (typeof handler !== 'function') throw new Error(`${env.BENCH_HANDLER_FILE} exports no function ${env.BENCH_HANDLER_EXPORT}`);
    return handlerClient(handler as Handler);
  },
  peer: async () => handlerClient((await import('./peer')).createPeerHandler(webhookUrl.href, concurrency)),
  noop: async () => handlerClient(async () => ({ batchItemFailures: [] })),
  'bare-http': async () => bareHttpClient(),
};

/** Runs `callgrind_control` on this process per option; this process blocks meanwhile, which is how vgdb reaches it. */
const callgrind = (...options: string[]): void => {
  for (const option of options) execFileSync('callgrind_control', [option, String(process.pid)], { stdio: 'ignore' });
};

/** The last event file read, and its text. */
let eventText: { file: string; text: string } | undefined;

async function run(client: Client, request: RunRequest): Promise<RunResult> {
  if (eventText?.file !== request.eventFile) eventText = { file: request.eventFile, text: readFileSync(request.eventFile, 'utf8') };
  const event = JSON.parse(eventText.text) as SQSEvent;
  const started = request.stamp === true ? new BigInt64Array(event.Records.length) : undefined;
  const invocation = client(event, started, request.timeoutMs);
  if (request.countInstructions === true) callgrind('--instr=on', '--zero');
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const failures = await invocation();
  const wallMs = performance.now() - wallBefore;
  if (request.countInstructions === true) callgrind('--dump', '--instr=off');
  const cpu = process.cpuUsage(cpuBefore);
  const { maxRSS } = process.resourceUsage();
  const result = { records: event.Records.length, wallMs, cpuMicros: cpu.user + cpu.system, failures, maxRssKiB: maxRSS };
  return started === undefined ? result : { ...result, started };
}

// Created inside the promise, so an unknown kind or a failed import is the start's answer, not a crash.
const client = Promise.resolve().then(() => {
  const create = CLIENTS[kind];
  if (create === undefined) throw new Error(`unknown BENCH_KIND ${String(kind)}`);
  return create();
});
const ready = client.then(() => undefined); // readiness alone: a function does not cross
serveParent<ClientApi>({ run: async (request) => run(await client, request) }, ready);
