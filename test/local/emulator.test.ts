/**
 * The sandbox's emulator answers only requests addressed to this machine by name: a page in a
 * browser that rebinds its own domain to 127.0.0.1, or anything else reaching the port under a
 * foreign `Host`, can neither inject messages (SQS or SNS) nor read them, while every client
 * pointed at localhost, 127.0.0.1, [::1] or fauxqs's `*.localhost` names works as before.
 */
import { request } from 'node:http';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EMULATOR_CREDENTIALS } from '../../local/existing-queue';
import { type EmbeddedSqs, FOREIGN_HOST_REFUSAL, isLocalHostHeader, startEmbeddedSqs } from '../../local/sandbox/emulator';

let emulator: EmbeddedSqs;
let sqs: SQSClient;
beforeAll(async () => {
  emulator = await startEmbeddedSqs({ port: 0, queueName: 'host-check', maxReceiveCount: 5, visibilityTimeoutSeconds: 180 });
  sqs = new SQSClient({ endpoint: emulator.endpoint, region: emulator.region, credentials: EMULATOR_CREDENTIALS });
});
afterAll(async () => {
  sqs.destroy();
  await emulator.stop();
});

/** One raw request to the emulator with the `Host` header given (undefined: none at all, as HTTP/1.0 allows). */
function send(
  host: string | undefined,
  options: { method?: string; path?: string; contentType?: string; target?: string; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (host !== undefined) headers.Host = host;
    if (options.contentType !== undefined) headers['Content-Type'] = options.contentType;
    if (options.target !== undefined) headers['X-Amz-Target'] = options.target;
    const req = request(
      { host: '127.0.0.1', port: emulator.port, method: options.method ?? 'POST', path: options.path ?? '/', headers, setHost: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** An SQS `SendMessage` in the JSON protocol, as the SDK and AWS CLI v2 send it. */
const sqsSend = (host: string | undefined) =>
  send(host, {
    contentType: 'application/x-amz-json-1.0',
    target: 'AmazonSQS.SendMessage',
    body: JSON.stringify({ QueueUrl: emulator.queue.url, MessageBody: '{"injected":true}' }),
  });

async function messagesInQueue(): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: emulator.queue.url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages) + Number(Attributes?.ApproximateNumberOfMessagesNotVisible);
}

describe('a request addressed to another host', () => {
  test.each([
    'attacker.example.com',
    `attacker.example.com:${4566}`,
    '127.0.0.1.nip.io',
    'localhost.attacker.example',
    '192.168.1.10',
    '[::2]',
    '',
  ])('Host %j: SendMessage is refused with 403 and nothing is queued', async (host) => {
    const before = await messagesInQueue();
    const answer = await sqsSend(host);
    expect(answer).toEqual({ status: 403, body: FOREIGN_HOST_REFUSAL });
    expect(await messagesInQueue()).toBe(before);
  });

  test('no Host at all: refused (Node.js itself answers 400) and nothing is queued', async () => {
    const before = await messagesInQueue();
    expect((await sqsSend(undefined)).status).toBe(400);
    expect(await messagesInQueue()).toBe(before);
  });

  test('SNS (the query protocol) and the inspection endpoints are refused too', async () => {
    const foreign = 'rebound.attacker.example';
    const sns = await send(foreign, {
      contentType: 'application/x-www-form-urlencoded',
      body: new URLSearchParams({ Action: 'CreateTopic', Name: 'injected', Version: '2010-03-31' }).toString(),
    });
    expect(sns.status).toBe(403);
    for (const path of ['/_fauxqs/queues', `/_fauxqs/queues/${emulator.queue.name}`, '/health']) {
      expect((await send(foreign, { method: 'GET', path })).status, path).toBe(403);
    }
    const s3 = await send(foreign, { method: 'PUT', path: '/bucket' });
    expect(s3.status).toBe(403);
    // The same SNS call addressed to this machine is answered.
    const local = await send(`127.0.0.1:${emulator.port}`, {
      contentType: 'application/x-www-form-urlencoded',
      body: new URLSearchParams({ Action: 'ListTopics', Version: '2010-03-31' }).toString(),
    });
    expect(local.status).toBe(200);
  });
});

describe('a request addressed to this machine', () => {
  test.each(['127.0.0.1', '127.0.0.2', 'localhost', 'LOCALHOST', 'localhost.', '[::1]', 'sqs.us-east-1.localhost', 's3.localhost'])(
    'Host %s (with the port): SendMessage is answered',
    async (name) => {
      const before = await messagesInQueue();
      const answer = await sqsSend(`${name}:${emulator.port}`);
      expect(answer.status, answer.body).toBe(200);
      expect(await messagesInQueue()).toBe(before + 1);
    },
  );

  test('the SDK pointed at the printed endpoint and queue URL works as before', async () => {
    const before = await messagesInQueue();
    await sqs.send(new SendMessageCommand({ QueueUrl: emulator.queue.url, MessageBody: 'from the SDK' }));
    expect(await messagesInQueue()).toBe(before + 1);
  });
});

test('isLocalHostHeader: names of this machine with any port, nothing else', () => {
  for (const host of ['localhost', 'localhost:1', 'a.b.localhost:4566', '127.255.0.1:80', '[::1]:4566', '[::1]'])
    expect(isLocalHostHeader(host), host).toBe(true);
  for (const host of [
    '',
    ' ',
    'localhost:',
    'localhost:99999x',
    'evil.com',
    'localhost@evil.com',
    '[::ffff:127.0.0.1]',
    '127.0.0.1:80:80',
    'a:b:c',
  ])
    expect(isLocalHostHeader(host), host).toBe(false);
});
