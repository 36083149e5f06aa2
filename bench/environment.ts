/**
 * The environment the deployed function would run with, on this machine: what Lambda's runtime
 * sets, the template's own variables (intrinsics resolved to local stand-ins), and the endpoints
 * of the local SQS and Secrets Manager. Every benchmark child of kind `relay` gets this.
 */
import { cpus, totalmem, release } from 'node:os';
import { execFileSync } from 'node:child_process';
import { type CfnValue, PROJECT_ROOT, resolveEnvironment, type SynthesizedBundle } from '../testkit/synth';
import { SPEED_NODE_FLAGS, CPU_PINNING } from './children';

/** Local stand-ins for the resources the template's environment refers to. */
export interface StandIns {
  readonly region: string;
  /** `AWS_ENDPOINT_URL_SQS`: the counting proxy in front of the emulator. */
  readonly sqsEndpoint: string;
  /** `AWS_ENDPOINT_URL_SECRETS_MANAGER`. */
  readonly secretsEndpoint: string;
  /** URL of each SQS queue by logical id. */
  readonly queueUrls: Readonly<Record<string, string>>;
  /** ARN of each queue by logical id. */
  readonly queueArns: Readonly<Record<string, string>>;
}

/** The ARN the benchmark gives a Secrets Manager secret of the template (the fake serves it). */
export function secretArnOf(logicalId: string): string {
  return `arn:aws:secretsmanager:us-east-1:000000000000:secret:${logicalId}-bench`;
}

/**
 * The template's function environment with every `{ Ref }`/`{ Fn::GetAtt }` resolved: queues to
 * the emulator's, secrets to ARNs the fake Secrets Manager answers for.
 * @throws for an intrinsic of a resource type it does not know (the template grew something new)
 */
export function functionEnvironment(bundle: SynthesizedBundle, standIns: StandIns): Record<string, string> {
  const values: Record<string, string> = {};
  const refs = (value: CfnValue): string[] => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
    const ref = value.Ref;
    const getAtt = value['Fn::GetAtt'];
    if (typeof ref === 'string') return [ref];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return [getAtt[0]];
    return [];
  };
  for (const value of Object.values(bundle.environment)) {
    for (const logicalId of refs(value)) {
      const type = bundle.template.Resources[logicalId]?.Type;
      if (type === 'AWS::SQS::Queue') {
        values[logicalId] = standIns.queueUrls[logicalId] ?? `http://127.0.0.1:9/000000000000/${logicalId}`;
        values[`${logicalId}.Arn`] = standIns.queueArns[logicalId] ?? `arn:aws:sqs:${standIns.region}:000000000000:${logicalId}`;
      } else if (type === 'AWS::SecretsManager::Secret') {
        values[logicalId] = secretArnOf(logicalId);
      }
    }
  }
  return resolveEnvironment(bundle.environment, values);
}

/** The logical ids of the template's Secrets Manager secrets. */
export function templateSecrets(bundle: SynthesizedBundle): string[] {
  return Object.entries(bundle.template.Resources)
    .filter(([, resource]) => resource.Type === 'AWS::SecretsManager::Secret')
    .map(([logicalId]) => logicalId);
}

/** What Lambda's Node.js runtime sets for every function, plus credentials and the local endpoints. */
export function lambdaEnvironment(bundle: SynthesizedBundle, standIns: StandIns, functionEnv: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    TZ: ':UTC',
    LANG: 'en_US.UTF-8',
    LAMBDA_TASK_ROOT: bundle.bundleDir,
    _HANDLER: `index.${bundle.handlerExport}`,
    AWS_EXECUTION_ENV: `AWS_Lambda_${bundle.runtime}`,
    AWS_LAMBDA_FUNCTION_NAME: bundle.stackName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(bundle.memorySize),
    AWS_REGION: standIns.region,
    AWS_DEFAULT_REGION: standIns.region,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_SESSION_TOKEN: 'test',
    AWS_ENDPOINT_URL_SQS: standIns.sqsEndpoint,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: standIns.secretsEndpoint,
    ...functionEnv,
  };
}

/**
 * The V8 heap limits Lambda's Node.js runtime starts a function with, derived from its memory
 * size by the runtime's bootstrap (shell integer arithmetic): a tenth of the memory for the young
 * generation, half of that per semi-space, the rest for the old generation.
 */
export function lambdaHeapFlags(memorySizeMb: number): string[] {
  const youngMb = Math.floor(memorySizeMb / 10);
  return [`--max-semi-space-size=${Math.floor(youngMb / 2)}`, `--max-old-space-size=${memorySizeMb - youngMb}`];
}

/** The machine the figures come from. */
export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly node: string;
  readonly date: string;
  readonly commit: string;
  /** Where the children ran: e.g. "clients on CPU 0, the webhook on CPU 1", or "wherever the scheduler put them". */
  readonly placement?: string;
}

/** @param node the Node.js binary the children run on */
export function machineInfo(node: string = process.execPath): MachineInfo {
  let commit = 'unknown';
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--', 'lambda', 'lib', 'bin', 'package.json'], {
        cwd: PROJECT_ROOT,
        encoding: 'utf8',
      }).trim() !== '';
    commit = dirty ? `${head} + uncommitted changes` : head;
  } catch {
    // not a git checkout: leave it unknown
  }
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: node === process.execPath ? process.version : execFileSync(node, ['-p', 'process.version'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit,
    placement:
      CPU_PINNING === undefined
        ? 'wherever the scheduler put them (no taskset, or one CPU)'
        : `each client held to CPU ${CPU_PINNING.client} (with ${SPEED_NODE_FLAGS.join(' ')}), the webhook to CPU ${CPU_PINNING.webhook} (taskset)`,
  };
}
