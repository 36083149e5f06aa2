/** The configuration error a test expects, for its message and setting to be checked. */
import { expect } from 'vitest';
import { ConfigError } from '../../lambda/env';

/** The ConfigError `action` throws (fails the test if it throws nothing or something else). */
export function configErrorOf(action: () => unknown): ConfigError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError, but nothing was thrown');
}
