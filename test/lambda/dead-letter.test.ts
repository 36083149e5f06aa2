/**
 * The dead-letter copy in isolation (a recording SQS gateway stands in for SQS): the reason is
 * fitted to SQS's size and character rules whatever the excerpt and the producer's attributes,
 * the body and the producer's attributes are never altered, and a FIFO copy's deduplication id
 * is the message's own SQS id.
 */
import type { SendMessageCommandInput } from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { MAX_MESSAGE_ATTRIBUTES, MAX_MESSAGE_BYTES } from '../../lambda/aws-limits';
import {
  type DeadLetterReason,
  DeadLetterWriter,
  fitReason,
  MAX_REASON_RESPONSE_CHARS,
  messageBytes,
  sanitizeForSqs,
} from '../../lambda/dead-letter';
import { verifyOriginalId } from '../../lambda/message-id';
import { QueueDirectory } from '../../lambda/queues';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import type { SqsGateway } from '../../lambda/sqs-gateway';
import { sqsRecord } from '../../testkit/records';

const DLQ_URL = 'http://127.0.0.1:9/000000000000/relay-dlq';
const KEY = Buffer.from('a dead-letter unit-test key of 32');

/** A writer whose SQS records every SendMessage and accepts it. */
function recordingWriter(): { writer: DeadLetterWriter; sent: SendMessageCommandInput[]; warnings: Record<string, unknown>[] } {
  const sent: SendMessageCommandInput[] = [];
  const warnings: Record<string, unknown>[] = [];
  const sqs = {
    sendMessage: async (input: SendMessageCommandInput) => {
      sent.push(input);
      return { $metadata: {} };
    },
  } as unknown as SqsGateway;
  const writer = new DeadLetterWriter(sqs, new QueueDirectory(sqs, DLQ_URL), {
    warn: (_message: string, fields?: unknown) => void warnings.push(fields as Record<string, unknown>),
  } as never);
  return { writer, sent, warnings };
}

const REASON: DeadLetterReason = {
  cause: 'refused permanently',
  status: 404,
  response: '',
  originalMessageId: '059f36b4-87a3-44ab-83d2-661975830a7d',
  originalMessageIdSeal: 'x'.repeat(43),
  sourceQueue: 'orders',
  receiveCount: 3,
  attempts: 3,
  deadLetteredAt: '2026-11-23T10:00:00.000Z',
};
const REASON_NAME_AND_TYPE = Buffer.byteLength(DEAD_LETTER_REASON_ATTRIBUTE) + 'String'.length;

/** SQS's character rule, written out independently of the module's regular expression. */
function legal(text: string): boolean {
  for (const character of text) {
    const code = character.codePointAt(0) ?? 0;
    const ok =
      code === 0x9 ||
      code === 0xa ||
      code === 0xd ||
      (code >= 0x20 && code <= 0xd7ff) ||
      (code >= 0xe000 && code <= 0xfffd) ||
      (code >= 0x10000 && code <= 0x10ffff);
    if (!ok) return false;
  }
  return true;
}

/** Any string, lone surrogates, U+FFFE/U+FFFF and controls included. */
const anyText = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '\uFFFE',
        '\uFFFF',
        '\uD800',
        '\uDC00',
        '\u0000',
        '\u001F',
        '\t',
        '\u{1F600}',
        '\uFFFD',
        '\uE000',
        '\uD7FF',
        '\u{10FFFF}',
      ),
      fc.string({ unit: 'binary', maxLength: 8 }),
    ),
    { maxLength: 120 },
  )
  .map((parts) => parts.join(''));
/** Text SQS accepts (what a body or attribute value that came from SQS holds). */
const legalText = (maxLength: number): fc.Arbitrary<string> =>
  fc.string({ unit: 'binary', maxLength }).map((text) => sanitizeForSqs(text).text);

describe('sanitizeForSqs', () => {
  test('replace exactly the characters outside #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF', () => {
    expect(sanitizeForSqs('a\u0000b\u0008\t\n\r\uFFFE\uFFFF\uD800x\uDC00\u{1F600}\uFFFD\u{10FFFF}')).toEqual({
      text: 'a\uFFFDb\uFFFD\t\n\r\uFFFD\uFFFD\uFFFDx\uFFFD\u{1F600}\uFFFD\u{10FFFF}',
      replaced: 6,
    });
    expect(sanitizeForSqs('fine \u{1F600} \uE000').replaced).toBe(0);
    expect(sanitizeForSqs('\uFFFF').replaced).toBe(1);
  });

  test('property: the result is always legal and as long as the input in code points', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const { text: sanitized } = sanitizeForSqs(text);
        expect(legal(sanitized)).toBe(true);
        expect(sanitizeForSqs(text).replaced === 0).toBe(legal(text));
        expect(Array.from(sanitized)).toHaveLength(Array.from(text).length);
      }),
    );
  });
});

