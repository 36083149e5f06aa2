/**
 * Reading environment variables with validation: the small parsers the function's
 * configuration and the local runner's settings share, each failing with a {@link ConfigError}
 * that names the variable and says what was expected.
 */
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

/** A whole number within bounds, or `fallback` when unset. */
export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const value = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `a whole number from ${min} to ${max}`, raw);
  }
  return value;
}

/** A whole-number setting of the registry (`lambda/settings.ts`): its variable, default and bounds. */
export function integerSetting(env: Env, name: string, setting: Setting): number {
  return integer(env, setting.variable ?? name, setting.default as number, setting.min ?? 0, setting.max ?? Number.MAX_SAFE_INTEGER);
}

/** A number within bounds, decimals allowed (`0.5`), or `fallback` when unset. */
export function decimal(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const value = /^[0-9]+(\.[0-9]+)?$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max)) throw new ConfigError(name, `a number from ${min} to ${max} (decimals allowed, e.g. 0.5)`, raw);
  return value;
}

/** `true`/`false` (also 1/0, yes/no, on/off), or `fallback` when unset. */
export function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const lower = raw.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(lower)) return true;
  if (['false', '0', 'no', 'off'].includes(lower)) return false;
  throw new ConfigError(name, '"true" or "false"', raw);
}

/** One of `choices` (case-insensitive), or `fallback` when unset. */
export function oneOf<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const match = choices.find((choice) => choice === raw.toLowerCase());
  if (match === undefined) throw new ConfigError(name, `one of ${choices.join(', ')}`, raw);
  return match;
}
