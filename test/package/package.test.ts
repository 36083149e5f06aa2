/**
 * The package as its users install it: `npm pack` (which builds, through `prepack`), the tarball
 * installed into a fresh CDK app with the app's own aws-cdk-lib and constructs, then
 *
 * - a CDK user's synth (ESM and CommonJS apps) of `new WebhookRelay(...)`: the template, and
 *   the function's code being the packaged bundle, with no esbuild anywhere in the app;
 * - a TypeScript user's typecheck under `moduleResolution: NodeNext` (ESM and CommonJS files), and
 *   a strict app's without `skipLibCheck` (the declarations reach nothing but the CDK's);
 * - a webhook owner's plain `node` (`.mjs` and `.cjs`) verifying signatures with the kit;
 * - a daemon user's `npx sqs-webhook-relay`: `--help`, and relaying from an emulated queue to a
 *   127.0.0.1 webhook until SIGTERM.
 *
 * One pack and one install serve every test (they are the slow part: see the timings logged).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { signDelivery, parseSigningKeys } from '../../lambda/signing';
import { loadConfig } from '../../lambda/config';
import type { Env } from '../../lambda/env';
import { loadLocalSettings, STACK_ONLY_SETTINGS } from '../../local/settings';
import { version } from '../../package.json';
import { childEnv, sendMessages, until } from '../../testkit/relay-process';
import { type Emulator, startEmulator } from '../../testkit/emulator';
import { startWebhook, type TestWebhook } from '../../testkit/webhook';
import { publishDryRun, typecheckApp, userEnv } from '../support/user-tools';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const repoRequire = createRequire(join(ROOT, 'package.json'));
const versionOf = (name: string): string => (repoRequire(`${name}/package.json`) as { version: string }).version;

let work: string;
let app: string;
let installed: string;

beforeAll(async () => {
  work = await mkdtemp(join(inject('scratchDir'), 'package-'));
  app = join(work, 'app');
  const started = Date.now();
  // `npm pack` runs `prepack` (npm run build), as `npm publish` would.
  const { stdout } = await run('npm', ['pack', '--pack-destination', work, '--json'], {
    cwd: ROOT,
    env: userEnv(),
    timeout: 120_000,
    maxBuffer: 16 << 20,
  });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  const packed = Date.now();
  await run('mkdir', [app]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-cdk-app', private: true, type: 'module' }));
  // The app's own CDK, at the versions `npm ci` just put in the cache: --prefer-offline serves them from it.
  await run(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      join(work, filename),
      `aws-cdk-lib@${versionOf('aws-cdk-lib')}`,
      `constructs@${versionOf('constructs')}`,
      // What every TypeScript CDK app has (\`cdk init\` installs it): Node's types.
      `@types/node@${versionOf('@types/node')}`,
    ],
    { cwd: app, env: userEnv(), timeout: 120_000 },
  );
  installed = join(app, 'node_modules', 'sqs-webhook-relay');
  console.info(
    `package tests: npm pack (build included) ${((packed - started) / 1000).toFixed(1)} s, npm install ${((Date.now() - packed) / 1000).toFixed(1)} s`,
  );
}, 240_000);

/** The names a loader reads, in the order it reads them: it is run on an environment that records every lookup. */
function namesRead(load: (env: Env) => unknown, given: Readonly<Record<string, string>> = {}): string[] {
  const names = new Set<string>();
  const env = new Proxy({} as Env, {
    get(_target, key) {
      if (typeof key !== 'string') return undefined;
      names.add(key);
      return given[key];
    },
  });
  load(env);
  return [...names];
}

/** The variables --help must list: those of the function (read by `loadConfig`) and of the daemon itself (read by `loadLocalSettings`). */
function variablesRead(): { readonly function: string[]; readonly daemon: string[] } {
  // A valid webhook URL lets loadConfig read on past its only required variable.
  const fn = namesRead(loadConfig, { WEBHOOK_URL: 'https://example.invalid/' });
  const daemon = namesRead((env) => loadLocalSettings(env, false)).filter((name) => !fn.includes(name));
  return { function: fn, daemon };
}

