/**
 * A client that speaks SQS's older query protocol (AWS CLI before 2.13.34, Debian 12's 2.9, older
 * SDKs) against the embedded emulator: it is told, in the error its CLI prints, which versions
 * work — not "Unknown action: SendMessage" — and nothing is sent. The banner says so beforehand.
 */
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AWS_CLI_VERSION_NOTE, formatBanner, type ReadyInfo } from '../../local/banner';
import { EMULATOR_CREDENTIALS } from '../../local/existing-queue';
import { type EmbeddedSqs, QUERY_PROTOCOL_REFUSAL, startEmbeddedSqs } from '../../local/sandbox/emulator';
import { PLAIN } from '../../local/log';

let emulator: EmbeddedSqs;
let sqs: SQSClient;
beforeAll(async () => {
  emulator = await startEmbeddedSqs({ port: 0, queueName: 'query-protocol', maxReceiveCount: 5, visibilityTimeoutSeconds: 180 });
  sqs = new SQSClient({ endpoint: emulator.endpoint, region: emulator.region, credentials: EMULATOR_CREDENTIALS });
});
afterAll(async () => {
  sqs.destroy();
  await emulator.stop();
});

async function visibleMessages(): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: emulator.queue.url, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages);
}

/** What AWS CLI 2.9 sends for `aws sqs send-message`: a form-encoded POST. */
async function querySend(path: string): Promise<{ status: number; body: string }> {
  const form = new URLSearchParams({
    Action: 'SendMessage',
    Version: '2012-11-05',
    QueueUrl: emulator.queue.url,
    MessageBody: '{"hello":"world"}',
  });
  const response = await fetch(`${emulator.endpoint}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body: form.toString(),
  });
  return { status: response.status, body: await response.text() };
}

describe('the query protocol', () => {
  test.each(['/', '/000000000000/query-protocol'])(
    'Action=SendMessage to %s: a 400 naming the versions that work, and nothing sent',
    async (path) => {
      const { status, body } = await querySend(path);
      expect(status).toBe(400);
      expect(body).toContain('<Code>UnsupportedProtocol</Code>');
      expect(body).toContain('AWS CLI 2.13.34 or later');
      expect(body).toContain('(SendMessage)');
      expect(body).not.toContain('Unknown action');
      expect(await visibleMessages()).toBe(0);
    },
  );

  test('the refusal is one line', () => {
    expect(QUERY_PROTOCOL_REFUSAL).not.toContain('\n');
  });

  test('the JSON protocol still works, and so do form-encoded requests that are not SQS actions (fauxqs SNS)', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: emulator.queue.url, MessageBody: 'json protocol' }));
    expect(await visibleMessages()).toBe(1);
    const response = await fetch(`${emulator.endpoint}/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ Action: 'ListTopics', Version: '2010-03-31' }).toString(),
    });
    expect(response.status).toBe(200);
  });

  test('the banner says which AWS CLI works, under its command', () => {
    const info: ReadyInfo = {
      mode: 'embedded',
      sqsEndpoint: emulator.endpoint,
      emulatorCredentials: true,
      region: emulator.region,
      queueUrl: emulator.queue.url,
      queueArn: emulator.queue.arn,
      dlqUrl: emulator.dlq.url,
      maxReceiveCount: 5,
      retryWindowSeconds: 0,
      webhookUrl: 'http://127.0.0.1:1/webhook',
      demoWebhook: true,
      fifo: false,
      pollers: 1,
      batchSize: 10,
      functionTimeoutSeconds: 30,
      visibilityTimeoutSeconds: 180,
    };
    const lines = formatBanner(info, PLAIN).split('\n');
    const cli = lines.findIndex((line) => line.includes('aws sqs send-message'));
    expect(lines[cli + 1]).toBe(`  ${AWS_CLI_VERSION_NOTE}`);
    expect(AWS_CLI_VERSION_NOTE).toContain('2.13.34');
  });
});
