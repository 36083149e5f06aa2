/**
 * The deployable artifact, outside of AWS: `synthesizeBundle()` runs the real `cdk synth` (the
 * CLI, cdk.json's app command, no AWS credentials) into a fresh cloud assembly and finds the
 * function's bundled code and configuration in it; `startBundle()` loads that bundle in a plain
 * `node` child process, as Lambda's runtime would, with the environment the template gives the
 * function (tokens resolved to an emulator's values) and invokes it with SQS events.
 *
 * Nothing here depends on vitest: the benchmarks use it too.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { build } from 'esbuild';
import { insideDir } from './asset';

/** The repository root. */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The context of cdk.json (the feature flags): what the CLI gives the app, so an in-process
 * `new App({ context: projectContext() })` builds the same template as `cdk synth`.
 */
export function projectContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
  return { ...cdkJson.context };
}

/** A CloudFormation value: a literal or an intrinsic such as `{ Ref }` / `{ 'Fn::GetAtt' }`. */
export type CfnValue = string | number | boolean | null | CfnValue[] | { [key: string]: CfnValue };

/** A resource of a synthesized template. */
export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, CfnValue>;
  readonly Metadata?: Record<string, CfnValue>;
}

/** A synthesized CloudFormation template. */
export interface CfnTemplate {
  readonly Resources: Record<string, CfnResource>;
  readonly Outputs?: Record<string, { Value: CfnValue; Description?: string }>;
  readonly Parameters?: Record<string, Record<string, CfnValue>>;
}

/** What `synthesizeBundle()` found in the cloud assembly. */
export interface SynthesizedBundle {
  /** The cloud assembly directory (`cdk.out` equivalent). */
  readonly assemblyDir: string;
  readonly stackName: string;
  readonly template: CfnTemplate;
  /** Logical id of the relay function in the template. */
  readonly functionLogicalId: string;
  /** The function's asset directory: exactly what is zipped and uploaded to Lambda. */
  readonly bundleDir: string;
  /** The module Lambda loads for the template's `Handler` (e.g. `<bundleDir>/index.mjs`). */
  readonly handlerFile: string;
  /** The export Lambda calls (`handler` of `index.handler`). */
  readonly handlerExport: string;
  /** The template's runtime, e.g. `nodejs24.x`. */
  readonly runtime: string;
  readonly timeoutSeconds: number;
  readonly memorySize: number;
  /** The function's environment as the template states it; tokens are still intrinsics. */
  readonly environment: Record<string, CfnValue>;
  /** What `cdk synth` printed (stdout and stderr). */
  readonly output: string;
}

/** Options of {@link synthesizeBundle}. */
export interface SynthesizeOptions {
  /** Context passed as `-c key=value`. @default { webhookUrl: 'https://webhook.example.com/hook' } */
  readonly context?: Readonly<Record<string, string>>;
  /** Where the cloud assembly goes. @default a new temporary directory */
  readonly outdir?: string;
}

/** The context `synthesizeBundle()` uses by default: a deployable, but never contacted, URL. */
export const DEFAULT_SYNTH_CONTEXT = { webhookUrl: 'https://webhook.example.com/hook' } as const;

/**
 * The process environment of a machine with no AWS account: every `AWS_*` and `CDK_*` variable
 * removed, so nothing can reach for credentials, a profile, a region or an endpoint.
 */
export function offlineEnvironment(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(base).filter(([name]) => !/^(AWS_|CDK_)/.test(name)));
}

function run(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, output }));
  });
}

/**
 * Runs `cdk synth` exactly as an operator would from the repository root (cdk.json's app
 * command, the CLI from devDependencies), with no AWS credentials or region, into `outdir`.
 * @returns the assembly directory and what the CLI printed
 * @throws when the CLI exits non-zero, with its output
 */
