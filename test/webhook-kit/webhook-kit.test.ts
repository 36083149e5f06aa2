/**
 * The webhook kit: signatures produced by the independent `standardwebhooks` package
 * verify, tampering and stale timestamps do not; the retry strategies' values; and the example
 * webhook receiving from the real relay.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { describe, expect, test } from 'vitest';
import {
  cappedExponential,
  exponential,
  fibonacci,
  linear,
  receiveCountOf,
  retryAfter,
  verifyDelivery,
  verifySignature,
} from '../../packages/webhook-kit/src/index';
import { createExampleWebhook } from '../../examples/webhook';
import { sqsRecord } from '../../testkit/records';
import { invoke, relayFor, unreachableSqs } from '../support/relay';

const SECRET = `whsec_${Buffer.from('webhook kit test key 0123456789ab').toString('base64')}`;
const OTHER = `whsec_${Buffer.from('someone else signs with this key').toString('base64')}`;

function signedBy(secret: string, id: string, body: string, at = new Date()): Record<string, string> {
  const signature = new Webhook(secret).sign(id, at, body);
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
}

/** The request the relay, signing with {@link SECRET}, sends for one message of `body`: its headers and raw body. */
async function sentByRelay(body: string): Promise<{ headers: Record<string, string>; body: Buffer }> {
  const captured: { headers: Record<string, string>; body: Buffer }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      captured.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const handler = relayFor({ WEBHOOK_URL: url, SIGNING_SECRET: SECRET }, { sqs: unreachableSqs() });
    await invoke(handler, { Records: [sqsRecord(1, { body })] });
  } finally {
    server.close();
  }
  const [sent] = captured;
  if (sent === undefined) throw new Error('the relay sent nothing');
  return sent;
}

