/**
 * The construct's defaults, from the settings registry (`lambda/settings.ts`): each as its prop
 * takes it (a `Duration` for time units), and which prop sets each environment variable.
 */
import { Duration } from 'aws-cdk-lib';
import { MAX_RETENTION_DAYS } from '../../lambda/aws-limits';
import { type Setting, SETTING_LIST, type SETTINGS, type SettingName } from '../../lambda/settings';
import type { WebhookRelayProps } from './props';

/** One entry of the registry, with its literal types. */
export type Entry = (typeof SETTINGS)[SettingName];

const DURATION: Readonly<Record<string, (amount: number) => Duration>> = {
  ms: Duration.millis,
  seconds: Duration.seconds,
  minutes: Duration.minutes,
  hours: Duration.hours,
  days: Duration.days,
};

/** Props that take a plain number of their unit rather than a `Duration`. */
const PLAIN_NUMBER_PROPS: ReadonlySet<string> = new Set(['logRetention']);

/**
 * A setting's value (in its unit) as its prop takes it: a `Duration` for time units. A decimal
 * (`0.5` hours) becomes whole seconds, rounded, so `toSeconds()` never meets a float's residue
 * (1.15 × 60 minutes is 68.999… in floating point).
 */
export function toPropValue(setting: Setting, value: string | number | boolean | readonly number[]): unknown {
  const unit = setting.unit === undefined || PLAIN_NUMBER_PROPS.has(setting.prop ?? '') ? undefined : DURATION[setting.unit];
  if (unit === undefined) return value;
  if (setting.kind === 'decimal') return Duration.seconds(Math.round(unit(value as number).toMilliseconds({ integral: false }) / 1000));
  return Array.isArray(value) ? value.map((amount) => unit(amount)) : unit(value as number);
}

/** Props whose default the registry states (lists and derived defaults stay with the function and the construct). */
type DefaultedProp = Entry extends infer E
  ? E extends { prop: infer P; default: unknown }
    ? E extends { propDefault: string } | { kind: 'list' }
      ? never
      : P
    : never
  : never;

/** The construct's default of every prop the registry gives one. */
export type RelayDefaults = { readonly [K in DefaultedProp & keyof WebhookRelayProps]-?: NonNullable<WebhookRelayProps[K]> };

/** Defaults of the optional props, from the registry: the handler's own defaults, in the props' types. */
export const RELAY_DEFAULTS: RelayDefaults = Object.fromEntries(
  SETTING_LIST.filter((s) => s.prop !== undefined && s.default !== undefined && s.propDefault === undefined && s.kind !== 'list').map(
    (s) => [s.prop, toPropValue(s, s.default as string | number | boolean)],
  ),
) as unknown as RelayDefaults;

/** Which prop sets each environment variable, so a rejection by the function's own validation names the prop. */
export const PROP_OF_VARIABLE: Readonly<Record<string, string>> = Object.fromEntries(
  SETTING_LIST.filter((s) => s.variable !== undefined && s.prop !== undefined).map((s) => [s.variable, s.prop]),
);

/** Each construct prop a context key sets, and that key (where the names differ: `timeout`, `timeoutSeconds`). */
export const KEY_OF_PROP: Readonly<Record<string, string>> = Object.fromEntries(
  SETTING_LIST.filter((s) => s.context !== undefined && s.prop !== undefined && s.prop !== s.context).map((s) => [s.prop, s.context]),
);

/**
 * A message of the construct as an operator who set the props by `-c` keys reads it: each prop
 * named as its key (`shorten retryWindowHours`, not `retryWindow`).
 */
export function inContextKeys(message: string): string {
  let text = message;
  for (const [prop, key] of Object.entries(KEY_OF_PROP)) {
    // Props named in the text as identifiers only: "6 × timeout + …", "shorter than timeout (30 s)",
    // never the words of a sentence ("the function timeout", "a visibility timeout").
    if (prop === 'name' || prop === 'queue') continue; // plain words in messages
    const pattern = prop === 'timeout' ? /(?<!(function|visibility) )\btimeout\b(?= \(| \+)/g : new RegExp(`\\b${prop}\\b`, 'g');
    text = text.replace(pattern, key);
  }
  // "webhookUrlSecret (-c webhookUrlSecretArn=…)" would now name the key twice: once is enough.
  return text.replace(/\b(\w+) \(-c (\1\b[^)]*)\)/g, '-c $2');
}

/**
 * The context value an app sets (`true`) when every prop it gives comes from a `-c` key, as this
 * repository's app does: the construct's warnings then name those keys ({@link inContextKeys}).
 */
export const PROPS_FROM_CONTEXT = 'sqs-webhook-relay:propsFromContext';

/** The dead-letter queue's retention: the SQS maximum, so a message outlives any main-queue retention. */
export const DLQ_RETENTION = Duration.days(MAX_RETENTION_DAYS);

/** Fails to compile unless `T` is `never`. */
type MustBeNever<T extends never> = T;
/** Compile-time check: every prop the registry names is a prop of {@link WebhookRelayProps} (a new setting's prop must be declared there, with its `@default`). */
export type RegistryPropsAreProps = MustBeNever<Exclude<Extract<Entry, { prop: string }>['prop'], keyof WebhookRelayProps>>;
