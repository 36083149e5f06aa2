/**
 * Unit tests of the deadline guard (lambda/deadline.ts) and of the SQS gateway and queue
 * directory bound by it (lambda/sqs-gateway.ts, lambda/queues.ts): real SDK clients against a
 * silent endpoint on 127.0.0.1 (accepts, never answers) and the SQS emulator.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, test } from 'vitest';
import { beforeDeadline, Deadline, DeadlineExceededError } from '../../lambda/deadline';
import { QueueDirectory } from '../../lambda/queues';
import { secretsManagerReader } from '../../lambda/secrets';
import { SqsGateway } from '../../lambda/sqs-gateway';
import { emulatorForFile, sqsProxyForFile } from '../support/fixtures';
import { sleep } from '../support/relay';
import { startSilentEndpoint } from '../support/silent-endpoint';

const silent = await startSilentEndpoint();
afterAll(() => silent.close());
const emulator = await emulatorForFile({ keepEnvironment: true });
const proxy = await sqsProxyForFile(emulator);
process.env.AWS_REGION = 'us-east-1';
process.env.AWS_ACCESS_KEY_ID = 'test';
process.env.AWS_SECRET_ACCESS_KEY = 'test';

const clientOf = (endpoint: string): SQSClient =>
  new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    useQueueUrlAsEndpoint: false,
  });

describe('beforeDeadline', () => {
  test('without a signal the call runs as it is', async () => {
    await expect(beforeDeadline('Call', undefined, async (signal) => (signal === undefined ? 'unbounded' : 'bounded'))).resolves.toBe(
      'unbounded',
    );
  });

  test('a signal already aborted fails at once, without starting the call', async () => {
    let started = false;
    const call = async (): Promise<void> => {
      started = true;
    };
    await expect(beforeDeadline('SendMessage', AbortSignal.abort(), call)).rejects.toThrow(DeadlineExceededError);
    expect(started).toBe(false);
  });

  test('a call that never settles is abandoned when the signal aborts, and the call is handed the signal', async () => {
    let handed: AbortSignal | undefined;
    const controller = new AbortController();
    const pending = beforeDeadline('GetQueueUrl', controller.signal, (signal) => {
      handed = signal;
      return new Promise<never>(() => {});
    });
    controller.abort();
    await expect(pending).rejects.toThrow('GetQueueUrl abandoned');
    expect(handed?.aborted).toBe(true);
  });

  test("the call's own answer or error passes through when it comes first", async () => {
    const signal = AbortSignal.timeout(10_000);
    await expect(beforeDeadline('A', signal, async () => 42)).resolves.toBe(42);
    await expect(beforeDeadline('A', signal, () => Promise.reject(new RangeError('refused')))).rejects.toThrow(RangeError);
    await expect(
      beforeDeadline('A', signal, () => {
        throw new TypeError('thrown before any promise');
      }),
    ).rejects.toThrow(TypeError);
  });
});

describe('Deadline', () => {
  test('its signal aborts at the moment given; one already past is aborted from the start', async () => {
    expect(new Deadline(Date.now() - 1).signal.aborted).toBe(true);
    const deadline = new Deadline(Date.now() + 50);
    expect(deadline.signal).toBe(deadline.signal); // made once
    expect(deadline.signal.aborted).toBe(false);
    await sleep(120);
    expect(deadline.signal.aborted).toBe(true);
  });

  test('its signal bounds any number of calls at once without a listener-leak warning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const deadline = new Deadline(Date.now() + 50);
      const calls = Array.from({ length: 1_000 }, () =>
        beforeDeadline('ChangeMessageVisibilityBatch', deadline.signal, () => new Promise<never>(() => {})),
      );
      const settled = await Promise.allSettled(calls);
      expect(settled.every((outcome) => outcome.status === 'rejected')).toBe(true);
      await sleep(10); // warnings are emitted on a later tick
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('SqsGateway bound by a signal', () => {
  test('a call to an endpoint that never answers is abandoned at the signal, and its connection closed', async () => {
    const gateway = new SqsGateway(clientOf(silent.endpoint)).until(AbortSignal.timeout(300));
    const startedAt = Date.now();
    const call = gateway.changeMessageVisibilityBatch({
      QueueUrl: `${silent.endpoint}/000000000000/q`,
      Entries: [{ Id: 'm0', ReceiptHandle: 'h', VisibilityTimeout: 0 }],
    });
    await expect(call).rejects.toThrow('ChangeMessageVisibilityBatch abandoned');
    expect(Date.now() - startedAt).toBeLessThan(2_000);
    await sleep(100);
    expect(silent.connections.count).toBeGreaterThan(0);
    expect(silent.open()).toBe(0); // the SDK dropped the request, not just the caller
  });

  test('views share the client and the queue directory its caches; the unbounded gateway works as before', async () => {
    const base = new SqsGateway(proxy.sqs);
    const directory = new QueueDirectory(base, undefined);
    proxy.reset();
    const bound = directory.until(AbortSignal.timeout(5_000));
    expect(await bound.urlOf(emulator.queue.arn)).toBe(emulator.queue.url);
    expect(await directory.urlOf(emulator.queue.arn)).toBe(emulator.queue.url); // from the shared cache
    expect(proxy.counts().GetQueueUrl).toBe(1);
    expect(await base.getQueueAttribute(emulator.queue.url, 'RedrivePolicy')).toContain(emulator.dlq.arn);
  });

  test('a lookup abandoned at its signal is forgotten: the next one asks SQS again', async () => {
    const directory = new QueueDirectory(new SqsGateway(proxy.sqs), undefined);
    proxy.reset();
    proxy.hung.add('GetQueueUrl');
    try {
      await expect(directory.until(AbortSignal.timeout(200)).urlOf(emulator.queue.arn)).rejects.toThrow('GetQueueUrl abandoned');
    } finally {
      proxy.hung.clear();
      proxy.releaseHung();
    }
    expect(await directory.until(AbortSignal.timeout(5_000)).urlOf(emulator.queue.arn)).toBe(emulator.queue.url);
    expect(proxy.counts().GetQueueUrl).toBe(2);
  });
});

describe("the clients the relay builds carry the SDK's request timeouts", () => {
  test('with no signal at all, a silent SQS or Secrets Manager fails after the request timeout, not the SDK default of 15 minutes', async () => {
    process.env.AWS_ENDPOINT_URL_SQS = silent.endpoint;
    process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = silent.endpoint;
    process.env.AWS_MAX_ATTEMPTS = '1';
    try {
      const startedAt = Date.now();
      const sqs = new SqsGateway().getQueueUrl('q', '000000000000');
      const secret = secretsManagerReader()('some-secret', undefined);
      const [sqsError, secretError] = await Promise.all([
        sqs.then(
          () => undefined,
          (error: unknown) => error,
        ),
        secret.then(
          () => undefined,
          (error: unknown) => error,
        ),
      ]);
      expect(Date.now() - startedAt).toBeLessThan(9_000);
      expect(sqsError).toMatchObject({ name: 'TimeoutError' });
      expect((secretError as { cause?: unknown }).cause).toMatchObject({ name: 'TimeoutError' });
    } finally {
      delete process.env.AWS_ENDPOINT_URL_SQS;
      delete process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER;
      delete process.env.AWS_MAX_ATTEMPTS;
    }
  }, 15_000);
});
