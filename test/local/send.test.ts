/**
 * `sqs-webhook-relay send` (`npm run send --` in a clone) on the emulator: one message, many, with
 * attributes, to a FIFO queue, from standard input; and the one-line refusals of what it cannot send.
 */
import { Readable } from 'node:stream';
import { afterEach, expect, test } from 'vitest';
import { runSubcommand } from '../../local/cli';
import type { CommandIo } from '../../local/command-io';
import { runSend } from '../../local/send';
import { type Emulator, startEmulator } from '../../testkit/emulator';

let emulator: Emulator | undefined;
afterEach(async () => {
  await emulator?.stop();
  emulator = undefined;
});

async function send(args: string[], options: { env?: Record<string, string>; stdin?: string } = {}) {
  let out = '';
  let err = '';
  const io: CommandIo = {
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
    env: options.env ?? {},
    errIsTerminal: false,
    ...(options.stdin === undefined ? {} : { stdin: Readable.from([options.stdin]) }),
  };
  const status = await runSubcommand('send', () => runSend(args, io), io);
  return { status, out, err };
}

test('sends one message, or --count of them, with --attribute, to the queue a loopback URL names (no credentials)', async () => {
  emulator = await startEmulator({ keepEnvironment: true });
  const one = await send([
    '--queue-url',
    emulator.queue.url,
    '--attribute',
    'Body.ContentType=text/plain',
    '--attribute',
    'tenant=a=b',
    'hello',
  ]);
  expect(one).toMatchObject({ status: 0, err: '' });
  const [message] = await emulator.receive(emulator.queue);
  expect(one.out).toBe(`sent ${message?.MessageId} to ${emulator.queue.url}\n`);
  expect(message?.Body).toBe('hello');
  expect(message?.MessageAttributes).toMatchObject({
    'Body.ContentType': { DataType: 'String', StringValue: 'text/plain' },
    tenant: { DataType: 'String', StringValue: 'a=b' },
  });
  expect(await send(['--queue-url', emulator.queue.url, '--count', '25', '{"n":1}'])).toMatchObject({
    status: 0,
    out: `sent 25 messages to ${emulator.queue.url}\n`,
  });
  expect(emulator.counts(emulator.queue).ready).toBe(25);
});

test('an --attribute named __proto__ or constructor is sent like any other', async () => {
  emulator = await startEmulator({ keepEnvironment: true });
  const sent = await send(['--queue-url', emulator.queue.url, '--attribute', '__proto__=p', '--attribute', 'constructor=c', 'x']);
  expect(sent).toMatchObject({ status: 0, err: '' });
  // Read as the emulator holds it: the SDK's reader would lose `__proto__` on the way back.
  const [message] = emulator.messages(emulator.queue);
  expect(Object.getOwnPropertyDescriptor(message?.attributes, '__proto__')?.value).toEqual({ DataType: 'String', StringValue: 'p' });
  expect(Object.getOwnPropertyDescriptor(message?.attributes, 'constructor')?.value).toEqual({ DataType: 'String', StringValue: 'c' });
});

test('the body from standard input; QUEUE_URL when no --queue-url; a FIFO queue gets a group and fresh deduplication ids', async () => {
  emulator = await startEmulator({ keepEnvironment: true, fifo: true });
  expect(
    await send(['--group-id', 'g1', '--count', '3'], { env: { QUEUE_URL: emulator.queue.url }, stdin: '{"piped":true}\n' }),
  ).toMatchObject({ status: 0 });
  const received = await emulator.receive(emulator.queue, 10);
  expect(received.map((message) => [message.Body, message.Attributes?.MessageGroupId])).toEqual([['{"piped":true}', 'g1']]);
  // Three sends of one body, none deduplicated away.
  expect(emulator.counts(emulator.queue)).toMatchObject({ ready: 2, inflight: 1 });
});

test('what it cannot send: one line, exit 2 for the command line, 1 for SQS', async () => {
  emulator = await startEmulator({ keepEnvironment: true });
  const cases: [string[], number, RegExp][] = [
    [['--queue-url', emulator.queue.url, '--count', '0', 'x'], 2, /--count must be a whole number from 1 to 100000; got 0/],
    [['--queue-url', emulator.queue.url, '--attribute', 'novalue', 'x'], 2, /--attribute wants Name=Value; got novalue/],
    [['--queue-url', emulator.queue.url, 'a', 'b'], 2, /one BODY at most/],
    [['--queue-url', emulator.queue.url, '--bogus', 'x'], 2, /unknown option --bogus \(npm run send -- --help\)\n/],
    [
      ['--queue-url', emulator.queue.url, '--coutn', '2', 'x'],
      2,
      /unknown option --coutn; did you mean --count\? \(npm run send -- --help\)\n/,
    ],
    [['--queue-url', emulator.queue.url, ''], 2, /the body is empty/],
    [['--queue-url', 'not a url', 'x'], 2, /--queue-url must be an SQS queue URL/],
    [['--queue-url', `${emulator.queue.url}-missing`, 'x'], 1, /no queue at/],
    [
      ['--queue-url', 'http://127.0.0.1:9/000000000000/q', 'x'],
      1,
      /cannot reach SQS at http:\/\/127\.0\.0\.1:9\/000000000000\/q \(ECONNREFUSED\)/,
    ],
  ];
  for (const [args, status, message] of cases) {
    const result = await send(args);
    expect({ args, status: result.status, out: result.out }).toEqual({ args, status, out: '' });
    expect(result.err).toMatch(new RegExp(`^sqs-webhook-relay send: ${message.source}`));
    expect(result.err.trim().split('\n')).toHaveLength(1);
  }
  expect(emulator.counts(emulator.queue).ready).toBe(0);
});
