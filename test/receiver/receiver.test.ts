/**
 * The webhook owner's kit: signatures produced by the independent `standardwebhooks` package
 * verify, tampering and stale timestamps do not; the retry strategies' values; and the example
 * webhook receiving from the real relay.
 */
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { describe, expect, test } from 'vitest';
import { cappedExponential, exponential, fibonacci, linear, receiveCountOf, retryAfter, verifySignature } from '../../receiver/index';
import { createExampleWebhook } from '../../examples/webhook';
import { sqsRecord } from '../../testkit/records';
import { invoke, relayFor, unreachableSqs } from '../support/relay';

const SECRET = `whsec_${Buffer.from('receiver test key 0123456789abcdef').toString('base64')}`;
const OTHER = `whsec_${Buffer.from('someone else key').toString('base64')}`;

function signedBy(secret: string, id: string, body: string, at = new Date()): Record<string, string> {
  const signature = new Webhook(secret).sign(id, at, body);
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
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

  test('Retry-After from the receive-count header, with the default and a custom prefix', () => {
    expect(receiveCountOf({ 'x-carrier-receive-count': '3' })).toBe(3);
    expect(receiveCountOf({})).toBe(1);
    expect(retryAfter({ 'x-carrier-receive-count': '4' }, exponential(2))).toBe('16');
    expect(retryAfter({ 'x-relay-receive-count': '2' }, linear(5), 'X-Relay-')).toBe('10');
  });
});

test('the example webhook accepts signed deliveries from the relay, and rejects unsigned ones', async () => {
  let busy = true;
  const server = createExampleWebhook(SECRET, () => busy);
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
  } finally {
    server.close();
  }
});