describe('the package', () => {
  test('npm publish --dry-run is clean: no warning, and the files a user needs under the Apache-2.0 licence', async () => {
    // The build is the one `npm pack` just made (its prepack); the release step runs it again.
    const { files, warnings } = await publishDryRun();
    expect(warnings).toEqual([]);
    const paths = files['sqs-webhook-relay']!;
    expect([...new Set(paths.map((path) => path.split('/')[0]))].sort()).toEqual([
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'dist',
      'docs',
      'package.json',
    ]);
    for (const path of [
      'dist/index.js',
      'dist/index.cjs',
      'dist/webhook.js',
      'dist/webhook.d.ts',
      'dist/sqs-webhook-relay.js',
      'dist/types/lib/index.d.ts',
    ])
      expect(paths).toContain(path);
    expect(paths).toContain('dist/relay-function/index.mjs');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { license?: string };
    expect(manifest.license).toBe('Apache-2.0');
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toContain(
      'Apache License\n                           Version 2.0, January 2004',
    );
  }, 90_000);
});

describe('the construct library', () => {
  const appSource = (importLine: string): string => `${importLine}
const app = new App({ outdir: process.argv[2] });
const stack = new Stack(app, 'Orders');
new WebhookRelay(stack, 'Relay', {
  webhookUrl: 'https://hooks.example.com/sqs',
  maxReceiveCount: 3,
  timeout: Duration.seconds(20),
  alarmEmail: 'ops@example.com',
});
process.stdout.write(JSON.stringify(app.synth().getStackByName('Orders').template));
`;
  type Template = { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
  const ofType = (template: Template, type: string): [string, Record<string, unknown>][] =>
    Object.entries(template.Resources)
      .filter(([, resource]) => resource.Type === type)
      .map(([id, resource]) => [id, resource.Properties]);

  test('a fresh app synthesizes it from the tarball, with the packaged function bundle and no esbuild', async () => {
    // No bundler in the user's app: the function's code can only be the bundle the package ships.
    expect(existsSync(join(app, 'node_modules', 'esbuild'))).toBe(false);
    expect(() => createRequire(join(app, 'package.json')).resolve('esbuild')).toThrow();

    writeFileSync(
      join(app, 'app.mjs'),
      appSource("import { App, Duration, Stack } from 'aws-cdk-lib';\nimport { WebhookRelay } from 'sqs-webhook-relay';"),
    );
    writeFileSync(
      join(app, 'app.cjs'),
      appSource("const { App, Duration, Stack } = require('aws-cdk-lib');\nconst { WebhookRelay } = require('sqs-webhook-relay');"),
    );
    const [esm, cjs] = await Promise.all(
      ['app.mjs', 'app.cjs'].map((file) =>
        run(process.execPath, [file, join(work, `out-${file}`)], { cwd: app, env: userEnv(), timeout: 60_000, maxBuffer: 64 << 20 }),
      ),
    );
    const template = JSON.parse(esm!.stdout) as Template;
    // The CommonJS build is the same construct: the same template, asset hash included.
    expect(JSON.parse(cjs!.stdout)).toEqual(template);

    const queues = ofType(template, 'AWS::SQS::Queue');
    expect(queues).toHaveLength(2);
    const [dlqId] = queues.find(([, props]) => props.RedrivePolicy === undefined)!;
    const [, main] = queues.find(([, props]) => props.RedrivePolicy !== undefined)!;
    expect(main.RedrivePolicy).toEqual({ deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] }, maxReceiveCount: 3 });
    expect(main.VisibilityTimeout).toBe(120); // 6 × the 20-second timeout
    const alarms = ofType(template, 'AWS::CloudWatch::Alarm').map(([, props]) => props);
    expect(
      alarms.some((alarm) => alarm.MetricName === 'ApproximateNumberOfMessagesVisible' && JSON.stringify(alarm.Dimensions).includes(dlqId)),
    ).toBe(true);
    expect(ofType(template, 'AWS::SNS::Subscription').map(([, props]) => props.Endpoint)).toEqual(['ops@example.com']);

    const [[, fn]] = ofType(template, 'AWS::Lambda::Function') as [[string, Record<string, unknown>]];
    expect(fn).toMatchObject({ Runtime: 'nodejs24.x', Handler: 'index.handler', Timeout: 20 });
    expect((fn.Environment as { Variables: Record<string, string> }).Variables.WEBHOOK_URL).toBe('https://hooks.example.com/sqs');
    // The asset CDK staged for the function holds exactly the package's prebuilt bundle.
    const assetHash = /^([0-9a-f]{64})\.zip$/.exec((fn.Code as { S3Key: string }).S3Key)![1]!;
    const staged = join(work, 'out-app.mjs', `asset.${assetHash}`);
    const prebuilt = join(installed, 'dist', 'relay-function');
    const files = (dir: string): string[] =>
      readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name).slice(dir.length))
        .sort();
    expect(files(staged)).toEqual(files(prebuilt));
    expect(files(staged)).toContain('/index.mjs');
    for (const file of files(prebuilt)) expect(readFileSync(join(staged, file)).equals(readFileSync(join(prebuilt, file)))).toBe(true);
    // The bundle's User-Agent carries the package's version.
    expect(files(prebuilt).some((file) => readFileSync(join(prebuilt, file), 'utf8').includes(`"${version}"`))).toBe(true);
  }, 90_000);

  test('a fresh app puts it in its own VPC behind a NAT gateway with its own Elastic IP, from the tarball', async () => {
    // docs/operations.md's lines for a fixed egress address, as a user's app has them.
    writeFileSync(
      join(app, 'app-vpc.mjs'),
      `import { App, CfnOutput, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { WebhookRelay } from 'sqs-webhook-relay';
const app = new App({ outdir: process.argv[2] });
const stack = new Stack(app, 'Egress');
const egress = new ec2.CfnEIP(stack, 'EgressAddress');
const vpc = new ec2.Vpc(stack, 'Vpc', {
  maxAzs: 2,
  natGateways: 1,
  natGatewayProvider: ec2.NatProvider.gateway({ eipAllocationIds: [egress.attrAllocationId] }),
});
new WebhookRelay(stack, 'Relay', { webhookUrl: 'https://hooks.example.com/sqs', vpc });
new CfnOutput(stack, 'EgressIp', { value: egress.attrPublicIp });
process.stdout.write(JSON.stringify(app.synth().getStackByName('Egress').template));
`,
    );
    const { stdout } = await run(process.execPath, ['app-vpc.mjs', join(work, 'out-vpc')], {
      cwd: app,
      env: userEnv(),
      timeout: 60_000,
      maxBuffer: 64 << 20,
    });
    const template = JSON.parse(stdout) as Template & { Outputs: Record<string, unknown> };
    expect(ofType(template, 'AWS::EC2::NatGateway')).toHaveLength(1);
    const relayFunction = ofType(template, 'AWS::Lambda::Function').find(([, props]) =>
      String(props.Description).startsWith('sqs-webhook-relay'),
    )?.[1];
    const vpcConfig = relayFunction?.VpcConfig as { SubnetIds: unknown[]; SecurityGroupIds: unknown[] } | undefined;
    expect(vpcConfig?.SubnetIds).toHaveLength(2);
    expect(JSON.stringify(vpcConfig?.SubnetIds)).toMatch(/PrivateSubnet/);
    expect(vpcConfig?.SecurityGroupIds).toHaveLength(1);
    const actions = ofType(template, 'AWS::IAM::Policy').flatMap(([, props]) =>
      (props.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement.flatMap((statement) => [statement.Action].flat()),
    );
    expect(actions).toContain('ec2:CreateNetworkInterface');
    expect(template.Outputs.EgressIp).toEqual({ Value: { 'Fn::GetAtt': [expect.stringMatching(/^EgressAddress/), 'PublicIp'] } });
  }, 90_000);

  test('its declarations resolve for a TypeScript app with moduleResolution NodeNext, from import and from require', async () => {
    const body = `const stack = new Stack(new App(), 'S');
const relay = new WebhookRelay(stack, 'R', { webhookUrl: 'https://example.com', backoff: 'linear', requestTimeout: Duration.seconds(5) });
const url: string = relay.queue.queueUrl;
// A wrong prop type must be an error: were the declarations unresolved, everything would be \`any\`.
// @ts-expect-error maxReceiveCount is a number
new WebhookRelay(stack, 'Bad', { webhookUrl: 'https://example.com', maxReceiveCount: 'five' });
const props: WebhookRelayProps = { webhookUrl: url };
new WebhookRelayStack(new App(), 'Whole', { relay: props });
// The VPC props take the app's own aws-cdk-lib types.
new WebhookRelay(stack, 'InVpc', { webhookUrl: 'https://example.com', vpc: new ec2.Vpc(stack, 'Vpc'), vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS } });
`;
    writeFileSync(
      join(app, 'stack.mts'),
      `import { App, Duration, Stack } from 'aws-cdk-lib';\nimport * as ec2 from 'aws-cdk-lib/aws-ec2';\nimport { WebhookRelay, WebhookRelayStack, type WebhookRelayProps } from 'sqs-webhook-relay';\n${body}`,
    );
    writeFileSync(
      join(app, 'stack.cts'),
      `import { App, Duration, Stack } from 'aws-cdk-lib';\nimport * as ec2 from 'aws-cdk-lib/aws-ec2';\nimport { WebhookRelay, WebhookRelayStack, type WebhookRelayProps } from 'sqs-webhook-relay';\n${body}`,
    );
    writeFileSync(
      join(app, 'hook.cts'),
      "import { verifySignature, cappedExponential } from 'sqs-webhook-relay/webhook';\nconst ok: boolean = verifySignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { 'webhook-id': 'x' }, '{}');\n// @ts-expect-error the strategy takes numbers\ncappedExponential('2');\nexport { ok };\n",
    );
    expect(await typecheckApp(app, { skipLibCheck: true, types: [] }, ['stack.mts', 'stack.cts', 'hook.cts'])).toBe('');
  }, 90_000);

  test("the webhook kit's declarations resolve for an older TypeScript setup too: module CommonJS, moduleResolution node10", async () => {
    const older = join(app, 'older');
    mkdirSync(older);
    writeFileSync(
      join(older, 'hook.ts'),
      "import { verifySignature } from 'sqs-webhook-relay/webhook';\nconst ok: boolean = verifySignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { 'webhook-id': 'x' }, '{}');\n// @ts-expect-error the body is a string or bytes\nverifySignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', {}, 42);\nexport { ok };\n",
    );
    const options = { module: 'CommonJS', moduleResolution: 'node10', typeRoots: [], types: [], skipLibCheck: true };
    expect(await typecheckApp(older, options, ['hook.ts'])).toBe('');
  }, 90_000);

  test('a strict TypeScript app without skipLibCheck type-checks against its declarations', async () => {
    // The construct's declarations reach only the CDK's, never the function's runtime types
    // (Powertools, whose declarations import `aws-lambda`, which a CDK app does not install).
    const reached = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string): void => {
      if (reached.has(file)) return;
      reached.add(file);
      const source = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      for (const [, specifier] of source.matchAll(/(?:from\s+|import\()['"]([^'"]+)['"]/g)) {
        if (specifier!.startsWith('.')) visit(resolve(dirname(file), specifier!.replace(/\.js$/, '.d.ts')));
        else packages.add(`${specifier} (from ${relative(installed, file)})`);
      }
    };
    visit(join(installed, 'dist', 'types', 'lib', 'index.d.ts'));
    expect([...packages].filter((entry) => !/^(aws-cdk-lib|constructs)[/ ]/.test(entry))).toEqual([]);

    // An app as `cdk init` makes it, made stricter: no skipLibCheck, so every declaration the
    // package's types reach is checked.
    const strict = join(app, 'strict');
    mkdirSync(strict);
    const imports =
      "import { App, Duration, Stack } from 'aws-cdk-lib';\nimport { WebhookRelay, WebhookRelayStack, type WebhookRelayProps } from 'sqs-webhook-relay';\n";
    const body = `const stack = new Stack(new App(), 'S');
const relay = new WebhookRelay(stack, 'R', { webhookUrl: 'https://example.com', backoff: 'linear', permanentFailure: 'retry' });
const props: WebhookRelayProps = { webhookUrl: relay.queue.queueUrl, requestTimeout: Duration.seconds(5) };
new WebhookRelayStack(new App(), 'Whole', { relay: props });
`;
    writeFileSync(join(strict, 'stack.mts'), `${imports}${body}`);
    writeFileSync(join(strict, 'stack.cts'), `${imports}${body}`);
    writeFileSync(
      join(strict, 'hook.mts'),
      "import { verifySignature } from 'sqs-webhook-relay/webhook';\nexport const ok: boolean = verifySignature('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { 'webhook-id': 'x' }, '{}');\n",
    );
    // Every declaration checked takes a while: 15 s on an idle machine, a minute on a busy one.
    const strictOptions = { lib: ['es2022'], noImplicitReturns: true, skipLibCheck: false, types: ['node'] };
    expect(await typecheckApp(strict, strictOptions, ['stack.mts', 'stack.cts', 'hook.mts'], 150_000)).toBe('');
  }, 180_000);
});

