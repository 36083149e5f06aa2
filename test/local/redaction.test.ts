/**
 * What local mode prints never hands out a credential: the demo webhook masks `Authorization`
 * and `webhook-signature`, and a configuration error or a log line shows a URL without its
 * user:password, query string or fragment.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig, redactUrl } from '../../lambda/config';
import { sqsStartupError } from '../../local/errors';
import { maskSecret, printableHeaders } from '../../local/sandbox/sandbox';
import { loadLocalSettings } from '../../local/settings';
import { localRelayForTest } from '../support/fixtures';

const TOKEN = 'Bearer sk_live_0123456789abcdefSECRET';
const SIGNING_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function messageOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('URLs in messages', () => {
  test.each([
    ['https://user:hunter2@hooks.example.com/in?token=abc123#frag', 'https://…@hooks.example.com/in?…'],
    ['http://example.com/a@b?key=abc123', 'http://example.com/a@b?…'],
    ['user:hunter2@example.com/in', '…@example.com/in'],
    ['https://hooks.example.com/in', 'https://hooks.example.com/in'],
  ])('%s is shown as %s', (raw, shown) => {
    expect(redactUrl(raw)).toBe(shown);
  });

  test('a refused WEBHOOK_URL, QUEUE_URL or WEBHOOK_HEALTH_CHECK_URL is named without its query string or credentials', () => {
    const refused = [
      messageOf(() => loadConfig({ WEBHOOK_URL: 'http://hooks.example.com/in?token=abc123' })),
      messageOf(() => loadConfig({ WEBHOOK_URL: 'ftp://user:hunter2@hooks.example.com/in?token=abc123' })),
      messageOf(() => loadConfig({ WEBHOOK_URL: 'https://user:hunter2@hooks.example.com/in?token=abc123' })),
      messageOf(() => loadLocalSettings({ QUEUE_URL: 'https://user:hunter2@sqs.example.com/?token=abc123' }, false)),
      messageOf(() => loadLocalSettings({ WEBHOOK_HEALTH_CHECK_URL: 'ftp://user:hunter2@example.com/health?token=abc123' }, false)),
    ];
    for (const message of refused) {
      expect(message).toMatch(/^Invalid configuration: (WEBHOOK_URL|QUEUE_URL|WEBHOOK_HEALTH_CHECK_URL) must be/);
      expect(message).not.toContain('abc123');
      expect(message).not.toContain('hunter2');
    }
    expect(refused[0]).toContain('"http://hooks.example.com/in?…"');
  });

  test('a start-up failure names the queue without its query string', () => {
    const error = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(sqsStartupError(error, 'reading', 'http://127.0.0.1:1/0/q?X-Amz-Security-Token=abc123').message).toBe(
      'cannot reach SQS at http://127.0.0.1:1/0/q?… (ECONNREFUSED) while reading; is the endpoint right and running?',
    );
  });
});

describe('the demo webhook', () => {
  test('masks credentials to a scheme and a few characters', () => {
    expect(maskSecret(TOKEN)).toBe('Bearer sk_l…');
    expect(maskSecret('v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=')).toBe('v1,K5oZ…');
    expect(maskSecret('abc')).toBe('…');
    expect(
      printableHeaders([
        ['Authorization', TOKEN],
        ['webhook-signature', 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='],
        ['Content-Type', 'application/json'],
      ]),
    ).toEqual([
      ['Authorization', 'Bearer sk_l…'],
      ['webhook-signature', 'v1,K5oZ…'],
      ['Content-Type', 'application/json'],
    ]);
  });

  test('prints a signed, authorized request without the Authorization value or the signature', async () => {
    const { relay, ready, sqs } = await localRelayForTest({ LOG_FORMAT: 'json', AUTH_HEADER: TOKEN, SIGNING_SECRET });
    await sqs.send(new SendMessageCommand({ QueueUrl: ready.queueUrl, MessageBody: '{"hello":"world"}' }));
    await relay.waitForOutput(/"message":"Demo webhook received a request"/);
    const line = relay.jsonLines().find((entry) => entry.message === 'Demo webhook received a request') as {
      headers: Record<string, string>;
    };
    expect(line.headers.Authorization).toBe('Bearer sk_l…');
    expect(line.headers['webhook-signature']).toMatch(/^v1,.{1,4}…$/);
    expect(relay.output()).not.toContain('0123456789abcdefSECRET');
    // The signature is 44 base64 characters; no run of 8 of them after "v1," is printed.
    expect(relay.output()).not.toMatch(/v1,[A-Za-z0-9+/]{8}/);
  }, 30_000);
});
