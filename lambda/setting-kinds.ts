/**
 * How each kind of setting of the registry (`lambda/settings.ts`) is written and checked: one
 * parser per kind, for the function's environment variables (`lambda/env.ts`), the CDK context
 * (`lib/context.ts`), the construct's props (`lib/webhook-relay/checks.ts`) and the daemon's
 * command line alike. A parser returns the value, or a {@link Refusal} saying what was expected;
 * each caller words the error in its own voice (a `ConfigError` for a variable, a `ContextError`
 * for a `-c` key, a `WebhookRelayConfigError` for a prop). Import-free but for the registry's
 * types and `duration-text.ts` (itself import-free), so the function's bundle, the CDK app and
 * the daemon all load it.
 */
import { durationText } from './duration-text';
import type { Setting, SettingUnit } from './settings';

/** A value refused: what it must be instead, the words that follow "must be" in every caller's message. */
export class Refusal {
  constructor(readonly expected: string) {}
}

/**
 * Where a value was typed: an environment variable (a shell's words: `yes`/`no` too; a literal
 * quoted in the message, as typed there) or a CDK context key (`-c key=value` or cdk.json's JSON).
 */
export type ValueSource = 'variable' | 'context';

/** A value of any kind, in the setting's unit. */
export type SettingValue = string | number | boolean | readonly number[];

/** The value a setting's kind reads, and `undefined` when the setting may be unset (it has no default). */
export type SettingValueOf<S> =
  | (S extends { kind: 'integer' | 'decimal' }
      ? number
      : S extends { kind: 'boolean' }
        ? boolean
        : S extends { kind: 'list' }
          ? readonly number[]
          : S extends { choices: readonly (infer C extends string)[] }
            ? C
            : string)
  | (S extends { default: unknown } ? never : undefined);

/** A literal as a message shows it: quoted for a variable, as a shell user types it; bare for a context key. */
function literal(text: string, source: ValueSource): string {
  return source === 'variable' ? `"${text}"` : text;
}

/** Digits (or a number, from JSON or a prop) as a whole number within bounds; without bounds, any. */
export function wholeNumber(raw: unknown, min?: number, max?: number): number | Refusal {
  const value = typeof raw === 'number' ? raw : typeof raw === 'string' && /^[0-9]+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (Number.isSafeInteger(value) && value >= (min ?? 0) && value <= (max ?? Number.MAX_SAFE_INTEGER)) return value;
  return new Refusal(min === undefined || max === undefined ? 'a whole number' : `a whole number from ${min} to ${max}`);
}

/** The least value but 0 of a decimal setting that 0 switches off, and how a refusal words it (`0.0167 (1 minute)`). */
export interface LeastAboveZero {
  readonly value: number;
  readonly text: string;
}

/**
 * Digits with an optional decimal part (`0.5`; no exponent, no sign), or a number, within bounds;
 * with `aboveZero`, 0 (off) or from its value, never anything between.
 */
export function decimalNumber(raw: unknown, min: number, max: number, aboveZero?: LeastAboveZero): number | Refusal {
  const value =
    typeof raw === 'number' ? raw : typeof raw === 'string' && /^[0-9]+(\.[0-9]+)?$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  const inGap = aboveZero !== undefined && value > 0 && value < aboveZero.value;
  if (Number.isFinite(value) && value >= min && value <= max && !inGap) return value;
  const range = aboveZero === undefined ? `a number from ${min}` : `0 (off) or a number from ${aboveZero.text}`;
  return new Refusal(`${range} to ${max} (decimals allowed, e.g. 0.5)`);
}

/** Seconds in each time unit, to word a bound as a duration too. */
const UNIT_SECONDS: Readonly<Partial<Record<SettingUnit, number>>> = { ms: 0.001, seconds: 1, minutes: 60, hours: 3_600, days: 86_400 };

/**
 * A setting's {@link Setting.minAboveZero} as a refusal states it: rounded up to four decimals, so
 * the number shown is itself accepted, and as a duration for a time unit (`0.0167 (1 minute)`).
 */
export function leastAboveZero(setting: Setting): LeastAboveZero | undefined {
  const value = setting.minAboveZero;
  if (value === undefined) return undefined;
  const unitSeconds = setting.unit === undefined ? undefined : UNIT_SECONDS[setting.unit];
  const shown = Math.ceil(value * 10_000) / 10_000;
  return { value, text: unitSeconds === undefined ? String(shown) : `${shown} (${durationText(value * unitSeconds)})` };
}

/** The words a variable may say true or false with, as shells and container platforms write them. */
const SHELL_WORDS: Readonly<Record<string, boolean>> = {
  true: true,
  '1': true,
  yes: true,
  on: true,
  false: false,
  '0': false,
  no: false,
  off: false,
};

/** `true` or `false` (a JSON boolean too); a variable also takes 1/0, yes/no, on/off, in any case. */
export function trueOrFalse(raw: unknown, source: ValueSource): boolean | Refusal {
  if (typeof raw === 'boolean') return raw;
  const word = typeof raw === 'string' ? raw.trim() : '';
  const value = source === 'variable' ? SHELL_WORDS[word.toLowerCase()] : { true: true, false: false }[word];
  return value ?? new Refusal(`${literal('true', source)} or ${literal('false', source)}`);
}

/** One of `choices`, in any case, as the choice is written. */
export function oneOf<T extends string>(raw: unknown, choices: readonly T[]): T | Refusal {
  const word = typeof raw === 'string' ? raw.trim().toLowerCase() : undefined;
  return choices.find((choice) => choice.toLowerCase() === word) ?? new Refusal(`one of ${choices.join(', ')}`);
}

/** A list of whole numbers, comma-separated (`60,600,3600`), each within the setting's bounds. */
function wholeNumberList(raw: string, setting: Setting, source: ValueSource): readonly number[] | Refusal {
  const { min = 0, max = Number.MAX_SAFE_INTEGER } = setting;
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.every((part) => !(wholeNumber(part, min, max) instanceof Refusal))) return parts.map(Number);
  const example = Array.isArray(setting.default) ? setting.default.slice(0, 3).join(',') : '1,2,3';
  return new Refusal(`comma-separated whole ${setting.unit ?? 'numbers'} from ${min} to ${max}, e.g. ${literal(example, source)}`);
}

/**
 * `raw` as `setting`'s kind reads it: a number within its bounds, `true`/`false`, one of its
 * choices, a list of numbers, or text (trimmed). A setting's own rules beyond its kind (a URL's
 * scheme, a header's characters) are its reader's: `loadConfig` and its kin.
 */
export function settingValue(setting: Setting, raw: unknown, source: ValueSource): SettingValue | Refusal {
  switch (setting.kind) {
    case 'integer':
      return wholeNumber(raw, setting.min, setting.max);
    case 'decimal':
      return decimalNumber(raw, setting.min ?? 0, setting.max ?? Number.MAX_SAFE_INTEGER, leastAboveZero(setting));
    case 'boolean':
      return trueOrFalse(raw, source);
  }
  // cdk.json writes a list as JSON writes one: `[60, 600]` is `60,600`.
  if (setting.kind === 'list' && source === 'context' && Array.isArray(raw) && raw.every((item) => typeof item !== 'object'))
    return wholeNumberList(raw.join(','), setting, source);
  if (typeof raw !== 'string') return new Refusal('a string');
  if (setting.kind === 'oneOf') return oneOf(raw, setting.choices ?? []);
  if (setting.kind === 'list') return wholeNumberList(raw, setting, source);
  return raw.trim();
}
