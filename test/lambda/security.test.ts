/**
 * Security end to end (docs/contract.md, "The delivery request"): signatures checked by the independent
 * `standardwebhooks` package, the Authorization header from Secrets Manager, hostile input and
 * hostile webhooks, and secrets kept out of logs.
 */
import { createServer, type Server, validateHeaderName, validateHeaderValue } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { describe, expect, test } from 'vitest';
import { DEAD_LETTER_REASON_ATTRIBUTE } from '../../lambda/request';
import { sqsRecord } from '../../testkit/records';
import { signatureHeadersOf } from '../../testkit/webhook';
import { emulatorForFile, secretsManagerForFile, webhookForFile, webhookForTest } from '../support/fixtures';
import { capturedTelemetry, invoke, relayFor, sleep } from '../support/relay';

const SECRET = `whsec_${Buffer.from('a signing key of thirty-two bytes').toString('base64')}`;
const ROTATED = `whsec_${Buffer.from('the next signing key, after rotation').toString('base64')}`;

/** Longer than the first wait after a failed secret read (secrets.ts), so the next invocation reads again. */
const SECRET_RETRY_WAIT_MS = 2_100;

const emulator = await emulatorForFile();
const webhook = await webhookForFile();
const secretsManager = await secretsManagerForFile();

/** Record `index` of the emulator's queue (its ARN, so SQS calls about it can succeed). */
function syntheticRecord(index: number, body: string, messageAttributes: SQSRecord['messageAttributes'] = {}): SQSRecord {
  return sqsRecord(index, { body, messageAttributes, eventSourceARN: emulator.queue.arn });
}

/** The headers of received request `index` as the `standardwebhooks` verifier wants them. */
function receivedSignatureHeaders(index = 0): Record<string, string> {
  return signatureHeadersOf(webhook.requests[index]);
}

describe('signatures (Standard Webhooks)', () => {
  const bodies = ['{"greeting":"héllo wörld ✓ 日本語 🚀"}', 'binary-looking \u0001\u0002\u00ff\u00fe\ufffd \u0000 end', ''];

  test.each(bodies.map((body) => [body]))('verified by the standardwebhooks package: %j', async (body) => {
    const record = syntheticRecord(1, body);
    await invoke(relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: SECRET }), { Records: [record] });
    const request = webhook.requests[0];
    expect(request?.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect(request?.headers['webhook-id']).toBe(record.messageId);
    expect(() =>
      new Webhook(SECRET).verify(request?.body.toString('utf8') ?? '', receivedSignatureHeaders(), { jsonParse: false }),
    ).not.toThrow();
  });

  test('every request of a batch verifies, its signature over its own id and body at the time it was sent', async () => {
    const records = Array.from({ length: 40 }, (_, index) => syntheticRecord(index, `{"n":${index}}`));
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: SECRET, MAX_CONCURRENCY: '10' }), {
      Records: records,
    });
    expect(response.batchItemFailures).toEqual([]);
    expect(webhook.requests).toHaveLength(40);
    const verifier = new Webhook(SECRET);
    webhook.requests.forEach((request, index) => {
      const record = records.find((candidate) => candidate.messageId === request.headers['webhook-id']);
      expect(request.body.toString()).toBe(record?.body);
      // verify() also refuses a timestamp more than five minutes from now.
      expect(() => verifier.verify(request.body.toString(), receivedSignatureHeaders(index), { jsonParse: false })).not.toThrow();
    });
  });

  test('a tampered body or an old timestamp fails verification', async () => {
    await invoke(relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: SECRET }), { Records: [syntheticRecord(1, '{"amount":10}')] });
    const verifier = new Webhook(SECRET);
    const headers = receivedSignatureHeaders();
    expect(() => verifier.verify('{"amount":10}', headers)).not.toThrow();
    expect(() => verifier.verify('{"amount":10000}', headers)).toThrow(WebhookVerificationError);
    const old = { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 3600) };
    expect(() => verifier.verify('{"amount":10}', old)).toThrow(/too old/);
    expect(() => new Webhook(ROTATED).verify('{"amount":10}', headers)).toThrow(WebhookVerificationError);
  });

  test('the secret comes from Secrets Manager; several secrets sign with each, for rotation', async () => {
    secretsManager.secrets.set('arn:aws:secretsmanager:us-east-1:000000000000:secret:signing', `${SECRET} ${ROTATED}`);
    const handler = relayFor({
      WEBHOOK_URL: webhook.url,
      SIGNING_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:signing',
    });
    const response = await invoke(handler, { Records: [syntheticRecord(1, 'rotating')] });
    expect(response.batchItemFailures).toEqual([]);
    for (const secret of [SECRET, ROTATED])
      expect(() => new Webhook(secret).verify('rotating', receivedSignatureHeaders(), { jsonParse: false })).not.toThrow();
  });

  test('a secret so slow to fetch that too little time is left: the record goes back at once, unsent', async () => {
    const arn = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:slow-signing';
    secretsManager.secrets.set(arn, SECRET);
    secretsManager.delayMs = 1_500;
    const handler = relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET_ARN: arn, DEADLINE_MARGIN_MS: '1000' });
    const record = syntheticRecord(1, 'late');
    // 2.5 s to the deadline, 1 s of it kept back: the fetch alone uses the 1.5 s left for requests.
    const response = await invoke(handler, { Records: [record] }, 2_500);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(webhook.requests).toHaveLength(0);
  });

  test('an invalid SIGNING_SECRET stops the start, without printing the secret', () => {
    expect(() => relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: 'not-a-secret-value' })).toThrow(
      /SIGNING_SECRET must be one or more whsec_/,
    );
    expect(() => relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: 'not-a-secret-value' })).not.toThrow(/not-a-secret-value/);
  });
});

