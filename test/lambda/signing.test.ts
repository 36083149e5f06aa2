/**
 * Unit tests of lambda/signing.ts's GroupedSigner: deliveries asked for in one event-loop turn
 * are signed together, each exactly as signDelivery would, and one failure stays its own.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { describe, expect, test } from 'vitest';
import { GroupedSigner, parseSigningKeys, signDelivery } from '../../lambda/signing';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const KEYS = parseSigningKeys(SECRET);

describe('GroupedSigner', () => {
  test('deliveries of one turn share a timestamp, and each signature is signDelivery’s and verifies', async () => {
    const signer = new GroupedSigner();
    const bodies = Array.from({ length: 25 }, (_, index) => Buffer.from(`{"n":${index}}`));
    const before = Math.floor(Date.now() / 1000);
    const signed = await Promise.all(bodies.map((body, index) => signer.sign(KEYS, `msg-${index}`, body)));
    const after = Math.floor(Date.now() / 1000);
    const timestamps = new Set(signed.map((headers) => headers['webhook-timestamp']));
    expect(timestamps.size).toBe(1);
    const timestamp = Number([...timestamps][0]);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(after);
    signed.forEach((headers, index) => {
      expect(headers).toEqual(signDelivery(KEYS, `msg-${index}`, timestamp, bodies[index] as Buffer));
      expect(() => new Webhook(SECRET).verify(bodies[index]?.toString() ?? '', { ...headers }, { jsonParse: false })).not.toThrow();
    });
  });

  test('each turn is a group of its own: nothing waits for a later one', async () => {
    const signer = new GroupedSigner();
    const first = await signer.sign(KEYS, 'a', Buffer.from('1'));
    await nextTurn();
    const second = await signer.sign(KEYS, 'b', Buffer.from('2'));
    expect(first['webhook-id']).toBe('a');
    expect(second['webhook-id']).toBe('b');
  });

  test('a delivery that cannot be signed fails alone; the rest of its group is signed', async () => {
    const signer = new GroupedSigner();
    const results = await Promise.allSettled([
      signer.sign(KEYS, 'good-1', Buffer.from('x')),
      signer.sign([42 as unknown as Buffer], 'bad', Buffer.from('y')),
      signer.sign(KEYS, 'good-2', Buffer.from('z')),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });
});
