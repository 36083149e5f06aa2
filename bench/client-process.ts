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
 *   the node:http loop computes them per request instead, inside the timing: signing's own cost);
 *
 * It then answers `run` messages with one invocation each and its wall time, CPU and failures.
 */
import { createHmac } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { createLambdaContext } from '../local/event-source';
import type { ClientKind, FromClient, RunRequest, RunResult, ToClient } from './protocol';
import { loadConfig } from '../lambda/config';
import { buildDeliveryRequest } from '../lambda/request';
import { signDelivery } from '../lambda/signing';
import { disableAllocationSitePretenuring } from '../lambda/v8-tuning';

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
/** A bare client: POSTs every prepared request, `concurrency` at a time; returns the non-2xx count. */
type BareLoop = (prepared: readonly Prepared[], started: BigInt64Array | undefined) => Promise<number>;

const env = process.env;
const kind = env.BENCH_KIND as ClientKind;
const webhookUrl = new URL(env.WEBHOOK_URL ?? '');
const concurrency = Number(env.MAX_CONCURRENCY ?? '10');
/** The relay's configuration from the same environment: the bare clients send the requests it builds. */
const relayConfig = loadConfig(env);
const signingKey = env.BENCH_SIGNING_SECRET ? Buffer.from(env.BENCH_SIGNING_SECRET, 'base64') : undefined;
const signInLoop = env.BENCH_SIGN_IN_LOOP === '1' && signingKey !== undefined;

function send(message: FromClient): Promise<void> {
  return new Promise((resolve) => process.send?.(message, () => resolve()));
}

/** `concurrency` workers taking records from one cursor: the same shape as the relay's pool. */
async function pool(count: number, started: BigInt64Array | undefined, post: (index: number) => Promise<number>): Promise<number> {
  let next = 0;
  let failures = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      if (started !== undefined) started[index] = process.hrtime.bigint();
      const status = await post(index);
      if (status < 200 || status > 299) failures += 1;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return failures;
}