describe('verifySignature', () => {
  test('accepts what standardwebhooks signs, for unicode and binary-looking bodies', () => {
    for (const body of ['{"a":"ünïcödé ✓ 🚀"}', '\u0001\u0002\u00ff binary-ish', '']) {
      expect(verifySignature(SECRET, signedBy(SECRET, 'msg_1', body), body)).toBe(true);
      expect(verifySignature(SECRET, signedBy(SECRET, 'msg_1', body), Buffer.from(body, 'utf8'))).toBe(true);
    }
  });

  test('rejects a tampered body, another id, a wrong key, stale or future timestamps, missing headers', () => {
    const headers = signedBy(SECRET, 'msg_1', 'original');
    expect(verifySignature(SECRET, headers, 'tampered')).toBe(false);
    expect(verifySignature(SECRET, { ...headers, 'webhook-id': 'msg_2' }, 'original')).toBe(false);
    expect(verifySignature(OTHER, headers, 'original')).toBe(false);
    const old = new Date(Date.now() - 10 * 60_000);
    expect(verifySignature(SECRET, signedBy(SECRET, 'msg_1', 'original', old), 'original')).toBe(false);
    expect(verifySignature(SECRET, signedBy(SECRET, 'msg_1', 'original', old), 'original', { toleranceSeconds: 3600 })).toBe(true);
    expect(verifySignature(SECRET, signedBy(SECRET, 'msg_1', 'original', new Date(Date.now() + 10 * 60_000)), 'original')).toBe(false);
    expect(verifySignature(SECRET, { 'webhook-id': 'msg_1' }, 'original')).toBe(false);
  });

  test('several secrets (rotation), several signatures, Fetch-style headers', () => {
    const headers = signedBy(OTHER, 'msg_1', 'x');
    expect(verifySignature([SECRET, OTHER], headers, 'x')).toBe(true);
    const both = {
      ...headers,
      'webhook-signature': `${signedBy(SECRET, 'msg_1', 'x')['webhook-signature']} ${headers['webhook-signature']}`,
    };
    expect(verifySignature(OTHER, both, 'x')).toBe(true);
    expect(verifySignature(SECRET, new Headers(signedBy(SECRET, 'msg_1', 'x')), 'x')).toBe(true);
  });

  test('a malformed secret is the caller’s bug and throws', () => {
    expect(() => verifySignature('not-whsec', signedBy(SECRET, 'm', 'x'), 'x')).toThrow(/whsec_/);
  });

  test('a missing secret (an unset WEBHOOK_SECRET) throws, naming the argument', () => {
    const headers = signedBy(SECRET, 'm', 'x');
    for (const missing of [undefined, null]) {
      expect(() => verifySignature(missing as unknown as string, headers, 'x')).toThrow(
        new TypeError(
          `secrets (the first argument) is ${String(missing)}: pass the relay's signing secret, whsec_… (an environment variable that is not set?)`,
        ),
      );
    }
    expect(() => verifySignature([SECRET, undefined] as unknown as string[], headers, 'x')).toThrow(/secrets \(the first argument\)/);
    expect(() => verifySignature('', headers, 'x')).toThrow(/the signing secret is empty/);
  });

  test('a key shorter than 24 bytes is refused, as the relay refuses to sign with one, without echoing it', () => {
    const short = `whsec_${Buffer.from('twenty-three bytes long').toString('base64')}`;
    expect(() => verifySignature(short, signedBy(SECRET, 'm', 'x'), 'x')).toThrow(
      'signing secret #1 is a key of 23 bytes; Standard Webhooks asks for at least 24 (32 base64 characters)',
    );
    const exactly = `whsec_${Buffer.from('exactly twenty-four byte').toString('base64')}`;
    expect(verifySignature(exactly, signedBy(exactly, 'm', 'x'), 'x')).toBe(true);
  });

  test('missing or malformed request parts are false, never a throw', () => {
    const headers = signedBy(SECRET, 'm', 'x');
    expect(verifySignature(SECRET, undefined as unknown as Record<string, string>, 'x')).toBe(false);
    expect(verifySignature(SECRET, null as unknown as Record<string, string>, 'x')).toBe(false);
    expect(verifySignature(SECRET, { ...headers, 'webhook-id': 7 } as unknown as Record<string, string>, 'x')).toBe(false);
    expect(verifySignature(SECRET, { ...headers, 'webhook-timestamp': '-1' }, 'x')).toBe(false);
    expect(verifySignature(SECRET, { ...headers, 'webhook-timestamp': '1e9' }, 'x')).toBe(false);
    // Repeated headers as Node gives them: the first counts.
    expect(verifySignature(SECRET, { ...headers, 'webhook-id': ['m', 'other'] }, 'x')).toBe(true);
  });

  test('the relay’s signature verifies over the body as any runtime gives it: a Fetch Request’s ArrayBuffer, a Buffer, any view of the bytes', async () => {
    const sent = await sentByRelay('{"name":"Zoë ✓"}');
    // A Fetch-style handler (Hono, Next.js, Deno, Bun, Workers) reads the body so.
    const request = new Request('http://webhook.example/', { method: 'POST', headers: sent.headers, body: sent.body });
    const arrayBuffer = await request.arrayBuffer();
    const id = sent.headers['webhook-id'];
    expect(verifyDelivery(SECRET, request.headers, arrayBuffer)?.id).toBe(id);
    // Views that start part-way into a larger buffer, as a pooled Buffer does: only the viewed bytes count.
    const padded = new Uint8Array(sent.body.length + 8);
    padded.set(sent.body, 5);
    const views = [
      sent.body,
      new Uint8Array(arrayBuffer),
      padded.subarray(5, 5 + sent.body.length),
      new DataView(padded.buffer, 5, sent.body.length),
    ];
    for (const view of views) expect(verifyDelivery(SECRET, sent.headers, view)?.id, view.constructor.name).toBe(id);
    // The same bytes and one more are not what was signed.
    expect(verifySignature(SECRET, sent.headers, padded.subarray(5, 6 + sent.body.length))).toBe(false);
    expect(verifySignature(SECRET, sent.headers, new DataView(padded.buffer, 4, sent.body.length))).toBe(false);
  });

  test('a body that is not a string or bytes (parsed JSON, none read) throws, naming the argument, rather than fail every request in silence', async () => {
    const sent = await sentByRelay('{"order":1}');
    const request = new Request('http://webhook.example/', { method: 'POST', body: sent.body });
    const notBytes: [unknown, string][] = [
      [JSON.parse(sent.body.toString('utf8')), 'Object'],
      [undefined, 'undefined'],
      [null, 'null'],
      [42, 'number'],
      [await request.blob(), 'Blob'],
      [[...sent.body], 'Array'],
    ];
    for (const [body, got] of notBytes) {
      const message = `body (the third argument) must be the raw request body, a string or bytes (Buffer, Uint8Array, ArrayBuffer); got ${got}: verify before any parsing`;
      expect(() => verifyDelivery(SECRET, sent.headers, body as string)).toThrow(new TypeError(message));
      expect(() => verifySignature(SECRET, sent.headers, body as string)).toThrow(new TypeError(message));
      // Even without headers to verify: the mistake shows on the first request, whatever it carries.
      expect(() => verifySignature(SECRET, {}, body as string)).toThrow(TypeError);
    }
  });

  test('options that would switch the time check off throw, naming the option; a request an hour old is never accepted for them', () => {
    const hourOld = signedBy(SECRET, 'm', 'x', new Date(Date.now() - 3_600_000));
    for (const toleranceSeconds of [Number.NaN, Number.POSITIVE_INFINITY, -1, '300' as unknown as number]) {
      expect(() => verifySignature(SECRET, hourOld, 'x', { toleranceSeconds }), String(toleranceSeconds)).toThrow(
        /^options\.toleranceSeconds must be a finite number of seconds, 0 or more; got /,
      );
    }
    expect(() => verifySignature(SECRET, hourOld, 'x', { now: new Date('garbage') })).toThrow(
      new RangeError('options.now must be a valid Date; got Invalid Date'),
    );
    expect(() => verifySignature(SECRET, hourOld, 'x', { now: Date.now() as unknown as Date })).toThrow(/^options\.now must be a Date/);
    // Even with nothing to verify: a misconfiguration shows on the first request.
    expect(() => verifySignature(SECRET, {}, 'x', { toleranceSeconds: Number.NaN })).toThrow(/toleranceSeconds/);
    // The neighbours that are fine: 0 (exactly now), a large finite tolerance, an explicit now.
    const now = new Date();
    expect(verifySignature(SECRET, signedBy(SECRET, 'm', 'x', now), 'x', { toleranceSeconds: 0, now })).toBe(true);
    expect(verifySignature(SECRET, hourOld, 'x', { toleranceSeconds: 3_601 })).toBe(true);
    expect(verifySignature(SECRET, hourOld, 'x', { now: new Date(Date.now() - 3_600_000) })).toBe(true);
  });
});

