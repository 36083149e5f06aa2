/**
 * `sqs-webhook-relay dead-letters summary|replay` end to end, on the emulator (fauxqs on a free
 * port): dead letters made by the relay's own handler (testkit/dead-letters.ts), read and
 * replayed by the command as an operator runs it, in this process (`runDeadLetters`, what the
 * bin calls) and as a child process stopped with signals. At the end of every test, each message
 * is accounted for: in the DLQ, or on the main queue exactly once (at most the batches in flight
 * twice after a SIGKILL).
 *
 * Each test has its own emulator and spends most of its time waiting (a reader's last long poll,
 * a hold running out, a paced replay), so the commands' tests run at once (`describe.concurrent`);
 * the reads whose holds are timed against a slow batch run alone.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  DeleteMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { describe, expect, type TestContext, test, vi } from 'vitest';
import { DEAD_LETTER_CAUSES } from '../../lambda/dead-letter-causes';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import type { CommandIo, ExitStatus } from '../../local/command-io';
import { runDeadLetters } from '../../local/dead-letters/command';
import { RECEIVE_ALL_ATTRIBUTES } from '../../local/event-source';
import { DeadLetterScan } from '../../local/dead-letters/scan';
import { runSubcommand } from '../../local/cli';
import { type DeadLetterSpec, fillDeadLetterQueue } from '../../testkit/dead-letters';
import { type Emulator, type EmulatorOptions, type QueueRef, startEmulator } from '../../testkit/emulator';
import { childEnv, ROOT } from '../../testkit/relay-process';
import { type SqsProxy, startSqsProxy } from '../../testkit/sqs-proxy';
import { startWebhook } from '../../testkit/webhook';
import { emulatorForTest } from '../support/fixtures';
import { acknowledge, capturedTelemetry, invoke, relayFor } from '../support/relay';
import { startSilentEndpoint } from '../support/silent-endpoint';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** Each test's own emulator: its queues, and the process's environment left alone. */
const EMULATOR: EmulatorOptions = { keepEnvironment: true, maxReceiveCount: 3 };

/** The command in this process, as the bin runs it; its output collected. */
async function deadLetters(args: string[], env: Record<string, string> = {}, signal?: AbortSignal) {
  let out = '';
  let err = '';
  const io: CommandIo = {
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
    env: { ...env },
    errIsTerminal: false,
    ...(signal === undefined ? {} : { signal }),
  };
  const status: ExitStatus = await runSubcommand('dead-letters', () => runDeadLetters(args, io), io);
  return { status, out, err };
}

/** Every message of a queue, read and deleted (the queue is empty afterwards). */
async function drain(emulator: Emulator, queue: QueueRef): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const { Messages = [] } = await emulator.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, ...RECEIVE_ALL_ATTRIBUTES }),
    );
    if (Messages.length === 0) return all;
    all.push(...Messages);
    await emulator.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: Messages.map((message, index) => ({ Id: `d${index}`, ReceiptHandle: message.ReceiptHandle })),
      }),
    );
  }
}

/** The receive count of every message of a queue, read without receiving. */
function receiveCounts(emulator: Emulator, queue: QueueRef): number[] {
  const state = emulator.server.inspectQueue(queue.name);
  return (state?.messages.ready ?? []).map((message) => (message as { approximateReceiveCount: number }).approximateReceiveCount);
}

const refused = (n: number, status: number, prefix = 'r'): DeadLetterSpec[] =>
  Array.from({ length: n }, (_, i) => ({ body: `{"${prefix}":${i},"status":${status}}`, cause: DEAD_LETTER_CAUSES.refused, status }));
const exhausted = (n: number): DeadLetterSpec[] =>
  Array.from({ length: n }, (_, i) => ({ body: `{"w":${i}}`, cause: DEAD_LETTER_CAUSES.windowExhausted, status: 500 }));
const backstop = (n: number): DeadLetterSpec[] =>
  Array.from({ length: n }, (_, i) => ({ body: `{"b":${i}}`, cause: DEAD_LETTER_CAUSES.backstop }));

