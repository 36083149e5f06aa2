/**
 * Every knob of the stack as a CDK context key (`npx cdk deploy -c key=value`, or `context` in
 * cdk.json), parsed into typed props. Values from `-c` arrive as strings and values from cdk.json
 * as JSON, so both `"true"` and `true` are accepted; anything else fails synth with a message
 * naming the key, never silently falls back to a default. So does a key the app does not read
 * (a typo would otherwise leave its setting at the default), CDK's own keys aside.
 */
import * as logs from 'aws-cdk-lib/aws-logs';
import { MAX_FIFO_EVENT_SOURCE_BATCH_SIZE } from '../lambda/aws-limits';
import { editDistance, nearestName, TYPO_DISTANCE } from '../lambda/nearest-name';
import { Refusal, type SettingValue, settingValue } from '../lambda/setting-kinds';
import { type Setting, SETTING_DOCS, SETTING_LIST, type SettingName, SETTINGS } from '../lambda/settings';
import { FIFO_SUFFIX, isQueueArn } from '../lambda/sqs-util';
import { type Entry, inContextKeys, KEY_OF_PROP, toPropValue } from './webhook-relay/defaults';
import type { WebhookRelayConfigError } from './webhook-relay/props';
import type { WebhookRelayStackProps } from './webhook-relay-stack';

/** The name of a context key the app reads. */
export type ContextKeyName = Extract<Entry, { context: string }>['context'];

/** One context key: the setting it sets, and the one-line description the docs and errors use. */
export interface ContextKey {
  readonly description: string;
  /** The allowed values, for keys that take one of a list. */
  readonly choices?: readonly string[];
  /** The smallest and largest number a numeric key takes (the construct's or AWS's limits, in the key's unit). */
  readonly range?: readonly [number, number];
  /** The setting it sets. */
  readonly setting: Setting;
}

/** Every context key the app reads, in the order the docs list them: the registry's settings that have one. */
export const CONTEXT_KEYS: Readonly<Record<ContextKeyName, ContextKey>> = Object.fromEntries(
  (Object.keys(SETTINGS) as SettingName[])
    .map((name): [SettingName, Setting] => [name, SETTINGS[name]])
    .filter(([, s]) => s.context !== undefined)
    .map(([name, s]) => [
      s.context,
      {
        description: SETTING_DOCS[name],
        ...(s.choices === undefined ? {} : { choices: s.choices }),
        ...(s.min === undefined || s.max === undefined || s.kind === 'list' ? {} : { range: [s.min, s.max] as const }),
        setting: s,
      } satisfies ContextKey,
    ]),
) as Record<ContextKeyName, ContextKey>;

/** A context value the app cannot use; the message names the key and what it expected. */
export class ContextError extends Error {
  constructor(key: string, message: string) {
    super(`Context ${key} (-c ${key}=…) ${message}`);
    this.name = 'ContextError';
  }
}

/** The stack name used when no `stackName` context is given. */
export const DEFAULT_STACK_NAME: string = SETTINGS.stackName.default;

/** What the app builds from context: the stack's id and props. */
export interface StackFromContext {
  readonly stackName: string;
  readonly props: WebhookRelayStackProps;
}

/** A key's value, parsed by its setting's kind; `undefined` when it is not given. */
function parse(key: ContextKeyName, raw: unknown): SettingValue | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  const value = settingValue(CONTEXT_KEYS[key].setting, raw, 'context');
  if (value instanceof Refusal) throw new ContextError(key, `must be ${value.expected}; got ${JSON.stringify(raw)}`);
  return value;
}

// CloudFormation's rule for stack names (CDK throws a stack trace for anything else).
const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,127}$/;
/** A Secrets Manager secret's ARN, complete or partial: what the stack imports a secret by. */
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$/;

/** The keys that take an ARN (the stack imports what they name), each with an example for its message. */
const ARN_EXAMPLES = {
  queueArn: 'arn:aws:sqs:eu-west-1:123456789012:orders',
  deadLetterQueueArn: 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq',
  signingSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-signing-AbCdEf',
  authSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-auth-AbCdEf',
  webhookUrlSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-webhook-url-AbCdEf',
  oauthClientSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-oauth-AbCdEf',
  clientCertificateSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-certificate-AbCdEf',
} as const satisfies Partial<Record<ContextKeyName, string>>;

/** The ARN given in `key`, checked: a queue's (SQS's rules) or a secret's. */
function arn(key: keyof typeof ARN_EXAMPLES, value: string | undefined): string | undefined {
  const valid = key === 'queueArn' || key === 'deadLetterQueueArn' ? isQueueArn : (text: string) => SECRET_ARN.test(text);
  if (value !== undefined && !valid(value))
    throw new ContextError(key, `must be an ARN such as ${ARN_EXAMPLES[key]}; got ${JSON.stringify(value)}`);
  return value;
}

/**
 * Keys the app read once and no longer does, with what took their place: a leftover in a command
 * line or cdk.json fails synth rather than being ignored (the app ignores keys it does not know).
 */
