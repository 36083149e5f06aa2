/**
 * A client under test, in a plain `node` process (compiled by esbuild; no TypeScript loader, so
 * nothing but the client runs here). What it runs comes from its environment:
 *
 * - `BENCH_KIND`: see {@link ClientKind};
 * - `BENCH_HANDLER_FILE`, `BENCH_HANDLER_EXPORT`: the relay's bundle (kind `relay`), imported the
 *   way Lambda's runtime does, with the function's own environment (the template's) around it;
 * - `WEBHOOK_URL`, `MAX_CONCURRENCY`: the same variables the relay reads, for every kind;
 * - `BENCH_SIGNING_SECRET`: the relay's signing key (bare base64); the bare clients then add the
 *   same Standard Webhooks headers, computed before the clock starts (with `BENCH_SIGN_IN_LOOP=1`,
 *   the node:http loop computes them per request instead, inside the timing: signing's own cost).
 *
 * It serves `run`: one invocation, with its wall time, CPU and failures.
 */
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { pathToFileURL } from 'node:url';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { loadConfig } from '../lambda/config';
import { buildDeliveryRequest } from '../lambda/request';
import { signDelivery } from '../lambda/signing';
import { disableAllocationSitePretenuring } from '../lambda/v8-tuning';
import { createLambdaContext } from '../local/event-source';
import { type ClientApi, type ClientKind, type ClientReady, type RunRequest, type RunResult, serveParent } from './protocol';

// biome-ignore lint/suspicious/noConfusingVoidType: a Lambda handler may return nothing (every record succeeded), as Lambda's own type says
type Handler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined | void>;
/** One prepared POST for the bare clients: everything computed before the clock starts. */
interface Prepared {
  /** The message id, for signing inside the loop. */
  readonly id: string;
  readonly headers: Record<string, string>;
  /** The headers as the relay sends them: node:http's flat list, `Host` first. */
  readonly list: string[];
  readonly body: Buffer;
}
/** Gets an invocation ready (untimed) and returns its timed part, which resolves with the records that failed. */
type Client = (event: SQSEvent, started: BigInt64Array | undefined, timeoutMs: number) => () => Promise<number>;

const env = process.env;
const kind = env.BENCH_KIND as ClientKind;
const webhookUrl = new URL(env.WEBHOOK_URL ?? '');
const concurrency = Number(env.MAX_CONCURRENCY ?? '10');
/** The relay's configuration from the same environment: the bare clients send the requests it builds. */
const relayConfig = loadConfig(env);
const signingKey = env.BENCH_SIGNING_SECRET ? Buffer.from(env.BENCH_SIGNING_SECRET, 'base64') : undefined;
const signInLoop = env.BENCH_SIGN_IN_LOOP === '1' && signingKey !== undefined;

/** A handler, invoked as Lambda's runtime does; a stamp run records when it first reads each record. */
function handlerClient(handler: Handler): Client {
  return (event, started, timeoutMs) => {
    if (started !== undefined) stampOnFirstRead(event.Records, started);
    const context = createLambdaContext(timeoutMs, env.AWS_LAMBDA_FUNCTION_NAME);
    return async () => (await handler(event, context))?.batchItemFailures.length ?? 0;
  };
}

/** Makes `record.attributes` stamp the time of its first read: the relay's first step on a record. */
function stampOnFirstRead(records: SQSRecord[], started: BigInt64Array): void {
  records.forEach((record, index) => {
    const attributes = record.attributes;
    let seen = false;
    Object.defineProperty(record, 'attributes', {
      enumerable: true,
      configurable: true,
      get() {
        if (!seen) {
          seen = true;
          started[index] = process.hrtime.bigint();
        }
        return attributes;
      },
    });
  });
}

/** A bare loop: the relay's requests prepared, then `post`ed by `concurrency` workers from one cursor (the relay's pool's shape). */
function bareClient(post: (prepared: Prepared) => Promise<number>): Client {
  return (event, started) => {
    const prepared = event.Records.map(prepare);
    return async () => {
      let next = 0;
      let failures = 0;
      const worker = async (): Promise<void> => {
        while (next < prepared.length) {
          const index = next++;
          if (started !== undefined) started[index] = process.hrtime.bigint();
          const status = await post(prepared[index] as Prepared);
          if (status < 200 || status > 299) failures += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, prepared.length) }, worker));
      return failures;
    };
  };
}