export async function cdkSynth(options: SynthesizeOptions = {}): Promise<{ assemblyDir: string; output: string }> {
  const assemblyDir = options.outdir ?? mkdtempSync(join(tmpdir(), 'relay-assembly-'));
  const context = options.context ?? DEFAULT_SYNTH_CONTEXT;
  const cli = join(PROJECT_ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk');
  const args = [
    cli,
    'synth',
    '--quiet',
    '--no-notices',
    '--output',
    assemblyDir,
    ...Object.entries(context).flatMap(([key, value]) => ['-c', `${key}=${value}`]),
  ];
  // Telemetry off: it would only try (and fail) to reach the network; the synth is the same.
  const env = { ...offlineEnvironment(), CDK_DISABLE_CLI_TELEMETRY: 'true' };
  const { code, output } = await run(process.execPath, args, env, PROJECT_ROOT);
  if (code !== 0) throw new Error(`cdk synth exited with ${code}:\n${output}`);
  return { assemblyDir, output };
}

interface AssetManifest {
  readonly files: Record<string, { readonly source: { readonly path: string; readonly packaging?: string } }>;
}

/** The one relay stack of an assembly: its name and template. */
export function readStack(assemblyDir: string): { stackName: string; template: CfnTemplate } {
  const manifest = JSON.parse(readFileSync(join(assemblyDir, 'manifest.json'), 'utf8')) as {
    artifacts: Record<string, { type: string; properties?: { templateFile?: string } }>;
  };
  const stacks = Object.entries(manifest.artifacts).filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack');
  if (stacks.length !== 1) throw new Error(`expected one stack in ${assemblyDir}, found ${stacks.length}`);
  const [stackName, artifact] = stacks[0] as [string, { properties?: { templateFile?: string } }];
  const templateFile = artifact.properties?.templateFile ?? `${stackName}.template.json`;
  return { stackName, template: JSON.parse(readFileSync(join(assemblyDir, templateFile), 'utf8')) as CfnTemplate };
}

/** The module file Lambda's Node.js runtime loads for `<module>` of a `<module>.<export>` handler (it tries .js, .mjs, .cjs). */
function handlerModule(bundleDir: string, handler: string): { file: string; exportName: string } {
  const dot = handler.lastIndexOf('.');
  const moduleName = handler.slice(0, dot);
  const exportName = handler.slice(dot + 1);
  const file = ['.js', '.mjs', '.cjs']
    .map((extension) => join(bundleDir, moduleName + extension))
    .find((candidate) => existsSync(candidate));
  if (file === undefined) throw new Error(`handler ${handler}: no ${moduleName}.js, .mjs or .cjs in ${bundleDir}`);
  return { file, exportName };
}

/**
 * Synthesizes the app with `cdk synth` and takes the relay function's code out of the assembly.
 * Takes several seconds (bundling, CloudFormation validation, cdk-nag): call it once per test file.
 */
export async function synthesizeBundle(options: SynthesizeOptions = {}): Promise<SynthesizedBundle> {
  const { assemblyDir, output } = await cdkSynth(options);
  return readBundle(assemblyDir, output);
}

/** The function's bundle in the cloud assembly `assemblyDir` (written by {@link cdkSynth}; the bench can reuse one). */
export function readBundle(assemblyDir: string, output = ''): SynthesizedBundle {
  const { stackName, template } = readStack(assemblyDir);
  const functions = Object.entries(template.Resources).filter(([, resource]) => resource.Type === 'AWS::Lambda::Function');
  if (functions.length !== 1) throw new Error(`expected one Lambda function in ${stackName}, found ${functions.length}`);
  const [functionLogicalId, fn] = functions[0] as [string, CfnResource];
  const properties = fn.Properties ?? {};

  // The asset the template uploads is the one whose hash names the S3 key.
  const code = properties.Code as { S3Key?: CfnValue };
  const assetHash = typeof code.S3Key === 'string' ? code.S3Key.replace(/\.zip$/, '') : undefined;
  const assets = JSON.parse(readFileSync(join(assemblyDir, `${stackName}.assets.json`), 'utf8')) as AssetManifest;
  const asset = assetHash === undefined ? undefined : assets.files[assetHash];
  if (asset === undefined) throw new Error(`no asset for the code of ${functionLogicalId} (S3Key ${JSON.stringify(code.S3Key)})`);
  const bundleDir = join(assemblyDir, asset.source.path);
  const { file, exportName } = handlerModule(bundleDir, String(properties.Handler));

  return {
    assemblyDir,
    stackName,
    template,
    functionLogicalId,
    bundleDir,
    handlerFile: file,
    handlerExport: exportName,
    runtime: String(properties.Runtime),
    timeoutSeconds: Number(properties.Timeout ?? 3),
    memorySize: Number(properties.MemorySize ?? 128),
    environment: (properties.Environment as { Variables?: Record<string, CfnValue> } | undefined)?.Variables ?? {},
    output,
  };
}

/**
 * Replaces the intrinsics of a function environment with deploy-time values.
 * @param values by `LogicalId` for `{ Ref }` and `LogicalId.Attribute` for `{ 'Fn::GetAtt' }`
 * @throws naming the variable, for an intrinsic no value was given for
 */
function resolveEnvironment(
  environment: Readonly<Record<string, CfnValue>>,
  values: Readonly<Record<string, string>>,
): Record<string, string> {
  const resolved: Record<string, string> = {};
  for (const [name, value] of Object.entries(environment)) {
    if (typeof value === 'string') {
      resolved[name] = value;
      continue;
    }
    let key: string | undefined;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const ref = value.Ref;
      const getAtt = value['Fn::GetAtt'];
      if (typeof ref === 'string') key = ref;
      else if (Array.isArray(getAtt) && getAtt.length === 2) key = `${String(getAtt[0])}.${String(getAtt[1])}`;
    }
    const replacement = key === undefined ? undefined : values[key];
    if (replacement === undefined) throw new Error(`${name} is ${JSON.stringify(value)}: no value given for ${key ?? 'that intrinsic'}`);
    resolved[name] = replacement;
  }
  return resolved;
}