const REPLACED_KEYS: Readonly<Record<string, string>> = {
  outageToleranceHours:
    'was replaced by retryWindowHours: how long a message may go on failing before it is dead-lettered (default 24); maxReceiveCount is derived from it',
};

/**
 * CDK's own keys without a `@` or `:` in their name (every other one has one: the feature flags
 * `@aws-cdk/…`, the CLI's `aws:cdk:…`, the lookups cached in cdk.context.json): those the CLI
 * writes to cdk.json (`cdk acknowledge`, `cdk cli-telemetry`, `cdk migrate`) and one aws-cdk-lib
 * reads. Any other key is the operator's, and one the app does not read is a mistake.
 */
const CDK_KEYS: ReadonlySet<string> = new Set(['acknowledged-issue-numbers', 'cli-telemetry', 'assets-ecr-repository-name']);

/** Whether a context key is CDK's own rather than the app's. */
function isCdkKey(key: string): boolean {
  return key.includes('@') || key.includes(':') || key.startsWith('cdk-') || CDK_KEYS.has(key);
}

/**
 * Why `key`, which the app does not read, stops synth: the key it is likely a typo of, or the
 * key of the setting whose prop or variable name it is.
 */
function unknownKeyError(key: string): ContextError {
  const named = SETTING_LIST.find((s) => s.context !== undefined && (s.prop === key || s.variable === key));
  if (named !== undefined) {
    const what = named.prop === key ? "the construct's prop" : 'an environment variable';
    return new ContextError(key, `is not a key the app reads: ${key} is ${what}; its context key is ${named.context}`);
  }
  const keys = Object.keys(CONTEXT_KEYS);
  const nearest = nearestName(key, keys) as string;
  return new ContextError(
    key,
    editDistance(key, nearest) <= TYPO_DISTANCE
      ? `is not a key the app reads; did you mean ${nearest}?`
      : `is not a key the app reads (the nearest is ${nearest}; docs/configuration.md lists them all)`,
  );
}

/** Keys read by hand below rather than set on their prop as they are. */
const READ_BY_HAND: ReadonlySet<string> = new Set(['stackName', ...Object.keys(ARN_EXAMPLES), 'vpcId', 'subnetIds', 'securityGroupIds']);

/**
 * The construct's rejection of a value that came from context, as a {@link ContextError} naming
 * the key the operator typed (`timeoutSeconds`, not the prop `timeout`), in the message too.
 */
export function contextErrorFor(error: WebhookRelayConfigError): ContextError {
  const key = KEY_OF_PROP[error.prop] ?? error.prop;
  return new ContextError(key, inContextKeys(error.message.slice(`WebhookRelay: ${error.prop} `.length)));
}

/** The keys that list ids, each id's pattern, and an example for the message. */
const ID_LISTS = {
  subnetIds: { pattern: /^subnet-[0-9a-f]{8,17}$/, example: 'subnet-0123456789abcdef0,subnet-0fedcba9876543210' },
  securityGroupIds: { pattern: /^sg-[0-9a-f]{8,17}$/, example: 'sg-0123456789abcdef0' },
} as const;

/** Whether a context value is given at all (`-c key=` and cdk.json's `null` are not). */
function given(raw: unknown): boolean {
  return raw !== undefined && raw !== null && raw !== '';
}

/**
 * The ids in `key`: comma-separated (`-c`, and cdk.json) or a JSON array of strings (cdk.json), each
 * matching the key's pattern, each once (Lambda would refuse a repeated one only at deploy).
 */
function ids(key: keyof typeof ID_LISTS, raw: unknown): string[] | undefined {
  if (!given(raw)) return undefined;
  const { pattern, example } = ID_LISTS[key];
  const texts = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : [raw];
  const list = texts.map((id: unknown) => (typeof id === 'string' ? id.trim() : id)).filter((id) => id !== '');
  if (list.length === 0 || !list.every((id): id is string => typeof id === 'string' && pattern.test(id)))
    throw new ContextError(
      key,
      `must be comma-separated ids such as ${example} (or, in cdk.json, a JSON array of them); got ${JSON.stringify(raw)}`,
    );
  const repeated = list.find((id, i) => list.indexOf(id) !== i);
  if (repeated !== undefined) throw new ContextError(key, `lists ${repeated} more than once; give each id once`);
  return list;
}

/** `vpcId`, `subnetIds` and `securityGroupIds`, checked: the VPC by id, never looked up (the stack's synth stays offline). */
function vpcFromContext(vpcId: string | undefined, subnetIds: unknown, securityGroupIds: unknown): WebhookRelayStackProps['network'] {
  if (vpcId === undefined) {
    const stray = given(subnetIds) ? 'subnetIds' : given(securityGroupIds) ? 'securityGroupIds' : undefined;
    if (stray !== undefined) throw new ContextError(stray, 'is only for a VPC: give vpcId too');
    return undefined;
  }
  if (!/^vpc-[0-9a-f]{8,17}$/.test(vpcId))
    throw new ContextError('vpcId', `must be a VPC id such as vpc-0123456789abcdef0; got ${JSON.stringify(vpcId)}`);
  const subnets = ids('subnetIds', subnetIds);
  if (subnets === undefined)
    throw new ContextError('vpcId', "needs subnetIds too: the function's private subnets, whose route leaves by the NAT gateway");
  return { vpcId, subnetIds: subnets, securityGroupIds: ids('securityGroupIds', securityGroupIds) };
}

