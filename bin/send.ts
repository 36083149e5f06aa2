/**
 * Sends messages to the relay's queue with no AWS CLI needed:
 *
 *   npx tsx bin/send.ts [--queue-url URL] [--attribute Name=Value]… [--group-id ID] [--count N] [BODY]
 *
 * The queue URL defaults to QUEUE_URL, else the `npm start` emulator's queue
 * (`http://127.0.0.1:$SQS_PORT/000000000000/$QUEUE_NAME`). BODY defaults to standard input.
 * A loopback queue URL is its own endpoint and needs no credentials; any other uses the AWS
 * SDK's usual configuration (AWS_REGION, AWS_PROFILE, …).
 */
import { randomUUID } from 'node:crypto';
import { text } from 'node:stream/consumers';
import { parseArgs } from 'node:util';
import { type MessageAttributeValue, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { oneLine, sqsStartupError, StartupError } from '../local/errors';
import { clientConfig, connectionFor, type SqsConnection } from '../local/existing-queue';
import { SETTINGS } from '../lambda/settings';

const USAGE = 'usage: npx tsx bin/send.ts [--queue-url URL] [--attribute Name=Value]... [--group-id ID] [--count N] [BODY]';

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'queue-url': { type: 'string' },
      attribute: { type: 'string', multiple: true },
      'group-id': { type: 'string' },
      count: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length > 1) throw new StartupError(`one BODY at most (quote it); got ${positionals.length} arguments. ${USAGE}`);
  const queueUrl =
    values['queue-url'] ??
    process.env.QUEUE_URL ??
    `http://127.0.0.1:${process.env.SQS_PORT || SETTINGS.SQS_PORT.default}/000000000000/${process.env.QUEUE_NAME || SETTINGS.QUEUE_NAME.default}`;
  const count = values.count === undefined ? 1 : Number(values.count);
  if (!Number.isSafeInteger(count) || count < 1 || count > 100_000)
    throw new StartupError(`--count must be a whole number from 1 to 100000; got ${values.count}`);
  let body = positionals[0];
  if (body === undefined) {
    if (process.stdin.isTTY === true) throw new StartupError(`no BODY given and nothing piped in. ${USAGE}`);
    body = (await text(process.stdin)).replace(/\n$/, '');
  }
  if (body === '') throw new StartupError('the body is empty; SQS needs at least one character');
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const pair of values.attribute ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new StartupError(`--attribute wants Name=Value; got ${pair}`);
    attributes[pair.slice(0, at)] = { DataType: 'String', StringValue: pair.slice(at + 1) };
  }
  let connection: SqsConnection;
  try {
    connection = connectionFor(queueUrl, process.env);
  } catch (error) {
    throw error instanceof TypeError ? new StartupError(`not a queue URL: ${queueUrl}`) : error;
  }
  const fifo = new URL(queueUrl).pathname.endsWith('.fifo');
  const sqs = new SQSClient(clientConfig(connection));
  let sent = 0;
  try {
    while (sent < count) {
      const size = Math.min(10, count - sent);
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
      if (first !== undefined) throw new StartupError(`SQS refused a message: ${first.Code ?? 'error'}: ${first.Message ?? ''}`);
      if (count === 1) process.stdout.write(`sent ${Successful?.[0]?.MessageId ?? '(no id)'} to ${queueUrl}\n`);
      sent += size;
    }
  } catch (error) {
    throw error instanceof StartupError ? error : sqsStartupError(error, 'sending', queueUrl);
  } finally {
    sqs.destroy();
  }
  if (count > 1) process.stdout.write(`sent ${count} messages to ${queueUrl}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`send: ${oneLine(error)}\n`);
  process.exitCode = 1;
});
