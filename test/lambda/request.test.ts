/**
 * Unit tests of lambda/request.ts: the delivery request of docs/contract.md, "The delivery request" built from realistic SQS
 * records, with hostile attribute values that must never reach the wire.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import type { SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { checkAuthorizationValue, loadConfig, type RelayConfig } from '../../lambda/config';
import { isLegalHeaderValue, isTraceParent, MAX_ATTRIBUTE_HEADER_LENGTH, MAX_PRODUCER_HEADER_BYTES } from '../../lambda/header-rules';
import { buildDeliveryRequest, type DeliveryConfig, type DeliveryRequest } from '../../lambda/request';
import { queueNameOfArn } from '../../lambda/sqs-util';
import { sqsRecord as syntheticRecord } from '../../testkit/records';

const QUEUE_ARN = 'arn:aws:sqs:eu-west-1:123456789012:orders';
const FIFO_ARN = 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo';
const SENT_MS = '1700000000123';
const FIRST_RECEIVE_MS = '1700000005999';

interface RecordOptions {
  readonly messageId?: string;
  readonly body?: string;
  readonly arn?: string;
  readonly attributes?: Partial<SQSRecordAttributes>;
  readonly messageAttributes?: SQSMessageAttributes;
}

/** A record shaped like the ones Lambda's SQS event source hands over, received for the third time. */
function sqsRecord(options: RecordOptions = {}): SQSRecord {
  return syntheticRecord(0, {
    messageId: options.messageId ?? '059f36b4-87a3-44ab-83d2-661975830a7d',
    receiptHandle: 'AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a...',
    body: options.body ?? '{"order":42}',
    attributes: {
      ApproximateReceiveCount: '3',
      SentTimestamp: SENT_MS,
      SenderId: 'AIDAIENQZJOLO23YVJ4VO',
      ApproximateFirstReceiveTimestamp: FIRST_RECEIVE_MS,
      ...options.attributes,
    },
    messageAttributes: options.messageAttributes ?? {},
    md5OfBody: 'e4e68fb7bd0e697a0ae8f1bb342846b3',
    eventSourceARN: options.arn ?? QUEUE_ARN,
  });
}

const str = (value: string, dataType = 'String') => ({ dataType, stringValue: value });
/** The configuration `env` gives, its webhook URL known (as the relay's target has it). */
function config(env: Record<string, string> = {}): RelayConfig & DeliveryConfig {
  const loaded = loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/in', ...env });
  if (loaded.webhookUrl === undefined) throw new Error('no WEBHOOK_URL');
  return { ...loaded, webhookUrl: loaded.webhookUrl };
}
const DEFAULTS = config();

/**
 * The request with its header list (node:http's raw `[name, value, …]` form) read as an object,
 * after checking the list itself: pairs, `Host` first, and no header twice in any letter case
 * (a list, unlike an object, could carry two).
 */
function build(record: SQSRecord, relayConfig: DeliveryConfig): Omit<DeliveryRequest, 'headers'> & { headers: Record<string, string> } {
  const request = buildDeliveryRequest(record, relayConfig);
  const list = request.headers;
  expect(list.length % 2).toBe(0);
  expect(list.slice(0, 2)).toEqual(['Host', relayConfig.webhookUrl.host]);
  const names = list.filter((_, index) => index % 2 === 0);
  expect(new Set(names.map((name) => name.toLowerCase())).size).toBe(names.length);
  const headers: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) headers[list[i] as string] = list[i + 1] as string;
  return { ...request, headers };
}

/** Every header name and value is something Node would put on the wire, and none can split a line. */
function expectWireSafe(headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) {
    expect(() => validateHeaderName(name)).not.toThrow();
    expect(() => validateHeaderValue(name, value)).not.toThrow();
    expect(name).not.toMatch(/[\r\n\0]/);
    expect(value).not.toMatch(/[\r\n\0]/);
  }
}