describe.concurrent('summary', () => {
  test('counts the dead letters by cause, last status and age, with a sample per group, and leaves the DLQ as it found it', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, [...refused(12, 404), ...refused(5, 422, 'x'), ...exhausted(4), ...backstop(3)], {
      SIGNING_SECRET: SECRET,
    });
    const before = receiveCounts(emulator, emulator.dlq);
    expect(before).toHaveLength(24);

    const { status, out, err } = await deadLetters(['summary', '--queue-url', emulator.queue.url, '--json']);
    expect({ status, err }).toEqual({ status: 0, err: '' });
    const summary = JSON.parse(out);
    expect(summary).toMatchObject({ dlqUrl: emulator.dlq.url, queueUrl: emulator.queue.url, read: 24, complete: true, notReleased: 0 });
    expect(summary.byCause).toEqual([
      { cause: 'refused permanently', count: 17 },
      { cause: 'retry window exhausted', count: 4 },
      { cause: 'moved by SQS at the backstop', count: 3 },
    ]);
    expect(summary.byStatus).toEqual([
      { status: 404, count: 12 },
      { status: 422, count: 5 },
      { status: 500, count: 4 },
      { status: null, count: 3 },
    ]);
    expect(summary.byAge).toEqual([{ age: 'under 1 hour', count: 24 }]);
    const group404 = summary.groups.find((group: { status?: number }) => group.status === 404);
    expect(group404).toMatchObject({
      cause: 'refused permanently',
      count: 12,
      sample: { body: expect.stringMatching(/^\{"r":\d+,"status":404\}$/), response: 'the webhook says no' },
    });
    expect(summary.firstExpiry).toBeDefined();

    // Left as found: every message visible again at once, none deleted, one receive more each.
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 24, inflight: 0, delayed: 0 });
    expect(receiveCounts(emulator, emulator.dlq).sort()).toEqual(before.map((count) => count + 1).sort());

    // The text form: the groups, and the replay command to try next.
    const text = await deadLetters(['summary', '--queue-url', emulator.queue.url]);
    expect(text.status).toBe(0);
    expect(text.out).toContain('24 read in');
    expect(text.out).toMatch(/refused permanently +17/);
    expect(text.out).toContain(`npm run dead-letters -- replay --queue-url ${emulator.queue.url} --status 404 --dry-run`);
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 24, inflight: 0, delayed: 0 });
  });

  test('--limit reads that many and no more; --dlq-url alone reads the DLQ', async ({ onTestFinished }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(30, 410));
    const limited = JSON.parse((await deadLetters(['summary', '--queue-url', emulator.queue.url, '--limit', '7', '--json'])).out);
    expect(limited).toMatchObject({ read: 7, complete: false });
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 30, inflight: 0, delayed: 0 });
    const direct = JSON.parse((await deadLetters(['summary', '--dlq-url', emulator.dlq.url, '--json'])).out);
    expect(direct).toMatchObject({ read: 30, complete: true, byStatus: [{ status: 410, count: 30 }] });
    expect(direct.queueUrl).toBeUndefined();
  });

  test('an empty DLQ, a queue without one, and command lines it cannot run with: one line each, and the right status', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    expect(await deadLetters(['summary', '--queue-url', emulator.queue.url])).toMatchObject({
      status: 0,
      out: expect.stringContaining('0 read in'),
    });
    const noDlq = await deadLetters(['summary', '--queue-url', emulator.dlq.url]);
    expect(noDlq).toMatchObject({ status: 1, out: '' });
    expect(noDlq.err).toMatch(/^sqs-webhook-relay dead-letters: no dead-letter queue found for .*give it with --dlq-url\n$/);
    const unknown = await deadLetters(['summary', '--queue-url', emulator.queue.url, '--statuss', '404']);
    expect(unknown.status).toBe(2);
    expect(unknown.err.trim().split('\n')).toHaveLength(1);
    expect(unknown.err).toContain('--statuss');
    // replay has --status: the refusal names it.
    expect(await deadLetters(['replay', '--queue-url', emulator.queue.url, '--statuss', '404'])).toMatchObject({
      status: 2,
      err: 'sqs-webhook-relay dead-letters: unknown option --statuss; did you mean --status? (npm run dead-letters -- --help)\n',
    });
    expect(await deadLetters(['summary', '--queue-url', 'orders'])).toMatchObject({
      status: 2,
      err: expect.stringContaining('--queue-url must be an SQS queue URL'),
    });
    for (const status of ['abc', '40', '99', '600', '0404']) {
      expect(await deadLetters(['replay', '--queue-url', emulator.queue.url, '--status', status])).toMatchObject({
        status: 2,
        err: expect.stringContaining(`--status must be an HTTP status (404), a class (4xx, 5xx) or 0 (no answer); got "${status}"`),
      });
    }
    expect(await deadLetters(['repaly'])).toMatchObject({ status: 2, err: expect.stringContaining('summary or replay') });
    // Replay from the DLQ alone needs its one source queue; this emulator cannot list them.
    expect(await deadLetters(['replay', '--dlq-url', emulator.dlq.url])).toMatchObject({
      status: 2,
      err: expect.stringMatching(/^sqs-webhook-relay dead-letters: replay needs the main queue: give --queue-url/),
    });
  });

  test('a receive SQS takes and never answers: one line and exit 1 within seconds, not a scan (and a Ctrl-C) hung for ever', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(5, 404));
    const { proxy, env } = await proxied(emulator, onTestFinished);
    proxy.hung.add('ReceiveMessage');
    const started = Date.now();
    const result = await deadLetters(['summary', '--queue-url', emulator.queue.url], env);
    expect(result).toMatchObject({ status: 1, out: '' });
    expect(result.err).toBe(
      `sqs-webhook-relay dead-letters: no answer from SQS at ${emulator.dlq.url} while reading the dead-letter queue; is the endpoint right and running?\n`,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 5, inflight: 0, delayed: 0 });
  });

  test('a release SQS takes and never answers: the summary still ends, and says what stays hidden until its hold ends', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(15, 404));
    const { proxy, env } = await proxied(emulator, onTestFinished);
    proxy.hung.add('ChangeMessageVisibilityBatch');
    const result = await deadLetters(['summary', '--queue-url', emulator.queue.url, '--json', '--visibility-timeout', '5'], env);
    expect(result.status).toBe(0);
    expect(JSON.parse(result.out)).toMatchObject({ read: 15, notReleased: 15 });
    // Hidden for the rest of their hold, then visible again: nothing deleted.
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 15, delayed: 0 });
  }, 60_000);

  test.for([
    ['summary', 'GetQueueAttributes', "reading the dead-letter queue's attributes"],
    ['replay', 'ListDeadLetterSourceQueues', 'the source queues of'],
  ] as const)(
    '--dlq-url, and SQS never answers %s: one line and exit 1, not a command hung for ever (%s)',
    { timeout: 60_000 },
    async ([command, action, says], { onTestFinished }) => {
      const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
      await fillDeadLetterQueue(emulator, refused(5, 404));
      const { proxy, env } = await proxied(emulator, onTestFinished);
      proxy.hung.add(action);
      const result = await deadLetters([command, '--dlq-url', emulator.dlq.url], env);
      expect(result).toMatchObject({ out: '' });
      expect(result.status).not.toBe(0);
      expect(result.err).toContain(says);
      expect(result.err.trim().split('\n')).toHaveLength(1);
      expect(emulator.counts(emulator.dlq)).toEqual({ ready: 5, inflight: 0, delayed: 0 });
    },
  );

  test('progress on a terminal; a DLQ with a redrive policy of its own is named, since every read counts a receive', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(25, 404));
    await emulator.sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: emulator.dlq.url,
        Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: emulator.queue.arn, maxReceiveCount: 1000 }) },
      }),
    );
    let err = '';
    let out = '';
    const io: CommandIo = {
      out: { write: (text: string) => (out += text) },
      err: { write: (text: string) => (err += text) },
      env: {},
      errIsTerminal: true,
    };
    expect(await runDeadLetters(['summary', '--queue-url', emulator.queue.url, '--parallel', '1'], io)).toBe(0);
    expect(err).toMatch(/\rread \d+ of about 25…/);
    expect(err.endsWith('\r\u001b[K')).toBe(true);
    expect(out).toMatch(/Note: the DLQ has a redrive policy of its own .*every read counts a receive/);
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 25, inflight: 0, delayed: 0 });
  });
});