describe('the webhook kit', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const body = '{"order":42,"note":"ünïcode"}';

  /** Deliveries signed by the relay's own signer and by the standardwebhooks package, and a tampered one. */
  function deliveries(): { headers: Record<string, string>; body: string; valid: boolean }[] {
    const now = Math.floor(Date.now() / 1000);
    const relaySigned = signDelivery(parseSigningKeys(secret), 'msg_relay', now, Buffer.from(body));
    const theirs = new Webhook(secret).sign('msg_theirs', new Date(now * 1000), body);
    const headersOf = (id: string, signature: string): Record<string, string> => ({
      'webhook-id': id,
      'webhook-timestamp': String(now),
      'webhook-signature': signature,
    });
    return [
      { headers: { ...relaySigned }, body, valid: true },
      { headers: headersOf('msg_theirs', theirs), body, valid: true },
      { headers: { ...relaySigned }, body: body.replace('42', '43'), valid: false },
    ];
  }

  test('plain node verifies signatures with it and gets the signed id, as ESM (.mjs) and as CommonJS (.cjs), from the tarball', async () => {
    const cases = deliveries();
    writeFileSync(join(app, 'deliveries.json'), JSON.stringify(cases));
    const check =
      "const cases = JSON.parse(readFileSync('deliveries.json', 'utf8'));\nprocess.stdout.write(JSON.stringify(cases.map((c) => [verifySignature(process.env.SECRET, c.headers, c.body), verifyDelivery(process.env.SECRET, c.headers, c.body)?.id ?? null])));\n";
    writeFileSync(
      join(app, 'verify.mjs'),
      `import { readFileSync } from 'node:fs';\nimport { verifyDelivery, verifySignature } from 'sqs-webhook-relay/webhook';\n${check}`,
    );
    writeFileSync(
      join(app, 'verify.cjs'),
      `const { readFileSync } = require('node:fs');\nconst { verifyDelivery, verifySignature } = require('sqs-webhook-relay/webhook');\n${check}`,
    );
    // The former path, deprecated, keeps working: the same kit, with a warning naming the path to use.
    writeFileSync(
      join(app, 'verify-receiver.mjs'),
      `import { readFileSync } from 'node:fs';\nimport { verifyDelivery, verifySignature } from 'sqs-webhook-relay/receiver';\n${check}`,
    );
    writeFileSync(
      join(app, 'verify-receiver.cjs'),
      `const { readFileSync } = require('node:fs');\nconst { verifyDelivery, verifySignature } = require('sqs-webhook-relay/receiver');\n${check}`,
    );
    for (const file of ['verify.mjs', 'verify.cjs', 'verify-receiver.mjs', 'verify-receiver.cjs']) {
      const { stdout, stderr } = await run(process.execPath, [file], { cwd: app, env: userEnv({ SECRET: secret }), timeout: 20_000 });
      // Each: verified, and the signed id handed back (for deduplication) only when verified.
      expect({ file, results: JSON.parse(stdout) }).toEqual({
        file,
        results: cases.map((c) => [c.valid, c.valid ? c.headers['webhook-id'] : null]),
      });
      const deprecation = /DeprecationWarning: 'sqs-webhook-relay\/receiver' is deprecated .*import 'sqs-webhook-relay\/webhook'/;
      if (file.startsWith('verify-receiver')) expect(stderr).toMatch(deprecation);
      else expect(stderr).toBe('');
    }
    // Nothing but Node's own modules: a webhook installs no dependency tree for it.
    for (const file of ['webhook.js', 'webhook.cjs']) {
      const source = readFileSync(join(installed, 'dist', file), 'utf8');
      const specifiers = [...source.matchAll(/(?:from\s+|require\(|import\()["']([^"']+)["']/g)].map((match) => match[1]);
      expect(specifiers.filter((specifier) => !specifier!.startsWith('node:'))).toEqual([]);
    }
  }, 60_000);
});

describe('the daemon', () => {
  let emulator: Emulator | undefined;
  let webhook: TestWebhook | undefined;
  let daemon: ChildProcess | undefined;

  afterAll(async () => {
    if (daemon !== undefined && daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGKILL');
    await webhook?.close();
    await emulator?.stop();
  });

  /** `npx sqs-webhook-relay …` in the app, as its user types it. */
  const npx = (args: string[], env: Record<string, string>) =>
    run('npx', ['--no-install', 'sqs-webhook-relay', ...args], {
      cwd: app,
      env: userEnv(childEnv(env) as Record<string, string>),
      timeout: 30_000,
    });

  test('--help lists every variable the relay and the daemon read, with the documentation beside it', async () => {
    const { stdout } = await npx(['--help'], {});
    const { function: fn, daemon: own } = variablesRead();
    // All but the deployed function's alone, which the daemon reads only to refuse them.
    for (const name of [...fn, ...own]) {
      if (name in STACK_ONLY_SETTINGS) expect(stdout).not.toContain(name);
      else expect(stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    }
    expect(stdout).toContain('QUEUE_URL');
    // Its meaning and default, from the settings registry.
    expect(stdout).toMatch(/^ {2}WEBHOOK_URL +where each message is POSTed/m);
    expect(stdout).toMatch(/^ {2}MAX_CONCURRENCY +webhook requests in flight .*\(default: 10\)$/m);
    expect((await npx(['--version'], {})).stdout.trim()).toBe(version);
    const refused = await npx(['--queue', 'x'], {}).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({ code: 2 });
  }, 60_000);

  test('without QUEUE_URL and without fauxqs (a production install) it refuses the sandbox in one line', async () => {
    const result = await npx([], { WEBHOOK_URL: 'http://127.0.0.1:9/hook' }).catch((error: { code: number; stderr: string }) => error);
    expect(result).toMatchObject({ code: 1 });
    // (npm's own warnings about this machine's npm configuration aside)
    const lines = (result as { stderr: string }).stderr
      .trim()
      .split('\n')
      .filter((line) => !line.startsWith('npm warn'));
    expect(lines).toEqual([expect.stringMatching(/^sqs-webhook-relay: QUEUE_URL is not set.*npm install fauxqs/)]);
  }, 60_000);

  /**
   * The installed bin, started as a supervisor or Docker's CMD starts it. Not through npx: npm
   * does not pass a SIGTERM sent to npx alone on to the command (a terminal's Ctrl-C reaches both,
   * being sent to the whole process group).
   */
  function startDaemon(env: Record<string, string>): {
    child: ChildProcess;
    output: string[];
    exited: Promise<[number | null, NodeJS.Signals | null]>;
  } {
    const child = spawn(join(app, 'node_modules', '.bin', 'sqs-webhook-relay'), [], {
      cwd: app,
      env: userEnv(
        childEnv({ AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', LOG_FORMAT: 'json', ...env }) as Record<string, string>,
      ),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    daemon = child;
    const output: string[] = [];
    child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    return { child, output, exited: once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]> };
  }

  test('relays from an existing queue to the webhook, then exits 0 on SIGTERM; and on SIGINT', async () => {
    emulator = await startEmulator({ keepEnvironment: true, maxReceiveCount: 5 });
    webhook = await startWebhook();
    const queueEnv = {
      QUEUE_URL: emulator.queue.url,
      AWS_ENDPOINT_URL_SQS: emulator.endpoint,
      AWS_REGION: emulator.region,
      WEBHOOK_URL: webhook.url,
    };
    const first = startDaemon({ ...queueEnv, SIGNING_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });

    const id = await emulator.send('{"hello":"from the package"}');
    const hook = webhook;
    await until(() => hook.requests.length === 1 && emulator!.counts(emulator!.queue).inflight === 0);
    const [request] = hook.requests;
    expect(request!.body.toString()).toBe('{"hello":"from the package"}');
    expect(request!.headers['x-carrier-message-id']).toBe(id);
    expect(request!.headers['user-agent']).toBe(`sqs-webhook-relay/${version}`);
    expect(request!.headers['webhook-signature']).toMatch(/^v1,/);

    // SIGTERM to the relay's process alone, as `docker stop` sends it to PID 1.
    first.child.kill('SIGTERM');
    const [code, signal] = await first.exited;
    expect({ code, signal, output: code === 0 ? '' : first.output.join('') }).toEqual({ code: 0, signal: null, output: '' });
    expect(first.output.join('')).toContain('"message":"Stopped"');
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
    expect(hook.requests).toHaveLength(1);

    // SIGINT (a Ctrl-C, or `kill -INT`) once it is polling: the same clean stop.
    const second = startDaemon(queueEnv);
    await until(() => second.output.join('').includes('Local relay ready'));
    second.child.kill('SIGINT');
    const [secondCode] = await second.exited;
    expect({ code: secondCode, output: secondCode === 0 ? '' : second.output.join('') }).toEqual({ code: 0, output: '' });
  }, 60_000);

  test('needs nothing at run time beyond its production dependencies (what the Docker image installs)', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const source = readFileSync(join(installed, 'dist', 'sqs-webhook-relay.js'), 'utf8');
    const packages = new Set(
      [...source.matchAll(/(?:from\s+|import\()["']([^"'.][^"']*)["']/g)]
        .map((match) => match[1]!)
        .filter((specifier) => !specifier.startsWith('node:'))
        .map((specifier) =>
          specifier
            .split('/')
            .slice(0, specifier.startsWith('@') ? 2 : 1)
            .join('/'),
        ),
    );
    // Its dependencies, and the sandbox's emulator, loaded only when installed; never the CDK.
    const allowed = new Set([...Object.keys(manifest.dependencies), 'fauxqs']);
    expect(manifest.peerDependenciesMeta.fauxqs).toEqual({ optional: true });
    expect([...packages].filter((name) => !allowed.has(name))).toEqual([]);
    expect(packages.has('@aws-sdk/client-sqs')).toBe(true);
    expect(source.startsWith('#!/usr/bin/env node\n')).toBe(true);
  });
});

describe('the dead-letter commands, installed', () => {
  let emulator: Emulator | undefined;
  let webhook: TestWebhook | undefined;
  const running = new Set<ChildProcess>();

  afterAll(async () => {
    for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await webhook?.close();
    await emulator?.stop();
  });

  /** `npx sqs-webhook-relay …` in the app, with no AWS credentials or endpoint: the queue URL on loopback is all it needs. */
  const npx = (args: string[], env: Record<string, string> = {}) =>
    run('npx', ['--no-install', 'sqs-webhook-relay', ...args], {
      cwd: app,
      env: userEnv(childEnv(env) as Record<string, string>),
      timeout: 120_000,
      maxBuffer: 16 << 20,
    });

  /** The installed daemon on the emulator's queue: its "ready" line, and a stop by SIGTERM that must exit 0. */
  function startRelay(env: Record<string, string>): { ready: () => Promise<Record<string, unknown>>; stop: () => Promise<void> } {
    const child = spawn(join(app, 'node_modules', '.bin', 'sqs-webhook-relay'), [], {
      cwd: app,
      env: userEnv(childEnv({ LOG_FORMAT: 'json', POLLERS: '4', BATCH_SIZE: '50', ...env }) as Record<string, string>),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = once(child, 'exit');
    const readyLine = (): string | undefined => output.split('\n').find((line) => line.includes('"Local relay ready"'));
    return {
      async ready() {
        await until(() => readyLine() !== undefined || child.exitCode !== null);
        return JSON.parse(readyLine() ?? '{}') as Record<string, unknown>;
      },
      async stop() {
        child.kill('SIGTERM');
        const [code] = (await exited) as [number | null];
        expect({ code, output: code === 0 ? '' : output }).toEqual({ code: 0, output: '' });
      },
    };
  }

  /** The installed daemon until `done()` holds (its WARN lines only: one per dead letter). */
  async function relayUntil(env: Record<string, string>, done: () => boolean): Promise<void> {
    const relay = startRelay({ LOG_LEVEL: 'WARN', ...env });
    await until(done);
    await relay.stop();
  }

  test('10,000 dead letters: summary says why, replay sends exactly those of one status back to the fixed webhook, under their ids', async () => {
    emulator = await startEmulator({ keepEnvironment: true, maxReceiveCount: 5 });
    const em = emulator;
    // The webhook refuses every message, for one of three reasons.
    const kinds = [
      { kind: 'missing', status: 404, count: 6_000 },
      { kind: 'invalid', status: 422, count: 3_000 },
      { kind: 'gone', status: 410, count: 1_000 },
    ];
    const bodies = kinds.flatMap(({ kind, count }) => Array.from({ length: count }, (_, i) => JSON.stringify({ order: i, kind })));
    const statusOf = (body: string): number => kinds.find(({ kind }) => body.includes(`"kind":"${kind}"`))?.status ?? 500;
    webhook = await startWebhook((request) => ({ status: statusOf(request.body.toString()), body: 'no such order' }));
    const hook = webhook;
    await sendMessages(em.sqs, em.queue.url, bodies.length, (index) => bodies[index] ?? '');
    const relayEnv = { QUEUE_URL: em.queue.url, WEBHOOK_URL: hook.url, SIGNING_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
    await relayUntil(relayEnv, () => em.counts(em.dlq).ready === bodies.length);
    const firstIds = new Map(hook.requests.map((request) => [request.body.toString(), request.headers['x-carrier-message-id']]));
    expect(firstIds.size).toBe(10_000);

    let started = Date.now();
    const summary = JSON.parse((await npx(['dead-letters', 'summary', '--queue-url', em.queue.url, '--json'])).stdout);
    const summarySeconds = (Date.now() - started) / 1000;
    expect(summary).toMatchObject({ read: 10_000, complete: true, byCause: [{ cause: 'refused permanently', count: 10_000 }] });
    expect(summary.byStatus).toEqual([
      { status: 404, count: 6_000 },
      { status: 422, count: 3_000 },
      { status: 410, count: 1_000 },
    ]);
    expect(summary.groups[0]).toMatchObject({
      status: 404,
      sample: { body: expect.stringContaining('"kind":"missing"'), response: 'no such order' },
    });
    expect(em.counts(em.dlq)).toEqual({ ready: 10_000, inflight: 0, delayed: 0 });

    const dry = JSON.parse(
      (await npx(['dead-letters', 'replay', '--queue-url', em.queue.url, '--status', '404', '--dry-run', '--json'])).stdout,
    );
    expect(dry).toMatchObject({ dryRun: true, replayed: 6_000, skipped: 4_000 });
    expect(em.counts(em.dlq).ready).toBe(10_000);

    // The webhook is fixed; the 404s go back.
    hook.respondWith(() => ({ status: 200 }));
    hook.requests.length = 0;
    started = Date.now();
    const replayed = await npx(['dead-letters', 'replay', '--queue-url', em.queue.url, '--status', '404', '--json']);
    const replaySeconds = (Date.now() - started) / 1000;
    expect(JSON.parse(replayed.stdout)).toMatchObject({ replayed: 6_000, skipped: 4_000, failed: 0, sentNotDeleted: 0, newMessageId: 0 });
    expect(em.counts(em.queue).ready).toBe(6_000);
    expect(em.counts(em.dlq).ready).toBe(4_000);
    console.info(
      `dead letters through the installed command: summary of 10,000 in ${summarySeconds.toFixed(1)} s, replay of 6,000 (4,000 skipped) in ${replaySeconds.toFixed(1)} s (npx's start included)`,
    );

    await relayUntil(relayEnv, () => hook.requests.length >= 6_000 && em.counts(em.queue).ready + em.counts(em.queue).inflight === 0);
    const delivered = hook.requests.map((request) => request.body.toString());
    expect(delivered.length).toBe(6_000);
    expect(new Set(delivered).size).toBe(6_000);
    expect(delivered.every((body) => body.includes('"kind":"missing"'))).toBe(true);
    // The webhook sees each under the id it saw the first time (sealed by the relay, checked by the relay).
    expect(hook.requests.filter((request) => request.headers['x-carrier-message-id'] !== firstIds.get(request.body.toString()))).toEqual(
      [],
    );
    expect(em.counts(em.dlq)).toEqual({ ready: 4_000, inflight: 0, delayed: 0 });
  }, 300_000);

  test('the daemon prints a send command and an AWS CLI line that work where it is installed', async () => {
    emulator ??= await startEmulator({ keepEnvironment: true, maxReceiveCount: 5 });
    webhook ??= await startWebhook();
    const em = emulator;
    const hook = webhook;
    hook.respondWith(() => ({ status: 200 }));
    hook.requests.length = 0;
    const relay = startRelay({ QUEUE_URL: em.queue.url, WEBHOOK_URL: hook.url });
    const ready = await relay.ready();
    // The relay reaches the emulator with dummy credentials: its CLI line carries them too.
    expect(ready.awsCliCommand).toMatch(
      /^AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test aws sqs send-message --endpoint-url http:\/\/127\.0\.0\.1:\d+ /,
    );
    expect(ready.sendCommand).toBe(`npx sqs-webhook-relay send --queue-url ${em.queue.url} '{"hello":"world"}'`);
    // Pasted into a shell in the app's directory, as printed, with no AWS credentials anywhere.
    const { stdout } = await run('sh', ['-c', String(ready.sendCommand)], {
      cwd: app,
      env: userEnv(childEnv({}) as Record<string, string>),
      timeout: 60_000,
    });
    const id = /^sent (\S+) to /m.exec(stdout)?.[1];
    await until(() => hook.requests.length > 0);
    expect(hook.requests.map((request) => [request.body.toString(), request.headers['x-carrier-message-id']])).toEqual([
      ['{"hello":"world"}', id],
    ]);
    await relay.stop();
    const { stdout: help } = await npx(['--help']);
    expect(help).toContain('sqs-webhook-relay send [BODY]');
    expect(help).toContain('npx sqs-webhook-relay dead-letters --help');
  }, 120_000);
});
