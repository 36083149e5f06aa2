/**
 * `sqs-webhook-relay dead-letters summary|replay` (`npm run dead-letters -- …` in a clone): the
 * command line, finding the queues (the DLQ from the main queue's redrive policy, or the main
 * queue from the DLQ's source queues), and what is printed. The reading is `scan.ts`'s, the
 * counting `summary.ts`'s, the sending `replay.ts`'s. docs/operations.md, "Redriving", is the guide.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetQueueAttributesCommand, ListDeadLetterSourceQueuesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { MAX_MESSAGES_PER_RECEIVE, MAX_VISIBILITY_SECONDS } from '../../lambda/aws-limits';
import { type SecretSource, signingSecret } from '../../lambda/config';
import { parseSigningKeys } from '../../lambda/signing';
import { errorText } from '../../lambda/sqs-util';
import { withAnswerTimeout } from '../answer-timeout';
import { shellQuote } from '../banner';
import { type CommandIo, type ExitStatus, optionNumber, parseCommandLine } from '../command-io';
import { AWS_OPTION_SPECS, checkQueueUrl, commandQueueUrl, commandSqsClient, queueNameOfUrl } from '../command-queue';
import { givenUp, sqsStartupError, StartupError, UsageError } from '../errors';
import { keepProtoNamedAttributes } from '../event-source';
import { describeExistingQueue, STARTUP_CALL_TIMEOUT_MS } from '../existing-queue';
import { subcommandPrefix } from '../invocation';
import { readDeadLetter } from './dead-letter';
import { parseFilters } from './filters';
import { Pace } from './pace';
import { formatReplay, Replayer, replayFailed } from './replay';
import { DeadLetterScan, type ScanResult } from './scan';
import { type Summary, SummaryBuilder, formatSummary } from './summary';
import { count } from './text';

/** Readers receiving in parallel unless `--parallel` says otherwise. */
const DEFAULT_READERS = 10;
const MAX_READERS = 50;
/** A message read stays hidden this long, at first, if the command dies without making it visible again (`--visibility-timeout`). */
const HOLD_SECONDS = 120;
/** The shortest `--visibility-timeout`: a batch must be handled well within it. */
const MIN_HOLD_SECONDS = 5;
/** Each receive's long poll: a reader whose poll finds nothing is done. */
const WAIT_SECONDS = 1;

const COMMON_OPTIONS = {
  'queue-url': { type: 'string' },
  'dlq-url': { type: 'string' },
  limit: { type: 'string' },
  parallel: { type: 'string' },
  'visibility-timeout': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  ...AWS_OPTION_SPECS,
} as const;

const REPLAY_OPTIONS = {
  ...COMMON_OPTIONS,
  cause: { type: 'string', multiple: true },
  status: { type: 'string', multiple: true },
  since: { type: 'string' },
  until: { type: 'string' },
  'message-group': { type: 'string', multiple: true },
  'dry-run': { type: 'boolean' },
  rate: { type: 'string' },
  'signing-secret-arn': { type: 'string' },
} as const;

