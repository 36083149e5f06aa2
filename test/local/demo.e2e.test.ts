/**
 * The first minute of a new user: `npm start` with no configuration prints where to send, the
 * printed command sends, and the demo webhook shows what arrived (and a retry it asked for).
 * And what a user sees when start-up cannot work: one line, a non-zero exit, no stack trace.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { promisify } from 'node:util';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, test } from 'vitest';
import { childEnv, closedPort, QUIET_SDK_LOGGER, type RelayProcess, ROOT, startRelayProcess, stopRelay } from '../../testkit/relay-process';

let relay: RelayProcess | undefined;
afterEach(async () => {
  if (relay !== undefined) await stopRelay(relay, 'SIGKILL');
  relay = undefined;
});

const run = promisify(execFile);

describe('npm start without WEBHOOK_URL', () => {
  test('prints where to send; the printed command sends; the demo webhook prints the message and the retry it asked for', async () => {
    relay = startRelayProcess({ LOG_FORMAT: 'pretty' }, { viaNpm: true });
    await relay.waitForOutput(/^Ready\./m);
    const banner = relay.output();
    const queueUrl = banner.match(/^ {2}Queue URL +(\S+)/m)?.[1] ?? '';
    expect(queueUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/000000000000\/webhook-relay$/);
    expect(banner).toMatch(
      /^ {2}DLQ URL +http:\/\/127\.0\.0\.1:\d+\/000000000000\/webhook-relay-dlq +after 24 hours of failures, or 483 receives$/m,
    );
    expect(banner).toMatch(/^ {2}Webhook +http:\/\/127\.0\.0\.1:\d+\/webhook +demo/m);
    expect(banner).toContain(`--queue-url ${queueUrl} --message-body '{"hello":"world"}'`);

    // The command as printed, pasted into a shell.
    const command = banner.match(/^ {2}(npm run send -- .*)$/m)?.[1] ?? '';
    expect(command).toBe(`npm run send -- --queue-url ${queueUrl} '{"hello":"world"}'`);
    const { stdout } = await run('sh', ['-c', command], { cwd: ROOT, env: childEnv({}) });
    const id = stdout.match(/^sent (\S+) to /m)?.[1] ?? '';
    expect(id).not.toBe('');
    await relay.waitForOutput(new RegExp(`✓ delivered {2}${id} {2}receive 1`));
    const shown = relay.output();
    expect(shown).toContain('▶ webhook got POST /webhook, answered 200');
    expect(shown).toContain(`X-Carrier-Message-Id: ${id}`);
    expect(shown).toContain('Content-Type: application/json');
    expect(shown).toMatch(/^ {4}\{"hello":"world"\}$/m);

    // Any SQS client can use the printed URL, even one with no endpoint configured.
    const sqs = new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, logger: QUIET_SDK_LOGGER });
    const { MessageId } = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: '{"retryAfter": 1}' }));
    sqs.destroy();
    await relay.waitForOutput(new RegExp(`✓ delivered {2}${MessageId} {2}receive 2`));
    const retry = relay.output().slice(shown.length);
    expect(retry).toContain('answered 429 with Retry-After: 1');
    expect(retry).toContain(`↻ retry in 1 s  ${MessageId}  receive 1 · HTTP 429`);

    // Ctrl-C in a terminal reaches npm, tsx and the relay together. Idle, it is polling (20 s
    // long polls): the stop ends that poll rather than waiting it out.
    const asked = Date.now();
    await stopRelay(relay, 'SIGINT');
    expect(relay.output()).toMatch(/Stopped\n$/);
    expect(Date.now() - asked).toBeLessThan(10_000); // a generous bound: a poll waited out takes ~20 s
  }, 60_000);
});

describe('npm start printing what producers sent', () => {
  // SQS takes no C0 control but tab, line feed and carriage return: the threat is `\r` and C1's 8-bit sequences.
  test('a body and a claimed id full of 8-bit escape sequences and carriage returns reach the terminal without a control character', async () => {
    relay = startRelayProcess({ LOG_FORMAT: 'pretty' });
    await relay.waitForOutput(/^Ready\./m);
    const queueUrl = relay.output().match(/^ {2}Queue URL +(\S+)/m)?.[1] ?? '';
    const sqs = new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, logger: QUIET_SDK_LOGGER });
    const hostile = '\u009d0;pwned\u009c\u009b2J\u009bH\r✓ delivered  forged\u009b31m\u0085';
    const { MessageId } = await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: `{"order":42}\n${hostile}\nend`,
        MessageAttributes: {
          'relay.dead-letter-reason': { DataType: 'String', StringValue: JSON.stringify({ originalMessageId: `${hostile}id` }) },
          tenant: { DataType: 'String', StringValue: 'acme' },
        },
      }),
    );
    sqs.destroy();
    await relay.waitForOutput(new RegExp(`✓ delivered {2}${MessageId} {2}receive 1`));
    const printed = relay.output();
    expect(printed).toContain('Claimed original message id ignored');
    expect(printed).toMatch(/^ {4}\{"order":42\}$/m);
    expect(printed).toMatch(/^ {4}✓ delivered {2}forged$/m);
    expect(printed).toMatch(/^ {4}end$/m);
    // Nothing a terminal would act on: no ESC, no carriage return, no C1, no bell.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(printed).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  }, 60_000);
});

describe('start-up failures', () => {
  let blocker: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (blocker === undefined ? resolve() : blocker.close(() => resolve())));
    blocker = undefined;
  });

  /** Runs the relay to its exit; returns the exit code and every line it printed (stdout and stderr). */
  async function failure(env: Record<string, string>): Promise<{ code: number | string; lines: string[] }> {
    const child = startRelayProcess(env);
    const code = await child.exited;
    return {
      code,
      lines: child
        .output()
        .split('\n')
        .filter((line) => line.trim() !== ''),
    };
  }

  // Nothing before the line either: no library's warning (such as the AWS SDK's about the Node.js
  // version, on a Node.js older than it supports), on the Node.js versions the package supports.
  test('a taken port, a bad webhook URL, an unreachable SQS or a bad setting: one line each and nothing else, exit 1', async () => {
    blocker = createServer();
    const taken = await new Promise<number>((resolve) => {
      const server = blocker as Server;
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
    });
    const nobody = await closedPort();
    const results = await Promise.all([
      failure({ SQS_PORT: String(taken) }),
      failure({ WEBHOOK_URL: 'ftp://example.com/hook' }),
      failure({ QUEUE_URL: `http://127.0.0.1:${nobody}/000000000000/orders`, WEBHOOK_URL: 'http://127.0.0.1:9/hook' }),
      failure({ BATCH_SIZE: '0' }),
    ]);
    const expected = [
      new RegExp(
        `^sqs-webhook-relay: port ${taken} is already in use .*SQS_PORT.*QUEUE_URL to a queue of your own in that emulator, with its DLQ`,
      ),
      /^sqs-webhook-relay: Invalid configuration: WEBHOOK_URL must be an absolute https:\/\/ URL/,
      new RegExp(`^sqs-webhook-relay: cannot reach SQS at http://127\\.0\\.0\\.1:${nobody}/000000000000/orders \\(ECONNREFUSED\\)`),
      /^sqs-webhook-relay: Invalid configuration: BATCH_SIZE must be a whole number from 1 to 10000; got "0"$/,
    ];
    results.forEach((result, index) => {
      expect(result.code).toBe(1);
      expect(result.lines).toEqual([expect.stringMatching(expected[index] as RegExp)]);
    });
  }, 60_000);
});
