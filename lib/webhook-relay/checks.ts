/** The small checks every prop goes through; each failure is a {@link WebhookRelayConfigError} naming the prop. */
import type { Duration } from 'aws-cdk-lib';
import { WebhookRelayConfigError } from './props';

/** Throws a {@link WebhookRelayConfigError} for `prop` unless `condition` holds. */
export function check(condition: boolean, prop: string, message: string): asserts condition {
  if (!condition) throw new WebhookRelayConfigError(prop, message);
}

/** A whole number within bounds. */
export function wholeNumber(value: number, prop: string, min: number, max: number): number {
  check(Number.isInteger(value) && value >= min && value <= max, prop, `must be a whole number from ${min} to ${max}; got ${value}`);
  return value;
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
