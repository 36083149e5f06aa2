/**
 * Daemon mode (`QUEUE_URL`): relaying from a queue that already exists, on real SQS or another
 * emulator, with the normal AWS credential chain. What Lambda's event source mapping knows from
 * its configuration is asked of SQS instead: the queue's ARN (the records' `eventSourceARN`), its
 * visibility timeout, and its redrive policy (the DLQ and maxReceiveCount).
 */
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClientConfig, type SQSClient } from '@aws-sdk/client-sqs';
import { DEFAULT_VISIBILITY_SECONDS } from '../lambda/aws-limits';
import { expectedUrl } from '../lambda/config';
import { ConfigError, type Env, read, readSetting } from '../lambda/env';
import { FUNCTION_SETTINGS } from '../lambda/settings';
import { errorText, parseQueueArn, regionOfQueueHost } from '../lambda/sqs-util';
import { withAnswerTimeout } from './answer-timeout';
import { checkHttpsOrLoopback, isLoopbackHost, redactUrl } from '../lambda/url-rules';
import { StartupStopped, sqsStartupError } from './errors';

/** How the runner's SQS client (and the handler's, through the same environment) reaches SQS. */
export interface SqsConnection {
  /** An explicit endpoint, or `undefined` for the SDK's regional default. */
  readonly endpoint: string | undefined;
  readonly region: string;
  /** Fixed credentials, or `undefined` for the SDK's default chain. */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | undefined;
}

/** What the runner learns about an existing queue. */
export interface ExistingQueue {
  readonly queueArn: string;
  readonly visibilityTimeoutSeconds: number;
  readonly fifo: boolean;
  /** From the redrive policy; `undefined` when the queue has none (or its DLQ could not be found). */
  readonly dlqUrl: string | undefined;
  readonly maxReceiveCount: number | undefined;
  /** Why the DLQ is unknown, when it is. */
  readonly dlqProblem: string | undefined;
}

/** Credentials for an SQS emulator: any are accepted, and these are what the runner, its hints and daemon mode on loopback use. */
export const EMULATOR_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' } as const;

/** True for the hosts of AWS's own SQS endpoints (the SDK then picks the regional https endpoint itself). */
export function isAwsHost(hostname: string): boolean {
  return /(^|\.)amazonaws\.com(\.cn)?$/.test(hostname) || /(^|\.)api\.aws$/.test(hostname);
}

/**
 * A host an SQS emulator on this machine answers at (and the only ones the embedded emulator answers
 * requests addressed to): loopback, or `*.localhost`, which fauxqs and
 * LocalStack put in their queue URLs (credentials only, never a reason to allow plain http to a webhook).
 */
export function isEmulatorHost(hostname: string): boolean {
  return isLoopbackHost(hostname) || hostname.toLowerCase().endsWith('.localhost');
}

/**
 * Where an emulator whose queue URL this is answers. A `*.localhost` host (fauxqs's own URLs,
 * `sqs.<region>.localhost`) is loopback by RFC 6761, but many resolvers (glibc without
 * systemd-resolved) do not know it: the loopback address itself, at the same port.
 */
export function emulatorOrigin(url: URL): string {
  return url.hostname.toLowerCase().endsWith('.localhost')
    ? `${url.protocol}//127.0.0.1${url.port === '' ? '' : `:${url.port}`}`
    : url.origin;
}

/**
 * Where the SQS calls for the queue at `queueUrl` go: the endpoint in `AWS_ENDPOINT_URL_SQS` (or
 * `AWS_ENDPOINT_URL`), else a queue URL that is not on AWS (ElasticMQ, LocalStack, fauxqs…), which
 * is its own endpoint (`*.localhost` on 127.0.0.1), else AWS's (`undefined`). The calls are
 * SigV4-signed, with session tokens: the webhook URL's rule holds for where they go (https, a
 * loopback host, or `ALLOW_INSECURE_HTTP`).
 * @param queueUrlName how the queue URL was given (`QUEUE_URL`, `--queue-url`), for the error
 * @throws {ConfigError} naming the variable (or option) of an endpoint the rule refuses
 */
export function sqsEndpointFor(queueUrl: string, env: Env, queueUrlName = 'QUEUE_URL'): string | undefined {
  const url = new URL(queueUrl);
  const variable = ['AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL'].find((name) => read(env, name) !== undefined);
  const [name, endpoint] =
    variable === undefined
      ? [queueUrlName, isAwsHost(url.hostname) ? undefined : emulatorOrigin(url)]
      : [variable, read(env, variable) as string];
  if (endpoint === undefined) return undefined;
  const checked = checkHttpsOrLoopback(endpoint, readSetting(env, FUNCTION_SETTINGS.ALLOW_INSECURE_HTTP));
  if (typeof checked === 'string') {
    throw new ConfigError(
      name,
      `${expectedUrl(checked)} (signed SQS calls go there; for an emulator on this machine, use 127.0.0.1 or localhost, e.g. AWS_ENDPOINT_URL_SQS=http://127.0.0.1:4566)`,
      redactUrl(endpoint),
    );
  }
  return endpoint;
}

/**
 * How to reach the queue at `queueUrl`: the endpoint of {@link sqsEndpointFor}, its rule
 * included, and the region. A loopback endpoint with no credentials configured gets dummy ones,
 * as emulators accept any.
 * @param queueUrlName how the queue URL was given (`QUEUE_URL`, `--queue-url`), for the error
 * @throws {ConfigError} for an endpoint the rule refuses, or a region that cannot be known
 */