/** The relay's request for `record`, signed as the relay signs it when a key is configured. */
function prepare(record: SQSRecord): Prepared {
  const { headers: list, body } = buildDeliveryRequest(record, relayConfig);
  if (signingKey !== undefined && !signInLoop) {
    const signature = signDelivery([signingKey], record.messageId, Math.floor(Date.now() / 1000), body);
    list.push(...Object.entries(signature).flat());
  }
  const headers: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) headers[list[i] as string] = list[i + 1] as string;
  // Fetch and undici compute Host and Content-Length themselves (and may refuse them as headers).
  delete headers.Host;
  if (kind === 'bare-fetch') delete headers['Content-Length'];
  return { id: record.messageId, headers, list, body };
}

/** node:http with the relay's transmitter settings (keep-alive, one socket per concurrent request, LIFO), options worked out once. */
function httpPost(): (prepared: Prepared) => Promise<number> {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: concurrency, scheduling: 'lifo' });
  const options = {
    hostname: webhookUrl.hostname,
    port: webhookUrl.port,
    path: webhookUrl.pathname + webhookUrl.search,
    method: 'POST',
    agent,
  };
  /** The Standard Webhooks headers computed now, as the relay does per request. */
  const signed = ({ id, list, body }: Prepared): string[] => {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', signingKey as Buffer)
      .update(`${id}.${timestamp}.`)
      .update(body)
      .digest('base64');
    return [...list, 'webhook-id', id, 'webhook-timestamp', timestamp, 'webhook-signature', `v1,${signature}`];
  };
  return (prepared) =>
    new Promise((resolve, reject) => {
      const request = httpRequest({ ...options, headers: signInLoop ? signed(prepared) : prepared.list }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', reject);
      request.end(prepared.body);
    });
}

const CLIENTS: Readonly<Record<ClientKind, () => Promise<Client>>> = {
  async relay() {
    const module = (await import(pathToFileURL(env.BENCH_HANDLER_FILE ?? '').href)) as Record<string, unknown>;
    const exported = module[env.BENCH_HANDLER_EXPORT ?? 'handler'];
    if (typeof exported !== 'function') throw new Error(`${env.BENCH_HANDLER_FILE} exports no function ${env.BENCH_HANDLER_EXPORT}`);
    return handlerClient(exported as Handler);
  },
  peer: async () => handlerClient((await import('./peer')).createPeerHandler(webhookUrl.href, concurrency)),
  noop: async () => handlerClient(async () => ({ batchItemFailures: [] })),
  'bare-http': async () => bareClient(httpPost()),
  async transmitter() {
    const { WebhookTransmitter } = await import('../lambda/transmitter');
    const transmitter = new WebhookTransmitter(webhookUrl, concurrency);
    return bareClient(async ({ list, body }) => {
      const result = await transmitter.post(list, body, 10_000);
      return result.kind === 'response' ? result.status : 0;
    });
  },
  async 'bare-undici'() {
    const { Pool } = await import('undici');
    const connections = new Pool(webhookUrl.origin, { connections: concurrency });
    const path = webhookUrl.pathname + webhookUrl.search;
    return bareClient(async ({ headers, body }) => {
      const response = await connections.request({ path, method: 'POST', headers, body });
      await response.body.dump();
      return response.statusCode;
    });
  },
  'bare-fetch': async () =>
    bareClient(async ({ headers, body }) => {
      const response = await fetch(webhookUrl, { method: 'POST', headers, body });
      await response.arrayBuffer();
      return response.status;
    }),
};

/**
 * Runs `callgrind_control` on this process, once per option. It returns once valgrind has done
 * it: this process blocks meanwhile, and vgdb reaches a process blocked in a system call.
 */
function callgrind(...options: string[]): void {
  for (const option of options) execFileSync('callgrind_control', [option, String(process.pid)], { stdio: 'ignore' });
}

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
  return {
    records: event.Records.length,
    wallMs,
    cpuMicros: cpu.user + cpu.system,
    failures,
    ...(started && { started }),
    maxRssKiB: maxRSS,
  };
}

serveParent<ClientApi, ClientReady>(async () => {
  const before = performance.now();
  // The bare loops are the limits the relay is held to: they run with the V8 setting the relay's
  // handler module applies to itself (lambda/v8-tuning.ts), so a ratio compares the work each
  // does per record, not which of them V8's pretenuring happened to mislead. The peer, what a
  // user would write, runs as Node.js starts it.
  if (kind.startsWith('bare-') || kind === 'transmitter') disableAllocationSitePretenuring();
  const create = CLIENTS[kind];
  if (create === undefined) throw new Error(`unknown BENCH_KIND ${String(kind)}`);
  const client = await create();
  return {
    ready: { importMs: performance.now() - before, maxRssKiB: process.resourceUsage().maxRSS },
    api: { run: (request) => run(client, request) },
  };
});