/** A proxy in front of `emulator` for this test, closed after it, and the environment that routes a command's SQS calls through it. */
async function proxied(
  emulator: Emulator,
  onTestFinished: TestContext['onTestFinished'],
): Promise<{ proxy: SqsProxy; env: Record<string, string> }> {
  const proxy = await startSqsProxy(emulator.endpoint, emulator.region);
  onTestFinished(() => proxy.close());
  return { proxy, env: { AWS_ENDPOINT_URL_SQS: proxy.endpoint } };
}

/** The relay's handler, signing with SECRET, relays every message on the main queue to `webhookUrl` once. */
async function relayMainQueue(emulator: Emulator, webhookUrl: string, expected: number): Promise<void> {
  const relay = relayFor({ WEBHOOK_URL: webhookUrl, SIGNING_SECRET: SECRET }, { sqs: emulator.sqs, ...capturedTelemetry() });
  let relayed = 0;
  while (relayed < expected) {
    const event = await emulator.receiveEvent(10, 1);
    if (event.Records.length === 0) throw new Error(`relayMainQueue: ${relayed} of ${expected} on the main queue`);
    const response = await invoke(relay, event);
    expect(response.batchItemFailures).toEqual([]);
    await emulator.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: emulator.queue.url,
        Entries: event.Records.map((record, index) => ({ Id: `d${index}`, ReceiptHandle: record.receiptHandle })),
      }),
    );
    relayed += event.Records.length;
  }
}

/** Bodies of a queue's messages, sorted (the queue is drained). */
async function bodiesOf(emulator: Emulator, queue: QueueRef): Promise<string[]> {
  return (await drain(emulator, queue)).map((message) => message.Body ?? '').sort();
}

