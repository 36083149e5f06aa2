/**
 * What local mode prints never hands out a credential: the demo webhook masks `Authorization`
 * and `webhook-signature`, and a configuration error or a log line shows a URL without its
 * user:password, query string or fragment.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { loadConfig } from '../../lambda/config';
import { ConfigError } from '../../lambda/env';
import { redactUrl } from '../../lambda/url-rules';
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
    // With nothing to hide, as typed: not with the parser's "/" or without a default port.
    ['ftp://x', 'ftp://x'],
    ['HTTPS://Hooks.Example.com:443/in', 'HTTPS://Hooks.Example.com:443/in'],
    // Not URLs: a password with "/", "?", "#" or "@" in it does not end the redaction early.
    ['https://admin:TOP/SECRET@hooks.example.com/x', 'https://…@hooks.example.com/x'],
    ['https://admin:TOP?SECRET@hooks.example.com/x', 'https://…@hooks.example.com/x'],
    ['https://admin:TOP#SECRET@hooks example.com/x', 'https://…@hooks example.com/x'],
    ['https://admin:TOP@SECRET@hooks example.com/x?token=abc123', 'https://…@hooks example.com/x?…'],
    ['https://hooks.example.com/in#token=abc123', 'https://hooks.example.com/in#…'],
  ])('%s is shown as %s', (raw, shown) => {
    expect(redactUrl(raw)).toBe(shown);
  });

  test('property: a secret in the user-info, query or fragment of any text, URL or not, is never shown', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9/?#@:%&=._~+-]{0,12}$/).map((text) => `S3CR3T${text}`);
    const host = fc.constantFrom('hooks.example.com', 'hooks example.com', '10.0.0.5:8443', '[::1]', '', 'h:port');
    const path = fc.stringMatching(/^(\/[A-Za-z0-9._@-]{0,8}){0,3}$/);
    const scheme = fc.constantFrom('https://', 'http://', 'ftp://', '', 'https:', '//');
    fc.assert(
      fc.property(
        scheme,
        secret,
        host,
        path,
        secret,
        fc.constantFrom('user-info', 'query', 'fragment', 'all'),
        (prefix, first, at, rest, second, where) => {
          const userInfo = where === 'user-info' || where === 'all' ? `admin:${first}@` : '';
          const query = where === 'query' || where === 'all' ? `?token=${second}` : '';
          const fragment = where === 'fragment' ? `#${second}` : '';
          const raw = `${prefix}${userInfo}${at}${rest}${query}${fragment}`;
          const shown = redactUrl(raw);
          if (userInfo !== '') expect(shown, raw).not.toContain(first);
          if (query !== '' || fragment !== '') expect(shown, raw).not.toContain(second);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  test('a WEBHOOK_URL that does not parse, with a "/" in its password, is named without it: at start and at synth', () => {
    const raw = 'https://admin:TOP/SECRET@hooks.example.com/x';
    const message = messageOf(() => loadConfig({ WEBHOOK_URL: raw }));
    expect(message).toBe(
      'Invalid configuration: WEBHOOK_URL must be an absolute https:// URL (http:// only for loopback hosts or with ALLOW_INSECURE_HTTP=true); got "https://…@hooks.example.com/x"',
    );
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