describe('Authorization from Secrets Manager', () => {
  const id = 'webhook-auth';

  test('sent on every request, read once and cached, re-read after the refresh interval', async () => {
    secretsManager.secrets.set(id, 'Bearer first-token');
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL: webhook.url, AUTH_SECRET_ARN: id, SECRETS_REFRESH_SECONDS: '1' }, telemetry);
    const before = secretsManager.calls.count;
    await invoke(handler, { Records: [1, 2, 3].map((n) => syntheticRecord(n, `m${n}`)) });
    expect(webhook.requests.map((request) => request.headers.authorization)).toEqual([
      'Bearer first-token',
      'Bearer first-token',
      'Bearer first-token',
    ]);
    expect(secretsManager.calls.count - before).toBeLessThanOrEqual(3);
    const afterFirst = secretsManager.calls.count;
    await invoke(handler, { Records: [syntheticRecord(4, 'm4')] });
    expect(secretsManager.calls.count).toBe(afterFirst); // still cached
    secretsManager.secrets.set(id, 'Bearer rotated-token');
    await sleep(1_100);
    await invoke(handler, { Records: [syntheticRecord(5, 'm5')] });
    expect(webhook.requests.at(-1)?.headers.authorization).toBe('Bearer rotated-token');
    expect(JSON.stringify(telemetry.lines)).not.toMatch(/first-token|rotated-token/);
  });

  test('Secrets Manager down: with a value read before it is kept; with none the record is retried, not lost', async () => {
    secretsManager.secrets.set('auth-outage', 'Bearer kept-token');
    const handler = relayFor({ WEBHOOK_URL: webhook.url, AUTH_SECRET_ARN: 'auth-outage', SECRETS_REFRESH_SECONDS: '0' });
    await invoke(handler, { Records: [syntheticRecord(1, 'a')] });
    secretsManager.failing = true;
    const kept = await invoke(handler, { Records: [syntheticRecord(2, 'b')] });
    expect(kept.batchItemFailures).toEqual([]);
    expect(webhook.requests.at(-1)?.headers.authorization).toBe('Bearer kept-token');

    const telemetry = capturedTelemetry();
    const cold = relayFor(
      { WEBHOOK_URL: webhook.url, AUTH_SECRET_ARN: 'auth-outage', BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '1' },
      telemetry,
    );
    const sent = webhook.requests.length;
    const response = await invoke(cold, { Records: [syntheticRecord(3, 'c')] });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: syntheticRecord(3, 'c').messageId }]);
    expect(webhook.requests.length).toBe(sent); // nothing went out unauthenticated
    expect(telemetry.lines.find((line) => line.outcome === 'retry')).toMatchObject({
      error: expect.stringContaining('could not read the Authorization secret'),
    });
  });
});