function bareHttp(): BareLoop {
  // The relay's transmitter settings (keep-alive, one socket per concurrent request, LIFO) and
  // node:http's cheapest call: options worked out once, headers as a flat list with the Host.
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
  const post = (prepared: Prepared): Promise<number> =>
    new Promise((resolve, reject) => {
      const { body } = prepared;
      const request = httpRequest({ ...options, headers: signInLoop ? signed(prepared) : prepared.list }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', reject);
      request.end(body);
    });
  return (prepared, started) => pool(prepared.length, started, (index) => post(prepared[index] as Prepared));
}

async function relayTransmitter(): Promise<BareLoop> {
  const { WebhookTransmitter } = await import('../lambda/transmitter');
  const transmitter = new WebhookTransmitter(webhookUrl, concurrency);
  return (prepared, started) =>
    pool(prepared.length, started, async (index) => {
      const { list, body } = prepared[index] as Prepared;
      const result = await transmitter.post(list, body, 10_000);
      return result.kind === 'response' ? result.status : 0;
    });
}

async function bareUndici(): Promise<BareLoop> {
  const { Pool } = await import('undici');
  const connections = new Pool(webhookUrl.origin, { connections: concurrency });
  const path = webhookUrl.pathname + webhookUrl.search;
  return (prepared, started) =>
    pool(prepared.length, started, async (index) => {
      const { headers, body } = prepared[index] as Prepared;
      const response = await connections.request({ path, method: 'POST', headers, body });
      await response.body.dump();
      return response.statusCode;
    });
}

function bareFetch(): BareLoop {
  return (prepared, started) =>
    pool(prepared.length, started, async (index) => {
      const { headers, body } = prepared[index] as Prepared;
      const response = await fetch(webhookUrl, { method: 'POST', headers, body });
      await response.arrayBuffer();
      return response.status;
    });
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

/**
 * Runs `callgrind_control` on this process, once per option. It returns once valgrind has done
 * it: this process blocks meanwhile, and vgdb reaches a process blocked in a system call.
 */
function callgrind(...options: string[]): void {
  for (const option of options) execFileSync('callgrind_control', [option, String(process.pid)], { stdio: 'ignore' });
}

let handler: Handler | undefined;
let bare: BareLoop | undefined;
/** The last event file read, and its text. */
let eventText: { file: string; text: string } | undefined;

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

async function run(request: RunRequest): Promise<RunResult> {
  let event: SQSEvent;
  if (request.event !== undefined) {
    event = request.event;
  } else {
    const file = request.eventFile ?? '';
    if (eventText?.file !== file) eventText = { file, text: readFileSync(file, 'utf8') };
    const { text } = eventText;
    event = JSON.parse(text) as SQSEvent; // what Lambda's runtime does with every event
  }
  const records = event.Records;
  const started = request.stamp === true ? new BigInt64Array(records.length) : undefined;
  let prepared: Prepared[] | undefined;
  if (bare !== undefined) {
    prepared = records.map(prepare);
  } else if (started !== undefined) {
    stampOnFirstRead(records, started);
  }
  const context = createLambdaContext(request.timeoutMs, env.AWS_LAMBDA_FUNCTION_NAME);
  if (request.countInstructions === true) callgrind('--instr=on', '--zero');
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  let failures: number;
  if (bare !== undefined && prepared !== undefined) {
    failures = await bare(prepared, started);
  } else {
    const response = await (handler as Handler)(event, context);
    failures = response?.batchItemFailures.length ?? 0;
  }
  const wallMs = performance.now() - wallBefore;
  if (request.countInstructions === true) callgrind('--dump', '--instr=off');
  const cpu = process.cpuUsage(cpuBefore);
  return {
    type: 'result',
    id: request.id,
    records: records.length,
    wallMs,
    cpuMicros: cpu.user + cpu.system,
    failures,
    ...(started === undefined ? {} : { started }),
    maxRssKiB: process.resourceUsage().maxRSS,
  };
}

async function init(): Promise<void> {
  const before = performance.now();
  // The bare loops are the limits the relay is held to: they run with the V8 setting the relay's
  // handler module applies to itself (lambda/v8-tuning.ts), so a ratio compares the work each
  // does per record, not which of them V8's pretenuring happened to mislead. The peer, what a
  // user would write, runs as Node.js starts it.
  if (kind.startsWith('bare-') || kind === 'transmitter') disableAllocationSitePretenuring();
  if (kind === 'relay') {
    const module = (await import(pathToFileURL(env.BENCH_HANDLER_FILE ?? '').href)) as Record<string, unknown>;
    const exported = module[env.BENCH_HANDLER_EXPORT ?? 'handler'];
    if (typeof exported !== 'function') throw new Error(`${env.BENCH_HANDLER_FILE} exports no function ${env.BENCH_HANDLER_EXPORT}`);
    handler = exported as Handler;
  } else if (kind === 'peer') {
    const { createPeerHandler } = await import('./peer');
    handler = createPeerHandler(webhookUrl.href, concurrency);
  } else if (kind === 'bare-http') {
    bare = bareHttp();
  } else if (kind === 'transmitter') {
    bare = await relayTransmitter();
  } else if (kind === 'bare-undici') {
    bare = await bareUndici();
  } else if (kind === 'bare-fetch') {
    bare = bareFetch();
  } else if (kind === 'noop') {
    handler = async () => ({ batchItemFailures: [] });
  } else {
    throw new Error(`unknown BENCH_KIND ${String(kind)}`);
  }
  await send({ type: 'ready', importMs: performance.now() - before, maxRssKiB: process.resourceUsage().maxRSS });
}

const describe = (error: unknown): string => (error instanceof Error ? (error.stack ?? error.message) : String(error));

process.on('message', (raw) => {
  const message = raw as ToClient;
  if (message.type === 'exit') process.exit(0);
  run(message).then(send, (error: unknown) =>
    send({ type: 'result', id: message.id, records: 0, wallMs: 0, cpuMicros: 0, failures: 0, maxRssKiB: 0, error: describe(error) }),
  );
});
process.on('disconnect', () => process.exit(0));

init().catch(async (error: unknown) => {
  await send({ type: 'init-error', error: describe(error) });
  process.exit(1);
});