describe.concurrent('replay', () => {
  test('--dry-run moves nothing; then exactly the dead letters of one status go back, as new messages the webhook sees under their original ids', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    const specs = [...refused(12, 404), ...refused(5, 422, 'x'), ...exhausted(4), ...backstop(3)];
    const original = await fillDeadLetterQueue(emulator, specs, { SIGNING_SECRET: SECRET });
    const args = ['replay', '--queue-url', emulator.queue.url, '--status', '404'];

    const dry = await deadLetters([...args, '--dry-run', '--json']);
    expect(dry.status).toBe(0);
    expect(JSON.parse(dry.out)).toMatchObject({
      dryRun: true,
      replayed: 12,
      skipped: 12,
      failed: 0,
      byGroup: [{ cause: 'refused permanently', status: 404, count: 12 }],
    });
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 24, inflight: 0, delayed: 0 });
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });

    const real = await deadLetters([...args, '--json']);
    expect({ status: real.status, err: real.err }).toEqual({ status: 0, err: '' });
    expect(JSON.parse(real.out)).toMatchObject({ dryRun: false, replayed: 12, skipped: 12, failed: 0, sentNotDeleted: 0, newMessageId: 0 });
    // Where every message is: the 404s on the main queue once each, all the others still in the DLQ.
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 12, inflight: 0, delayed: 0 });
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 12, inflight: 0, delayed: 0 });

    // A fresh message: a new retry window and receive count; the relay presents the id the webhook saw before.
    const webhook = await startWebhook();
    try {
      await relayMainQueue(emulator, webhook.url, 12);
      const seen = webhook.requests.map((request) => ({
        body: request.body.toString(),
        id: request.headers['x-carrier-message-id'],
        receives: request.headers['x-carrier-receive-count'],
      }));
      expect(seen.map((request) => request.body).sort()).toEqual(
        refused(12, 404)
          .map((spec) => spec.body)
          .sort(),
      );
      for (const request of seen) expect(request).toEqual({ ...request, id: original.get(request.body), receives: '1' });
      const firstReceive = Number(webhook.requests[0]?.headers['x-carrier-first-receive-time']);
      expect(Date.now() / 1000 - firstReceive).toBeLessThan(60);
    } finally {
      await webhook.close();
    }
    expect((await bodiesOf(emulator, emulator.dlq)).filter((body) => body.includes('"status":404'))).toEqual([]);
  });

  test('with the relay running and the webhook still refusing, each dead letter goes back once: its new dead letter stays in the DLQ', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    // Sealed ids (the webhook sees its id again) and messages SQS moved, replayed without the key (a new id).
    const specs = [...refused(6, 404), ...backstop(4)];
    await fillDeadLetterQueue(emulator, specs, { SIGNING_SECRET: SECRET });
    const webhook = await startWebhook();
    onTestFinished(() => webhook.close());
    webhook.respondWith(() => ({ status: 404 }));
    const relay = relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: SECRET }, { sqs: emulator.sqs, ...capturedTelemetry() });
    const stop = new AbortController();
    let settled = false;
    const replay = deadLetters(['replay', '--queue-url', emulator.queue.url, '--json'], {}, stop.signal).finally(() => {
      settled = true;
    });
    // The relay as it runs beside the command: what goes back is refused again, and dead-lettered again at once.
    while (!settled || emulator.counts(emulator.queue).ready > 0) {
      // A replay that takes its own dead letters back goes round for ever: stopped here, it fails below.
      if (webhook.requests.length > 3 * specs.length) stop.abort();
      const event = await emulator.receiveEvent(10, 1);
      if (event.Records.length > 0) await acknowledge(emulator.sqs, emulator.queue.url, event, await invoke(relay, event));
    }
    const { status, out } = await replay;
    expect(status).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ replayed: specs.length, failed: 0, newMessageId: 4 });
    expect(webhook.requests.map((request) => request.body.toString()).sort()).toEqual(specs.map((spec) => spec.body).sort());
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: specs.length, inflight: 0, delayed: 0 });
  });

  test('messages SQS moved: with the signing key their id is sealed as the relay would have, without it they go under a new id', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    const original = await fillDeadLetterQueue(emulator, backstop(6));
    const withKey = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--cause', 'backstop', '--limit', '3', '--json'], {
      SIGNING_SECRET: SECRET,
    });
    expect(JSON.parse(withKey.out)).toMatchObject({ replayed: 3, newMessageId: 0, overLimit: expect.any(Number) });
    const webhook = await startWebhook();
    try {
      await relayMainQueue(emulator, webhook.url, 3);
      for (const request of webhook.requests) expect(request.headers['x-carrier-message-id']).toBe(original.get(request.body.toString()));
      webhook.reset();
      const without = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json']);
      expect(JSON.parse(without.out)).toMatchObject({ replayed: 3, newMessageId: 3 });
      expect(without.status).toBe(0);
      await relayMainQueue(emulator, webhook.url, 3);
      for (const request of webhook.requests)
        expect(request.headers['x-carrier-message-id']).not.toBe(original.get(request.body.toString()));
    } finally {
      await webhook.close();
    }
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  });

  test("the signing key given both ways: the function's rule, one line naming SIGNING_SECRET_ARN, nothing moved", async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, backstop(2));
    const both = await deadLetters(['replay', '--queue-url', emulator.queue.url], {
      SIGNING_SECRET: SECRET,
      SIGNING_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:relay-signing-AbCdEf',
    });
    expect(both.status).not.toBe(0);
    expect(both.err).toMatch(/SIGNING_SECRET_ARN must be unset when SIGNING_SECRET is set \(give the secret one way\)/);
    expect(both.err.trim().split('\n')).toHaveLength(1);
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 2, inflight: 0, delayed: 0 });
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  });

  test('--signing-secret-arn, and Secrets Manager takes the call and never answers: one line and exit 1, nothing moved, not a replay hung for ever', {
    timeout: 60_000,
  }, async ({ onTestFinished }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, backstop(2));
    const silent = await startSilentEndpoint();
    onTestFinished(() => silent.close());
    // The SDK takes Secrets Manager's endpoint and credentials from the process's environment, not the command's.
    vi.stubEnv('AWS_ENDPOINT_URL_SECRETS_MANAGER', silent.endpoint);
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
    onTestFinished(() => {
      vi.unstubAllEnvs();
    });
    const arn = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:relay-signing-AbCdEf';
    const result = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--signing-secret-arn', arn]);
    expect(result).toMatchObject({ status: 1, out: '' });
    expect(result.err).toBe(
      `sqs-webhook-relay dead-letters: --signing-secret-arn: the signing secret ${arn} could not be read: no answer from Secrets Manager in 10 s; is its endpoint right and running?\n`,
    );
    expect(silent.connections.count).toBeGreaterThan(0);
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 2, inflight: 0, delayed: 0 });
    expect(emulator.counts(emulator.queue)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  });

  test('filters: --limit, --since/--until, --cause with several values, and a dead letter from another queue left where it is', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, [...refused(8, 404), ...exhausted(3), ...backstop(2)]);
    await emulator.sqs.send(
      new SendMessageCommand({
        QueueUrl: emulator.dlq.url,
        MessageBody: '{"other":true}',
        MessageAttributes: {
          [DEAD_LETTER_REASON_ATTRIBUTE]: {
            DataType: 'String',
            StringValue: JSON.stringify({
              cause: 'refused permanently',
              status: 404,
              originalMessageId: 'x',
              sourceQueue: 'another-queue',
              deadLetteredAt: new Date().toISOString(),
            }),
          },
        },
      }),
    );
    const tally = async (...args: string[]) =>
      JSON.parse((await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json', ...args])).out);
    expect(await tally('--status', '404', '--until', '1h', '--dry-run')).toMatchObject({ replayed: 0, skipped: 14 });
    expect(await tally('--status', '4xx', '--since', '1h', '--dry-run')).toMatchObject({ replayed: 8, fromAnotherQueue: 1 });
    expect(await tally('--status', '404', '--limit', '5')).toMatchObject({ replayed: 5, failed: 0 });
    expect(emulator.counts(emulator.queue).ready).toBe(5);
    expect(await tally('--cause', 'window,backstop')).toMatchObject({ replayed: 5, skipped: 4, fromAnotherQueue: 0 });
    expect(emulator.counts(emulator.queue).ready).toBe(10);
    // Left: three 404s and the other queue's dead letter.
    expect(await bodiesOf(emulator, emulator.dlq)).toHaveLength(4);
  });

  test('a send SQS refuses leaves the dead letter in the DLQ and exits 1; a delete it refuses is reported, the message in both queues', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(15, 404));
    const proxy = await startSqsProxy(emulator.endpoint, emulator.region);
    try {
      const env = { AWS_ENDPOINT_URL_SQS: proxy.endpoint };
      proxy.refused.add('SendMessageBatch');
      const refusedSend = await deadLetters(['replay', '--queue-url', emulator.queue.url], env);
      expect(refusedSend.status).toBe(1);
      expect(refusedSend.out).toMatch(/^ {2}failed +15 {2}not sent: still in the DLQ$/m);
      expect(refusedSend.out).toMatch(/not sent: AccessDenied/);
      expect(emulator.counts(emulator.dlq)).toEqual({ ready: 15, inflight: 0, delayed: 0 });
      expect(emulator.counts(emulator.queue).ready).toBe(0);

      proxy.refused.clear();
      proxy.refused.add('DeleteMessageBatch');
      const refusedDelete = JSON.parse((await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json'], env)).out);
      expect(refusedDelete).toMatchObject({ replayed: 0, failed: 0, sentNotDeleted: 15 });
      expect(emulator.counts(emulator.dlq)).toEqual({ ready: 15, inflight: 0, delayed: 0 });
      expect(emulator.counts(emulator.queue).ready).toBe(15);
    } finally {
      await proxy.close();
    }
  });

  test('a send SQS takes and never answers: given up, left in the DLQ and reported, exit 1; a rerun sends it once', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    const specs = refused(15, 404);
    await fillDeadLetterQueue(emulator, specs);
    const { proxy, env } = await proxied(emulator, onTestFinished);
    proxy.hung.add('SendMessageBatch');
    const unanswered = await deadLetters(['replay', '--queue-url', emulator.queue.url], env);
    expect(unanswered.status).toBe(1);
    expect(unanswered.out).toMatch(/^ {2}sent, no answer +15 {2}still in the DLQ, and perhaps on the queue too/m);
    expect(unanswered.out).toMatch(/sent, never answered \(NoAnswer: no answer from SQS within 10 s\)/);
    // SQS never saw the sends: every dead letter is in the DLQ, visible again, and nowhere else.
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 15, inflight: 0, delayed: 0 });
    expect(emulator.counts(emulator.queue).ready).toBe(0);

    proxy.hung.clear();
    expect(JSON.parse((await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json'], env)).out)).toMatchObject({
      replayed: 15,
      unanswered: 0,
    });
    expect(await bodiesOf(emulator, emulator.queue)).toEqual(specs.map((spec) => spec.body).sort());
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  }, 60_000);

  test('a send SQS acts on and never answers: left in the DLQ too, so nothing is lost; on FIFO a rerun does not send it twice', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest({ ...EMULATOR, fifo: true }, { onTestFinished });
    const specs = Array.from({ length: 6 }, (_, i) => ({
      body: `g${i}`,
      cause: DEAD_LETTER_CAUSES.refused,
      status: 404,
      groupId: `g${i % 2}`,
    }));
    await fillDeadLetterQueue(emulator, specs);
    const { proxy, env } = await proxied(emulator, onTestFinished);
    proxy.answersWithheld.add('SendMessageBatch');
    const unheard = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json'], env);
    expect(unheard.status).toBe(1);
    // A FIFO DLQ hands out the head of each group while it is held: two sends, each unanswered.
    const first = JSON.parse(unheard.out);
    expect(first).toMatchObject({ replayed: 0, failed: 0, sentNotDeleted: 0 });
    expect(first.unanswered).toBeGreaterThan(0);
    expect(emulator.counts(emulator.dlq)).toMatchObject({ ready: 6, inflight: 0 });

    proxy.answersWithheld.clear();
    expect(JSON.parse((await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json'], env)).out)).toMatchObject({
      replayed: 6,
      unanswered: 0,
    });
    // What SQS took unanswered is not sent again (its deduplication id): each dead letter once.
    expect(await bodiesOf(emulator, emulator.queue)).toEqual(specs.map((spec) => spec.body).sort());
    expect(emulator.counts(emulator.dlq)).toMatchObject({ ready: 0, inflight: 0 });
  }, 60_000);

  test.for([
    ['never sees', 'hung', 'in both queues, as reported'],
    ['acts on', 'answersWithheld', 'deleted after all'],
  ] as const)(
    'a delete SQS takes, %s and never answers: given up, reported as sent and not deleted, exit 1 (%s: %s)',
    { timeout: 60_000 },
    async ([, how], { onTestFinished }) => {
      const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
      const specs = refused(15, 404);
      await fillDeadLetterQueue(emulator, specs);
      const { proxy, env } = await proxied(emulator, onTestFinished);
      proxy[how].add('DeleteMessageBatch');
      const result = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json'], env);
      expect(result.status).toBe(1);
      expect(JSON.parse(result.out)).toMatchObject({ replayed: 0, failed: 0, unanswered: 0, sentNotDeleted: 15 });
      // Sent once each; in the DLQ still (visible again) unless SQS did delete them.
      expect(await bodiesOf(emulator, emulator.queue)).toEqual(specs.map((spec) => spec.body).sort());
      expect(emulator.counts(emulator.dlq)).toEqual({ ready: how === 'hung' ? 15 : 0, inflight: 0, delayed: 0 });
    },
  );

  test('Ctrl-C while a send hangs: it ends once the send is given up, exit 130, the dead letters in the DLQ', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(15, 404));
    const { proxy, env } = await proxied(emulator, onTestFinished);
    proxy.hung.add('SendMessageBatch');
    const interrupt = new AbortController();
    const running = deadLetters(['replay', '--queue-url', emulator.queue.url], env, interrupt.signal);
    while ((proxy.hangs.get('SendMessageBatch') ?? 0) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    interrupt.abort();
    const result = await running;
    expect(result.status).toBe(130);
    expect(result.out).toMatch(/^Interrupted: what was not replayed is in the DLQ/m);
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 15, inflight: 0, delayed: 0 });
    expect(emulator.counts(emulator.queue).ready).toBe(0);
  }, 60_000);

  test('every attribute goes back as it was: binary, custom types, one named __proto__', async ({ onTestFinished }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    const attributes = Object.fromEntries([
      ['__proto__', { DataType: 'String', StringValue: 'not a prototype' }],
      ['Body.ContentType', { DataType: 'String', StringValue: 'text/csv' }],
      ['amount', { DataType: 'Number.float', StringValue: '12.5' }],
      ['blob', { DataType: 'Binary', BinaryValue: Buffer.from([0, 1, 2, 255]) }],
    ]) as Record<string, MessageAttributeValue>;
    await emulator.sqs.send(new SendMessageCommand({ QueueUrl: emulator.dlq.url, MessageBody: 'a,b,c', MessageAttributes: attributes }));
    expect((await deadLetters(['replay', '--queue-url', emulator.queue.url])).status).toBe(0);
    const [message] = await drain(emulator, emulator.queue);
    expect(message?.Body).toBe('a,b,c');
    const got = message?.MessageAttributes ?? {};
    expect(Object.getOwnPropertyDescriptor(got, '__proto__')?.value).toMatchObject({ DataType: 'String', StringValue: 'not a prototype' });
    expect(got['Body.ContentType']).toMatchObject({ DataType: 'String', StringValue: 'text/csv' });
    expect(got.amount).toMatchObject({ DataType: 'Number.float', StringValue: '12.5' });
    expect(Buffer.from(got.blob?.BinaryValue ?? []).equals(Buffer.from([0, 1, 2, 255]))).toBe(true);
  });

  test('a FIFO queue: each dead letter goes back to its message group, in order, with a deduplication id of its own', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest({ ...EMULATOR, fifo: true }, { onTestFinished });
    const specs: DeadLetterSpec[] = [
      ...Array.from({ length: 4 }, (_, i) => ({ body: `a${i}`, cause: DEAD_LETTER_CAUSES.refused, status: 404, groupId: 'a' })),
      ...Array.from({ length: 3 }, (_, i) => ({ body: `b${i}`, cause: DEAD_LETTER_CAUSES.refused, status: 404, groupId: 'b' })),
    ];
    await fillDeadLetterQueue(emulator, specs);
    // A FIFO queue shows only the head of each group while it is held: the summary says so.
    const summary = JSON.parse((await deadLetters(['summary', '--queue-url', emulator.queue.url, '--json'])).out);
    expect(summary).toMatchObject({ complete: false, notes: [expect.stringContaining('FIFO')] });
    expect(emulator.counts(emulator.dlq)).toMatchObject({ ready: 7, inflight: 0 });

    const replayed = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json']);
    expect(JSON.parse(replayed.out)).toMatchObject({ replayed: 7, failed: 0 });
    const order = new Map<string, string[]>();
    for (const message of await drain(emulator, emulator.queue)) {
      const group = message.Attributes?.MessageGroupId ?? '';
      order.set(group, [...(order.get(group) ?? []), message.Body ?? '']);
      expect(message.Attributes?.MessageDeduplicationId).toMatch(/^replay-/);
    }
    expect(Object.fromEntries(order)).toEqual({ a: ['a0', 'a1', 'a2', 'a3'], b: ['b0', 'b1', 'b2'] });
    expect(emulator.counts(emulator.dlq)).toMatchObject({ ready: 0, inflight: 0 });
  });
});