/** `dead-letters --help`. */
export function deadLettersHelp(): string {
  const command = subcommandPrefix('dead-letters');
  return [
    `usage: ${command} summary [--queue-url URL | --dlq-url URL] [--limit N] [--parallel N] [--visibility-timeout N]`,
    '                       [--json] [--region R] [--profile P]',
    `       ${command} replay  [--queue-url URL] [--dlq-url URL] [--cause C]... [--status S]... [--since T] [--until T]`,
    '                       [--message-group G]... [--limit N] [--rate N] [--dry-run] [--signing-secret-arn A]',
    '                       [--parallel N] [--visibility-timeout N] [--json] [--region R] [--profile P]',
    '',
    'summary  what is in the dead-letter queue and why: counts by cause, last status and age, the oldest and',
    '         newest, when SQS deletes the first, a sample per group. Leaves the DLQ as it found it: what it reads',
    '         is visible again as soon as it is done, nothing is deleted (each read counts one receive).',
    'replay   sends the dead letters that match every filter back to the main queue as new messages (body,',
    '         attributes, the original id sealed; FIFO: its group), deleting each from the DLQ only once it is sent.',
    '         Interrupted, run it again: it goes on with what is left. Exits 1 if any failed.',
    '',
    '  --queue-url URL        the main queue; its DLQ is found from its redrive policy (default: QUEUE_URL, else',
    "                         the `npm start` emulator's queue)",
    '  --dlq-url URL          the DLQ itself (replay then finds the main queue from its one source queue)',
    '  --cause C              refused permanently (refused), retry window exhausted (window), moved by SQS at the',
    '                         backstop (backstop); repeat or comma-separate for several',
    '  --status S             the last HTTP status: 404, a class (4xx, 5xx), 0 (no answer); repeatable',
    '  --since T, --until T   dead-lettered from / before: a date (2026-11-20, 2026-11-20T10:00:00Z) or a time ago (6h, 2d)',
    '  --message-group G      a FIFO message group; repeatable',
    '  --limit N              summary: read at most N; replay: replay at most N',
    '  --rate N               replay at most N messages per second (default: as fast as SQS takes them)',
    '  --dry-run              replay: say what would go back; move nothing',
    '  --signing-secret-arn A the signing secret (or SIGNING_SECRET / SIGNING_SECRET_ARN): seals the id of messages',
    '                         SQS moved itself, so the webhook sees their id again (the relay sealed the others)',
    `  --parallel N           receives in parallel (default ${DEFAULT_READERS})`,
    `  --visibility-timeout N seconds what is read stays invisible at first (default ${HOLD_SECONDS}); a long run extends it.`,
    '                         What a killed run (SIGKILL) was holding is visible again after about that long',
    '  --json                 the result as JSON on standard output',
    "  --region R, --profile P  AWS region and credentials profile (default: the AWS SDK's chain); an emulator on",
    '                         loopback needs neither',
    '',
    'IAM: sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage, sqs:ChangeMessageVisibility on the DLQ',
    '(and GetQueueAttributes on the main queue); replay also sqs:SendMessage on the main queue and sqs:DeleteMessage',
    'on the DLQ; --dlq-url without --queue-url also sqs:ListDeadLetterSourceQueues on the DLQ. docs/operations.md,',
    '"Redriving the dead-letter queue", walks through it.',
    '',
  ].join('\n');
}

/** The queues a command works on. */
interface Located {
  readonly sqs: SQSClient;
  readonly dlqUrl: string;
  /** The main queue: given, or the DLQ's one source queue; undefined when neither (summary only). */
  readonly queueUrl: string | undefined;
  readonly queueFifo: boolean;
  readonly approximate: { readonly visible: number; readonly inFlight: number };
  readonly retentionSeconds: number | undefined;
  readonly dlqFifo: boolean;
  readonly notes: string[];
}

/** Finds the DLQ (and the main queue) and reads the DLQ's counts; closes the client on failure. */
async function locate(
  values: { readonly 'queue-url'?: string; readonly 'dlq-url'?: string; readonly region?: string; readonly profile?: string },
  io: CommandIo,
  needMainQueue: boolean,
): Promise<Located> {
  const dlqGiven = values['dlq-url'] === undefined ? undefined : checkQueueUrl(values['dlq-url'], '--dlq-url');
  const queue = values['queue-url'] === undefined && dlqGiven !== undefined ? undefined : commandQueueUrl(values['queue-url'], io.env);
  let queueUrl = queue?.url;
  const sqs = commandSqsClient(queue ?? { url: dlqGiven as string, name: '--dlq-url' }, values, io.env);
  // An attribute named `__proto__` is read back whole, so a replay sends it back too.
  keepProtoNamedAttributes(sqs);
  try {
    const notes: string[] = [];
    let queueFifo = false;
    let dlqUrl = dlqGiven;
    if (queueUrl !== undefined) {
      const described = await describeExistingQueue(sqs, queueUrl);
      queueFifo = described.fifo;
      if (dlqUrl === undefined) {
        if (described.dlqUrl === undefined)
          throw new StartupError(`no dead-letter queue found for ${queueUrl}: ${described.dlqProblem}; give it with --dlq-url`);
        dlqUrl = described.dlqUrl;
      } else if (described.dlqUrl !== undefined && described.dlqUrl !== dlqUrl) {
        notes.push(`the redrive policy of ${queueUrl} names ${described.dlqUrl}; this read ${dlqUrl}, as --dlq-url asked`);
      }
    } else if (needMainQueue) {
      queueUrl = await onlySourceQueue(sqs, dlqUrl as string);
      queueFifo = (await describeExistingQueue(sqs, queueUrl)).fifo;
    }
    const dlq = dlqUrl as string;
    let attributes: Record<string, string>;
    try {
      const output = await withAnswerTimeout(STARTUP_CALL_TIMEOUT_MS, (abortSignal) =>
        sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: dlq,
            AttributeNames: [
              'ApproximateNumberOfMessages',
              'ApproximateNumberOfMessagesNotVisible',
              'MessageRetentionPeriod',
              'FifoQueue',
              'RedrivePolicy',
            ],
          }),
          { abortSignal },
        ),
      );
      attributes = output.Attributes ?? {};
    } catch (error) {
      throw sqsStartupError(error, "reading the dead-letter queue's attributes", dlq);
    }
    if (attributes.RedrivePolicy !== undefined)
      notes.push(
        `the DLQ has a redrive policy of its own (${attributes.RedrivePolicy}): every read counts a receive, and a message read that many times moves on to that queue`,
      );
    const retention = Number(attributes.MessageRetentionPeriod);
    return {
      sqs,
      dlqUrl: dlq,
      queueUrl,
      queueFifo,
      approximate: {
        visible: Number(attributes.ApproximateNumberOfMessages ?? 0),
        inFlight: Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
      },
      retentionSeconds: Number.isFinite(retention) && retention > 0 ? retention : undefined,
      dlqFifo: attributes.FifoQueue === 'true',
      notes,
    };
  } catch (error) {
    sqs.destroy();
    throw error;
  }
}

