/**
 * Start-up failures as one line a person can act on. `npm start` prints that line and exits
 * non-zero; a stack trace would bury the one fact that matters (which port, which URL, which
 * variable) under frames of the SDK.
 */
import { redactUrl } from '../lambda/url-rules';

/** A failure whose message is already the line to print. */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** A stop asked for (SIGINT, SIGTERM) while the relay was starting: it gave up its start, as asked. */
export class StartupStopped extends StartupError {
  constructor() {
    super('stopped while starting, before polling began');
    this.name = 'StartupStopped';
  }
}

/** A command line a command cannot run with (exit status 2, as for any usage error). */
export class UsageError extends StartupError {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/** The network error code under an SDK error, if the request never got an answer. */
export function networkErrorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    // Node's fetch-style and AggregateError wrappers keep the socket error one level down.
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) current = errors[0];
    else current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Whether `error` is the AWS SDK's for a call given up by its abort signal: the endpoint took the request and never answered. */
export function givenUp(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

/**
 * Explains an SQS call that failed during start-up.
 * @param action what was being done ("reading the queue's attributes")
 * @param where the endpoint or queue URL, for the message
 */
export function sqsStartupError(error: unknown, action: string, endpointOrUrl: string): StartupError {
  const where = redactUrl(endpointOrUrl);
  const code = networkErrorCode(error);
  if (code !== undefined)
    return new StartupError(`cannot reach SQS at ${where} (${code}) while ${action}; is the endpoint right and running?`, { cause: error });
  const name = error instanceof Error ? error.name : '';
  if (givenUp(error))
    return new StartupError(`no answer from SQS at ${where} while ${action}; is the endpoint right and running?`, { cause: error });
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  if (name === 'CredentialsProviderError' || /credential/i.test(message)) {
    return new StartupError(
      `no AWS credentials for ${where}: ${message} (set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)`,
      { cause: error },
    );
  }
  if (name === 'QueueDoesNotExist' || name === 'AWS.SimpleQueueService.NonExistentQueue' || /does not exist/i.test(message)) {
    return new StartupError(`no queue at ${where}: ${message}`, { cause: error });
  }
  return new StartupError(`SQS refused ${action} at ${where}: ${name === '' ? '' : `${name}: `}${message}`, { cause: error });
}

/** Any error as the single line `npm start` prints before exiting. */
export function oneLine(error: unknown): string {
  if (error instanceof Error) {
    const text =
      error.name === 'StartupError' || error.name === 'UsageError' || error.name === 'ConfigError' || error.name.endsWith('InUseError')
        ? error.message
        : `${error.name}: ${error.message}`;
    return text.split('\n')[0] ?? text;
  }
  return String(error).split('\n')[0] ?? '';
}
