/**
 * Attribute names a producer chooses, hostile ones included (`__proto__`, `constructor`,
 * `toString`, empty, 256 characters): through the function against fauxqs and a real webhook,
 * and through the daemon's event source. No name crashes a batch or is lost: each message ends
 * delivered with its attributes as headers, or in the DLQ with its attributes as sent.
 */
import { type Message, type MessageAttributeValue, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import { toSqsRecord } from '../../local/event-source';
import { emulatorForFile, webhookForFile } from '../support/fixtures';
import { invoke, relayFor } from '../support/relay';

const emulator = await emulatorForFile({ visibilityTimeout: 900 });
const webhook = await webhookForFile();

/** Names that are properties of every plain object, and SQS's longest legal name. */
const HOSTILE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'x'.repeat(256)];

/** A legal SQS attribute name: hostile, or letters, digits, `_`, `-` and single dots. */
const nameArbitrary = fc.oneof(
  fc.constantFrom(...HOSTILE_NAMES),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/).filter((name) => !/^(aws|amazon)/i.test(name)),
);

/** Up to ten attributes (SQS's limit), distinct names. */
const attributesArbitrary = fc.uniqueArray(
  fc.tuple(nameArbitrary, fc.constantFrom('String', 'Number'), fc.stringMatching(/^[a-z0-9]{1,12}$/)),
  {
    maxLength: 10,
    selector: ([name]) => name,
  },
);

/** As a producer's SDK call gets them: own properties, `__proto__` included. */
function attributeMap(attributes: readonly [string, string, string][]): Record<string, MessageAttributeValue> {
  return Object.fromEntries(
    attributes.map(([name, type, value]) => [name, { DataType: type, StringValue: type === 'Number' ? String(value.length) : value }]),
  );
}

describe('hostile attribute names', () => {
  test('through the function: delivered with each legal name as a header, or dead-lettered with every attribute as sent', async () => {
    const handler = relayFor({ WEBHOOK_URL: webhook.url, PACING: 'false', OUTAGE_THRESHOLD: '0' });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(attributesArbitrary, fc.boolean()), { minLength: 1, maxLength: 10 }), async (messages) => {
        emulator.server.reset();
        webhook.requests.length = 0;
        webhook.respondWith((request) => ({ status: (messages[Number(request.body.toString())] as [unknown, boolean])[1] ? 200 : 400 }));
        await emulator.sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: emulator.queue.url,
            Entries: messages.map(([attributes], index) => ({
              Id: `m${index}`,
              MessageBody: String(index),
              MessageAttributes: attributeMap(attributes),
            })),
          }),
        );
        const records = [];
        while (records.length < messages.length) records.push(...(await emulator.receiveEvent(10)).Records);
        const response = await invoke(handler, { Records: records });
        expect(response.batchItemFailures).toEqual([]);

        const deadLetters = new Map(emulator.messages(emulator.dlq).map((message) => [message.body, message.attributes]));
        for (const [index, [attributes, accepted]] of messages.entries()) {
          const sent = attributeMap(attributes);
          if (accepted) {
            const request = webhook.requests.find((candidate) => candidate.body.toString() === String(index));
            for (const [name, value] of Object.entries(sent))
              expect(request?.headers[`x-carrier-attr-${name.toLowerCase()}`], name).toBe(value.StringValue);
            expect(deadLetters.has(String(index))).toBe(false);
          } else {
            const copied = deadLetters.get(String(index));
            expect(copied).toBeDefined();
            const producers = Object.entries(copied ?? {}).filter(([name]) => name !== DEAD_LETTER_REASON_ATTRIBUTE);
            expect(
              Object.fromEntries(producers.map(([name, value]) => [name, { DataType: value.DataType, StringValue: value.StringValue }])),
            ).toEqual(sent);
          }
        }
      }),
      { numRuns: 15 },
    );
  }, 120_000);

  test("through the daemon's event source: any names and any values the SDK hands over, never a throw, every readable attribute kept", () => {
    const valueArbitrary = fc.oneof(
      fc.record({
        DataType: fc.constantFrom('String', 'Number', 'Binary', 'String.custom'),
        StringValue: fc.option(fc.string(), { nil: undefined }),
      }),
      // What the AWS SDK's reader hands over for `__proto__`, and other things a record could hold.
      fc.constantFrom(undefined, null, 'text', 42),
    );
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.oneof(fc.constantFrom(...HOSTILE_NAMES, ''), fc.string()), valueArbitrary), {
          maxLength: 12,
          selector: ([name]) => name,
        }),
        (entries) => {
          const MessageAttributes = Object.fromEntries(entries) as Record<string, MessageAttributeValue>;
          const message: Message = { MessageId: 'm', ReceiptHandle: 'h', Body: 'b', MessageAttributes };
          const record = toSqsRecord(message, 'arn:aws:sqs:us-east-1:000000000000:orders');
          for (const [name, value] of entries) {
            const readable = typeof value === 'object' && value !== null;
            expect(Object.hasOwn(record.messageAttributes, name), name).toBe(readable);
            if (readable)
              expect(Object.getOwnPropertyDescriptor(record.messageAttributes, name)?.value.stringValue).toBe(value.StringValue);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
