/**
 * The checks every prop goes through, by the kinds of the settings registry (`lambda/setting-kinds.ts`)
 * and its bounds; each failure is a {@link WebhookRelayConfigError} naming the prop.
 */
import { Duration, Token } from 'aws-cdk-lib';
import { Refusal, wholeNumber as wholeNumberOf } from '../../lambda/setting-kinds';
import { SETTING_LIST, type Setting } from '../../lambda/settings';
import { toPropValue } from './defaults';
import { type WebhookRelayProps, WebhookRelayConfigError } from './props';

/** Throws a {@link WebhookRelayConfigError} for `prop` unless `condition` holds. */
export function check(condition: boolean, prop: string, message: string): asserts condition {
  if (!condition) throw new WebhookRelayConfigError(prop, message);
}

/** `value` unless its kind refused it: then the prop's error, with what was given. */
export function accepted<T>(value: T | Refusal, prop: string, given: unknown): T {
  if (value instanceof Refusal) throw new WebhookRelayConfigError(prop, `must be ${value.expected}; got ${given}`);
  return value;
}

/** A whole number within bounds. */
export function wholeNumber(value: number, prop: string, min: number, max: number): number {
  return accepted(wholeNumberOf(value, min, max), prop, value);
}

/** A Duration as whole seconds within bounds; Duration.toSeconds() itself rejects fractions. */
export function seconds(value: Duration, prop: string, min: Duration, max: Duration): number {
  let result: number;
  try {
    result = value.toSeconds();
  } catch {
    throw new WebhookRelayConfigError(prop, `must be a whole number of seconds; got ${value.toHumanString()}`);
  }
  check(
    result >= min.toSeconds() && result <= max.toSeconds(),
    prop,
    `must be from ${min.toHumanString()} to ${max.toHumanString()}; got ${value.toHumanString()}`,
  );
  return result;
}

/** The prop of a number setting of the registry (`memorySize`): a whole number within the setting's bounds. */
export function settingNumber(setting: Setting, value: number): number {
  return accepted(wholeNumberOf(value, setting.min, setting.max), setting.prop ?? '', value);
}

/**
 * The prop of a time setting of the registry (`outageBackoff`) as whole seconds, within the
 * setting's bounds in its unit (from {@link Setting.propMinSeconds} where the prop may be finer).
 */
export function settingSeconds(setting: Setting, value: Duration): number {
  const min = setting.propMinSeconds === undefined ? toPropValue(setting, setting.min ?? 0) : Duration.seconds(setting.propMinSeconds);
  return seconds(value, setting.prop ?? '', min as Duration, toPropValue(setting, setting.max ?? 0) as Duration);
}

/** The units whose prop is a `Duration` (logRetention, in days, is a plain number: `logs.RetentionDays`). */
const DURATION_UNITS: ReadonlySet<string> = new Set(['ms', 'seconds', 'minutes', 'hours', 'days']);

/** The props that take a construct (a secret, a queue, a topic, a VPC), never text: what each must be. */
const CONSTRUCT_PROPS: Readonly<Record<string, string>> = {
  webhookUrlSecret: 'a secret (secretsmanager.ISecret)',
  signingSecret: 'a secret (secretsmanager.ISecret)',
  authSecret: 'a secret (secretsmanager.ISecret)',
  oauthClientSecret: 'a secret (secretsmanager.ISecret)',
  clientCertificateSecret: 'a secret (secretsmanager.ISecret)',
  queue: 'a queue (sqs.IQueue)',
  deadLetterQueue: 'a queue (sqs.IQueue)',
  alarmTopic: 'a topic (sns.ITopic)',
  vpc: 'a VPC (ec2.IVpc)',
  vpcSubnets: 'a subnet selection (ec2.SubnetSelection)',
  securityGroups: 'an array of security groups (ec2.ISecurityGroup[])',
};

/** A value as a message shows it: its type, then the value (`the string "20"`). */
function shown(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array (${JSON.stringify(value)})`;
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'Object'})`;
  return `the ${typeof value} ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`;
}

/** Whether `value` is a `Duration`: by its methods, so a second copy of aws-cdk-lib's class passes too. */
function isDuration(value: unknown): value is Duration {
  return (
    value instanceof Duration ||
    (typeof value === 'object' &&
      value !== null &&
      typeof (value as Duration).toSeconds === 'function' &&
      typeof (value as Duration).toHumanString === 'function')
  );
}

/** Whether `value` is a number or Duration (or a list of them) that a token stands for. */
function isUnresolvedQuantity(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(isUnresolvedQuantity);
  if (typeof value === 'number') return Token.isUnresolved(value);
  return isDuration(value) && value.isUnresolved();
}

/** What a prop of `setting` must be, when `value` is not that; `undefined` when it is. */
function expectedType(setting: Setting, value: unknown): string | undefined {
  const prop = setting.prop ?? '';
  if (Object.hasOwn(CONSTRUCT_PROPS, prop)) {
    const ok = prop === 'securityGroups' ? Array.isArray(value) : typeof value === 'object' && value !== null && !Array.isArray(value);
    return ok ? undefined : CONSTRUCT_PROPS[prop];
  }
  if (setting.unit !== undefined && DURATION_UNITS.has(setting.unit) && prop !== 'logRetention') {
    const example = `Duration.${setting.unit === 'ms' ? 'millis' : setting.unit}(${setting.default ?? 1})`;
    if (setting.kind === 'list')
      // An empty list would write an empty variable, which the function reads as unset: its default schedule, silently.
      return Array.isArray(value) && value.length > 0 && value.every(isDuration)
        ? undefined
        : `a non-empty array of Durations, such as [${example}]`;
    return isDuration(value) ? undefined : `a Duration, such as ${example}`;
  }
  switch (setting.kind) {
    case 'integer':
    case 'decimal':
      return typeof value === 'number' ? undefined : 'a number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'true or false';
    default:
      return typeof value === 'string' ? undefined : 'a string';
  }
}

/**
 * Each prop given is of its declared type. TypeScript sees to it in a typed app; from JavaScript,
 * `timeout: 20` would otherwise fail deep inside with a TypeError that names no prop, and
 * `signing: 'false'` (a string, so true) would quietly sign.
 * @throws {WebhookRelayConfigError} naming the first prop of the wrong type
 */
export function checkPropTypes(props: WebhookRelayProps | undefined): asserts props is WebhookRelayProps {
  if (typeof props !== 'object' || props === null)
    throw new WebhookRelayConfigError('props', `must be an object such as { webhookUrl: 'https://…' }; got ${shown(props)}`);
  const given = props as unknown as Readonly<Record<string, unknown>>;
  for (const setting of SETTING_LIST) {
    if (setting.prop === undefined || given[setting.prop] === undefined) continue;
    const expected = expectedType(setting, given[setting.prop]);
    if (expected !== undefined) throw new WebhookRelayConfigError(setting.prop, `must be ${expected}; got ${shown(given[setting.prop])}`);
    // A number's token reads as a huge negative number: the bound's refusal would quote that.
    if (isUnresolvedQuantity(given[setting.prop]))
      throw new WebhookRelayConfigError(
        setting.prop,
        'must be a value known at synth, not a token (a CfnParameter, an attribute): the construct checks it and derives other settings from it',
      );
  }
  if (given.alarmTopic !== undefined && (typeof given.alarmTopic !== 'object' || given.alarmTopic === null))
    throw new WebhookRelayConfigError('alarmTopic', `must be ${CONSTRUCT_PROPS.alarmTopic}; got ${shown(given.alarmTopic)}`);
}
