/**
 * Building and invoking the relay in tests: the real handler for a given environment, its logs
 * captured as parsed JSON lines, and Lambda's side of an invocation (deleting what the handler
 * acknowledged, as the event source mapping does).
 */
import { DeleteMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { loadConfig } from '../../lambda/config';
import { createRelayHandler, type RelayDependencies, type RelayHandler } from '../../lambda/relay';
import { batchEntryId, sendInBatches } from '../../lambda/sqs-util';
import { createLambdaContext } from '../../local/event-source';

/** A log line the relay wrote, parsed. */
export type LogLine = Record<string, unknown> & { level: string; message: string };

/** A Logger and Metrics whose JSON output is collected in `lines` instead of printed. */
export function capturedTelemetry(): {
  logger: Logger;
  metrics: Metrics;
  lines: LogLine[];
  emf: Record<string, unknown>[];
  metricsWarnings: string[];
} {
  const lines: LogLine[] = [];
  const emf: Record<string, unknown>[] = [];
  /** What Powertools Metrics itself warns about (it logs through its own `logger` option). */
  const metricsWarnings: string[] = [];
  const sink = <T>(text: string, into: T[]): void => {
    for (const line of text.split('\n')) if (line.trim() !== '') into.push(JSON.parse(line) as T);
  };
  const logger = new Logger({ serviceName: 'test', logLevel: 'DEBUG' });
  // Powertools writes through a Console of its own; replacing its methods is the documented seam in tests.
  const toLines = (text: string): void => sink(text, lines);
  const loggerConsole = Object.fromEntries(['log', 'info', 'warn', 'error', 'debug', 'trace'].map((method) => [method, toLines]));
  Object.defineProperty(logger, 'console', { value: loggerConsole });
  const warn = (...messages: unknown[]): void => void metricsWarnings.push(messages.map(String).join(' '));
  const capture = (instance: Metrics): Metrics => {
    Object.defineProperty(instance, 'console', { value: { log: (text: string) => sink(text, emf) } });
    // A single-metric instance (a metric with dimensions of its own) writes its line to the same place.
    const single = instance.singleMetric.bind(instance);
    Object.defineProperty(instance, 'singleMetric', { value: () => capture(single()) });
    return instance;
  };
  const metrics = capture(
    new Metrics({ namespace: 'Test', serviceName: 'test', logger: { debug: () => {}, info: () => {}, warn, error: warn } }),
  );
  return { logger, metrics, lines, emf, metricsWarnings };
}

/**
 * The relay handler configured from `env` (plus test defaults: no jitter), its logs and
 * metrics captured rather than printed unless `dependencies` says otherwise.
 */
export function relayFor(env: Record<string, string>, dependencies: RelayDependencies = {}): RelayHandler {
  const { logger, metrics } = capturedTelemetry();
  return createRelayHandler(loadConfig({ BACKOFF_JITTER: 'false', ...env }), { logger, metrics, ...dependencies });
}

/** Invokes `handler` as Lambda would, with a deadline `timeoutMs` away. */
export function invoke(handler: RelayHandler, event: SQSEvent, timeoutMs = 30_000): Promise<SQSBatchResponse> {
  return handler(event, createLambdaContext(timeoutMs));
}

/**
 * What Lambda does after a partial batch response: delete every record not reported as failed.
 * @throws when SQS deleted not all of them, naming why: a test relies on the queue's state after
 */
export async function acknowledge(sqs: SQSClient, queueUrl: string, event: SQSEvent, response: SQSBatchResponse): Promise<void> {
  const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
  const done = event.Records.filter((record) => !failed.has(record.messageId));
  const notDeleted = await sendInBatches(done, (chunk) =>
    sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((record, index) => ({ Id: batchEntryId(index), ReceiptHandle: record.receiptHandle })),
      }),
    ),
  );
  if (notDeleted.length > 0)
    throw new Error(`acknowledge: ${notDeleted.length} record(s) not deleted, the first: ${notDeleted[0]?.reason}`);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An SQS client whose every call fails at once (a closed port on 127.0.0.1): for tests whose
 * records name no real queue, so that no call ever leaves this machine.
 */
export function unreachableSqs(): SQSClient {
  return new SQSClient({
    endpoint: 'http://127.0.0.1:9',
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 1,
  });
}