/** The one queue whose redrive policy names `dlqUrl`. */
async function onlySourceQueue(sqs: SQSClient, dlqUrl: string): Promise<string> {
  let sources: string[];
  try {
    sources =
      (
        await withAnswerTimeout(STARTUP_CALL_TIMEOUT_MS, (abortSignal) =>
          sqs.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlqUrl }), { abortSignal }),
        )
      ).queueUrls ?? [];
  } catch (error) {
    throw new UsageError(
      `replay needs the main queue: give --queue-url (the source queues of ${dlqUrl} could not be listed: ${errorText(error)})`,
    );
  }
  const [only] = sources;
  if (only === undefined || sources.length > 1)
    throw new UsageError(
      `replay needs the main queue: give --queue-url (${sources.length === 0 ? 'no queue names' : `${sources.length} queues name`} ${dlqUrl} as their DLQ)`,
    );
  return only;
}

/** The relay's signing keys, for sealing the ids of messages SQS moved: `--signing-secret-arn`, `SIGNING_SECRET`, `SIGNING_SECRET_ARN`. */
async function signingKeysFor(
  arn: string | undefined,
  sqs: SQSClient,
  io: CommandIo,
  profile: string | undefined,
): Promise<Buffer[] | undefined> {
  // The function's rule for the two variables (one way; a value checked now), unless the option names the secret.
  const source: SecretSource | undefined = arn === undefined ? signingSecret(io.env) : { kind: 'secrets-manager', secretId: arn };
  const secretArn = source?.kind === 'secrets-manager' ? source.secretId : undefined;
  const name = arn !== undefined ? '--signing-secret-arn' : source?.kind === 'literal' ? 'SIGNING_SECRET' : 'SIGNING_SECRET_ARN';
  let text = source?.kind === 'literal' ? source.value : undefined;
  if (secretArn !== undefined) {
    const secrets = new SecretsManagerClient({ region: await sqs.config.region(), ...(profile === undefined ? {} : { profile }) });
    try {
      // Bounded as the SQS look-ups are: the SDK would wait for ever on an endpoint that takes the call and never answers.
      const output = await withAnswerTimeout(STARTUP_CALL_TIMEOUT_MS, (abortSignal) =>
        secrets.send(new GetSecretValueCommand({ SecretId: secretArn }), { abortSignal }),
      );
      text = output.SecretString;
    } catch (error) {
      const why = givenUp(error)
        ? `no answer from Secrets Manager in ${STARTUP_CALL_TIMEOUT_MS / 1000} s; is its endpoint right and running?`
        : errorText(error);
      throw new StartupError(`${name}: the signing secret ${secretArn} could not be read: ${why}`);
    } finally {
      secrets.destroy();
    }
  }
  if (text === undefined) return undefined;
  try {
    return parseSigningKeys(text);
  } catch (error) {
    throw new UsageError(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A progress line on a terminal, redrawn at most ten times a second. */
function progress(io: CommandIo, total: number, verb: string): { update(read: number): void; done(): void } {
  if (!io.errIsTerminal) return { update() {}, done() {} };
  let last = 0;
  let drawn = false;
  return {
    update(read) {
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      drawn = true;
      io.err.write(`\r${verb} ${count(read)}${total > 0 ? ` of about ${count(total)}` : ''}…\u001b[K`);
    },
    done() {
      if (drawn) io.err.write('\r\u001b[K');
    },
  };
}

/** What the scan's end adds to the notes. */
function scanNotes(result: ScanResult, located: Located, summary: boolean): string[] {
  const notes = [...result.problems];
  if (result.readAgain > 0) notes.push(`${count(result.readAgain)} message(s) were received more than once (counted once)`);
  if (result.ended === 'read all' && summary && located.dlqFifo && result.read < located.approximate.visible)
    notes.push(
      'a FIFO queue returns no message of a group while another of that group is in flight: only the first message(s) of each group could be read without deleting',
    );
  if (result.ended === 'in-flight limit') notes.push('read up to the messages SQS holds in flight at once: the summary covers those');
  return notes;
}

/**
 * Runs `dead-letters` with `args` (what follows `dead-letters` on the command line).
 * @returns the exit status
 */
export async function runDeadLetters(args: readonly string[], io: CommandIo): Promise<ExitStatus> {
  const [action, ...rest] = args;
  if (action === undefined || action === '--help' || action === '-h' || action === 'help') {
    io.out.write(deadLettersHelp());
    return action === undefined ? 2 : 0;
  }
  if (action === 'summary') return runSummary(rest, io);
  if (action === 'replay') return runReplay(rest, io);
  throw new UsageError(`dead-letters takes summary or replay; got ${JSON.stringify(action)} (${subcommandPrefix('dead-letters')} --help)`);
}

async function runSummary(args: readonly string[], io: CommandIo): Promise<ExitStatus> {
  const { values } = parseCommandLine('dead-letters', { args: [...args], options: COMMON_OPTIONS, allowPositionals: false });
  if (values.help === true) {
    io.out.write(deadLettersHelp());
    return 0;
  }
  const limit = optionNumber(values.limit, '--limit', 1, Number.MAX_SAFE_INTEGER);
  const readers = optionNumber(values.parallel, '--parallel', 1, MAX_READERS) ?? DEFAULT_READERS;
  const holdSeconds =
    optionNumber(values['visibility-timeout'], '--visibility-timeout', MIN_HOLD_SECONDS, MAX_VISIBILITY_SECONDS) ?? HOLD_SECONDS;
  const located = await locate(values, io, false);
  const started = Date.now();
  const builder = new SummaryBuilder(started);
  const shown = progress(io, located.approximate.visible, 'read');
  const scan = new DeadLetterScan({
    sqs: located.sqs,
    queueUrl: located.dlqUrl,
    readers,
    batchSize: MAX_MESSAGES_PER_RECEIVE,
    holdSeconds,
    waitSeconds: WAIT_SECONDS,
    limit,
    signal: io.signal,
    onProgress: (read) => shown.update(read),
  });
  let result: ScanResult;
  try {
    result = await scan.run(async (messages) => {
      const now = Date.now();
      for (const message of messages) builder.add(readDeadLetter(message, now));
      return new Set();
    });
  } catch (error) {
    throw sqsStartupError(error, 'reading the dead-letter queue', located.dlqUrl);
  } finally {
    shown.done();
    located.sqs.destroy();
  }
  const seconds = (Date.now() - started) / 1000;
  const found: Summary = builder.result({
    dlqUrl: located.dlqUrl,
    ...(located.queueUrl === undefined ? {} : { queueUrl: located.queueUrl }),
    approximate: located.approximate,
    // A FIFO scan reads the first message(s) of each group only (see scan.ts).
    complete: result.ended === 'read all' && !(located.dlqFifo && result.read < located.approximate.visible),
    notReleased: result.notReleased,
    ...(located.retentionSeconds === undefined ? {} : { retentionSeconds: located.retentionSeconds }),
    notes: [...located.notes, ...scanNotes(result, located, true), ...(result.ended === 'limit' ? [`stopped at --limit ${limit}`] : [])],
    seconds,
    messagesPerSecond: seconds > 0 ? result.read / seconds : 0,
  });
  const queueArg =
    located.queueUrl === undefined ? `--dlq-url ${shellQuote(located.dlqUrl)}` : `--queue-url ${shellQuote(located.queueUrl)}`;
  const replayCommand = (status: number | undefined, cause: string): string =>
    `${subcommandPrefix('dead-letters')} replay ${queueArg} ${status === undefined ? `--cause ${shellQuote(cause)}` : `--status ${status}`}`;
  io.out.write(values.json === true ? `${JSON.stringify(found, null, 2)}\n` : formatSummary(found, Date.now(), replayCommand));
  return result.ended === 'interrupted' ? 130 : 0;
}

async function runReplay(args: readonly string[], io: CommandIo): Promise<ExitStatus> {
  const { values } = parseCommandLine('dead-letters', { args: [...args], options: REPLAY_OPTIONS, allowPositionals: false });
  if (values.help === true) {
    io.out.write(deadLettersHelp());
    return 0;
  }
  const started = Date.now();
  const filters = parseFilters(values, started);
  const limit = optionNumber(values.limit, '--limit', 1, Number.MAX_SAFE_INTEGER);
  const readers = optionNumber(values.parallel, '--parallel', 1, MAX_READERS) ?? DEFAULT_READERS;
  const holdSeconds =
    optionNumber(values['visibility-timeout'], '--visibility-timeout', MIN_HOLD_SECONDS, MAX_VISIBILITY_SECONDS) ?? HOLD_SECONDS;
  const rate = values.rate === undefined ? undefined : Number(values.rate);
  if (rate !== undefined && !(Number.isFinite(rate) && rate > 0 && rate <= 100_000))
    throw new UsageError(`--rate must be a number of messages per second above 0 (at most 100000); got ${values.rate}`);
  const located = await locate(values, io, true);
  const queueUrl = located.queueUrl as string;
  let result: ScanResult;
  let replayer: Replayer;
  const shown = progress(io, located.approximate.visible, values['dry-run'] === true ? 'read' : 'read (replaying)');
  try {
    const signingKeys = await signingKeysFor(values['signing-secret-arn'], located.sqs, io, values.profile);
    // Under a pace, a receive takes no more than a second's worth, so nothing waits long for its turn.
    const batchSize = rate === undefined ? MAX_MESSAGES_PER_RECEIVE : Math.max(1, Math.min(MAX_MESSAGES_PER_RECEIVE, Math.floor(rate)));
    const scan = new DeadLetterScan({
      sqs: located.sqs,
      queueUrl: located.dlqUrl,
      readers: rate === undefined ? readers : Math.min(readers, Math.ceil(rate / batchSize)),
      batchSize,
      holdSeconds,
      waitSeconds: WAIT_SECONDS,
      signal: io.signal,
      onProgress: (read) => shown.update(read),
    });
    replayer = new Replayer(
      {
        sqs: located.sqs,
        dlqUrl: located.dlqUrl,
        target: { queueUrl, queueName: queueNameOfUrl(queueUrl), fifo: located.queueFifo },
        filters,
        ...(limit === undefined ? {} : { limit }),
        dryRun: values['dry-run'] === true,
        ...(rate === undefined ? {} : { pace: new Pace(rate) }),
        ...(signingKeys === undefined ? {} : { signingKeys }),
        ...(io.signal === undefined ? {} : { signal: io.signal }),
      },
      scan,
    );
    result = await scan.run(replayer.handle);
  } catch (error) {
    throw error instanceof StartupError ? error : sqsStartupError(error, 'replaying', located.dlqUrl);
  } finally {
    shown.done();
    located.sqs.destroy();
  }
  const tally = replayer.tally();
  const seconds = (Date.now() - started) / 1000;
  const interrupted = result.ended === 'interrupted';
  const notes = [...located.notes, ...scanNotes(result, located, false)];
  const rerun = `${subcommandPrefix('dead-letters')} replay ${args
    .filter((arg) => arg !== '--dry-run')
    .map(shellQuote)
    .join(' ')}`;
  io.out.write(
    values.json === true
      ? `${JSON.stringify({ dlqUrl: located.dlqUrl, queueUrl, ...tally, read: result.read, interrupted, notes, seconds, messagesPerSecond: seconds > 0 ? tally.replayed / seconds : 0 }, null, 2)}\n`
      : formatReplay(tally, { dlqUrl: located.dlqUrl, queueUrl, seconds, interrupted, notes, rerun }),
  );
  if (interrupted) return 130;
  return replayFailed(tally) ? 1 : 0;
}
