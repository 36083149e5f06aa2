/**
 * The original-id seal and the id a request carries: only a seal the relay made, over the same
 * id and body, under a current signing key, makes the webhook see an id other than the SQS one.
 */
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { loadConfig } from '../../lambda/config';
import { sealOriginalId, verifyOriginalId } from '../../lambda/message-id';
import { buildDeliveryRequest, DEAD_LETTER_REASON_ATTRIBUTE, idempotencyKeyOf } from '../../lambda/request';
import { sqsRecord } from '../../testkit/records';

const OLD = Buffer.from('the old signing key, thirty-two b');
const NEW = Buffer.from('the new signing key, thirty-two b');
const CONFIG = {
  ...loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/relay' }),
  webhookUrl: new URL('https://hooks.example.com/relay'),
};

function copyOf(body: string, reason: Record<string, unknown>): SQSRecord {
  return sqsRecord(2, {
    body,
    messageAttributes: {
      [DEAD_LETTER_REASON_ATTRIBUTE]: {
        dataType: 'String',
        stringValue: JSON.stringify(reason),
        stringListValues: [],
        binaryListValues: [],
      },
    },
  });
}

describe('sealOriginalId / verifyOriginalId', () => {
  test('property: a seal verifies for its id and body only, under any list of keys that holds the key it was made with', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), fc.string(), fc.string(), (id, body, otherId, otherBody) => {
        const seal = sealOriginalId([OLD], id, body) ?? '';
        expect(verifyOriginalId([OLD], id, body, seal)).toBe(true);
        expect(verifyOriginalId([NEW, OLD], id, body, seal)).toBe(true);
        expect(verifyOriginalId([NEW], id, body, seal)).toBe(false);
        if (otherId !== id) expect(verifyOriginalId([OLD], otherId, body, seal)).toBe(false);
        if (otherBody !== body) expect(verifyOriginalId([OLD], id, otherBody, seal)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  test('nothing is sealed or verified without keys; a malformed seal never verifies', () => {
    expect(sealOriginalId(undefined, 'id', 'body')).toBeUndefined();
    expect(sealOriginalId([], 'id', 'body')).toBeUndefined();
    const seal = sealOriginalId([OLD], 'id', 'body') ?? '';
    expect(verifyOriginalId(undefined, 'id', 'body', seal)).toBe(false);
    expect(verifyOriginalId([OLD], 'id', 'body', `${seal}=`)).toBe(false);
    expect(verifyOriginalId([OLD], 'id', 'body', seal.slice(0, -2))).toBe(false);
    expect(verifyOriginalId([OLD], 'id', 'body', '')).toBe(false);
  });

  test('the id and body are framed: moving characters between them breaks the seal', () => {
    const seal = sealOriginalId([OLD], 'ab', 'c') ?? '';
    expect(verifyOriginalId([OLD], 'a', 'bc', seal)).toBe(false);
  });
});

describe('the id a request carries', () => {
  const original = '059f36b4-87a3-44ab-83d2-661975830a7d';

  test('a sealed copy, under a current key: the original id, and nothing reported', () => {
    const record = copyOf('{"x":1}', { originalMessageId: original, originalMessageIdSeal: sealOriginalId([OLD], original, '{"x":1}') });
    expect(idempotencyKeyOf(record, [NEW, OLD])).toBe(original);
    const request = buildDeliveryRequest(record, CONFIG, [NEW, OLD]);
    expect(request.id).toBe(original);
    expect(request.ignoredOriginalId).toBeUndefined();
  });

  test.each([
    ['no seal', { originalMessageId: original }, [OLD], /no seal/],
    [
      'a seal for another body',
      { originalMessageId: original, originalMessageIdSeal: sealOriginalId([OLD], original, 'other') },
      [OLD],
      /does not verify/,
    ],
    [
      'a seal under a key no longer listed',
      { originalMessageId: original, originalMessageIdSeal: sealOriginalId([OLD], original, '{"x":1}') },
      [NEW],
      /does not verify/,
    ],
    [
      'no signing keys',
      { originalMessageId: original, originalMessageIdSeal: sealOriginalId([OLD], original, '{"x":1}') },
      undefined,
      /no signing key/,
    ],
    ['an id that is no legal header value', { originalMessageId: 'a\r\nb' }, [OLD], /not a legal/],
  ] as const)('%s: the SQS id, and the claim reported', (_, reason, keys, why) => {
    const record = copyOf('{"x":1}', reason);
    expect(idempotencyKeyOf(record, keys)).toBe(record.messageId);
    const request = buildDeliveryRequest(record, CONFIG, keys);
    expect(request.id).toBe(record.messageId);
    expect(request.headers[request.headers.indexOf('X-Carrier-Message-Id') + 1]).toBe(record.messageId);
    expect(request.ignoredOriginalId).toEqual({ claimed: String(reason.originalMessageId), reason: expect.stringMatching(why) });
  });

  test('a reason that is not JSON, or claims no id, is ignored without a report', () => {
    for (const value of ['not json', 'null', '{}', JSON.stringify({ originalMessageId: 7 })]) {
      const record = sqsRecord(3, {
        messageAttributes: {
          [DEAD_LETTER_REASON_ATTRIBUTE]: { dataType: 'String', stringValue: value, stringListValues: [], binaryListValues: [] },
        },
      });
      const request = buildDeliveryRequest(record, CONFIG, [OLD]);
      expect(request.id).toBe(record.messageId);
      expect(request.ignoredOriginalId).toBeUndefined();
    }
  });
});
