/**
 * Reading the registry's settings (`lambda/settings.ts`) from environment variables: the
 * function's configuration and the local runner's settings both read them here, each value parsed
 * by its kind (`setting-kinds.ts`), a bad one failing with a {@link ConfigError} that names the
 * variable and says what was expected.
 */
import { Refusal, type SettingValueOf, settingValue } from './setting-kinds';
import type { Setting } from './settings';

/** Raised for an invalid configuration; `variable` names the environment variable at fault. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    expected: string,
    received: string | undefined,
  ) {
    super(`Invalid configuration: ${variable} must be ${expected}; got ${received === undefined ? 'nothing' : JSON.stringify(received)}`);
    this.name = 'ConfigError';
  }
}

/** An environment: `process.env` or a plain record. */
export type Env = Readonly<Record<string, string | undefined>>;

/** The environment variable's value, or `undefined` when it is unset or blank. */
export function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/**
 * A setting of the registry from its variable, parsed by its kind, or its default when the
 * variable is unset or blank (`undefined` for a setting without one).
 * @param expected the caller's words for what was expected, where they are not the kind's
 * @throws {ConfigError} naming the variable, for a value its kind refuses
 */
export function readSetting<S extends Setting & { readonly variable: string }>(env: Env, setting: S, expected?: string): SettingValueOf<S> {
  const raw = read(env, setting.variable);
  if (raw === undefined) return setting.default as SettingValueOf<S>;
  const value = settingValue(setting, raw, 'variable');
  if (value instanceof Refusal) throw new ConfigError(setting.variable, expected ?? value.expected, raw);
  return value as SettingValueOf<S>;
}
