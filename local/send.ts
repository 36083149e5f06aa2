/**
 * `sqs-webhook-relay send` (`npm run send --` in a clone): sends test messages to a queue with no
 * AWS CLI needed.
 *
 *   sqs-webhook-relay send [--queue-url URL] [--attribute Name=Value]… [--group-id ID] [--count N] [--region R] [--profile P] [BODY]
 *
 * The queue URL defaults to QUEUE_URL, else the `npm start` emulator's queue. BODY defaults to
 * standard input. A loopback queue URL is its own endpoint and needs no credentials; any other
 * uses the AWS SDK's usual configuration (AWS_REGION, AWS_PROFILE, …) or `--region`/`--profile`.
 */
import { randomUUID } from 'node:crypto';
import { text } from 'node:stream/consumers';
import { type MessageAttributeValue, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { MAX_BATCH_CALL_ENTRIES } from '../lambda/aws-limits';
import { type CommandIo, type ExitStatus, optionNumber, parseCommandLine } from './command-io';
import { AWS_OPTION_SPECS, commandQueueUrl, commandSqsClient, isFifoUrl } from './command-queue';
import { sqsStartupError, StartupError, UsageError } from './errors';
import { subcommandPrefix } from './invocation';

/** The most messages one `--count` sends. */
const MAX_COUNT = 100_000;

/** `send`'s usage line, as it is typed here. */
export function sendUsage(): string {
  return `usage: ${subcommandPrefix('send')} [--queue-url URL] [--attribute Name=Value]... [--group-id ID] [--count N] [--region R] [--profile P] [BODY]`;
}

/** `send --help`. */
function sendHelp(): string {
  return [
    sendUsage(),
    '',
    'Sends BODY (or standard input) to the queue, --count times (default 1, up to 100000).',
    "  --queue-url URL          the queue (default: QUEUE_URL, else the `npm start` emulator's queue)",
    '  --attribute Name=Value   a String message attribute; repeat for more (Body.ContentType sets the Content-Type)',
    '  --group-id ID            the message group of a FIFO queue (default: demo); each message gets its own deduplication id',
    "  --region R, --profile P  AWS region and credentials profile (default: the AWS SDK's chain); an emulator on loopback needs neither",
    '',
  ].join('\n');
}

/**
 * Runs `send` with `args` (what follows `send` on the command line).
 * @returns the exit status; errors are written to `io.err` as one line
 */
export async function runSend(args: readonly string[], io: CommandIo): Promise<ExitStatus> {
  const { values, positionals } = parseCommandLine('send', {
    args: [...args],
    allowPositionals: true,
    options: {
      'queue-url': { type: 'string' },
      attribute: { type: 'string', multiple: true },
      'group-id': { type: 'string' },
      count: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      ...AWS_OPTION_SPECS,
    },
  });
  if (values.help === true) {
    io.out.write(sendHelp());
    return 0;
  }
  if (positionals.length > 1) throw new UsageError(`one BODY at most (quote it); got ${positionals.length} arguments. ${sendUsage()}`);
  const queue = commandQueueUrl(values['queue-url'], io.env);
  const queueUrl = queue.url;
  const count = optionNumber(values.count, '--count', 1, MAX_COUNT) ?? 1;
  let body = positionals[0];
  if (body === undefined) {
    if (io.stdin === undefined || io.stdin.isTTY === true) throw new UsageError(`no BODY given and nothing piped in. ${sendUsage()}`);
    body = (await text(io.stdin)).replace(/\n$/, '');
  }
  if (body === '') throw new UsageError('the body is empty; SQS needs at least one character');
  // Without a prototype: an attribute named `__proto__` (a name SQS accepts) is an attribute like any other.
  const attributes: Record<string, MessageAttributeValue> = Object.create(null);
  for (const pair of values.attribute ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--attribute wants Name=Value; got ${pair}`);
    attributes[pair.slice(0, at)] = { DataType: 'String', StringValue: pair.slice(at + 1) };
  }
  const fifo = isFifoUrl(queueUrl);
  const sqs = commandSqsClient(queue, values, io.env);
  let sent = 0;
  try {
    while (sent < count) {
      const size = Math.min(MAX_BATCH_CALL_ENTRIES, count - sent);
      const { Successful, Failed } = await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Array.from({ length: size }, (_, index) => ({
            Id: `m${index}`,
            MessageBody: body,
            MessageAttributes: attributes,
            // A fresh deduplication id: sending the same body twice is what was asked.
            ...(fifo ? { MessageGroupId: values['group-id'] ?? 'demo', MessageDeduplicationId: randomUUID() } : {}),
          })),
        }),
      );
      const first = Failed?.[0];
      if (first !== undefined)
        throw new StartupError(`SQS refused a message after ${sent} sent: ${first.Code ?? 'error'}: ${first.Message ?? ''}`);
      if (count === 1) io.out.write(`sent ${Successful?.[0]?.MessageId ?? '(no id)'} to ${queueUrl}\n`);
      sent += size;
    }
  } catch (error) {
    throw error instanceof StartupError ? error : sqsStartupError(error, 'sending', queueUrl);
  } finally {
    sqs.destroy();
  }
  if (count > 1) io.out.write(`sent ${count} messages to ${queueUrl}\n`);
  return 0;
}
