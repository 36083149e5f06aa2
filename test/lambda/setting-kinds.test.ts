/**
 * One parser per kind (lambda/setting-kinds.ts): an environment variable and its `-c` context key
 * accept the same values and refuse the same ones, each in its own words; the construct's props
 * and the commands' options are held to the same bounds. The kinds are checked here directly, and
 * through every caller against the settings registry.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ConfigError, readSetting } from '../../lambda/env';
import { decimalNumber, oneOf, Refusal, settingValue, trueOrFalse, wholeNumber } from '../../lambda/setting-kinds';
import { type Setting, SETTING_LIST } from '../../lambda/settings';
import { ContextError, stackFromContext } from '../../lib/context';

/** Why `action` failed, or `undefined` when it did not. */
function failure(action: () => unknown): Error | undefined {
  try {
    action();
  } catch (error) {
    return error as Error;
  }
  return undefined;
}

/** The settings that have both a variable and a context key, of the kinds both read the same way. */
const SHARED = SETTING_LIST.filter(
  (s): s is Setting & { variable: string; context: string } =>
    s.variable !== undefined && s.context !== undefined && ['integer', 'decimal', 'oneOf', 'list'].includes(s.kind),
);

describe('the kinds', () => {
  test('whole numbers: digits only (surrounding space trimmed), within bounds', () => {
    expect(wholeNumber(' 007 ', 1, 10)).toBe(7);
    expect(wholeNumber(10, 1, 10)).toBe(10);
    for (const bad of ['0', '11', '1.5', '-1', '+5', '1e1', '0x5', '', ' ', 'ten', 5.5, Number.NaN, '99999999999999999999'])
      expect(wholeNumber(bad, 1, 10), String(bad)).toEqual(new Refusal('a whole number from 1 to 10'));
    expect(wholeNumber('12')).toBe(12);
    expect(wholeNumber('x')).toEqual(new Refusal('a whole number'));
  });

  test('decimals: digits with an optional fraction, within bounds', () => {
    expect(decimalNumber('0.5', 0, 1)).toBe(0.5);
    expect(decimalNumber(1, 0, 1)).toBe(1);
    for (const bad of ['.5', '1.', '1e0', '-0.5', '1.5', 'Infinity', Number.POSITIVE_INFINITY])
      expect(decimalNumber(bad, 0, 1), String(bad)).toEqual(new Refusal('a number from 0 to 1 (decimals allowed, e.g. 0.5)'));
  });

  test("true/false: a variable takes a shell's words, a context key true and false (or JSON booleans); each says so its own way", () => {
    for (const [word, value] of [
      ['TRUE', true],
      ['yes', true],
      ['On', true],
      ['1', true],
      ['false', false],
      ['no', false],
      ['OFF', false],
      ['0', false],
    ] as const)
      expect(trueOrFalse(word, 'variable')).toBe(value);
    expect(trueOrFalse('sure', 'variable')).toEqual(new Refusal('"true" or "false"'));
    expect(trueOrFalse(' true ', 'context')).toBe(true);
    expect(trueOrFalse(false, 'context')).toBe(false);
    expect(trueOrFalse('yes', 'context')).toEqual(new Refusal('true or false'));
  });

  test('choices: any case, as the choice is written', () => {
    expect(oneOf(' Linear ', ['exponential', 'linear'])).toBe('linear');
    expect(oneOf('debug', ['TRACE', 'DEBUG'])).toBe('DEBUG');
    expect(oneOf('linear,fixed', ['linear', 'fixed'])).toEqual(new Refusal('one of linear, fixed'));
    expect(oneOf(3, ['linear'])).toEqual(new Refusal('one of linear'));
  });

  test('a list of whole numbers, its example quoted for a variable and bare for a context key', () => {
    const schedule = SETTING_LIST.find((s) => s.kind === 'list') as Setting;
    expect(settingValue(schedule, '5, 60,3600', 'variable')).toEqual([5, 60, 3600]);
    expect(settingValue(schedule, '5,,6', 'variable')).toEqual(
      new Refusal('comma-separated whole seconds from 0 to 43200, e.g. "60,600,3600"'),
    );
    expect(settingValue(schedule, '1m', 'context')).toEqual(new Refusal('comma-separated whole seconds from 0 to 43200, e.g. 60,600,3600'));
    expect(settingValue(schedule, 60, 'context')).toEqual(new Refusal('a string'));
  });
});

describe('one parser for a variable and its context key', () => {
  test('the settings compared are every shared one of those kinds', () => {
    expect(SHARED.map((s) => s.variable)).toEqual(
      expect.arrayContaining([
        'REQUEST_TIMEOUT_MS',
        'RETRY_WINDOW_HOURS',
        'BACKOFF',
        'BACKOFF_SCHEDULE',
        'BATCH_SIZE',
        'POWERTOOLS_LOG_LEVEL',
      ]),
    );
  });

  test('property: any text is accepted by both or refused by both, with the same expectation', () => {
    const text = fc.oneof(
      fc.stringMatching(/^[0-9., +e-]{0,8}$/),
      fc.integer({ min: -10, max: 2_000_000 }).map(String),
      fc.constantFrom('linear', 'LINEAR', 'debug', 'fixed ', 'schedule', 'nope', '60,600', '1.5', '323.95', '323.96'),
    );
    fc.assert(
      fc.property(fc.constantFrom(...SHARED), text, (setting, raw) => {
        const viaVariable = failure(() => readSetting({ [setting.variable]: raw }, setting));
        const viaContext = failure(() => stackFromContext((key) => (key === setting.context ? raw : undefined)));
        if (raw.trim() === '') return; // unset either way
        expect(viaVariable === undefined, `${setting.variable}=${JSON.stringify(raw)}`).toBe(viaContext === undefined);
        if (viaVariable === undefined) return;
        expect(viaVariable).toBeInstanceOf(ConfigError);
        expect(viaContext).toBeInstanceOf(ContextError);
        const expected = (message: string) => /must be (.*); got/.exec(message)?.[1]?.replaceAll('"', '');
        expect(expected(viaContext?.message ?? '')).toBe(expected(viaVariable.message));
      }),
      { numRuns: 400 },
    );
  });
});