/**
 * Reads every context key into the stack's props.
 * @param get the context lookup, usually `(key) => app.node.tryGetContext(key)`
 * @param allKeys every context key present: one that is neither the app's nor CDK's own (a typo
 *   such as `alarmEmial`) stops synth, where it would otherwise leave its setting at the default
 * @throws {ContextError} for a value of the wrong type or a key the app does not read
 */
export function stackFromContext(get: (key: string) => unknown, allKeys: readonly string[] = []): StackFromContext {
  for (const [key, replacement] of Object.entries(REPLACED_KEYS)) {
    if (allKeys.includes(key) || get(key) !== undefined) throw new ContextError(key, replacement);
  }
  for (const key of allKeys) {
    if (!Object.hasOwn(CONTEXT_KEYS, key) && !isCdkKey(key)) throw unknownKeyError(key);
  }
  const values: Partial<Record<ContextKeyName, SettingValue>> = {};
  for (const key of Object.keys(CONTEXT_KEYS) as ContextKeyName[]) {
    // Lists of ids take a JSON array too: read by hand, below.
    if (Object.hasOwn(ID_LISTS, key)) continue;
    const value = parse(key, get(key));
    if (value !== undefined) values[key] = value;
  }
  const str = (key: ContextKeyName): string | undefined => values[key] as string | undefined;
  const int = (key: ContextKeyName): number | undefined => values[key] as number | undefined;
  const bool = (key: ContextKeyName): boolean | undefined => values[key] as boolean | undefined;

  const logRetentionDays = int('logRetentionDays');
  if (logRetentionDays !== undefined && !Object.values(logs.RetentionDays).includes(logRetentionDays)) {
    const allowed = Object.values(logs.RetentionDays).filter(
      (v): v is number => typeof v === 'number' && v !== logs.RetentionDays.INFINITE,
    );
    throw new ContextError(
      'logRetentionDays',
      `must be one of CloudWatch Logs' retention periods (${allowed.join(', ')}); got ${logRetentionDays}`,
    );
  }
  if (str('deadLetterQueueArn') !== undefined && str('queueArn') === undefined) {
    throw new ContextError('deadLetterQueueArn', 'is only for an existing queue: give queueArn too');
  }
  const arns = Object.fromEntries(
    (Object.keys(ARN_EXAMPLES) as (keyof typeof ARN_EXAMPLES)[]).map((key) => [key, arn(key, str(key))]),
  ) as Pick<WebhookRelayStackProps, keyof typeof ARN_EXAMPLES>;
  const { queueArn } = arns;
  if (queueArn !== undefined && arns.deadLetterQueueArn === undefined) {
    throw new ContextError(
      'queueArn',
      "needs deadLetterQueueArn too: the dead-letter queue of the queue's redrive policy (and maxReceiveCount, if it is not 5)",
    );
  }

  // Lambda takes at most 10 records per batch from a FIFO queue; say so rather than "1 to 10".
  const fifo = bool('fifo') ?? queueArn?.endsWith(FIFO_SUFFIX) ?? false;
  const batchSize = int('batchSize');
  if (fifo && batchSize !== undefined && batchSize > MAX_FIFO_EVENT_SOURCE_BATCH_SIZE) {
    throw new ContextError(
      'batchSize',
      `must be at most ${MAX_FIFO_EVENT_SOURCE_BATCH_SIZE} for a FIFO queue (Lambda's limit for FIFO event sources); got ${batchSize}`,
    );
  }

  if (arns.webhookUrlSecretArn !== undefined && str('webhookUrl') !== undefined)
    throw new ContextError('webhookUrlSecretArn', 'and webhookUrl are two ways of giving the URL; give one');
  const network = vpcFromContext(str('vpcId'), get('subnetIds'), get('securityGroupIds'));

  // Every other key sets its prop as it is, in the prop's type (a Duration for time units).
  const relay: Record<string, unknown> = {};
  for (const key of Object.keys(values) as ContextKeyName[]) {
    const { setting } = CONTEXT_KEYS[key];
    const value = values[key];
    if (READ_BY_HAND.has(key) || setting.prop === undefined || value === undefined) continue;
    relay[setting.prop] = toPropValue(setting, value);
  }

  const stackName = str('stackName') ?? DEFAULT_STACK_NAME;
  if (!STACK_NAME.test(stackName)) {
    throw new ContextError(
      'stackName',
      `must start with a letter and have only letters, digits and "-", at most 128 characters (CloudFormation's rule); got ${JSON.stringify(stackName)}`,
    );
  }
  return {
    stackName,
    props: {
      ...arns,
      ...(network === undefined ? {} : { network }),
      relay: { ...relay, name: stackName } as WebhookRelayStackProps['relay'],
    },
  };
}