describe('verifyDelivery: the signed id, for deduplication', () => {
  /** A webhook that processes each signed id once, as docs/webhook-owners.md tells owners to. */
  function deduplicatingWebhook(): { receive: (headers: Record<string, string>, body: string) => number; processed: string[] } {
    const seen = new Set<string>();
    const processed: string[] = [];
    return {
      processed,
      receive(headers, body) {
        const delivery = verifyDelivery(SECRET, headers, body);
        if (delivery === undefined) return 401;
        if (seen.has(delivery.id)) return 200; // already done: acknowledge, do nothing
        seen.add(delivery.id);
        processed.push(body);
        return 200;
      },
    };
  }

  test('hands back the signed webhook-id and timestamp; undefined when the signature does not hold', () => {
    const at = new Date();
    expect(verifyDelivery(SECRET, signedBy(SECRET, 'msg_1', 'x', at), 'x')).toEqual({
      id: 'msg_1',
      timestampSeconds: Math.floor(at.getTime() / 1000),
    });
    expect(verifyDelivery(SECRET, signedBy(SECRET, 'msg_1', 'x', at), 'y')).toBeUndefined();
    expect(verifyDelivery(SECRET, { ...signedBy(SECRET, 'msg_1', 'x', at), 'webhook-id': 'msg_2' }, 'x')).toBeUndefined();
  });

  test('a captured request replayed within the tolerance, X-Carrier-Message-Id and Content-Type changed: it still verifies, with the same signed id, so a deduplication on it catches the replay', async () => {
    const sent = await sentByRelay('{"pay":10}');
    const original = { headers: sent.headers, body: sent.body.toString('utf8') };
    const replay = {
      ...original.headers,
      'x-carrier-message-id': 'a-fresh-id-the-attacker-chose',
      'content-type': 'text/plain',
    };
    expect(verifySignature(SECRET, replay, original.body)).toBe(true); // the signature does not cover them
    expect(verifyDelivery(SECRET, replay, original.body)?.id).toBe(original.headers['webhook-id']);

    const webhook = deduplicatingWebhook();
    expect(webhook.receive(original.headers, original.body)).toBe(200);
    expect(webhook.receive(replay, original.body)).toBe(200);
    expect(webhook.processed).toEqual(['{"pay":10}']); // once
    // A deduplication on the unsigned header would have processed it twice.
    expect(replay['x-carrier-message-id']).not.toBe(original.headers['x-carrier-message-id']);
  });
});