describe('fitReason', () => {
  test('a reason that fits is kept whole, the excerpt capped at 256 characters, nothing reported', () => {
    const fitted = fitReason({ ...REASON, response: 'z'.repeat(300) }, 10_000, true);
    expect(JSON.parse(fitted.value ?? '{}')).toEqual({ ...REASON, response: 'z'.repeat(MAX_REASON_RESPONSE_CHARS) });
    expect(fitted.leftOut).toBeUndefined();
  });

  test('the order: replace refused characters, cut the excerpt, then drop the attribute', () => {
    const whole = fitReason({ ...REASON, response: 'ab\uFFFFcd' }, 10_000, true);
    expect(JSON.parse(whole.value ?? '{}').response).toBe('ab\uFFFDcd');
    expect(whole.leftOut).toEqual({ replacedCharacters: 1, responseCharactersCut: 0 });
    const emptyBytes = REASON_NAME_AND_TYPE + Buffer.byteLength(JSON.stringify({ ...REASON, response: '' }));
    const cut = fitReason({ ...REASON, response: 'abcdef' }, emptyBytes + 2, true);
    expect(JSON.parse(cut.value ?? '{}').response).toBe('ab');
    expect(cut.leftOut).toEqual({ replacedCharacters: 0, responseCharactersCut: 4 });
    const dropped = fitReason({ ...REASON, response: 'abcdef' }, emptyBytes - 1, true);
    expect(dropped).toEqual({
      value: undefined,
      leftOut: { replacedCharacters: 0, responseCharactersCut: 6, reasonDropped: expect.stringMatching(/1048576-byte message limit/) },
    });
    expect(fitReason(REASON, 10_000, false).leftOut?.reasonDropped).toMatch(/all 10 message attributes/);
  });

  test('a surrogate pair is never split by the cut', () => {
    const emptyBytes = REASON_NAME_AND_TYPE + Buffer.byteLength(JSON.stringify({ ...REASON, response: '' }));
    // Room for "a" and three of the emoji's four bytes: the emoji goes whole.
    const fitted = fitReason({ ...REASON, response: 'a\u{1F600}b' }, emptyBytes + 4, true);
    expect(JSON.parse(fitted.value ?? '{}').response).toBe('a');
  });

  test('property: whatever the excerpt and the room, the value is legal, fits, and keeps a prefix of the sanitized excerpt', () => {
    fc.assert(
      fc.property(anyText, fc.integer({ min: 0, max: 2_000 }), fc.boolean(), (excerpt, freeBytes, slotFree) => {
        const fitted = fitReason({ ...REASON, response: excerpt }, freeBytes, slotFree);
        if (fitted.value === undefined) {
          expect(fitted.leftOut?.reasonDropped).toBeDefined();
          return;
        }
        expect(slotFree).toBe(true);
        expect(legal(fitted.value)).toBe(true);
        expect(REASON_NAME_AND_TYPE + Buffer.byteLength(fitted.value)).toBeLessThanOrEqual(freeBytes);
        const parsed = JSON.parse(fitted.value) as DeadLetterReason;
        expect(sanitizeForSqs(excerpt).text.startsWith(parsed.response)).toBe(true);
        expect({ ...parsed, response: '' }).toEqual({ ...REASON, response: '' });
      }),
    );
  });
});

/** A record of the given body and string attributes (as they came from SQS: legal). */
function recordOf(body: string, attributes: Record<string, string>, overrides: Partial<SQSRecord> = {}): SQSRecord {
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(attributes))
    messageAttributes[name] = { dataType: 'String', stringValue: value, stringListValues: [], binaryListValues: [] };
  return sqsRecord(1, { body, messageAttributes, ...overrides });
}