/** Where the function runs: its code's directory and handler file (a copy of the bundle's, or the bundle's own), its name and region. */
export interface LambdaRuntimePlace {
  readonly taskRoot: string;
  readonly handlerFile: string;
  readonly functionName: string;
  readonly region: string;
}

/**
 * What Lambda's Node.js runtime sets for every function (task root, handler, function name,
 * version and memory, region), with stand-in credentials: the environment around the template's
 * own variables, for every process that runs the bundle as deployed (tests and bench alike).
 */
export function lambdaRuntimeEnvironment(bundle: SynthesizedBundle, place: LambdaRuntimePlace): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    TZ: ':UTC',
    LANG: 'en_US.UTF-8',
    LAMBDA_TASK_ROOT: place.taskRoot,
    _HANDLER: `${relative(place.taskRoot, place.handlerFile).replace(/\.[cm]?js$/, '')}.${bundle.handlerExport}`,
    AWS_EXECUTION_ENV: `AWS_Lambda_${bundle.runtime}`,
    AWS_LAMBDA_FUNCTION_NAME: place.functionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(bundle.memorySize),
    AWS_REGION: place.region,
    AWS_DEFAULT_REGION: place.region,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_SESSION_TOKEN: 'test',
  };
}

/**
 * The template's function environment with its `Ref`s and `GetAtt`s resolved to stand-ins: each
 * queue (by logical id) to its URL and ARN, each secret to the ARN `secretArnOf` gives its logical id.
 * @throws for an intrinsic it has no value for (the template grew something new)
 */
export function templateEnvironment(
  bundle: SynthesizedBundle,
  queues: Readonly<Record<string, { readonly url: string; readonly arn: string }>>,
  secretArnOf: (logicalId: string) => string,
): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [logicalId, { Type }] of Object.entries(bundle.template.Resources)) {
    const queue = queues[logicalId];
    if (Type === 'AWS::SQS::Queue' && queue !== undefined)
      Object.assign(values, { [logicalId]: queue.url, [`${logicalId}.Arn`]: queue.arn });
    if (Type === 'AWS::SecretsManager::Secret') values[logicalId] = secretArnOf(logicalId);
  }
  return resolveEnvironment(bundle.environment, values);
}

/** The relay's queues as the template declares them. */
export interface TemplateQueues {
  readonly queueLogicalId: string;
  readonly deadLetterQueueLogicalId: string;
  readonly maxReceiveCount: number;
  readonly visibilityTimeout: number;
  readonly fifo: boolean;
}

/** Finds the main queue (the one with a redrive policy) and its DLQ in a template. */
export function templateQueues(template: CfnTemplate): TemplateQueues {
  const queues = Object.entries(template.Resources).filter(([, resource]) => resource.Type === 'AWS::SQS::Queue');
  const main = queues.filter(([, resource]) => resource.Properties?.RedrivePolicy !== undefined);
  if (main.length !== 1) throw new Error(`expected one queue with a redrive policy, found ${main.length}`);
  const [queueLogicalId, queue] = main[0] as [string, CfnResource];
  const redrive = queue.Properties?.RedrivePolicy as { deadLetterTargetArn: { 'Fn::GetAtt': [string, string] }; maxReceiveCount: number };
  return {
    queueLogicalId,
    deadLetterQueueLogicalId: redrive.deadLetterTargetArn['Fn::GetAtt'][0],
    maxReceiveCount: redrive.maxReceiveCount,
    visibilityTimeout: Number(queue.Properties?.VisibilityTimeout ?? 30),
    fifo: queue.Properties?.FifoQueue === true,
  };
}