describe('retry strategies', () => {
  test('values by receive count', () => {
    expect([1, 2, 3, 4, 5].map(exponential(2))).toEqual([2, 4, 8, 16, 32]);
    expect([1, 5, 9, 20].map(cappedExponential(2, 300))).toEqual([2, 32, 300, 300]);
    expect([1, 2, 3].map(linear(10))).toEqual([10, 20, 30]);
    expect([1, 2, 3, 4, 5, 6].map(fibonacci(1))).toEqual([1, 1, 2, 3, 5, 8]);
    expect(exponential(2)(100)).toBe(43_200); // never more than SQS allows
  });

  test('jitter adds at most 25 %', () => {
    const jittered = cappedExponential(100, 10_000, { jitter: true });
    for (let i = 0; i < 200; i += 1) {
      const value = jittered(1);
      expect(value).toBeGreaterThanOrEqual(100);
      expect(value).toBeLessThanOrEqual(125);
    }
  });

  test('a bad number or options throw when the strategy is made, naming it, rather than answer Retry-After: NaN', () => {
    expect(() => cappedExponential(2, Number.NaN)).toThrow(/^maxSeconds must be a finite number of seconds, 0 or more; got NaN$/);
    expect(() => linear('10' as unknown as number)).toThrow(/^stepSeconds must be .*; got "10"$/);
    expect(() => exponential(-2)).toThrow(/^baseSeconds must be .*; got -2$/);
    expect(() => fibonacci(Number.POSITIVE_INFINITY)).toThrow(/^baseSeconds must be/);
    expect(() => exponential(2, null as unknown as { jitter: boolean })).toThrow(/^options must be an object such as \{ jitter: true \}/);
    expect(retryAfter({ 'x-carrier-receive-count': '3' }, exponential(0))).toBe('0'); // 0 is a choice, not a mistake
  });

  test('Retry-After from the receive-count header, with the default and a custom prefix', () => {
    expect(receiveCountOf({ 'x-carrier-receive-count': '3' })).toBe(3);
    expect(receiveCountOf({})).toBe(1);
    expect(retryAfter({ 'x-carrier-receive-count': '4' }, exponential(2))).toBe('16');
    expect(retryAfter({ 'x-relay-receive-count': '2' }, linear(5), 'X-Relay-')).toBe('10');
  });
});

test('the example webhook accepts signed deliveries from the relay, rejects unsigned ones, and processes a replay once', async () => {
  let busy = true;
  const handled: string[] = [];
  const server = createExampleWebhook(
    SECRET,
    () => busy,
    new Set(),
    (id) => handled.push(id),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const record = sqsRecord(1, { body: '{"hello":"world"}', attributes: { ApproximateReceiveCount: '3' } });
  try {
    const unsigned = await fetch(url, { method: 'POST', body: record.body });
    expect(unsigned.status).toBe(401);
    const handler = relayFor({ WEBHOOK_URL: url, SIGNING_SECRET: SECRET, PERMANENT_FAILURE: 'retry' }, { sqs: unreachableSqs() });
    const whileBusy = await invoke(handler, { Records: [record] });
    expect(whileBusy.batchItemFailures).toHaveLength(1); // 429 + Retry-After, not a 401
    busy = false;
    const delivered = await invoke(handler, { Records: [record] });
    expect(delivered.batchItemFailures).toEqual([]);
    expect(handled).toEqual([record.messageId]);
    // The same message again (a retry whose answer was lost): acknowledged, not handled twice.
    expect((await invoke(handler, { Records: [record] })).batchItemFailures).toEqual([]);
    // A replay of a signed request with its unsigned id header changed: acknowledged, not handled twice.
    const signed = signedBy(SECRET, record.messageId, record.body);
    const replay = await fetch(url, {
      method: 'POST',
      body: record.body,
      headers: { ...signed, 'X-Carrier-Message-Id': 'another-id', 'Content-Type': 'text/plain' },
    });
    expect(replay.status).toBe(204);
    expect(handled).toEqual([record.messageId]);
  } finally {
    server.close();
  }
});
