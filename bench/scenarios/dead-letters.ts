/**
 * `sqs-webhook-relay dead-letters` on 10,000 dead letters through the emulator, as an operator runs
 * it: a process of its own (`node --import tsx bin/local.ts dead-letters …`, what `npm run
 * dead-letters` starts, on the Node.js running the bench) against fauxqs in the bench's process.
 * The dead letters are the relay's own (testkit/dead-letters.ts): 6,000 refused with a 404,
 * 3,000 with a 422, 1,000 whose retry window ran out on a 500. Each round: `summary`, then
 * `replay --status 404` (6,000 sent back, the other 4,000 read and left), then `replay` of the rest;
 * the 10,000 are then put back in the DLQ as they were, for the next round.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { DEAD_LETTER_CAUSES } from '../../lambda/dead-letter-causes';
import { RECEIVE_ALL_ATTRIBUTES } from '../../local/event-source';
import { type DeadLetterSpec, fillDeadLetterQueue } from '../../testkit/dead-letters';
import { type Emulator, startEmulator } from '../../testkit/emulator';
import { childEnv } from '../../testkit/relay-process';
import { PROJECT_ROOT } from '../../testkit/synth';
import { type Bench, log, QUICK } from '../harness';
import { median } from '../stats';

/** Dead letters in the queue at the start of each round. */
const DEAD_LETTERS = QUICK ? 2_000 : 10_000;
const ROUNDS = QUICK ? 1 : 3;
const SIGNING_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** One run of the command: its wall time (process start included) and its `--json` output. */
async function command(args: readonly string[]): Promise<{ readonly ms: number; readonly output: Record<string, unknown> }> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts', ...args], {
    cwd: PROJECT_ROOT,
    env: childEnv({}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`dead-letters ${args.join(' ')} exited ${code}: ${stderr.trim().split('\n').at(-1)}`);
  return { ms, output: args.includes('--json') ? (JSON.parse(stdout) as Record<string, unknown>) : {} };
}

/** Puts every message of the main queue back in the DLQ, body and attributes (the relay's reason) as they are. */
async function moveBack(emulator: Emulator): Promise<void> {
  const { sqs, queue, dlq } = emulator;
  const mover = async (): Promise<void> => {
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, ...RECEIVE_ALL_ATTRIBUTES }),
      );
      if (Messages.length === 0) return;
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: dlq.url,
          Entries: Messages.map((message, index) => ({
            Id: `m${index}`,
            MessageBody: message.Body,
            MessageAttributes: message.MessageAttributes,
          })),
        }),
      );
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queue.url,
          Entries: Messages.map((message, index) => ({ Id: `m${index}`, ReceiptHandle: message.ReceiptHandle })),
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: 8 }, mover));
}

/** What one kind of run took, over the rounds. */
function row(label: string, messages: number, runsMs: readonly number[]) {
  const medianMs = median(runsMs);
  return { label, messages, runsMs, medianMs, perSecond: (messages * 1000) / medianMs };
}

/** `summary` and `replay` of 10,000 dead letters (`--quick`: 2,000, one round), through the emulator. */
export async function deadLetters(bench: Bench) {
  log(`dead letters: ${DEAD_LETTERS} made by the relay, then summary and replay, ${ROUNDS} round(s)`);
  const emulator = await startEmulator({ keepEnvironment: true, maxReceiveCount: 5 });
  try {
    const share = (fraction: number): number => Math.round(DEAD_LETTERS * fraction);
    const [notFound, invalid] = [share(0.6), share(0.3)];
    const specs: DeadLetterSpec[] = Array.from({ length: DEAD_LETTERS }, (_, i) => {
      const body = JSON.stringify({ order: i, sku: `SKU-${i % 97}`, note: 'x'.repeat(200) });
      if (i < notFound) return { body, cause: DEAD_LETTER_CAUSES.refused, status: 404 };
      if (i < notFound + invalid) return { body, cause: DEAD_LETTER_CAUSES.refused, status: 422 };
      return { body, cause: DEAD_LETTER_CAUSES.windowExhausted, status: 500 };
    });
    await fillDeadLetterQueue(emulator, specs, { SIGNING_SECRET });
    const queueUrl = emulator.queue.url;
    const startups: number[] = [];
    const summaries: number[] = [];
    const filtered: number[] = [];
    const rest: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      startups.push((await command(['--version'])).ms);
      const summary = await command(['dead-letters', 'summary', '--queue-url', queueUrl, '--json']);
      if (summary.output.read !== DEAD_LETTERS)
        bench.notes.push(`dead letters: the summary read ${summary.output.read} of ${DEAD_LETTERS}`);
      summaries.push(summary.ms);
      const some = await command(['dead-letters', 'replay', '--queue-url', queueUrl, '--status', '404', '--json']);
      if (some.output.replayed !== notFound)
        bench.notes.push(`dead letters: replay --status 404 sent ${some.output.replayed} of ${notFound}`);
      filtered.push(some.ms);
      const others = await command(['dead-letters', 'replay', '--queue-url', queueUrl, '--json']);
      if (others.output.replayed !== DEAD_LETTERS - notFound)
        bench.notes.push(`dead letters: the replay of the rest sent ${others.output.replayed} of ${DEAD_LETTERS - notFound}`);
      rest.push(others.ms);
      const left = emulator.counts(emulator.dlq);
      if (left.ready + left.inflight !== 0)
        bench.notes.push(`dead letters: ${left.ready + left.inflight} left in the DLQ after the replays`);
      await moveBack(emulator);
      log(
        `dead letters: round ${round + 1}: summary ${Math.round(summary.ms)} ms, replays ${Math.round(some.ms)} + ${Math.round(others.ms)} ms`,
      );
    }
    let commit = 'unknown';
    try {
      commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
    } catch {}
    return {
      messages: DEAD_LETTERS,
      rounds: ROUNDS,
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      commit,
      node: process.version,
      /** A process that prints the version and exits: what every run below includes. */
      startupMs: median(startups),
      rows: [
        row(`summary: all ${DEAD_LETTERS.toLocaleString('en-US')} read, counted, made visible again`, DEAD_LETTERS, summaries),
        row(
          `replay --status 404: ${notFound.toLocaleString('en-US')} sent back and deleted, ${(DEAD_LETTERS - notFound).toLocaleString('en-US')} read and left`,
          notFound,
          filtered,
        ),
        row(`replay of the other ${(DEAD_LETTERS - notFound).toLocaleString('en-US')}`, DEAD_LETTERS - notFound, rest),
      ],
    };
  } finally {
    await emulator.stop();
  }
}