describe('the webhook URL from Secrets Manager (WEBHOOK_URL_SECRET_ARN)', () => {
  test('requests go to the URL the secret holds, token and all; a rotated URL is used after the refresh interval; the token is never logged', async () => {
    const other = await webhookForTest();
    secretsManager.secrets.set('webhook-url', `${webhook.url}?token=first-s3cr3t`);
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL_SECRET_ARN: 'webhook-url', SIGNING_SECRET: SECRET, SECRETS_REFRESH_SECONDS: '1' }, telemetry);
    const response = await invoke(handler, { Records: [1, 2, 3].map((n) => syntheticRecord(n, `m${n}`)) });
    expect(response.batchItemFailures).toEqual([]);
    expect(webhook.requests.map((request) => request.path)).toEqual(Array(3).fill(`${new URL(webhook.url).pathname}?token=first-s3cr3t`));
    expect(webhook.requests[0]?.headers.host).toBe(new URL(webhook.url).host);
    secretsManager.secrets.set('webhook-url', `${other.url}/rotated?token=second-s3cr3t`);
    await sleep(1_100);
    await invoke(handler, { Records: [syntheticRecord(4, 'm4'), syntheticRecord(5, 'm5')] });
    expect(other.requests.map((request) => request.path)).toEqual(
      Array(2).fill(`${new URL(other.url).pathname}/rotated?token=second-s3cr3t`),
    );
    expect(other.requests[0]?.headers.host).toBe(new URL(other.url).host);
    expect(webhook.requests).toHaveLength(3);
    expect(JSON.stringify(telemetry.lines)).not.toMatch(/s3cr3t/);
    expect(telemetry.lines).toContainEqual(
      expect.objectContaining({ message: 'Webhook URL changed in Secrets Manager: sending to the new one', host: new URL(other.url).host }),
    );
  });

  test('a URL the rules refuse: with one before, it is kept and one ERROR says why without the value; with none, records are retried, never sent', async () => {
    secretsManager.secrets.set('url-rotation', webhook.url);
    const telemetry = capturedTelemetry();
    const handler = relayFor({ WEBHOOK_URL_SECRET_ARN: 'url-rotation', SECRETS_REFRESH_SECONDS: '0' }, telemetry);
    await invoke(handler, { Records: [syntheticRecord(1, 'a')] });
    for (const bad of ['http://hooks.example.com/in?token=s3cr3t', 'https://user:s3cr3t@hooks.example.com/', 'not a url s3cr3t']) {
      secretsManager.secrets.set('url-rotation', bad);
      const kept = await invoke(handler, { Records: [syntheticRecord(2, 'b')] });
      expect(kept.batchItemFailures, bad).toEqual([]);
      await sleep(SECRET_RETRY_WAIT_MS);
    }
    expect(webhook.requests).toHaveLength(4);
    const errors = telemetry.lines.filter((line) => line.level === 'ERROR');
    expect(errors.map((line) => line.message)).toContain(
      'The webhook URL secret in Secrets Manager is not valid; still using the last good value',
    );
    expect(JSON.stringify(telemetry.lines)).not.toMatch(/s3cr3t/);

    secretsManager.secrets.set('url-never-good', 'ftp://hooks.example.com/s3cr3t');
    const cold = capturedTelemetry();
    const never = relayFor({ WEBHOOK_URL_SECRET_ARN: 'url-never-good', BACKOFF: 'fixed', BACKOFF_BASE_SECONDS: '1' }, cold);
    const sent = webhook.requests.length;
    // Received now: well within its retry window.
    const record = sqsRecord(3, {
      body: 'c',
      eventSourceARN: emulator.queue.arn,
      attributes: { ApproximateFirstReceiveTimestamp: String(Date.now()) },
    });
    const response = await invoke(never, { Records: [record] });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(webhook.requests).toHaveLength(sent);
    expect(cold.lines.find((line) => line.outcome === 'retry')).toMatchObject({
      error: expect.stringMatching(
        /^Error: the webhook URL secret in Secrets Manager \(url-never-good\) is not valid \(the value is not an absolute https:\/\/ URL/,
      ),
    });
    expect(JSON.stringify(cold.lines)).not.toMatch(/s3cr3t/);
  });

  test.each([
    ['WEBHOOK_URL_SECRET_ARN', '/services/T0ABCDEFG/B0ABCDEFG/p4th-s3cr3t-t0ken?sig=query-s3cr3t'],
    ['WEBHOOK_URL', '/hook?sig=query-s3cr3t&v=2'],
  ] as const)(
    'a webhook answer quoting the URL it was sent to keeps its secrets out of the log and the dead letter (%s)',
    async (variable, path) => {
      // As an Express-style 404 page does: the path it was asked for, query and all.
      webhook.respondWith((request) => ({ status: 404, body: `Cannot POST ${request.path}` }));
      const url = `${webhook.url.replace(/\/hook$/, '')}${path}`;
      secretsManager.secrets.set('echoed-url', url);
      const telemetry = capturedTelemetry();
      const env: Record<string, string> = variable === 'WEBHOOK_URL' ? { WEBHOOK_URL: url } : { WEBHOOK_URL_SECRET_ARN: 'echoed-url' };
      await emulator.send('echoed');
      const response = await invoke(relayFor(env, telemetry), await emulator.receiveEvent());
      expect(response.batchItemFailures).toEqual([]);
      expect(webhook.requests.map((request) => request.path)).toEqual([path]);
      const [deadLetter] = emulator.messages(emulator.dlq);
      const reason = deadLetter?.attributes[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue;
      expect(reason).toContain('Cannot POST');
      for (const text of [reason, JSON.stringify(telemetry.lines)]) expect(text).not.toMatch(/s3cr3t/);
    },
  );

  test('WEBHOOK_URL and WEBHOOK_URL_SECRET_ARN together, or neither, stop the start naming the variable', () => {
    expect(() => relayFor({ WEBHOOK_URL: webhook.url, WEBHOOK_URL_SECRET_ARN: 'webhook-url' })).toThrow(
      'Invalid configuration: WEBHOOK_URL_SECRET_ARN must be unset when WEBHOOK_URL is set (give the URL one way); got "webhook-url"',
    );
    expect(() => relayFor({})).toThrow(
      /^Invalid configuration: WEBHOOK_URL must be an absolute https:\/\/ URL .*, unless WEBHOOK_URL_SECRET_ARN names a Secrets Manager secret holding it; got nothing$/,
    );
  });
});

