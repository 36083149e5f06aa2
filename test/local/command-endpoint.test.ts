/**
 * Where `send` and `dead-letters` send their SigV4-signed SQS calls, on the daemon's rule: https, a
 * loopback host, or plain http allowed by ALLOW_INSECURE_HTTP (the operator's say-so that the
 * network is private). A refusal is one line naming how the URL was given, before any call; the
 * allowance lets the same command through. `0.0.0.0` stands for a host that is not loopback by the
 * rule, yet reaches the emulator on this machine.
 */
import { afterEach, expect, test, vi } from 'vitest';
import { runSubcommand } from '../../local/cli';
import type { CommandIo, ExitStatus } from '../../local/command-io';
import { runDeadLetters } from '../../local/dead-letters/command';
import { runSend } from '../../local/send';
import { type Emulator, startEmulator } from '../../testkit/emulator';

let emulator: Emulator | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await emulator?.stop();
  emulator = undefined;
});

async function command(name: 'send' | 'dead-letters', args: string[], env: Record<string, string> = {}) {
  let out = '';
  let err = '';
  const io: CommandIo = {
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
    env,
    errIsTerminal: false,
  };
  const run = name === 'send' ? () => runSend(args, io) : () => runDeadLetters(args, io);
  const status: ExitStatus = await runSubcommand(name, run, io);
  return { status, out, err };
}

/** The emulator's queue URL with its host made 0.0.0.0: plain http to a host that is not loopback. */
async function queueOnAnyAddress(): Promise<{ queueUrl: string; endpoint: string }> {
  emulator = await startEmulator({ keepEnvironment: true });
  const queueUrl = emulator.queue.url.replace(/\/\/[^/]+\//, `//0.0.0.0:${new URL(emulator.endpoint).port}/`);
  return { queueUrl, endpoint: new URL(queueUrl).origin };
}

const REFUSAL =
  /must be an absolute https:\/\/ URL \(http:\/\/ only for loopback hosts or with ALLOW_INSECURE_HTTP=true\).*\(signed SQS calls go there;.*\)/;

test('send: plain http to a host that is not loopback is refused naming --queue-url, QUEUE_URL or the endpoint variable; nothing is sent', async () => {
  const { queueUrl, endpoint } = await queueOnAnyAddress();
  const refusals: [string[], Record<string, string>, string][] = [
    [['--queue-url', queueUrl, 'x'], {}, '--queue-url'],
    [['x'], { QUEUE_URL: queueUrl }, 'QUEUE_URL'],
    [
      ['--queue-url', 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders', 'x'],
      { AWS_ENDPOINT_URL_SQS: endpoint },
      'AWS_ENDPOINT_URL_SQS',
    ],
    [['--queue-url', queueUrl, 'x'], { AWS_ENDPOINT_URL: endpoint }, 'AWS_ENDPOINT_URL'],
  ];
  for (const [args, env, name] of refusals) {
    const result = await send(args, env);
    expect(result, name).toMatchObject({ status: 2, out: '' });
    expect(result.err).toMatch(
      new RegExp(`^sqs-webhook-relay send: Invalid configuration: ${name} ${REFUSAL.source}; got "${endpoint}"\\n$`),
    );
  }
  expect(emulator?.counts(emulator.queue).ready).toBe(0);
});

test('send: ALLOW_INSECURE_HTTP=true lets the same message through to the queue', async () => {
  const { endpoint } = await queueOnAnyAddress();
  const queueUrl = emulator?.queue.url ?? '';
  // Not a loopback endpoint, so no emulator credentials are made up: the SDK's chain finds these.
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
  expect(await send(['--queue-url', queueUrl, 'x'], { AWS_ENDPOINT_URL_SQS: endpoint })).toMatchObject({ status: 2 });
  const result = await send(['--queue-url', queueUrl, 'over plain http'], { AWS_ENDPOINT_URL_SQS: endpoint, ALLOW_INSECURE_HTTP: 'true' });
  expect(result).toMatchObject({ status: 0, err: '' });
  const [message] = (await emulator?.receive(emulator.queue)) ?? [];
  expect(message?.Body).toBe('over plain http');
});

test('dead-letters: the same rule, with and without ALLOW_INSECURE_HTTP, for --queue-url and --dlq-url', async () => {
  const { queueUrl, endpoint } = await queueOnAnyAddress();
  const dlqUrl = queueUrl.replace(/[^/]+$/, emulator?.dlq.name ?? 'missing');
  for (const [args, name] of [
    [['summary', '--queue-url', queueUrl], '--queue-url'],
    [['summary', '--dlq-url', dlqUrl], '--dlq-url'],
  ] as const) {
    const refused = await command('dead-letters', [...args]);
    expect(refused, name).toMatchObject({ status: 2, out: '' });
    expect(refused.err).toMatch(
      new RegExp(`^sqs-webhook-relay dead-letters: Invalid configuration: ${name} ${REFUSAL.source}; got "${endpoint}"\\n$`),
    );
  }
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
  const viaEndpoint = { AWS_ENDPOINT_URL_SQS: endpoint };
  const summary = ['summary', '--queue-url', emulator?.queue.url ?? '', '--json'];
  expect(await command('dead-letters', summary, viaEndpoint)).toMatchObject({ status: 2 });
  const allowed = await command('dead-letters', summary, { ...viaEndpoint, ALLOW_INSECURE_HTTP: 'true' });
  expect(allowed).toMatchObject({ status: 0, err: '' });
  expect(JSON.parse(allowed.out)).toMatchObject({ queueUrl: emulator?.queue.url, read: 0, complete: true });
});

test('loopback and https endpoints need no allowance', async () => {
  emulator = await startEmulator({ keepEnvironment: true });
  expect(await send(['--queue-url', emulator.queue.url, 'loopback'])).toMatchObject({ status: 0, err: '' });
  // Past the rule, nothing answers https on port 9: the failure is reaching it, not the rule.
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
  const https = await send(['--queue-url', 'https://0.0.0.0:9/000000000000/orders', 'x']);
  expect(https).toMatchObject({ status: 1 });
  expect(https.err).toMatch(/^sqs-webhook-relay send: cannot reach SQS at https:\/\/0\.0\.0\.0:9\/000000000000\/orders/);
});

function send(args: string[], env: Record<string, string> = {}) {
  return command('send', args, env);
}
