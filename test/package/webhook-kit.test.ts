/**
 * The webhook kit as a webhook owner installs it: `npm pack -w packages/webhook-kit` (which
 * builds it, through its `prepack`), the tarball installed alone into a fresh directory, then
 *
 * - what the tarball holds, and a manifest in step with the main package's that asks for nothing;
 * - `node_modules` holding the kit and nothing else;
 * - webhooks on plain `node` (`.mjs` and `.cjs`) verifying what the real relay sends them: signed,
 *   signed with a rotated-out key beside the current one, signed with another key, unsigned, and
 *   a `Retry-After` from the relay's receive count;
 * - its declarations in a strict TypeScript app that has no Node.js types.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { sqsRecord } from '../../testkit/records';
import { publishDryRun, typecheckApp, userEnv } from '../support/user-tools';
import { invoke, relayFor, unreachableSqs } from '../support/relay';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KIT = 'sqs-webhook-relay-webhook-kit';
const run = promisify(execFile);

const manifestOf = (dir: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;

let work: string;
let hook: string;
let installed: string;
let packedFiles: string[];

beforeAll(async () => {
  work = await mkdtemp(join(inject('scratchDir'), 'webhook-kit-'));
  hook = join(work, 'hook');
  // `npm pack -w` runs the kit's `prepack` (its build only), as `npm publish -w` would.
  const { stdout } = await run('npm', ['pack', '-w', 'packages/webhook-kit', '--pack-destination', work, '--json'], {
    cwd: ROOT,
    env: userEnv(),
    timeout: 120_000,
    maxBuffer: 16 << 20,
  });
  const [{ filename, files }] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
  packedFiles = files.map((file) => file.path).sort();
  mkdirSync(hook);
  writeFileSync(join(hook, 'package.json'), JSON.stringify({ name: 'my-webhook', private: true }));
  // Offline: a package with no dependencies needs nothing from the registry.
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', join(work, filename)], {
    cwd: hook,
    env: userEnv(),
    timeout: 60_000,
  });
  installed = join(hook, 'node_modules', KIT);
}, 180_000);

describe('the package', () => {
  test('holds the built kit, its licence, README and manifest, nothing else; npm publish --dry-run is clean', async () => {
    expect(packedFiles).toEqual([
      'LICENSE',
      'README.md',
      'dist/index.cjs',
      'dist/index.d.cts',
      'dist/index.d.ts',
      'dist/index.js',
      'package.json',
    ]);
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toBe(readFileSync(join(ROOT, 'LICENSE'), 'utf8'));
    const { files, warnings } = await publishDryRun(['-w', 'packages/webhook-kit']);
    expect(warnings).toEqual([]);
    // What a release would ship is what was packed.
    expect([...(files[KIT] ?? [])].sort()).toEqual(packedFiles);
  }, 90_000);

  test('its manifest is in step with the main package (version, licence, Node.js) and asks for no other package', () => {
    const kit = manifestOf(installed);
    const main = manifestOf(ROOT);
    expect(kit).toMatchObject({ name: KIT, version: main.version, license: main.license, engines: main.engines, sideEffects: false });
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies'])
      expect(kit[field]).toBeUndefined();
    expect(kit.exports).toEqual({
      '.': {
        import: { types: './dist/index.d.ts', default: './dist/index.js' },
        require: { types: './dist/index.d.cts', default: './dist/index.cjs' },
      },
      './package.json': './package.json',
    });
  });

  test('installed alone, node_modules holds the kit and nothing else', () => {
    const entries = readdirSync(join(hook, 'node_modules')).filter((name) => !name.startsWith('.'));
    expect(entries).toEqual([KIT]);
  });
});

describe('a webhook on plain node', () => {
  const CURRENT = `whsec_${Buffer.from('the webhook kit package test, current').toString('base64')}`;
  const ROTATED_OUT = `whsec_${Buffer.from('the webhook kit package test, retired').toString('base64')}`;
  const SOMEONE_ELSE = `whsec_${Buffer.from('a key the webhook never gave out!!').toString('base64')}`;
  const children: ChildProcess[] = [];

  afterAll(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  /** The webhook (after its import lines): one JSON line per request on stdout, what it answered and why. */
  const WEBHOOK = `
const secret = process.env.WEBHOOK_SECRET;
createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const delivery = verifyDelivery(secret, req.headers, body);
    const signed = verifySignature(secret, req.headers, body);
    let status = 204;
    if (delivery === undefined) status = 401;
    else if (body.toString().includes('"busy"')) {
      status = 429;
      res.setHeader('Retry-After', retryAfter(req.headers, cappedExponential(2, 300)));
    }
    const line = { status, id: delivery?.id ?? null, signed, retryAfter: res.getHeader('Retry-After') ?? null, body: body.toString() };
    process.stdout.write(JSON.stringify(line) + '\\n');
    res.writeHead(status).end();
  });
}).listen(0, '127.0.0.1', function () {
  process.stdout.write(JSON.stringify({ port: this.address().port }) + '\\n');
});
`;
  const SOURCES = {
    'webhook.mjs': `import { createServer } from 'node:http';\nimport { cappedExponential, retryAfter, verifyDelivery, verifySignature } from '${KIT}';\n${WEBHOOK}`,
    'webhook.cjs': `const { createServer } = require('node:http');\nconst { cappedExponential, retryAfter, verifyDelivery, verifySignature } = require('${KIT}');\n${WEBHOOK}`,
  };

  /** Writes `source` to `file` and starts it with plain node in the webhook's directory; its URL, and the JSON lines it writes. */
  async function startWebhook(
    file: string,
    source: string,
  ): Promise<{ url: string; lines: Record<string, unknown>[]; stderr: () => string }> {
    writeFileSync(join(hook, file), source);
    const child = spawn(process.execPath, [file], {
      cwd: hook,
      env: userEnv({ WEBHOOK_SECRET: CURRENT }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const lines: Record<string, unknown>[] = [];
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const complete = stdout.split('\n');
      stdout = complete.pop() ?? '';
      // JSON from the test's own webhooks; a plain line (the guide's webhook logs text) as { text }.
      for (const line of complete) lines.push(line.startsWith('{') ? (JSON.parse(line) as Record<string, unknown>) : { text: line });
    });
    const exited = once(child, 'exit').then(() => {
      throw new Error(`${file} exited: ${stderr}`);
    });
    const listening = (async () => {
      while (lines.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    })();
    await Promise.race([listening, exited]);
    const { port } = lines.shift() as { port: number };
    return { url: `http://127.0.0.1:${port}/`, lines, stderr: () => stderr };
  }

  for (const [file, source] of Object.entries(SOURCES)) {
    test(`${file}: verifies what the relay signs, during a key rotation too; refuses another key and no signature; answers Retry-After from the receive count`, async () => {
      const webhook = await startWebhook(file, source);
      // Every answer but a 2xx leaves the record to be retried; no call reaches SQS (there is none).
      const relay = (env: Record<string, string>) =>
        relayFor({ WEBHOOK_URL: webhook.url, PERMANENT_FAILURE: 'retry', ...env }, { sqs: unreachableSqs() });
      const signed = sqsRecord(1, { body: '{"order":1,"note":"ünïcode ✓"}' });
      const busy = sqsRecord(2, { body: '{"state":"busy"}', attributes: { ApproximateReceiveCount: '3' } });
      const failedIds = async (env: Record<string, string>, record: ReturnType<typeof sqsRecord>): Promise<string[]> =>
        (await invoke(relay(env), { Records: [record] })).batchItemFailures.map((failure) => failure.itemIdentifier);

      expect(await failedIds({ SIGNING_SECRET: CURRENT }, signed)).toEqual([]);
      // The relay signs with both keys while the webhook owner moves to the current one.
      expect(await failedIds({ SIGNING_SECRET: `${ROTATED_OUT} ${CURRENT}` }, signed)).toEqual([]);
      expect(await failedIds({ SIGNING_SECRET: SOMEONE_ELSE }, signed)).toEqual([signed.messageId]);
      expect(await failedIds({}, signed)).toEqual([signed.messageId]);
      expect(await failedIds({ SIGNING_SECRET: CURRENT }, busy)).toEqual([busy.messageId]);

      const verified = { status: 204, id: signed.messageId, signed: true, retryAfter: null, body: signed.body };
      const refused = { status: 401, id: null, signed: false, retryAfter: null, body: signed.body };
      expect(webhook.lines).toEqual([
        verified,
        verified,
        refused,
        refused,
        // 2 · 2^(3−1) seconds: the third receive, as the relay's X-Carrier-Receive-Count says.
        { status: 429, id: busy.messageId, signed: true, retryAfter: '8', body: busy.body },
      ]);
      expect(webhook.stderr()).toBe('');
    }, 60_000);
  }

  test("docs/webhook-owners.md's complete webhook runs as written: it handles each message once, and refuses what is unsigned", async () => {
    const guide = readFileSync(join(ROOT, 'docs', 'webhook-owners.md'), 'utf8');
    const code = /```js\n([\s\S]*?)```/.exec(guide.slice(guide.indexOf('## The webhook kit')))?.[1] ?? '';
    expect(code).toContain(`from '${KIT}'`);
    expect(code).toContain('.listen(8080)');
    // Only the port changes (a free one, announced): the rest, isBusy and handle included, runs as printed.
    const announce = "function () { process.stdout.write(JSON.stringify({ port: this.address().port }) + '\\n'); }";
    const runnable = code.replace('.listen(8080)', `.listen(0, '127.0.0.1', ${announce})`);
    const webhook = await startWebhook('guide.mjs', runnable);
    const record = sqsRecord(3, { body: '{"order":3}' });
    const relay = (env: Record<string, string>) =>
      relayFor({ WEBHOOK_URL: webhook.url, PERMANENT_FAILURE: 'retry', ...env }, { sqs: unreachableSqs() });
    const failedIds = async (env: Record<string, string>): Promise<string[]> =>
      (await invoke(relay(env), { Records: [record] })).batchItemFailures.map((failure) => failure.itemIdentifier);
    expect(await failedIds({ SIGNING_SECRET: CURRENT })).toEqual([]);
    // The same message again (a retry whose answer was lost): acknowledged, not handled twice.
    expect(await failedIds({ SIGNING_SECRET: CURRENT })).toEqual([]);
    expect(await failedIds({})).toEqual([record.messageId]);
    expect(webhook.lines).toEqual([{ text: `message ${record.messageId}: {"order":3}` }]);
    expect(webhook.stderr()).toBe('');
  }, 60_000);
});