describe('secrets never reach the logs', () => {
  test('signature, Authorization and secret values are absent from every log line, at DEBUG too', async () => {
    const telemetry = capturedTelemetry();
    webhook.respondWith(() => ({ status: 500 }));
    await invoke(relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: SECRET, AUTH_HEADER: 'Bearer secret-token-123' }, telemetry), {
      Records: [syntheticRecord(1, 'x')],
    });
    const logged = JSON.stringify(telemetry.lines);
    expect(telemetry.lines.length).toBeGreaterThan(0);
    expect(logged).not.toContain('secret-token-123');
    expect(logged).not.toContain(SECRET.slice(6));
    expect(logged).not.toContain(String(webhook.requests[0]?.headers['webhook-signature']).slice(3));
  });

  test.each([
    ['AUTH_HEADER', { AUTH_HEADER: 'Bearer qu0ted-t0ken' }],
    ['AUTH_SECRET_ARN', { AUTH_SECRET_ARN: 'quoted-authorization' }],
  ] as const)(
    'a webhook answer quoting the Authorization and signature it was sent keeps them out of the log and the dead letter (%s)',
    async (_variable, auth) => {
      secretsManager.secrets.set('quoted-authorization', 'Bearer qu0ted-t0ken');
      // As a debugging endpoint does: what it was sent, echoed in its refusal.
      webhook.respondWith((request) => ({
        status: 401,
        body: `rejected: authorization=${request.headers.authorization} signature=${request.headers['webhook-signature']}`,
      }));
      const telemetry = capturedTelemetry();
      await emulator.send('quoted');
      const response = await invoke(
        relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: `${SECRET} ${ROTATED}`, ...auth }, telemetry),
        await emulator.receiveEvent(),
      );
      expect(response.batchItemFailures).toEqual([]);
      const signatures = String(webhook.requests[0]?.headers['webhook-signature']).split(' ');
      expect(signatures).toHaveLength(2);
      const [deadLetter] = emulator.messages(emulator.dlq);
      const reason = deadLetter?.attributes[DEAD_LETTER_REASON_ATTRIBUTE]?.StringValue;
      expect(reason).toContain('rejected: authorization=');
      for (const text of [reason, JSON.stringify(telemetry.lines)]) {
        expect(text).not.toContain('qu0ted-t0ken');
        for (const signature of signatures) expect(text).not.toContain(signature.slice('v1,'.length));
      }
    },
  );
});

describe('hostile webhooks', () => {
  test('a 1 GB streamed response costs neither memory nor time: the status is used and the socket dropped', async () => {
    let written = 0;
    let closed = false;
    const flood: Server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Length': String(1024 ** 3) });
      const chunk = Buffer.alloc(1024 * 1024, 'x');
      const pump = (): void => {
        while (written < 1024 ** 3 && !closed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => {
        closed = true;
      });
      pump();
    });
    await new Promise<void>((resolve) => flood.listen(0, '127.0.0.1', resolve));
    const { port } = flood.address() as AddressInfo;
    try {
      const heapBefore = process.memoryUsage().heapUsed;
      const response = await invoke(relayFor({ WEBHOOK_URL: `http://127.0.0.1:${port}/flood` }), {
        Records: [syntheticRecord(1, 'flood')],
      });
      expect(response.batchItemFailures).toEqual([]);
      await sleep(50);
      expect(closed).toBe(true);
      expect(written).toBeLessThan(64 * 1024 ** 2); // the relay stopped reading long before 1 GB
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 ** 2);
    } finally {
      flood.closeAllConnections();
      flood.close();
    }
  });

  test('a redirect to another host is not followed: the other host gets nothing, the message is dead-lettered', async () => {
    const other = await webhookForTest();
    webhook.respondWith(() => ({ status: 307, headers: { Location: other.url } }));
    await emulator.send('redirected');
    const event = await emulator.receiveEvent();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url }), event);
    expect(other.requests).toHaveLength(0);
    expect(response.batchItemFailures).toEqual([]);
    expect(emulator.counts(emulator.dlq).ready).toBe(1);
  });
});