export function connectionFor(queueUrl: string, env: Env, queueUrlName = 'QUEUE_URL'): SqsConnection {
  const url = new URL(queueUrl);
  const endpoint = sqsEndpointFor(queueUrl, env, queueUrlName);
  const local = endpoint !== undefined && isEmulatorHost(new URL(endpoint).hostname);
  const region =
    env.AWS_REGION || env.AWS_DEFAULT_REGION || regionOfQueueHost(url.hostname) || (endpoint === undefined ? undefined : 'us-east-1');
  if (region === undefined) throw new ConfigError('AWS_REGION', "the queue's region (it could not be read from QUEUE_URL)", undefined);
  const configured = Boolean(
    env.AWS_ACCESS_KEY_ID ||
      env.AWS_PROFILE ||
      env.AWS_WEB_IDENTITY_TOKEN_FILE ||
      env.AWS_CONTAINER_CREDENTIALS_FULL_URI ||
      env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI,
  );
  return { endpoint, region, credentials: local && !configured ? EMULATOR_CREDENTIALS : undefined };
}

/**
 * The SDK client configuration for a connection. The endpoint is passed explicitly: the SDK
 * then sends every call there, instead of to the host of a `QueueUrl` (which for some emulators,
 * `sqs.<region>.localhost`, does not resolve).
 */
export function clientConfig(connection: SqsConnection): SQSClientConfig {
  return {
    region: connection.region,
    ...(connection.endpoint === undefined ? {} : { endpoint: connection.endpoint }),
    ...(connection.credentials === undefined ? {} : { credentials: connection.credentials }),
  };
}

/**
 * How long each of the start's SQS calls may take: the SDK waits for ever by default, and an
 * endpoint that accepts and never answers must fail the start in one line, not hang it (a stop
 * during the start waits for it).
 */
export const STARTUP_CALL_TIMEOUT_MS = 10_000;

/**
 * Reads the queue's ARN, visibility timeout and redrive policy, and finds its DLQ's URL.
 * @param timeoutMs how long each call may take ({@link STARTUP_CALL_TIMEOUT_MS})
 * @param stop gives the calls up at once (a stop asked for during the start)
 * @throws {StartupError} when SQS refuses, cannot be reached or does not answer in time
 * @throws {StartupStopped} when `stop` aborted a call
 */
export async function describeExistingQueue(
  sqs: SQSClient,
  queueUrl: string,
  timeoutMs = STARTUP_CALL_TIMEOUT_MS,
  stop?: AbortSignal,
): Promise<ExistingQueue> {
  let attributes: Record<string, string>;
  try {
    const command = new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['QueueArn', 'VisibilityTimeout', 'RedrivePolicy', 'FifoQueue'],
    });
    const { Attributes } = await withAnswerTimeout(timeoutMs, (abortSignal) => sqs.send(command, { abortSignal }), stop);
    attributes = Attributes ?? {};
  } catch (error) {
    if (stop?.aborted === true) throw new StartupStopped();
    throw sqsStartupError(error, "reading the queue's attributes", queueUrl);
  }
  const queueArn = attributes.QueueArn;
  if (queueArn === undefined)
    throw sqsStartupError(new Error('GetQueueAttributes returned no QueueArn'), "reading the queue's attributes", queueUrl);
  const base = {
    queueArn,
    visibilityTimeoutSeconds: Number(attributes.VisibilityTimeout ?? DEFAULT_VISIBILITY_SECONDS),
    fifo: attributes.FifoQueue === 'true',
  };
  const policyText = attributes.RedrivePolicy;
  if (policyText === undefined) {
    return {
      ...base,
      dlqUrl: undefined,
      maxReceiveCount: undefined,
      dlqProblem: 'the queue has no redrive policy, so failing messages are retried forever',
    };
  }
  let policy: { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
  try {
    policy = JSON.parse(policyText) as typeof policy;
  } catch {
    return { ...base, dlqUrl: undefined, maxReceiveCount: undefined, dlqProblem: `the redrive policy is not JSON: ${policyText}` };
  }
  const count = Number(policy.maxReceiveCount);
  const maxReceiveCount = Number.isSafeInteger(count) && count > 0 ? count : undefined;
  if (typeof policy.deadLetterTargetArn !== 'string')
    return { ...base, dlqUrl: undefined, maxReceiveCount, dlqProblem: 'the redrive policy names no DLQ' };
  try {
    const { name, account } = parseQueueArn(policy.deadLetterTargetArn);
    const command = new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account });
    const { QueueUrl } = await withAnswerTimeout(timeoutMs, (abortSignal) => sqs.send(command, { abortSignal }), stop);
    return {
      ...base,
      dlqUrl: QueueUrl,
      maxReceiveCount,
      dlqProblem: QueueUrl === undefined ? 'GetQueueUrl returned no URL for the DLQ' : undefined,
    };
  } catch (error) {
    if (stop?.aborted === true) throw new StartupStopped();
    return {
      ...base,
      dlqUrl: undefined,
      maxReceiveCount,
      dlqProblem: `the DLQ ${policy.deadLetterTargetArn} could not be found (${errorText(error)})`,
    };
  }
}
