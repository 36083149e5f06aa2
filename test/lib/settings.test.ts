/**
 * The settings registry (`lambda/settings.ts`) is the one declaration of every setting: the
 * function's parser, the construct's defaults, the context keys and the docs all follow it.
 * These tests hold the derived copies to it, so a setting added or changed in one place shows
 * up everywhere or fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import * as limits from '../../lambda/aws-limits';
import { loadConfig } from '../../lambda/config';
import { configErrorOf } from '../support/config-errors';
import { FUNCTION_SETTINGS, LOG_LEVELS, type Setting, SETTING_DOCS, SETTING_LIST, SETTINGS, type SettingName } from '../../lambda/settings';
import { loadLocalSettings } from '../../local/settings';
import { withSettingsTables } from '../../lib/configuration-docs';
import { CONTEXT_KEYS } from '../../lib/context';
import { LOG_LEVELS as STACK_LOG_LEVELS } from '../../lib/index';
import { PROP_OF_VARIABLE, RELAY_DEFAULTS } from '../../lib/webhook-relay/defaults';

const ROOT = join(import.meta.dirname, '..', '..');
const URL_ = 'https://hooks.example.com/relay';

describe('the settings registry', () => {
  it('docs/configuration.md holds the tables the registry renders (npx tsx bin/docs.ts rewrites them)', () => {
    const docs = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
    expect(withSettingsTables(docs)).toBe(docs);
  });

  it('every setting has one line of doc, and every name appears once', () => {
    for (const name of Object.keys(SETTINGS) as SettingName[]) {
      expect(SETTING_DOCS[name], name).toMatch(/\S/);
      expect(SETTING_DOCS[name], name).not.toContain('\n');
    }
    for (const field of ['variable', 'prop', 'context'] as const) {
      const names = SETTING_LIST.map((s) => s[field]).filter((n) => n !== undefined);
      expect(new Set(names).size, field).toBe(names.length);
    }
  });

  it('its bounds are the AWS limits of lambda/aws-limits.ts', () => {
    expect(SETTINGS.BACKOFF_MAX_SECONDS.max).toBe(limits.MAX_VISIBILITY_SECONDS);
    expect(SETTINGS.OUTAGE_BACKOFF_MAX_SECONDS.max).toBe(limits.MAX_VISIBILITY_SECONDS);
    expect(SETTINGS.visibilityTimeoutSeconds.max).toBe(limits.MAX_VISIBILITY_SECONDS);
    expect(SETTINGS.BATCH_SIZE.max).toBe(limits.MAX_EVENT_SOURCE_BATCH_SIZE);
    expect(SETTINGS.MAX_BATCHING_WINDOW_SECONDS.max).toBe(limits.MAX_BATCHING_WINDOW_SECONDS);
    expect(SETTINGS.FUNCTION_TIMEOUT_SECONDS.max).toBe(limits.MAX_FUNCTION_TIMEOUT_SECONDS);
  });

  it('loadConfig reads every whole-number setting of the function with the registry default and bounds', () => {
    const defaults = loadConfig({ WEBHOOK_URL: URL_ });
    expect(defaults.requestTimeoutMs).toBe(FUNCTION_SETTINGS.REQUEST_TIMEOUT_MS.default);
    // The registry's receive count is the one of SQS's count semantics, with the window off.
    expect(loadConfig({ WEBHOOK_URL: URL_, RETRY_WINDOW_HOURS: '0' }).maxReceiveCount).toBe(FUNCTION_SETTINGS.MAX_RECEIVE_COUNT.default);
    expect(defaults.retryWindowSeconds).toBe(FUNCTION_SETTINGS.RETRY_WINDOW_HOURS.default * 3600);
    expect(defaults.backoff.schedule).toEqual(FUNCTION_SETTINGS.BACKOFF_SCHEDULE.default);
    const integers = SETTING_LIST.filter((s) => s.scope === 'function' && s.kind === 'integer');
    expect(integers.length).toBeGreaterThan(5);
    for (const setting of integers) {
      const variable = setting.variable as string;
      expect(configErrorOf(() => loadConfig({ WEBHOOK_URL: URL_, [variable]: String((setting.max as number) + 1) })).message).toContain(
        `${variable} must be a whole number from ${setting.min} to ${setting.max}`,
      );
    }
  });

  it("the construct's defaults are the function's, in the props' units", () => {
    const config = loadConfig({ WEBHOOK_URL: URL_ });
    expect(RELAY_DEFAULTS.requestTimeout.toMilliseconds()).toBe(config.requestTimeoutMs);
    expect(RELAY_DEFAULTS.deadlineMargin.toMilliseconds()).toBe(config.deadlineMarginMs);
    expect(RELAY_DEFAULTS.requestConcurrency).toBe(config.maxConcurrency);
    expect(RELAY_DEFAULTS.maxReceiveCount).toBe(loadConfig({ WEBHOOK_URL: URL_, RETRY_WINDOW_HOURS: '0' }).maxReceiveCount);
    expect(RELAY_DEFAULTS.retryWindow.toSeconds()).toBe(config.retryWindowSeconds);
    expect(RELAY_DEFAULTS.pacing).toBe(config.pacing.adaptive);
    expect(RELAY_DEFAULTS.maxRequestsPerSecond).toBe(0);
    expect(config.pacing.maxRequestsPerSecond).toBeUndefined();
    expect(RELAY_DEFAULTS.backoffBase.toSeconds()).toBe(config.backoff.baseSeconds);
    expect(RELAY_DEFAULTS.backoffMax.toSeconds()).toBe(config.backoff.maxSeconds);
    expect(RELAY_DEFAULTS.secretsRefresh.toSeconds()).toBe(config.secretsRefreshSeconds);
    expect(RELAY_DEFAULTS.outageBackoffMax.toSeconds()).toBe(config.breaker.maxHoldSeconds);
    expect(RELAY_DEFAULTS.retentionPeriod.toDays()).toBe(4);
    expect(RELAY_DEFAULTS.timeout).toBeInstanceOf(Duration);
    expect(RELAY_DEFAULTS.logRetention).toBe(30);
  });

  it("local mode's defaults are the registry's, and the default receive count is written once", () => {
    const local = loadLocalSettings({}, false);
    expect(local.batchSize).toBe(RELAY_DEFAULTS.batchSize);
    expect(local.functionTimeoutSeconds).toBe(RELAY_DEFAULTS.timeout.toSeconds());
    expect(local.sqsPort).toBe(SETTINGS.SQS_PORT.default);
    expect(local.maxReceiveCount).toBeUndefined();
    expect(loadLocalSettings({ MAX_RECEIVE_COUNT: '7' }, false).maxReceiveCount).toBe(7);
  });

  it('one list of log levels for the function, the stack and local mode', () => {
    expect(STACK_LOG_LEVELS).toBe(LOG_LEVELS);
    expect(loadLocalSettings({ LOG_LEVEL: 'silent' }, false).logLevel).toBe('SILENT');
    expect(CONTEXT_KEYS.logLevel.choices).toBe(LOG_LEVELS);
    expect(loadLocalSettings({ LOG_LEVEL: 'trace' }, false).logLevel).toBe('TRACE');
  });

  it('every context key and every variable with a prop come from the registry', () => {
    expect(Object.keys(CONTEXT_KEYS)).toEqual(SETTING_LIST.filter((s) => s.context !== undefined).map((s) => s.context));
    const spec = (key: keyof typeof CONTEXT_KEYS): Setting => CONTEXT_KEYS[key].setting;
    expect(CONTEXT_KEYS.requestTimeoutMs.range).toEqual([spec('requestTimeoutMs').min, spec('requestTimeoutMs').max]);
    expect(PROP_OF_VARIABLE.MAX_CONCURRENCY).toBe('requestConcurrency');
    expect(PROP_OF_VARIABLE.REQUEST_TIMEOUT_MS).toBe('requestTimeout');
  });
});
