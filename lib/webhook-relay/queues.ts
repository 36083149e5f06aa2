/** The main queue and its DLQ as resolved: created (same kind, redrive, encryption, TLS) or the ones passed in. */
import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { MAX_MESSAGE_BYTES } from '../../lambda/aws-limits';
import { DLQ_RETENTION } from './defaults';
import type { ResolvedSettings } from './resolve';

/** Creates the queues in `scope` (ids `Queue` and `DeadLetterQueue`), or returns the existing ones. */
export function relayQueues(scope: Construct, resolved: ResolvedSettings): { queue: sqs.IQueue; deadLetterQueue: sqs.IQueue } {
  const plan = resolved.queues;
  if (plan.kind === 'existing') return { queue: plan.queue, deadLetterQueue: plan.deadLetterQueue };
  const common = {
    fifo: plan.fifo ? true : undefined,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    // Stated rather than left to the default, which was 256 KiB for queues made before SQS
    // raised its limit: the DLQ must take any message the queue took, plus the relay's reason.
    maxMessageSizeBytes: MAX_MESSAGE_BYTES,
  };
  const deadLetterQueue = new sqs.Queue(scope, 'DeadLetterQueue', {
    ...common,
    queueName: plan.names?.dlq,
    retentionPeriod: DLQ_RETENTION,
  });
  const queue = new sqs.Queue(scope, 'Queue', {
    ...common,
    queueName: plan.names?.queue,
    retentionPeriod: plan.retention,
    visibilityTimeout: Duration.seconds(plan.visibilitySeconds),
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: resolved.maxReceiveCount },
  });
  return { queue, deadLetterQueue };
}