describe('DeadLetterWriter', () => {
  test('property: whatever the body, attributes and excerpt, the copy is ≤ 1 MiB, holds only legal characters, and keeps body and attributes', async () => {
    await fc.assert(
      fc.asyncProperty(
        legalText(200),
        fc.dictionary(
          fc.stringMatching(/^[A-Za-z][A-Za-z0-9_.-]{0,20}$/).filter((name) => name !== DEAD_LETTER_REASON_ATTRIBUTE),
          legalText(50),
          { maxKeys: MAX_MESSAGE_ATTRIBUTES },
        ),
        fc.integer({ min: 0, max: 800 }),
        anyText,
        async (start, attributes, slack, excerpt) => {
          // A body that fills the message to within `slack` bytes of the limit, as SQS could have taken it.
          const used = messageBytes(
            start,
            Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }])),
          );
          const body = start + 'b'.repeat(Math.max(0, MAX_MESSAGE_BYTES - slack - used));
          const { writer, sent } = recordingWriter();
          const result = await writer.send(recordOf(body, attributes), 404, excerpt, { signingKeys: [KEY] });
          expect(result.ok).toBe(true);
          const [input] = sent;
          expect(input?.MessageBody).toBe(body);
          const copied = input?.MessageAttributes ?? {};
          expect(messageBytes(body, copied)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
          for (const [name, value] of Object.entries(attributes)) expect(copied[name]?.StringValue).toBe(value);
          for (const value of Object.values(copied)) expect(legal(value.StringValue ?? '')).toBe(true);
          expect(Object.keys(copied).length).toBeLessThanOrEqual(MAX_MESSAGE_ATTRIBUTES);
        },
      ),
      { numRuns: 60 },
    );
  });

  test('the copy is sealed with the first signing key over the original id and the body', async () => {
    const { writer, sent } = recordingWriter();
    const record = recordOf('{"a":1}', {});
    await writer.send(record, 404, 'nope', { originalId: 'first-id', signingKeys: [KEY, Buffer.from('other')] });
    const reason = JSON.parse(sent[0]?.MessageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue ?? '{}') as DeadLetterReason;
    expect(reason.originalMessageId).toBe('first-id');
    expect(verifyOriginalId([KEY], 'first-id', '{"a":1}', reason.originalMessageIdSeal ?? '')).toBe(true);
    expect(verifyOriginalId([Buffer.from('other')], 'first-id', '{"a":1}', reason.originalMessageIdSeal ?? '')).toBe(false);
  });

  test('a FIFO copy is deduplicated on this message’s own SQS id, not on the original id it carries', async () => {
    const { writer, sent } = recordingWriter();
    const record = recordOf('{"a":1}', {}, { eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:orders.fifo' });
    record.attributes.MessageGroupId = 'g';
    await writer.send(record, 404, '', { originalId: 'first-id', signingKeys: [KEY] });
    expect(sent[0]).toMatchObject({ MessageGroupId: 'g', MessageDeduplicationId: record.messageId });
  });

  test('the reason counts the receives the event gave, and 1 where it gave none (never null)', async () => {
    const { writer, sent } = recordingWriter();
    const counted = recordOf('{"a":1}', {});
    counted.attributes.ApproximateReceiveCount = '4';
    const uncounted = recordOf('{"a":1}', {});
    delete (uncounted.attributes as Partial<SQSRecord['attributes']>).ApproximateReceiveCount;
    await writer.send(counted, 404, '', {});
    await writer.send(uncounted, 404, '', {});
    const reasons = sent.map(
      (input) => JSON.parse(input.MessageAttributes?.[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue ?? '{}') as DeadLetterReason,
    );
    expect(reasons.map(({ receiveCount, attempts }) => [receiveCount, attempts])).toEqual([
      [4, 4],
      [1, 1],
    ]);
  });

  test('what was left out is logged at WARN; a copy that fits whole logs nothing', async () => {
    const { writer, warnings } = recordingWriter();
    await writer.send(recordOf('x'.repeat(MAX_MESSAGE_BYTES), {}), 404, 'why', {});
    await writer.send(recordOf('small', {}), 404, 'why', {});
    expect(warnings).toEqual([
      { messageId: sqsRecord(1).messageId, replacedCharacters: 0, responseCharactersCut: 3, reasonDropped: expect.any(String) },
    ]);
  });

  test('refused for its content (a DLQ with a smaller limit), the copy goes again without the reason; any other error is the caller’s to retry', async () => {
    const attempts: SendMessageCommandInput[] = [];
    const refusing = (name: string) => {
      const sqs = {
        sendMessage: async (input: SendMessageCommandInput) => {
          attempts.push(input);
          if (attempts.length === 1) throw Object.assign(new Error('refused'), { name });
          return { $metadata: {} };
        },
      } as unknown as SqsGateway;
      return new DeadLetterWriter(sqs, new QueueDirectory(sqs, DLQ_URL));
    };
    const record = recordOf('body', { tenant: 'acme' });
    expect(await refusing('AWS.SimpleQueueService.InvalidParameterValue').send(record, 404, 'no')).toMatchObject({
      ok: true,
      reasonAttached: false,
      leftOut: { reasonDropped: expect.stringMatching(/SQS refused the copy/) },
    });
    expect(attempts.map((input) => Object.keys(input.MessageAttributes ?? {}))).toEqual([
      ['tenant', DEAD_LETTER_REASON_ATTRIBUTE],
      ['tenant'],
    ]);
    attempts.length = 0;
    expect(await refusing('AccessDenied').send(record, 404, 'no')).toEqual({ ok: false, error: 'AccessDenied: refused' });
    expect(attempts).toHaveLength(1);
  });
});
