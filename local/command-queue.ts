/**
 * The queue a command (`send`, `dead-letters`) works on, and its SQS client: real SQS with the
 * AWS SDK's default credential chain and region (or `--region`, `--profile`), or an emulator whose
 * queue URL is on loopback, which needs no credentials: the same rules as the daemon's
 * `QUEUE_URL` (`existing-queue.ts`).
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { ConfigError, type Env, read, readSetting } from '../lambda/env';
import { LOCAL_SETTINGS } from '../lambda/settings';
import { isQueueUrl, QUEUE_URL_EXAMPLE } from '../lambda/sqs-util';
import { UsageError } from './errors';
import { clientConfig, connectionFor } from './existing-queue';

/** Where the command's AWS credentials and region come from, besides the environment. */
export interface AwsOptions {
  /** `--region`: wins over `AWS_REGION` and the queue URL's region. */
  readonly region?: string;
  /** `--profile`: a profile of `~/.aws/config` and `~/.aws/credentials`, instead of `AWS_PROFILE`. */
  readonly profile?: string;
}

/** The command-line options of {@link AwsOptions}, for `node:util` `parseArgs`. */
export const AWS_OPTION_SPECS = {
  region: { type: 'string' },
  profile: { type: 'string' },
} as const;

/** The queue of `npm start`'s emulator: its defaults, or `SQS_PORT` and `QUEUE_NAME` as set. */
export function sandboxQueueUrl(env: Env): string {
  return `http://127.0.0.1:${readSetting(env, LOCAL_SETTINGS.SQS_PORT)}/000000000000/${readSetting(env, LOCAL_SETTINGS.QUEUE_NAME)}`;
}

/**
 * `value` checked as an SQS queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`, or
 * an emulator's `http://127.0.0.1:4566/000000000000/<name>`).
 * @param flag how the user gave it, for the error (`--queue-url`)
 * @throws {UsageError} naming the flag
 */
export function checkQueueUrl(value: string, flag: string): string {
  if (!isQueueUrl(value)) throw new UsageError(`${flag} must be an SQS queue URL such as ${QUEUE_URL_EXAMPLE}; got ${value}`);
  return value;
}

/** A queue URL a command was given, and how (`--queue-url`, `QUEUE_URL`), for its messages. */
export interface GivenQueueUrl {
  readonly url: string;
  readonly name: string;
}

/**
 * The queue a command works on: `--queue-url` (`option`), else `QUEUE_URL`, else `npm start`'s
 * emulator's ({@link sandboxQueueUrl}), checked.
 * @throws {UsageError} naming how it was given
 */
export function commandQueueUrl(option: string | undefined, env: Env): GivenQueueUrl {
  const fromEnv = read(env, 'QUEUE_URL');
  const [url, name] =
    option !== undefined ? [option, '--queue-url'] : fromEnv !== undefined ? [fromEnv, 'QUEUE_URL'] : [sandboxQueueUrl(env), '--queue-url'];
  return { url: checkQueueUrl(url, name), name };
}

/** The queue's name: the last segment of its URL. */
export function queueNameOfUrl(queueUrl: string): string {
  return (
    new URL(queueUrl).pathname
      .split('/')
      .filter((segment) => segment !== '')
      .at(-1) ?? ''
  );
}

/** True when the queue URL names a FIFO queue. */
export function isFifoUrl(queueUrl: string): boolean {
  return queueNameOfUrl(queueUrl).endsWith('.fifo');
}

/**
 * An SQS client for `queueUrl` (and the queues beside it: its DLQ is on the same endpoint), on
 * the daemon's rules (`connectionFor`): where its signed calls go must be https, a loopback host,
 * or allowed by `ALLOW_INSECURE_HTTP`. Call `destroy()` when done.
 * @throws {UsageError} for an endpoint that rule refuses, or a region that cannot be known
 */
export function commandSqsClient(queue: GivenQueueUrl, aws: AwsOptions, env: Env): SQSClient {
  let connection: ReturnType<typeof connectionFor>;
  try {
    const withOptions = {
      ...env,
      ...(aws.region === undefined ? {} : { AWS_REGION: aws.region }),
      // A profile is configured credentials: never the emulator's dummy ones.
      ...(aws.profile === undefined ? {} : { AWS_PROFILE: aws.profile }),
    };
    connection = connectionFor(queue.url, withOptions, queue.name);
  } catch (error) {
    if (error instanceof ConfigError && error.variable === 'AWS_REGION')
      throw new UsageError(`the queue's region could not be read from ${queue.url}: give --region (or set AWS_REGION)`);
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
  return new SQSClient({ ...clientConfig(connection), ...(aws.profile === undefined ? {} : { profile: aws.profile }) });
}