describe('the headers (docs/contract.md, "The delivery request")', () => {
  test('a standard-queue record with the default prefix', () => {
    const { headers, body, skippedAttributes } = build(sqsRecord(), DEFAULTS);
    expect(headers).toEqual({
      Host: 'hooks.example.com',
      'Content-Type': 'application/json',
      'Content-Length': '12',
      'User-Agent': DEFAULTS.userAgent,
      'X-Carrier-Receive-Count': '3',
      'X-Carrier-First-Receive-Time': '1700000005',
      'X-Carrier-Message-Id': '059f36b4-87a3-44ab-83d2-661975830a7d',
      'X-Carrier-Sent-Time': '1700000000',
      'X-Carrier-Queue': 'orders',
    });
    expect(body.toString('utf8')).toBe('{"order":42}');
    expect(skippedAttributes).toEqual([]);
    expect(headers['User-Agent']).toMatch(/^sqs-webhook-relay\/\d+\.\d+\.\d+/);
  });

  test('a custom HEADER_PREFIX renames every Carrier header, and only those', () => {
    const record = sqsRecord({
      messageAttributes: { tenant: str('acme'), traceparent: str('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01') },
    });
    const { headers } = build(record, config({ HEADER_PREFIX: 'X-Relay-' }));
    expect(Object.keys(headers).sort()).toEqual(
      [
        'Host',
        'Content-Type',
        'Content-Length',
        'User-Agent',
        'X-Relay-Receive-Count',
        'X-Relay-First-Receive-Time',
        'X-Relay-Message-Id',
        'X-Relay-Sent-Time',
        'X-Relay-Queue',
        'X-Relay-Attr-tenant',
        'traceparent',
      ].sort(),
    );
    expect(headers['X-Relay-Attr-tenant']).toBe('acme');
    expect(Object.keys(headers).some((name) => name.startsWith('X-Carrier-'))).toBe(false);
  });

  test('timestamps are whole seconds since the epoch, rounded down, not milliseconds', () => {
    const { headers } = build(
      sqsRecord({ attributes: { SentTimestamp: '1700000000999', ApproximateFirstReceiveTimestamp: '1700000001000' } }),
      DEFAULTS,
    );
    expect(headers['X-Carrier-Sent-Time']).toBe('1700000000');
    expect(headers['X-Carrier-First-Receive-Time']).toBe('1700000001');
    expect(Number(headers['X-Carrier-Sent-Time'])).toBeLessThan(1e11); // seconds, not ms
  });

  test('property: any timestamp of up to 15 digits gives Math.floor(ms / 1000); anything else, no header', () => {
    const digits = fc.string({ unit: fc.constantFrom('0', '1', '5', '9'), minLength: 1, maxLength: 15 });
    const other = fc.oneof(
      fc.string({ unit: fc.constantFrom('0', '9'), minLength: 16, maxLength: 20 }),
      fc.string({ maxLength: 15 }).filter((text) => !/^[0-9]+$/.test(text)),
    );
    fc.assert(
      fc.property(digits, other, (sent, garbage) => {
        const { headers } = build(sqsRecord({ attributes: { SentTimestamp: sent, ApproximateFirstReceiveTimestamp: garbage } }), DEFAULTS);
        expect(headers['X-Carrier-Sent-Time']).toBe(String(Math.floor(Number(sent) / 1000)));
        expect(headers).not.toHaveProperty('X-Carrier-First-Receive-Time');
      }),
      { numRuns: 500 },
    );
  });

  test('a timestamp that is not a number is left out rather than sent wrong', () => {
    const { headers } = build(sqsRecord({ attributes: { SentTimestamp: 'yesterday', ApproximateFirstReceiveTimestamp: '-5' } }), DEFAULTS);
    expect(headers).not.toHaveProperty('X-Carrier-Sent-Time');
    expect(headers).not.toHaveProperty('X-Carrier-First-Receive-Time');
    expect(headers['X-Carrier-Message-Id']).toBeDefined();
  });

  test('the queue name comes from eventSourceARN', () => {
    expect(build(sqsRecord({ arn: 'arn:aws-cn:sqs:cn-north-1:123456789012:payments-v2' }), DEFAULTS).headers['X-Carrier-Queue']).toBe(
      'payments-v2',
    );
    expect(queueNameOfArn(FIFO_ARN)).toBe('orders.fifo');
  });

  test('FIFO fields only when the record has them', () => {
    const standard = build(sqsRecord(), DEFAULTS).headers;
    expect(standard).not.toHaveProperty('X-Carrier-Message-Group-Id');
    expect(standard).not.toHaveProperty('X-Carrier-Sequence-Number');

    const fifo = build(
      sqsRecord({
        arn: FIFO_ARN,
        attributes: { MessageGroupId: 'customer-7', SequenceNumber: '18849496460467696128', MessageDeduplicationId: 'dedup-1' },
      }),
      DEFAULTS,
    ).headers;
    expect(fifo['X-Carrier-Message-Group-Id']).toBe('customer-7');
    expect(fifo['X-Carrier-Sequence-Number']).toBe('18849496460467696128');
    expect(fifo['X-Carrier-Queue']).toBe('orders.fifo');
  });

  test('system attributes that are not in the contract are not sent', () => {
    const { headers } = build(
      sqsRecord({ attributes: { AWSTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793', SenderId: 'AIDAEXAMPLE' } }),
      DEFAULTS,
    );
    expect(Object.values(headers)).not.toContain('AIDAEXAMPLE');
    expect(Object.keys(headers).filter((name) => /sender|awstrace/i.test(name))).toEqual([]);
  });
});

describe('Content-Type', () => {
  test('DEFAULT_CONTENT_TYPE without a Body.ContentType attribute', () => {
    expect(build(sqsRecord(), config({ DEFAULT_CONTENT_TYPE: 'text/plain; charset=utf-8' })).headers['Content-Type']).toBe(
      'text/plain; charset=utf-8',
    );
  });

  test('Body.ContentType wins and is not also sent as an Attr header', () => {
    const { headers } = build(sqsRecord({ messageAttributes: { 'Body.ContentType': str('application/xml; charset=utf-8') } }), DEFAULTS);
    expect(headers['Content-Type']).toBe('application/xml; charset=utf-8');
    expect(Object.keys(headers).filter((name) => /content-type/i.test(name))).toEqual(['Content-Type']);
  });

  test('a Body.ContentType with an illegal value is reported and the default is kept', () => {
    const { headers, skippedAttributes } = build(
      sqsRecord({ messageAttributes: { 'Body.ContentType': str('text/html\r\nX-Evil: 1') } }),
      DEFAULTS,
    );
    expect(headers['Content-Type']).toBe('application/json');
    expect(skippedAttributes.map((skipped) => skipped.name)).toEqual(['Body.ContentType']);
    expect(JSON.stringify(headers)).not.toContain('Evil');
  });
});

describe('message attributes', () => {
  test('String, Number and custom types become {P}Attr-<Name> with the value unchanged', () => {
    const { headers, skippedAttributes } = build(
      sqsRecord({
        messageAttributes: {
          tenant: str('acme'),
          priority: str('5', 'Number'),
          ratio: str('-1.25e3', 'Number.float'),
          count: str('42', 'Number.int'),
          payload: str('{"a":[1,2]}', 'String.json'),
          'event.type': str('order.created'),
          under_score: str('with spaces\tand tab'),
        },
      }),
      DEFAULTS,
    );
    expect(headers).toMatchObject({
      'X-Carrier-Attr-tenant': 'acme',
      'X-Carrier-Attr-priority': '5',
      'X-Carrier-Attr-ratio': '-1.25e3',
      'X-Carrier-Attr-count': '42',
      'X-Carrier-Attr-payload': '{"a":[1,2]}',
      'X-Carrier-Attr-event.type': 'order.created',
      'X-Carrier-Attr-under_score': 'with spaces\tand tab',
    });
    expect(skippedAttributes).toEqual([]);
  });

  test('Binary attributes (and custom Binary types) have no header and are not reported', () => {
    const { headers, skippedAttributes } = build(
      sqsRecord({
        messageAttributes: {
          blob: { dataType: 'Binary', binaryValue: Buffer.from('\x00\x01\xff').toString('base64') },
          image: { dataType: 'Binary.png', binaryValue: 'iVBORw0KGgo=' },
          tenant: str('acme'),
        },
      }),
      DEFAULTS,
    );
    expect(Object.keys(headers).filter((name) => name.includes('Attr-'))).toEqual(['X-Carrier-Attr-tenant']);
    expect(skippedAttributes).toEqual([]);
  });

  test('traceparent and tracestate are copied under their own names', () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const tracestate = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';
    const { headers } = build(sqsRecord({ messageAttributes: { traceparent: str(traceparent), tracestate: str(tracestate) } }), DEFAULTS);
    expect(headers.traceparent).toBe(traceparent);
    expect(headers.tracestate).toBe(tracestate);
    expect(headers).not.toHaveProperty('X-Carrier-Attr-traceparent');
    expect(headers).not.toHaveProperty('X-Carrier-Attr-tracestate');
  });

  test('attributes cannot overwrite the contract headers', () => {
    const { headers } = build(
      sqsRecord({
        messageAttributes: {
          'Receive-Count': str('999'),
          'Message-Id': str('forged'),
          'User-Agent': str('evil'),
          'Content-Length': str('0'),
        },
      }),
      DEFAULTS,
    );
    expect(headers['X-Carrier-Receive-Count']).toBe('3');
    expect(headers['X-Carrier-Message-Id']).toBe('059f36b4-87a3-44ab-83d2-661975830a7d');
    expect(headers['User-Agent']).toBe(DEFAULTS.userAgent);
    expect(headers['Content-Length']).toBe('12');
    expect(headers['X-Carrier-Attr-Receive-Count']).toBe('999');
  });
});

describe('hostile attribute values are skipped, reported, and never sent', () => {
  const HOSTILE: [string, string][] = [
    ['CR', 'a\rb'],
    ['LF', 'a\nb'],
    ['CRLF injection', 'a\r\nX-Evil: 1'],
    ['header block injection', 'x\r\n\r\nGET /evil HTTP/1.1\r\nHost: evil'],
    ['NUL', 'a\u0000b'],
    ['other C0 control', 'a\u0007b'],
    ['DEL', 'a\u007fb'],
    ['Latin-1 (obs-text)', 'café'],
    ['non-Latin-1', 'Zürich → 東京'],
    ['emoji', '🚀'],
    ['lone surrogate', 'a\ud800b'],
    ['U+2028 line separator', 'a\u2028b'],
    ['leading space', ' padded'],
    ['trailing tab', 'padded\t'],
    ['only whitespace', '   '],
  ];

  test.each(HOSTILE)('%s', (_label, value) => {
    const { headers, skippedAttributes } = build(sqsRecord({ messageAttributes: { hostile: str(value), tenant: str('acme') } }), DEFAULTS);
    expect(headers).not.toHaveProperty('X-Carrier-Attr-hostile');
    expect(Object.values(headers)).not.toContain(value);
    expect(JSON.stringify(headers)).not.toContain('Evil');
    expect(skippedAttributes).toEqual([{ name: 'hostile', reason: 'value has characters not allowed in a header' }]);
    expect(headers['X-Carrier-Attr-tenant']).toBe('acme'); // the others still go out
    expectWireSafe(headers);
  });

  test('hostile traceparent and tracestate are skipped too', () => {
    const { headers, skippedAttributes } = build(
      sqsRecord({ messageAttributes: { traceparent: str('00-abc\r\nX-Evil: 1'), tracestate: str('k=v\n') } }),
      DEFAULTS,
    );
    expect(headers).not.toHaveProperty('traceparent');
    expect(headers).not.toHaveProperty('tracestate');
    expect(skippedAttributes.map((skipped) => skipped.name).sort()).toEqual(['traceparent', 'tracestate']);
  });

  test('a Number attribute with a hostile value is skipped', () => {
    const { headers, skippedAttributes } = build(sqsRecord({ messageAttributes: { n: str('1\r\nX-Evil: 1', 'Number') } }), DEFAULTS);
    expect(headers).not.toHaveProperty('X-Carrier-Attr-n');
    expect(skippedAttributes).toHaveLength(1);
  });

  test(`a value over ${MAX_ATTRIBUTE_HEADER_LENGTH} characters is skipped as too long; exactly the limit is sent`, () => {
    const atLimit = 'x'.repeat(MAX_ATTRIBUTE_HEADER_LENGTH);
    const over = 'y'.repeat(MAX_ATTRIBUTE_HEADER_LENGTH + 1);
    const huge = 'z'.repeat(256 * 1024);
    const { headers, skippedAttributes } = build(
      sqsRecord({ messageAttributes: { atLimit: str(atLimit), over: str(over), huge: str(huge) } }),
      DEFAULTS,
    );
    expect(headers['X-Carrier-Attr-atLimit']).toBe(atLimit);
    expect(headers).not.toHaveProperty('X-Carrier-Attr-over');
    expect(headers).not.toHaveProperty('X-Carrier-Attr-huge');
    expect(skippedAttributes).toEqual([
      { name: 'over', reason: 'value too long for a header' },
      { name: 'huge', reason: 'value too long for a header' },
    ]);
  });

  test.each(['has space', 'colon:name', 'new\nline', 'ünï', '', 'a\r\nX-Evil'])(
    'an attribute name not legal in a header (%j) is skipped',
    (name) => {
      const { headers, skippedAttributes } = build(sqsRecord({ messageAttributes: { [name]: str('ok') } }), DEFAULTS);
      expect(Object.keys(headers).filter((header) => header.includes('Attr-'))).toEqual([]);
      expect(skippedAttributes).toEqual([{ name, reason: 'name not allowed in a header' }]);
      expectWireSafe(headers);
    },
  );

  test('hostile system attributes are not sent either', () => {
    const { headers } = build(
      sqsRecord({
        messageId: 'id\r\nX-Evil: 1',
        arn: 'arn:aws:sqs:eu-west-1:123456789012:q\nX-Evil: 1',
        attributes: { ApproximateReceiveCount: '1\r\nX-Evil: 1', MessageGroupId: 'g\u0000', SequenceNumber: '1 ' },
      }),
      DEFAULTS,
    );
    expect(JSON.stringify(headers)).not.toContain('Evil');
    expect(headers).not.toHaveProperty('X-Carrier-Message-Id');
    expect(headers).not.toHaveProperty('X-Carrier-Receive-Count');
    expect(headers).not.toHaveProperty('X-Carrier-Message-Group-Id');
    expectWireSafe(headers);
  });
});

describe("the producer's headers together", () => {
  /** Bytes of the producer's headers as sent: name, `: `, value, CRLF. */
  const producerBytes = (headers: Record<string, string>): number =>
    Object.entries(headers)
      .filter(([name]) => name.startsWith('X-Carrier-Attr-') || name === 'traceparent' || name === 'tracestate')
      .reduce((sum, [name, value]) => sum + name.length + value.length + 4, 0);
  const OVER_TOTAL = `the message's attribute headers together are over ${MAX_PRODUCER_HEADER_BYTES} bytes: the largest are left out`;

  test(`ten legal 4 KiB attributes: the largest are left out, each reported, until the rest fit ${MAX_PRODUCER_HEADER_BYTES} bytes`, () => {
    const messageAttributes = Object.fromEntries(
      Array.from({ length: 10 }, (_, index) => [`a${index}`, str(String(index).repeat(MAX_ATTRIBUTE_HEADER_LENGTH - index))]),
    );
    const { headers, skippedAttributes } = build(sqsRecord({ messageAttributes }), DEFAULTS);
    // The smallest alone fits; with the next (4,087 + 4,088 + 2 × 21 bytes) they would not.
    expect(Object.keys(headers).filter((name) => name.startsWith('X-Carrier-Attr-'))).toEqual(['X-Carrier-Attr-a9']);
    expect(skippedAttributes).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8'].map((name) => ({ name, reason: OVER_TOTAL })));
    expect(producerBytes(headers)).toBeLessThanOrEqual(MAX_PRODUCER_HEADER_BYTES);
    expect(headers['X-Carrier-Message-Id']).toBeDefined(); // the relay's own headers are never left out
  });

  test('exactly at the limit everything is sent; one byte over, only the largest is left out; small ones never for a big one', () => {
    // Two attributes whose header lines make exactly the limit: "X-Carrier-Attr-a: " + value + CRLF.
    const line = (name: string): number => `X-Carrier-Attr-${name}`.length + 4;
    const big = 'b'.repeat(MAX_ATTRIBUTE_HEADER_LENGTH);
    const exact = 'e'.repeat(MAX_PRODUCER_HEADER_BYTES - line('big') - big.length - line('small'));
    const atLimit = build(sqsRecord({ messageAttributes: { big: str(big), small: str(exact) } }), DEFAULTS);
    expect(producerBytes(atLimit.headers)).toBe(MAX_PRODUCER_HEADER_BYTES);
    expect(atLimit.skippedAttributes).toEqual([]);
    const over = build(sqsRecord({ messageAttributes: { big: str(big), small: str(`${exact}e`), tiny: str('t') } }), DEFAULTS);
    expect(over.skippedAttributes).toEqual([{ name: 'big', reason: OVER_TOTAL }]);
    expect(over.headers['X-Carrier-Attr-small']).toBe(`${exact}e`);
    expect(over.headers['X-Carrier-Attr-tiny']).toBe('t');
  });

  test('a Body.ContentType counts toward the total but is never left out; trace headers count and can be', () => {
    const contentType = `application/vnd.example+json; profile="${'p'.repeat(3_000)}"`;
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const { headers, skippedAttributes } = build(
      sqsRecord({
        messageAttributes: {
          'Body.ContentType': str(contentType),
          one: str('1'.repeat(3_100)),
          two: str('2'.repeat(2_000)),
          traceparent: str(traceparent),
        },
      }),
      DEFAULTS,
    );
    expect(headers['Content-Type']).toBe(contentType);
    expect(skippedAttributes).toEqual([{ name: 'one', reason: OVER_TOTAL }]);
    expect(headers.traceparent).toBe(traceparent);
    expect(headers['X-Carrier-Attr-two']).toBe('2'.repeat(2_000));
  });

  test('property: whatever the legal attributes, what is sent fits the limit, and each attribute is sent or reported', () => {
    const value = fc.oneof(
      fc.integer({ min: 1, max: MAX_ATTRIBUTE_HEADER_LENGTH }).map((length) => 'v'.repeat(length)),
      fc.stringMatching(/^[a-z0-9]{1,16}$/),
    );
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/), value), {
          maxLength: 10,
          selector: ([name]) => name.toLowerCase(),
        }),
        (attributes) => {
          const messageAttributes = Object.fromEntries(attributes.map(([name, text]) => [name, str(text)]));
          const { headers, skippedAttributes } = build(sqsRecord({ messageAttributes }), DEFAULTS);
          expect(producerBytes(headers)).toBeLessThanOrEqual(MAX_PRODUCER_HEADER_BYTES);
          const skipped = new Set(skippedAttributes.map((entry) => entry.name));
          for (const [name, text] of attributes) expect(skipped.has(name) !== (headers[`X-Carrier-Attr-${name}`] === text)).toBe(true);
          // Only the largest are left out: every one sent is no larger than every one left out.
          const sentSizes = attributes.filter(([name]) => !skipped.has(name)).map(([name, text]) => name.length + text.length);
          const leftSizes = attributes.filter(([name]) => skipped.has(name)).map(([name, text]) => name.length + text.length);
          if (leftSizes.length > 0) expect(Math.max(...sentSizes, 0)).toBeLessThanOrEqual(Math.min(...leftSizes));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('trace context (W3C)', () => {
  const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  test.each([
    ['version 00', PARENT],
    ['sampled flag off', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00'],
    ['a later version with more fields', 'cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds'],
    ['a later version without', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09'],
  ])('a valid traceparent is sent: %s', (_label, traceparent) => {
    const { headers, skippedAttributes } = build(sqsRecord({ messageAttributes: { traceparent: str(traceparent) } }), DEFAULTS);
    expect(headers.traceparent).toBe(traceparent);
    expect(skippedAttributes).toEqual([]);
  });

  test.each([
    ['upper-case hex', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01'],
    ['an all-zero trace id', '00-00000000000000000000000000000000-00f067aa0ba902b7-01'],
    ['an all-zero parent id', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'],
    ['version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
    ['version 00 with more fields', `${PARENT}-extra`],
    ['a short trace id', '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01'],
    ['a later version joined without a dash', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x'],
    ['free text', 'my-trace-id'],
  ])('a malformed traceparent is left out and reported, its tracestate with it: %s', (_label, traceparent) => {
    const { headers, skippedAttributes } = build(
      sqsRecord({ messageAttributes: { traceparent: str(traceparent), tracestate: str('rojo=00f067aa0ba902b7') } }),
      DEFAULTS,
    );
    expect(headers).not.toHaveProperty('traceparent');
    expect(headers).not.toHaveProperty('tracestate');
    expect(skippedAttributes).toEqual([
      { name: 'traceparent', reason: 'not a W3C Trace Context traceparent' },
      { name: 'tracestate', reason: 'tracestate without a valid traceparent' },
    ]);
  });

  test.each([
    ['two members', 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'],
    ['spaces around members, empty members', 'rojo=00f067aa0ba902b7 ,, congo=t61rcWkgMzE'],
    ['a multi-tenant key', 'fw529a3039@dt=00f067aa0ba902b7'],
    ['keys with * / _ -', 'a*b/c_d-e=1'],
    ['32 members', Array.from({ length: 32 }, (_, index) => `k${index}=v`).join(',')],
  ])('a valid tracestate is sent with its traceparent: %s', (_label, tracestate) => {
    const { headers, skippedAttributes } = build(
      sqsRecord({ messageAttributes: { traceparent: str(PARENT), tracestate: str(tracestate) } }),
      DEFAULTS,
    );
    expect(headers.tracestate).toBe(tracestate);
    expect(skippedAttributes).toEqual([]);
  });

  test.each([
    ['an upper-case key', 'Rojo=1'],
    ['a key twice', 'rojo=1,rojo=2'],
    ['33 members', Array.from({ length: 33 }, (_, index) => `k${index}=v`).join(',')],
    ['no =', 'rojo'],
    ['an = in the value', 'rojo=a=b'],
    ['an empty value', 'rojo='],
    ['a tab in a value', 'rojo=a\tb'],
  ])('a malformed tracestate is left out and reported, its traceparent still sent: %s', (_label, tracestate) => {
    const { headers, skippedAttributes } = build(
      sqsRecord({ messageAttributes: { traceparent: str(PARENT), tracestate: str(tracestate) } }),
      DEFAULTS,
    );
    expect(headers.traceparent).toBe(PARENT);
    expect(headers).not.toHaveProperty('tracestate');
    expect(skippedAttributes).toEqual([{ name: 'tracestate', reason: 'not a W3C Trace Context tracestate' }]);
  });

  test('property: isTraceParent agrees with the specification read as a regular expression', () => {
    // W3C Trace Context, section 3.2: version-format, then a later version's extra fields after a "-".
    const specification = (value: string): boolean => {
      const match = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(value);
      if (match === null || match[1] === 'ff' || /^0+$/.test(match[2] as string) || /^0+$/.test(match[3] as string)) return false;
      return match[1] !== '00' || match[5] === undefined;
    };
    const hex = (length: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdefA0'), minLength: length, maxLength: length });
    const candidate = fc.oneof(
      fc
        .tuple(hex(2), hex(32), hex(16), hex(2), fc.constantFrom('', '-', '-x', 'x', '-00'))
        .map(([version, trace, parent, flags, rest]) => `${version}-${trace}-${parent}-${flags}${rest}`),
      fc.constantFrom('00', 'ff', '01', 'cc').map((version) => `${version}-${'0'.repeat(32)}-00f067aa0ba902b7-01`),
      fc.string({ unit: fc.constantFrom('0', 'f', 'a', '-', 'G', ' '), maxLength: 60 }),
    );
    fc.assert(
      fc.property(candidate, (value) => {
        expect(isTraceParent(value), value).toBe(specification(value));
      }),
      { numRuns: 3_000 },
    );
  });

  test('a tracestate alone is left out: it means nothing without a traceparent', () => {
    const { headers, skippedAttributes } = build(sqsRecord({ messageAttributes: { tracestate: str('rojo=1') } }), DEFAULTS);
    expect(headers).not.toHaveProperty('tracestate');
    expect(skippedAttributes).toEqual([{ name: 'tracestate', reason: 'tracestate without a valid traceparent' }]);
  });
});

describe('the body', () => {
  test.each([
    ['ASCII JSON', '{"order":42}'],
    ['unicode', 'Grüße aus Zürich → 東京 🚀'],
    ['control characters', 'line1\r\nline2\u0000\t'],
    ['empty', ''],
    ['XML', '<?xml version="1.0"?><a b="c"/>'],
    ['large', 'é'.repeat(128 * 1024)],
  ])('%s is sent byte for byte, with Content-Length in bytes', (_label, text) => {
    const { headers, body } = build(sqsRecord({ body: text }), DEFAULTS);
    expect(body.equals(Buffer.from(text, 'utf8'))).toBe(true);
    expect(body.toString('utf8')).toBe(text);
    expect(headers['Content-Length']).toBe(String(Buffer.byteLength(text, 'utf8')));
  });

  test('a 4-byte character counts as 4 bytes in Content-Length', () => {
    expect(build(sqsRecord({ body: '🚀' }), DEFAULTS).headers['Content-Length']).toBe('4');
  });

  // Bodies share slabs (utf8Bytes): each must be exactly Buffer.from's bytes, and building more
  // requests, small and large, in any order, must never change a body already built.
  test('property: every body is its text in UTF-8, lone surrogates included, and stays so while more are built', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 2_000 }),
      fc.string({ unit: 'grapheme', maxLength: 500 }),
      fc.string({ unit: 'binary-ascii', minLength: 5_000, maxLength: 30_000 }),
      // Mostly multi-byte: where a slab's room is counted in characters rather than bytes, these run past its end.
      fc.string({ unit: fc.constantFrom('€', 'é', '🚀', 'a'), minLength: 500, maxLength: 6_000 }),
      fc.integer({ min: 500, max: 6_000 }).map((length) => '€'.repeat(length)), // three bytes each: the worst case
    );
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 60 }), (texts) => {
        const bodies = texts.map((body) => buildDeliveryRequest(sqsRecord({ body }), DEFAULTS).body);
        for (const [index, body] of texts.entries()) expect(bodies[index]?.equals(Buffer.from(body, 'utf8'))).toBe(true);
      }),
      // Shrinking dozens of long strings takes minutes; the first failing batch says enough.
      { numRuns: 200, endOnFailure: true },
    );
  });
});

test('pure: the same record gives the same request', () => {
  const record = sqsRecord({ messageAttributes: { a: str('1'), b: str('bad\n') } });
  expect(build(record, DEFAULTS)).toEqual(build(record, DEFAULTS));
});

describe('property: whatever the attributes, the headers are wire-safe', () => {
  const anyText = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.string({ maxLength: 40 }),
    fc.constantFrom('a\r\nX-Evil: 1', '\r\n', ' x', 'x ', '\u0000', 'ok', '00-abc-def-01'),
    fc.string({ unit: fc.constantFrom('a', ' ', '\t', '\r', '\n', 'é', '\u0000', ':'), maxLength: 12 }),
  );
  const anyName = fc.oneof(anyText, fc.constantFrom('Body.ContentType', 'traceparent', 'tracestate', 'tenant', 'Content-Length'));
  const anyAttribute = fc.record({
    dataType: fc.constantFrom('String', 'Number', 'Number.int', 'String.json', 'Binary', 'Binary.png', 'Custom'),
    stringValue: fc.option(anyText, { nil: undefined }),
  });

  test('every header name and value passes validateHeaderName / validateHeaderValue and has no CR/LF', () => {
    fc.assert(
      fc.property(
        fc.dictionary(anyName, anyAttribute, { maxKeys: 8 }),
        anyText,
        anyText,
        fc.option(anyText, { nil: undefined }),
        fc.constantFrom('X-Carrier-', 'X-Relay-', 'My_Prefix.'),
        (messageAttributes, messageId, body, groupId, prefix) => {
          const record = sqsRecord({
            messageId,
            body,
            messageAttributes,
            attributes: groupId === undefined ? {} : { MessageGroupId: groupId },
          });
          const { headers, skippedAttributes } = build(record, config({ HEADER_PREFIX: prefix }));
          expectWireSafe(headers);
          const skipped = new Set(skippedAttributes.map((entry) => entry.name));
          for (const [name, attribute] of Object.entries(messageAttributes)) {
            if (attribute.dataType.startsWith('Binary') || attribute.dataType === 'Custom') {
              expect(skipped.has(name)).toBe(false);
              continue;
            }
            const value = attribute.stringValue ?? '';
            const sentAs =
              name === 'Body.ContentType'
                ? 'Content-Type'
                : name === 'traceparent' || name === 'tracestate'
                  ? name
                  : `${prefix}Attr-${name}`;
            // Each String/Number attribute is either sent unchanged or reported, never both, never silently lost.
            if (skipped.has(name)) {
              expect(headers[sentAs]).not.toBe(value);
            } else if (name === 'Body.ContentType' && value === '') {
              expect(headers['Content-Type']).toBe(DEFAULTS.defaultContentType);
            } else {
              expect(headers[sentAs]).toBe(value);
            }
          }
          expect(build(record, config({ HEADER_PREFIX: prefix })).body.equals(Buffer.from(body, 'utf8'))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('isLegalHeaderValue', () => {
  test('property: exactly visible ASCII, space and tab, nothing trimmable at either end, at most the length limit', () => {
    const reference = (value: string): boolean =>
      value.length <= MAX_ATTRIBUTE_HEADER_LENGTH && /^[\t\x20-\x7e]*$/.test(value) && value.trim() === value;
    const unit = fc.constantFrom('a', 'Z', '~', '!', ' ', '\t', '\r', '\n', '\0', '\x7f', '\x80', 'é', '\u00a0', '\u2028', '\ufeff', '🚀');
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 12 }), (value) => {
        expect(isLegalHeaderValue(value)).toBe(reference(value));
      }),
      { numRuns: 2_000 },
    );
    for (const length of [MAX_ATTRIBUTE_HEADER_LENGTH, MAX_ATTRIBUTE_HEADER_LENGTH + 1])
      expect(isLegalHeaderValue('x'.repeat(length))).toBe(reference('x'.repeat(length)));
  });
});

describe('one header-value rule for requests and settings', () => {
  test('property: a Content-Type or Authorization value start-up accepts is exactly one a message may carry as its Body.ContentType', () => {
    const unit = fc.constantFrom('a', '/', ';', '=', ' ', '\t', '\r', '\n', '\0', '\x7f', 'é', '🚀');
    // Settings are trimmed when read and never empty (blank is unset): compare values a setting can hold.
    const setting = fc.string({ unit, minLength: 1, maxLength: 10 }).filter((value) => value.trim() === value);
    const acceptedAs = (variable: string, value: string): boolean => {
      try {
        config({ [variable]: value });
        return true;
      } catch {
        return false;
      }
    };
    fc.assert(
      fc.property(setting, (value) => {
        const carried =
          build(sqsRecord({ messageAttributes: { 'Body.ContentType': str(value) } }), DEFAULTS).headers['Content-Type'] === value;
        expect(acceptedAs('DEFAULT_CONTENT_TYPE', value)).toBe(carried);
        expect(acceptedAs('AUTH_HEADER', value)).toBe(carried);
      }),
      { numRuns: 2_000 },
    );
  });

  test('settings have no attribute length limit, and an empty Authorization (from a secret) is refused', () => {
    const long = `Bearer ${'t'.repeat(MAX_ATTRIBUTE_HEADER_LENGTH)}`;
    expect(checkAuthorizationValue(long)).toBe(long);
    const longType = `text/plain; x=${'y'.repeat(MAX_ATTRIBUTE_HEADER_LENGTH)}`;
    expect(config({ DEFAULT_CONTENT_TYPE: longType }).defaultContentType).toBe(longType);
    expect(() => checkAuthorizationValue('')).toThrow(/not allowed in a header/);
  });
});

describe('FIFO fields and header-name collisions', () => {
  test('a standard (fair) queue record with a MessageGroupId gets no FIFO headers', () => {
    const { headers } = build(sqsRecord({ attributes: { MessageGroupId: 'tenant-1', SequenceNumber: '1' } }), DEFAULTS);
    expect(headers['X-Carrier-Message-Group-Id']).toBeUndefined();
    expect(headers['X-Carrier-Sequence-Number']).toBeUndefined();
  });

  test('attributes whose names differ only in case: the first is sent, the second skipped and reported', () => {
    const { headers, skippedAttributes } = build(sqsRecord({ messageAttributes: { tenant: str('a'), Tenant: str('b') } }), DEFAULTS);
    const sent = Object.entries(headers).filter(([name]) => name.toLowerCase() === 'x-carrier-attr-tenant');
    expect(sent).toEqual([['X-Carrier-Attr-tenant', 'a']]);
    expect(skippedAttributes).toEqual([{ name: 'Tenant', reason: 'name differs only in case from another attribute' }]);
  });
});