test('its declarations type-check a strict TypeScript app with no Node.js types, from import and from require', async () => {
  const app = join(hook, 'typed');
  mkdirSync(app);
  const body = `const delivery: VerifiedDelivery | undefined = verifyDelivery('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { 'webhook-id': 'x' }, new Uint8Array());
export const id: string | undefined = delivery?.id;
// A Fetch-style handler's body, \`await request.arrayBuffer()\`, and any other view of the bytes.
export const fromFetch: boolean = verifySignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', {}, new ArrayBuffer(0));
export const fromView: boolean = verifySignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', {}, new DataView(new ArrayBuffer(0)));
// @ts-expect-error a parsed body is no raw body
verifySignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', {}, { order: 1 });
export const wait: string = retryAfter({ 'x-carrier-receive-count': '2' }, cappedExponential(2, 300, { jitter: true }));
// Were the declarations unresolved, everything would be \`any\` and these would not be errors.
// @ts-expect-error the strategies take numbers
cappedExponential('2');
// @ts-expect-error verifySignature answers a boolean
export const wrong: string = verifySignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', {}, '');
`;
  const imports = `import { cappedExponential, retryAfter, verifyDelivery, verifySignature, type VerifiedDelivery } from '${KIT}';\n`;
  writeFileSync(join(app, 'hook.mts'), `${imports}${body}`);
  writeFileSync(join(app, 'hook.cts'), `${imports}${body}`);
  // No @types/node: a webhook on another runtime's types, or none, still gets the kit's.
  expect(await typecheckApp(app, { lib: ['es2022'], skipLibCheck: false, types: [] }, ['hook.mts', 'hook.cts'], 90_000)).toBe('');
}, 120_000);