describe("the producer's headers together", () => {
  test('ten legal 4 KiB attributes against a Node.js webhook with its default 16 KiB header limit: delivered, the largest left out with a WARN each, nothing dead-lettered', async () => {
    const attributes = Object.fromEntries(
      Array.from({ length: 10 }, (_, index) => [`big${index}`, { DataType: 'String', StringValue: String(index).repeat(4_096) }]),
    );
    await emulator.send('{"order":42}', { attributes: { ...attributes } });
    const event = await emulator.receiveEvent(1);
    const telemetry = capturedTelemetry();
    const response = await invoke(relayFor({ WEBHOOK_URL: webhook.url, SIGNING_SECRET: SECRET }, telemetry), event);
    expect(response.batchItemFailures).toEqual([]);
    expect(webhook.requests).toHaveLength(1);
    expect(emulator.messages(emulator.dlq)).toEqual([]);
    const sent = Object.keys(webhook.requests[0]?.headers ?? {}).filter((name) => name.startsWith('x-carrier-attr-'));
    expect(sent).toHaveLength(1);
    const warned = telemetry.lines.filter((line) => line.message === 'Message attribute not sent as a header');
    expect(warned.map((line) => line.attribute).sort()).toEqual(
      Object.keys(attributes).filter((name) => `x-carrier-attr-${name}` !== sent[0]),
    );
    expect(warned[0]?.reason).toMatch(/attribute headers together are over 8192 bytes/);
    // The request still verifies: nothing the signature covers was touched.
    const request = webhook.requests[0];
    expect(() =>
      new Webhook(SECRET).verify(request?.body.toString() ?? '', receivedSignatureHeaders(), { jsonParse: false }),
    ).not.toThrow();
  });
});

describe('hostile input (property)', () => {
  test('for arbitrary attributes and bodies: every header sent is legal, bodies arrive byte for byte, no record is lost', async () => {
    const attributeName = fc
      .stringMatching(/^[A-Za-z0-9_.-]{1,40}$/)
      .filter((name) => !name.startsWith('.') && !name.endsWith('.') && !name.includes('..'));
    const attributeValue = fc.oneof(
      fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
      fc.constantFrom('a\r\nX-Evil: 1', '\u0000', ' padded ', 'ok', 'x'.repeat(5000)),
    );
    const handler = relayFor({ WEBHOOK_URL: webhook.url, MAX_CONCURRENCY: '4' });
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            body: fc.string({ unit: 'binary', maxLength: 200 }),
            attributes: fc.dictionary(
              attributeName,
              fc.record({ dataType: fc.constantFrom('String', 'Number', 'String.custom', 'Binary'), value: attributeValue }),
              { maxKeys: 10 },
            ),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        async (messages) => {
          webhook.requests.length = 0;
          const records = messages.map((message, index) =>
            syntheticRecord(
              index,
              message.body,
              Object.fromEntries(
                Object.entries(message.attributes).map(([name, attribute]) => [
                  name,
                  attribute.dataType === 'Binary'
                    ? { dataType: 'Binary', binaryValue: Buffer.from(attribute.value).toString('base64') }
                    : { dataType: attribute.dataType, stringValue: attribute.value },
                ]),
              ),
            ),
          );
          const response = await invoke(handler, { Records: records });
          expect(response.batchItemFailures).toEqual([]);
          expect(webhook.requests).toHaveLength(records.length);
          for (const request of webhook.requests) {
            const record = records.find((candidate) => candidate.messageId === request.headers['x-carrier-message-id']);
            expect(request.body.equals(Buffer.from(record?.body ?? '\u0000', 'utf8'))).toBe(true);
            for (const [name, value] of Object.entries(request.headers)) {
              expect(() => validateHeaderName(name)).not.toThrow();
              expect(() => validateHeaderValue(name, String(value))).not.toThrow();
              expect(String(value)).not.toMatch(/[\r\n\0]/);
            }
            expect(request.headers['x-evil']).toBeUndefined();
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
