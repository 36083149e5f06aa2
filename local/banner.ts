/**
 * What `npm start` prints once it is ready: where SQS is, the queue and DLQ URLs, where messages
 * go, and commands to send one that can be pasted as they are (with no AWS CLI installed, too).
 */
import { durationText } from '../lambda/duration-text';
import { subcommandPrefix } from './invocation';
import type { Styles } from './log';

/** Everything the ready banner (or the JSON "ready" line) tells. */
export interface ReadyInfo {
  /** `embedded`: the emulator in this process; `existing`: QUEUE_URL. */
  readonly mode: 'embedded' | 'existing';
  /** The SQS endpoint, when not the SDK's regional default. */
  readonly sqsEndpoint: string | undefined;
  /** True when the relay reaches SQS with an emulator's dummy credentials (any are accepted): the AWS CLI needs them too. */
  readonly emulatorCredentials: boolean;
  readonly region: string;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly dlqUrl: string | undefined;
  readonly maxReceiveCount: number | undefined;
  /** The retry window, seconds; 0: off (the receive count dead-letters). */
  readonly retryWindowSeconds: number;
  readonly webhookUrl: string;
  /** True when the webhook is the demo one. */
  readonly demoWebhook: boolean;
  readonly fifo: boolean;
  readonly pollers: number;
  readonly batchSize: number;
  readonly functionTimeoutSeconds: number;
  readonly visibilityTimeoutSeconds: number;
}

/** When a failing message goes to the DLQ: after its retry window, or after the receive count. */
function givenUpAfter(info: Pick<ReadyInfo, 'retryWindowSeconds' | 'maxReceiveCount'>): string | undefined {
  if (info.retryWindowSeconds > 0) {
    const backstop = info.maxReceiveCount === undefined ? '' : `, or ${info.maxReceiveCount} receives`;
    return `after ${durationText(info.retryWindowSeconds, 'hours')} of failures${backstop}`;
  }
  return info.maxReceiveCount === undefined ? undefined : `after ${info.maxReceiveCount} receives`;
}

/**
 * What becomes of a message the webhook always fails, for the demo's `500` line: the DLQ only
 * once its retry window (a day by default) or its receive count is spent, not at once.
 */
function alwaysFailing(info: Pick<ReadyInfo, 'dlqUrl' | 'retryWindowSeconds' | 'maxReceiveCount'>): string {
  if (info.dlqUrl === undefined) return 'retried with backoff until it expires';
  if (info.retryWindowSeconds > 0)
    return `retried with backoff for ${durationText(info.retryWindowSeconds, 'hours')} (its retry window), then moved to the DLQ`;
  return info.maxReceiveCount === undefined
    ? 'retried with backoff, then moved to the DLQ'
    : `retried with backoff, moved to the DLQ after ${info.maxReceiveCount} receives`;
}

/** The banner's note under the AWS CLI command: the emulator needs a client with SQS's JSON protocol. */
export const AWS_CLI_VERSION_NOTE =
  "(the AWS CLI needs 2.13.34 or later here: older ones, such as Debian 12's 2.9, speak a protocol the emulator does not)";

/** A string as one POSIX shell word. */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The example body of the printed commands. */
export const EXAMPLE_BODY = '{"hello":"world"}';

/**
 * The `send` command that works where it is printed: `npm run send -- …` in a clone,
 * `npx sqs-webhook-relay send …` where the package is installed.
 */
export function sendCommand(info: Pick<ReadyInfo, 'queueUrl'>, body = EXAMPLE_BODY): string {
  return `${subcommandPrefix('send')} --queue-url ${shellQuote(info.queueUrl)} ${shellQuote(body)}`;
}

/** The `dead-letters summary` command for the relay's queue. */
export function deadLettersCommand(info: Pick<ReadyInfo, 'queueUrl'>): string {
  return `${subcommandPrefix('dead-letters')} summary --queue-url ${shellQuote(info.queueUrl)}`;
}

