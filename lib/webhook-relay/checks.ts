/**
 * The checks every prop goes through, by the kinds of the settings registry (`lambda/setting-kinds.ts`)
 * and its bounds; each failure is a {@link WebhookRelayConfigError} naming the prop.
 */
import { Duration } from 'aws-cdk-lib';
import { Refusal, wholeNumber as wholeNumberOf } from '../../lambda/setting-kinds';
import type { Setting } from '../../lambda/settings';
import { toPropValue } from './defaults';
import { WebhookRelayConfigError } from './props';

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