/** The outcome of one invocation of a loaded bundle. */
export type InvocationOutcome =
  | { readonly ok: true; readonly response: SQSBatchResponse | null }
  | { readonly ok: false; readonly error: string };

/** A bundle loaded in its own process: one warm Lambda execution environment. */
export interface LoadedBundle {
  /** The process's id (to signal it: SIGSTOP/SIGCONT freeze and thaw it as Lambda does between invocations). */
  readonly pid: number;
  /** Invokes the handler with a Lambda context whose deadline is `timeoutMs` away. */
  invoke(event: SQSEvent, timeoutMs: number): Promise<InvocationOutcome>;
  /** Everything the process wrote to stdout and stderr so far, line by line (the function's logs). */
  readonly logs: readonly string[];
  /** The log lines that are JSON objects (structured logs and EMF metrics), parsed. */
  jsonLogs(): Record<string, unknown>[];
  /**
   * The asset's files the process has loaded so far (relative to the asset, `/`-separated, in
   * load order): the modules importing the handler needed, then any chunk a batch loaded on
   * first use. Only with {@link StartBundleOptions.traceModuleLoads}.
   */
  loadedModules(): string[];
  stop(): Promise<void>;
}

/** Options of {@link startBundle}. */
export interface StartBundleOptions {
  /** The function's environment, tokens resolved (see {@link templateEnvironment}). */
  readonly environment: Readonly<Record<string, string>>;
  /** Endpoint, region and credentials of the SQS the function talks to (an emulator). */
  readonly aws: { readonly endpoint: string; readonly region: string };
  /**
   * Copy the bundle to a directory with no `node_modules` above it first, so a module the
   * bundle failed to include cannot be found by accident in the repository's. @default true
   */
  readonly isolate?: boolean;
  readonly functionName?: string;
  /** Record every module file the process loads (a module loader hook), for {@link LoadedBundle.loadedModules}. @default false */
  readonly traceModuleLoads?: boolean;
}

// The child: loads the handler module like Lambda's runtime (a dynamic import at init), then
// answers invoke messages. createLambdaContext is local/event-source.ts, compiled next to it.
const RUNNER = `
import { pathToFileURL } from 'node:url';
import { createLambdaContext } from './lambda-context.mjs';
const [handlerFile, exportName, functionName] = process.argv.slice(2);
const describe = (error) => (error instanceof Error ? (error.stack ?? error.message) : String(error));
let handler;
try {
  const module = await import(pathToFileURL(handlerFile).href);
  handler = module[exportName];
  if (typeof handler !== 'function') throw new Error(handlerFile + ' exports no function ' + exportName);
  process.send({ type: 'ready' });
} catch (error) {
  process.send({ type: 'init-error', error: describe(error) }, () => process.exit(1));
}
process.on('message', async (message) => {
  if (message.type !== 'invoke' || handler === undefined) return;
  try {
    const response = await handler(message.event, createLambdaContext(message.timeoutMs, functionName));
    process.send({ type: 'result', id: message.id, response: response ?? null });
  } catch (error) {
    process.send({ type: 'result', id: message.id, error: describe(error) });
  }
});
`;

