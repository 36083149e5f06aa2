/**
 * SQS's rule for a queue's name (1 to 80 letters, digits, `-` and `_`, a FIFO queue's `.fifo`
 * counted), held once (lambda/sqs-util.ts) and applied alike to the sandbox's `QUEUE_NAME`, the
 * construct's `queueName` (each with its `-dlq` twin) and the queue in a `-c queueArn`.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { loadLocalSettings } from '../../local/settings';
import { stackFromContext } from '../../lib/context';
import { resolveSettings } from '../../lib/webhook-relay/resolve';

const accepts = (action: () => unknown): boolean => {
  try {
    action();
    return true;
  } catch {
    return false;
  }
};
const local = (name: string) => accepts(() => loadLocalSettings({ QUEUE_NAME: name }, false));
const construct = (name: string) =>
  accepts(() => resolveSettings({ webhookUrl: 'https://hooks.example.com/x', queueName: name, fifo: name.endsWith('.fifo') }, 'S-R'));
const queueArn = (name: string) =>
  accepts(() =>
    stackFromContext((key) =>
      key === 'queueArn'
        ? `arn:aws:sqs:eu-west-1:123456789012:${name}`
        : key === 'deadLetterQueueArn'
          ? 'arn:aws:sqs:eu-west-1:123456789012:dlq'
          : undefined,
    ),
  );

describe('a queue name and its DLQ fit SQS, wherever the name is given', () => {
  test.each([
    ['a'.repeat(76), true],
    ['a'.repeat(77), false],
    [`${'a'.repeat(71)}.fifo`, true],
    // The DLQ of this one, <name>-dlq.fifo, would be 81 characters.
    [`${'a'.repeat(72)}.fifo`, false],
    [`${'a'.repeat(76)}.fifo`, false],
    ['orders', true],
    ['or.ders', false],
    ['has space', false],
  ])('%s: %s', (name, fits) => {
    expect(local(name)).toBe(fits);
    expect(construct(name)).toBe(fits);
  });

  test("a queue ARN's name: up to 80 characters, .fifo included", () => {
    expect(queueArn('a'.repeat(80))).toBe(true);
    expect(queueArn(`${'a'.repeat(75)}.fifo`)).toBe(true);
    expect(queueArn('a'.repeat(81))).toBe(false);
    expect(queueArn(`${'a'.repeat(80)}.fifo`)).toBe(false);
  });

  test('property: the sandbox and the construct accept the same names', () => {
    const name = fc.tuple(fc.stringMatching(/^[A-Za-z0-9_.:-]{1,80}$/), fc.boolean()).map(([base, fifo]) => (fifo ? `${base}.fifo` : base));
    fc.assert(
      fc.property(name, (candidate) => {
        expect(local(candidate), candidate).toBe(construct(candidate));
      }),
    );
  });
});