/** The same as {@link sendCommand} with the AWS CLI. */
export function awsCliCommand(
  info: Pick<ReadyInfo, 'emulatorCredentials' | 'sqsEndpoint' | 'region' | 'queueUrl' | 'fifo'>,
  body = EXAMPLE_BODY,
): string {
  const parts: string[] = [];
  // An emulator takes any credentials, but the CLI refuses to sign a request without some.
  if (info.emulatorCredentials) parts.push('AWS_ACCESS_KEY_ID=test', 'AWS_SECRET_ACCESS_KEY=test');
  parts.push('aws', 'sqs', 'send-message');
  if (info.sqsEndpoint !== undefined) parts.push('--endpoint-url', shellQuote(info.sqsEndpoint));
  parts.push('--region', info.region, '--queue-url', shellQuote(info.queueUrl), '--message-body', shellQuote(body));
  // The embedded FIFO queue deduplicates by content, so a group id is all a send needs (`send` makes a deduplication id).
  if (info.fifo) parts.push('--message-group-id', 'demo');
  return parts.join(' ');
}

/** The ready banner, for a terminal. */
export function formatBanner(info: ReadyInfo, styles: Styles): string {
  const row = (label: string, value: string, note?: string): string =>
    `  ${label.padEnd(14)}${styles.bold(value)}${note === undefined ? '' : `  ${styles.dim(note)}`}`;
  const lines = [
    '',
    styles.bold(
      info.mode === 'embedded'
        ? 'sqs-webhook-relay: the Lambda handler, fed by an SQS emulator on this machine'
        : 'sqs-webhook-relay: the Lambda handler, relaying from an existing queue',
    ),
    '',
  ];
  if (info.sqsEndpoint !== undefined) {
    lines.push(
      row('SQS endpoint', info.sqsEndpoint, info.mode === 'embedded' ? `region ${info.region}, any credentials` : `region ${info.region}`),
    );
  }
  lines.push(row('Queue URL', info.queueUrl, info.fifo ? 'FIFO' : undefined));
  lines.push(
    info.dlqUrl === undefined
      ? row('DLQ URL', 'none', 'failing messages are retried until they expire')
      : row('DLQ URL', info.dlqUrl, givenUpAfter(info)),
  );
  lines.push(row('Webhook', info.webhookUrl, info.demoWebhook ? 'demo: prints each POST; set WEBHOOK_URL to use yours' : undefined));
  lines.push(
    row(
      'Polling',
      `${info.pollers} poller${info.pollers === 1 ? '' : 's'}, batches of up to ${info.batchSize}`,
      `function timeout ${info.functionTimeoutSeconds} s, visibility timeout ${info.visibilityTimeoutSeconds} s`,
    ),
  );
  lines.push('', 'Send a message (from another terminal, in this directory):', `  ${sendCommand(info)}`, `  ${awsCliCommand(info)}`);
  // fauxqs speaks only SQS's JSON protocol; older clients get an error (see QUERY_PROTOCOL_REFUSAL).
  if (info.mode === 'embedded') lines.push(`  ${styles.dim(AWS_CLI_VERSION_NOTE)}`);
  if (info.dlqUrl !== undefined)
    lines.push('', 'What is in the DLQ, and why (then `replay` what was fixed):', `  ${deadLettersCommand(info)}`);
  if (info.demoWebhook) {
    lines.push(
      '',
      'The demo webhook answers 200, unless the message asks otherwise:',
      `  ${shellQuote('{"retryAfter": 5}')}   429 with Retry-After: 5 on the first attempt, then 200`,
      `  ${shellQuote('{"status": 500}')}     500 every time: ${alwaysFailing(info)}`,
      `  ${shellQuote('{"status": 400}')}     400: a permanent failure, dead-lettered at once`,
    );
  }
  lines.push('', `Ready. ${styles.dim('Ctrl-C stops after the batches in flight.')}`, '');
  return lines.join('\n');
}
