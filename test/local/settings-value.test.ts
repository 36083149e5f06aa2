/**
 * The sandbox hands the runner its settings as a value: starting and stopping it leaves the
 * environment as it was (a second relay in the same process, or the code that started it, sees
 * the variables the user set, not the emulator's endpoint and credentials).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PLAIN } from '../../local/log';
import type { LocalRelay } from '../../local/runner';
import { startSandbox } from '../../local/sandbox/sandbox';

let relay: LocalRelay | undefined;
afterEach(async () => {
  await relay?.stop();
  relay = undefined;
});

describe('the sandbox', () => {
  it('starts from the environment and leaves it unchanged (but for the one Powertools setting it documents)', async () => {
    const env: Record<string, string | undefined> = { LOG_FORMAT: 'json', AWS_PROFILE: 'developer', AWS_REGION: 'eu-west-1' };
    const before = { ...process.env };
    const lines: string[] = [];
    relay = await startSandbox({ out: { write: (text: string) => lines.push(text) }, isTerminal: false, styles: PLAIN }, env);
    expect(relay.info).toMatchObject({ mode: 'embedded', demoWebhook: true });
    expect(lines.join('')).toContain('"Local relay ready"');
    expect(env).toEqual({ LOG_FORMAT: 'json', AWS_PROFILE: 'developer', AWS_REGION: 'eu-west-1' });
    const { POWERTOOLS_METRICS_DISABLED: _metrics, ...after } = process.env;
    const { POWERTOOLS_METRICS_DISABLED: _before, ...expected } = before;
    expect(after).toEqual(expected);
  });
});