// A module loader hook (module.register, Node.js 20.6+) that appends every file it loads to a log.
// It runs before the module is returned to the importer, so the log is complete once an import settles.
const LOAD_TRACE_HOOKS = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function load(url, context, nextLoad) {
  if (url.startsWith('file:')) appendFileSync(log, url + '\\n');
  return nextLoad(url, context);
}
`;

type ChildMessage =
  | { type: 'ready' }
  | { type: 'init-error'; error: string }
  | { type: 'result'; id: string; response?: SQSBatchResponse | null; error?: string };

/**
 * Loads a synthesized bundle in a fresh `node` process (no loader, no TypeScript: what Lambda
 * runs) with the given function environment plus what Lambda itself sets, and waits for its
 * initialisation. A configuration the handler rejects at cold start rejects here, with its error.
 */
export async function startBundle(bundle: SynthesizedBundle, options: StartBundleOptions): Promise<LoadedBundle> {
  const workDir = mkdtempSync(join(tmpdir(), 'relay-bundle-'));
  const taskRoot = options.isolate === false ? bundle.bundleDir : join(workDir, 'task');
  if (options.isolate !== false) cpSync(bundle.bundleDir, taskRoot, { recursive: true });
  const handlerFile = join(taskRoot, bundle.handlerFile.slice(bundle.bundleDir.length + 1));
  const runnerDir = join(workDir, 'runner');
  await build({
    entryPoints: [join(PROJECT_ROOT, 'local', 'event-source.ts')],
    outfile: join(runnerDir, 'lambda-context.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  });
  const runnerFile = join(runnerDir, 'runner.mjs');
  writeFileSync(runnerFile, RUNNER);
  const execArgv: string[] = [];
  const loadLog = join(workDir, 'loaded-modules.log');
  if (options.traceModuleLoads === true) {
    writeFileSync(loadLog, '');
    writeFileSync(join(runnerDir, 'load-trace-hooks.mjs'), LOAD_TRACE_HOOKS);
    const register = join(runnerDir, 'load-trace.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister('./load-trace-hooks.mjs', import.meta.url, { data: { log: ${JSON.stringify(loadLog)} } });\n`,
    );
    execArgv.push('--import', pathToFileURL(register).href);
  }

  const functionName = options.functionName ?? bundle.stackName;
  const env: NodeJS.ProcessEnv = {
    ...lambdaRuntimeEnvironment(bundle, { taskRoot, handlerFile, functionName, region: options.aws.region }),
    // The one difference from Lambda: SQS is the emulator.
    AWS_ENDPOINT_URL_SQS: options.aws.endpoint,
    ...options.environment,
  };

  const logs: string[] = [];
  const child: ChildProcess = fork(runnerFile, [handlerFile, bundle.handlerExport, functionName], {
    cwd: taskRoot,
    env,
    execArgv,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let partial = '';
  const collect = (chunk: Buffer): void => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    logs.push(...lines.filter((line) => line.trim() !== ''));
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  const pending = new Map<string, (outcome: InvocationOutcome) => void>();
  let exited = false;
  const ready = new Promise<void>((resolveReady, rejectReady) => {
    child.on('message', (raw) => {
      const message = raw as ChildMessage;
      if (message.type === 'ready') resolveReady();
      else if (message.type === 'init-error') rejectReady(new Error(`the bundle failed to initialise:\n${message.error}`));
      else {
        const settle = pending.get(message.id);
        pending.delete(message.id);
        settle?.(message.error === undefined ? { ok: true, response: message.response ?? null } : { ok: false, error: message.error });
      }
    });
    child.on('exit', (code, signal) => {
      exited = true;
      rejectReady(new Error(`the bundle process exited during initialisation (code ${code}, signal ${signal}):\n${logs.join('\n')}`));
      for (const settle of pending.values()) settle({ ok: false, error: `the process exited (code ${code}, signal ${signal})` });
      pending.clear();
    });
  });
  const cleanUp = (): void => rmSync(workDir, { recursive: true, force: true });
  try {
    await ready;
  } catch (error) {
    cleanUp();
    throw error;
  }

  return {
    pid: child.pid ?? 0,
    logs,
    loadedModules() {
      if (options.traceModuleLoads !== true) throw new Error('loadedModules() needs startBundle(…, { traceModuleLoads: true })');
      const files = readFileSync(loadLog, 'utf8')
        .split('\n')
        .filter((url) => url !== '')
        .map((url) => insideDir(taskRoot, fileURLToPath(url)));
      return [...new Set(files.filter((file): file is string => file !== undefined))];
    },
    jsonLogs() {
      return logs.flatMap((line) => {
        if (!line.startsWith('{')) return [];
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
    },
    invoke(event, timeoutMs) {
      if (exited) return Promise.resolve({ ok: false, error: 'the bundle process has exited' });
      const id = randomUUID();
      return new Promise<InvocationOutcome>((settle) => {
        pending.set(id, settle);
        child.send({ type: 'invoke', id, event, timeoutMs });
      });
    },
    async stop() {
      if (!exited) {
        const gone = new Promise<void>((resolveGone) => child.once('exit', () => resolveGone()));
        child.kill();
        await gone;
      }
      cleanUp();
    },
  };
}
