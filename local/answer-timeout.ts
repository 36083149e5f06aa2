/**
 * How long local mode waits for an SQS answer: the AWS SDK waits for ever by default, and an
 * endpoint that takes a request and never answers must not stall a poller or a command for good.
 */

/**
 * How long past its own WaitTimeSeconds a ReceiveMessage may take before it is given up (an
 * endpoint that stopped answering): the poller counts it as failed and retries it, a scan ends,
 * and a stop is not held up.
 */
export const RECEIVE_ANSWER_SLACK_MS = 2_000;
/** The longest a ChangeMessageVisibilityBatch that hands messages back may take (a stop, a scan's release). */
export const RELEASE_TIMEOUT_MS = 5_000;
/**
 * The longest a DeleteMessageBatch may take: past it, the poller counts its records as not deleted
 * (they come back after their visibility timeout) and goes on.
 */
export const DELETE_TIMEOUT_MS = 10_000;

/** How late a timer may fire before it is taken for a frozen process rather than a slow answer. */
const FROZEN_AFTER_MS = 1_000;

/** An abort signal for one SQS call, and the means to drop its timer once the call is over. */
export interface AnswerTimeout {
  readonly signal: AbortSignal;
  /** Ends the wait (call it when the call settles); the signal then never aborts. */
  clear(): void;
}

/**
 * A signal that aborts `ms` from now, or when `also` aborts. A timer that fires late means this
 * process was frozen (SIGSTOP, a suspended machine), not that SQS went quiet: an answer may be
 * waiting to be read, so it is given another `graceMs` instead of being thrown away with what it
 * holds (received messages would stay invisible for their visibility timeout). Its own timer, not
 * `AbortSignal.timeout` inside `AbortSignal.any`, which only a weak reference keeps: collected
 * as garbage, it never fires.
 */
export function answerTimeout(ms: number, also?: AbortSignal, graceMs = 2_000): AnswerTimeout {
  const controller = new AbortController();
  const abort = (): void => controller.abort();
  let due = Date.now() + ms;
  const check = (): void => {
    if (Date.now() - due <= FROZEN_AFTER_MS) {
      abort();
      return;
    }
    due = Date.now() + graceMs;
    timer = setTimeout(check, graceMs);
  };
  let timer = setTimeout(check, ms);
  if (also?.aborted === true) abort();
  else also?.addEventListener('abort', abort, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      also?.removeEventListener('abort', abort);
    },
  };
}

/**
 * `call` given an {@link answerTimeout}'s signal (`ms`, `also`, `graceMs` as there), its timer
 * dropped once the call settles: one SQS call that may not wait for ever.
 */
export async function withAnswerTimeout<T>(
  ms: number,
  call: (signal: AbortSignal) => Promise<T>,
  also?: AbortSignal,
  graceMs?: number,
): Promise<T> {
  const timeout = answerTimeout(ms, also, graceMs);
  try {
    return await call(timeout.signal);
  } finally {
    timeout.clear();
  }
}
