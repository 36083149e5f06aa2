/**
 * The queue a command (`send`, `dead-letters`) works on, and its SQS client: real SQS with the
 * AWS SDK's default credential chain and region (or `--region`, `--profile`), or an emulator whose
 * queue URL is on loopback, which needs no credentials: the same rules as the daemon's
 * `QUEUE_URL` (`existing-queue.ts`).
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { ConfigError, type Env } from '../lambda/env';
import { SETTINGS } from '../lambda/settings';
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
  return `http://127.0.0.1:${env.SQS_PORT || SETTINGS.SQS_PORT.default}/000000000000/${env.QUEUE_NAME || SETTINGS.QUEUE_NAME.default}`;
}

/**
 * `value` checked as an SQS queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`, or
 * an emulator's `http://127.0.0.1:4566/000000000000/<name>`).
 * @param flag how the user gave it, for the error (`--queue-url`)
 * @throws {UsageError} naming the flag
 */
export function checkQueueUrl(value: string, flag: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  const segments = url?.pathname.split('/').filter((segment) => segment !== '') ?? [];
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:') || segments.length !== 2)
    throw new UsageError(`${flag} must be an SQS queue URL such as https://sqs.eu-west-1.amazonaws.com/123456789012/orders; got ${value}`);
  return value;
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
 * An SQS client for `queueUrl` (and the queues beside it: its DLQ is on the same endpoint).
 * Call `destroy()` when done.
 */
export function commandSqsClient(queueUrl: string, aws: AwsOptions, env: Env): SQSClient {
  let connection: ReturnType<typeof connectionFor>;
  try {
    connection = connectionFor(queueUrl, {
      ...env,
      ...(aws.region === undefined ? {} : { AWS_REGION: aws.region }),
      // A profile is configured credentials: never the emulator's dummy ones.
      ...(aws.profile === undefined ? {} : { AWS_PROFILE: aws.profile }),
    });
  } catch (error) {
    if (error instanceof ConfigError)
      throw new UsageError(`the queue's region could not be read from ${queueUrl}: give --region (or set AWS_REGION)`);
    throw error;
  }
  return new SQSClient({ ...clientConfig(connection), ...(aws.profile === undefined ? {} : { profile: aws.profile }) });
}
