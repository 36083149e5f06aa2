/**
 * Bounding every AWS call by the invocation's time. An endpoint that accepts connections and
 * never answers (a VPC without an endpoint, a black-holed NAT) must not keep the handler running
 * past the function's timeout: Lambda would kill it and hand the whole batch back, delivered
 * records included. Each call gets the SDK's own timeouts (per attempt) and an abort signal at a
 * deadline the relay picks; the signal also settles the caller's promise, whatever the SDK does.
 * Loaded at cold start, it imports only `node:events`, which Node.js has loaded already.
 */
import { setMaxListeners } from 'node:events';

/**
 * The request handler options of every AWS client the relay builds: no attempt waits longer than
 * this for a connection or a complete answer (SQS and Secrets Manager answer in tens of ms).
 * `throwOnRequestTimeout`: without it the SDK only logs a warning when `requestTimeout` passes.
 */
export const AWS_REQUEST_HANDLER_OPTIONS = { connectionTimeout: 2_000, requestTimeout: 5_000, throwOnRequestTimeout: true } as const;

/** An AWS call abandoned because the time it was given ran out. */
export class DeadlineExceededError extends Error {
  /** @param action what was abandoned, e.g. `ChangeMessageVisibilityBatch` */
  constructor(action: string) {
    super(`${action} abandoned: the invocation's time for it ran out`);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * A moment (ms since the epoch) after which the AWS calls given it are abandoned. Its abort
 * signal is made on first use: most batches make no AWS call at all.
 */
export class Deadline {
  private aborter: AbortSignal | undefined;

  constructor(readonly at: number) {}

  /** Aborts at {@link at} (already aborted if that has passed). */
  get signal(): AbortSignal {
    if (this.aborter === undefined) {
      const left = this.at - Date.now();
      this.aborter = left > 0 ? AbortSignal.timeout(left) : AbortSignal.abort();
      // One listener per call in flight (ours and the SDK's): a 10,000-record batch makes 1,000
      // visibility calls at once, far past the 10 after which Node.js warns of a leak.
      setMaxListeners(0, this.aborter);
    }
    return this.aborter;
  }
}

/**
 * Runs `call` with `signal`, settling no later than the signal aborts (then with a
 * {@link DeadlineExceededError} naming `action`). A signal already aborted fails at once,
 * without starting the call. Without a signal, `call` runs unbounded but for the SDK's timeouts.
 */
export function beforeDeadline<T>(
  action: string,
  signal: AbortSignal | undefined,
  call: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  if (signal === undefined) return call(undefined);
  if (signal.aborted) return Promise.reject(new DeadlineExceededError(action));
  return new Promise<T>((resolve, reject) => {
    // Registered before the SDK's own listener, so the caller sees this error, not "Request aborted".
    const onAbort = (): void => reject(new DeadlineExceededError(action));
    signal.addEventListener('abort', onAbort, { once: true });
    let pending: Promise<T>;
    try {
      pending = call(signal);
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
