/**
 * The one pause local mode takes between attempts (a failed receive, a failing health check):
 * cut short by a stop, so Ctrl-C never waits out a backoff.
 */
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Resolves after `ms`, or at once when `signal` aborts (or already has); never rejects.
 * Node's timer removes its abort listener either way, so a long-lived signal gathers none.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  // The only rejection of an abortable timer is the AbortError: the early end this is for.
  return delay(ms, undefined, { signal }).catch(() => undefined);
}