describe.concurrent('replay stopped and run again', () => {
  /** `sqs-webhook-relay dead-letters …` as a child process (the bin's code from source, as `npm run dead-letters` runs it). */
  function child(args: string[]) {
    const process_ = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts', 'dead-letters', ...args], {
      cwd: ROOT,
      env: childEnv({}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    process_.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    process_.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = once(process_, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    return { process: process_, output: () => out, exited };
  }

  async function whenMainQueueHas(emulator: Emulator, count: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (emulator.counts(emulator.queue).ready < count) {
      if (Date.now() > deadline) throw new Error(`the main queue never reached ${count}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  test('SIGINT: it stops, makes what it holds visible at once, exits 130 with its tally; run again, it finishes, nothing twice', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    const specs = refused(200, 404);
    await fillDeadLetterQueue(emulator, specs);
    const first = child(['replay', '--queue-url', emulator.queue.url, '--rate', '100', '--parallel', '2']);
    await whenMainQueueHas(emulator, 40);
    first.process.kill('SIGINT');
    const [code] = await first.exited;
    expect({ code, output: first.output() }).toMatchObject({
      code: 130,
      output: expect.stringContaining('Interrupted: what was not replayed is in the DLQ'),
    });
    const replayedFirst = Number(/^Replayed (\d+) /m.exec(first.output())?.[1]);
    expect(emulator.counts(emulator.queue).ready).toBe(replayedFirst);
    // Nothing held: the rest is visible again now, not after a visibility timeout.
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 200 - replayedFirst, inflight: 0, delayed: 0 });

    const second = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json']);
    expect(JSON.parse(second.out)).toMatchObject({ replayed: 200 - replayedFirst, failed: 0 });
    expect(await bodiesOf(emulator, emulator.queue)).toEqual(specs.map((spec) => spec.body).sort());
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  }, 60_000);

  test('SIGKILL: what it held comes back after its visibility timeout; run again, nothing is lost, at most the batches in flight twice', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    const specs = refused(300, 404);
    await fillDeadLetterQueue(emulator, specs);
    const first = child(['replay', '--queue-url', emulator.queue.url, '--rate', '100', '--parallel', '2', '--visibility-timeout', '5']);
    await whenMainQueueHas(emulator, 60);
    first.process.kill('SIGKILL');
    await first.exited;
    // What the killed run held is invisible until its hold (5 s) ends.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const second = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--json']);
    expect(second.status).toBe(0);
    const bodies = await bodiesOf(emulator, emulator.queue);
    expect([...new Set(bodies)].sort()).toEqual(specs.map((spec) => spec.body).sort());
    // Two readers of batches of ten: at most twenty were sent and not yet deleted when it died.
    expect(bodies.length - specs.length).toBeLessThanOrEqual(20);
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 0, inflight: 0, delayed: 0 });
  }, 60_000);

  test('--rate paces the sends: 30 messages at 15 per second are spread over more than a second', async ({ onTestFinished }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(30, 404));
    expect((await deadLetters(['replay', '--queue-url', emulator.queue.url, '--rate', '15'])).status).toBe(0);
    const sent = (await drain(emulator, emulator.queue)).map((message) => Number(message.Attributes?.SentTimestamp)).sort((a, b) => a - b);
    expect(sent).toHaveLength(30);
    // Batches of 10 at the turn of their last message, 0.6, 1.27 and 1.93 s; unpaced, all 30 go within a few milliseconds.
    expect((sent.at(-1) ?? 0) - (sent[0] ?? 0)).toBeGreaterThanOrEqual(1_200);
  });
});

describe('reading without re-reading', () => {
  test('a slow batch keeps its messages held (the hold is extended), so no other reader reads them again', async ({ onTestFinished }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(30, 404));
    let first = true;
    const scan = new DeadLetterScan({
      sqs: emulator.sqs,
      queueUrl: emulator.dlq.url,
      readers: 2,
      batchSize: 10,
      holdSeconds: 2,
      waitSeconds: 1,
    });
    const result = await scan.run(async () => {
      if (first) {
        first = false;
        // Longer than the hold: without the extension these ten would be visible again and read twice.
        await new Promise((resolve) => setTimeout(resolve, 4_500));
      }
      return new Set();
    });
    expect(result).toMatchObject({ read: 30, readAgain: 0, ended: 'read all', notReleased: 0, problems: [] });
    expect(emulator.counts(emulator.dlq)).toEqual({ ready: 30, inflight: 0, delayed: 0 });
  });

  test('when holds cannot be extended or released, messages read again are counted once, and the summary says what happened', async ({
    onTestFinished,
  }) => {
    const emulator = await emulatorForTest(EMULATOR, { onTestFinished });
    await fillDeadLetterQueue(emulator, refused(30, 404));
    const proxy = await startSqsProxy(emulator.endpoint, emulator.region);
    try {
      proxy.refused.add('ChangeMessageVisibilityBatch');
      let first = true;
      const scan = new DeadLetterScan({
        sqs: proxy.sqs,
        queueUrl: emulator.dlq.url,
        readers: 2,
        batchSize: 10,
        holdSeconds: 2,
        waitSeconds: 1,
      });
      const result = await scan.run(async () => {
        if (first) {
          first = false;
          await new Promise((resolve) => setTimeout(resolve, 4_500));
        }
        return new Set();
      });
      expect(result.read).toBe(30);
      expect(result.readAgain).toBeGreaterThan(0);
      expect(result.notReleased).toBe(30);
      expect(result.problems.join('\n')).toMatch(/not extended[\s\S]*not made visible again/);
    } finally {
      await proxy.close();
    }
  });

  test('nothing lost, whatever the dead letters and the filter: each matching one on the main queue once, every other in the DLQ', async () => {
    const statuses = [404, 410, 422, 500] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ status: fc.constantFrom(...statuses), backstop: fc.boolean() }), { minLength: 1, maxLength: 25 }),
        fc.subarray([...statuses], { minLength: 1 }),
        async (letters, wanted) => {
          // A fresh emulator for each case: its queues hold that case's dead letters alone.
          const emulator = await startEmulator(EMULATOR);
          try {
            const specs: DeadLetterSpec[] = letters.map((letter, i) =>
              letter.backstop
                ? { body: `m${i}`, cause: DEAD_LETTER_CAUSES.backstop }
                : letter.status === 500
                  ? { body: `m${i}`, cause: DEAD_LETTER_CAUSES.windowExhausted, status: 500 }
                  : { body: `m${i}`, cause: DEAD_LETTER_CAUSES.refused, status: letter.status },
            );
            await fillDeadLetterQueue(emulator, specs);
            const { status } = await deadLetters(['replay', '--queue-url', emulator.queue.url, '--status', wanted.join(',')]);
            expect(status).toBe(0);
            const matching = specs.filter((spec) => spec.status !== undefined && (wanted as number[]).includes(spec.status));
            expect(await bodiesOf(emulator, emulator.queue)).toEqual(matching.map((spec) => spec.body).sort());
            expect(await bodiesOf(emulator, emulator.dlq)).toEqual(
              specs
                .filter((spec) => !matching.includes(spec))
                .map((spec) => spec.body)
                .sort(),
            );
          } finally {
            await emulator.stop();
          }
        },
      ),
      { numRuns: 6 },
    );
  }, 120_000);
});
