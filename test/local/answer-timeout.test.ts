/**
 * local/answer-timeout.ts: how long local mode waits for an SQS answer, and why a timer that
 * fires late (the process was frozen) does not throw away an answer that may be waiting.
 */
import { expect, test } from 'vitest';
import { answerTimeout } from '../../local/answer-timeout';
import { freeze } from '../support/freeze';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('aborts once its time is up, at once when the other signal aborts, and never once cleared', async () => {
  const timeout = answerTimeout(50);
  await pause(200);
  expect(timeout.signal.aborted).toBe(true);

  const stop = new AbortController();
  const stopped = answerTimeout(10_000, stop.signal);
  stop.abort();
  expect(stopped.signal.aborted).toBe(true);
  stopped.clear();

  const cleared = answerTimeout(50);
  cleared.clear();
  await pause(200);
  expect(cleared.signal.aborted).toBe(false);
});

test('a timer that fires late gives the answer a grace instead of aborting, then aborts if none came', async () => {
  const timeout = answerTimeout(50, undefined, 300);
  freeze(1_500);
  await pause(50);
  expect(timeout.signal.aborted).toBe(false);
  await pause(600);
  expect(timeout.signal.aborted).toBe(true);
});
