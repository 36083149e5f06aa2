/**
 * The metric factory: every metric the alarms and the dashboard read, made in one place with the
 * same namespace, dimension and statistics (cdk-monitoring-constructs' split of metric and alarm
 * factories), so a graph and its alarm never read two different series.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { CAUSE_DIMENSION, type DeadLetterCauseName } from '../../lambda/dead-letter-causes';
import { DEFAULT_METRICS_NAMESPACE, METRIC_NAMES } from '../../lambda/metric-names';

/** What the relay's metrics are read from. */
export interface MonitoredRelay {
  readonly name: string;
  readonly serviceName: string;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  readonly function: lambda.IFunction;
  readonly maxReceiveCount: number;
  /** The retry window; `undefined` with SQS's count semantics (`maxReceiveCount` given). */
  readonly retryWindow: Duration | undefined;
}

/** Metrics of one relay: its own (embedded metric format), its queues' and its function's. */
export class RelayMetricFactory {
  constructor(private readonly source: MonitoredRelay) {}

  /** One of the function's own metrics ({@link METRIC_NAMES}), dimension `service`. */
  relay(metricName: string, statistic: string, options: { label?: string; period?: Duration } = {}): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: DEFAULT_METRICS_NAMESPACE,
      metricName,
      dimensionsMap: { service: this.source.serviceName },
      statistic,
      ...(options.label === undefined ? {} : { label: options.label }),
      period: options.period ?? Duration.minutes(1),
    });
  }

  /** Messages in the dead-letter queue. */
  deadLetterQueueDepth(period: Duration, label?: string): cloudwatch.Metric {
    return this.source.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label });
  }

  /**
   * Messages dead-lettered for `cause`, per period: `DeadLettered` with the dimensions `service`
   * and `cause`, which the function publishes beside the `service`-only total.
   */
  deadLetteredByCause(cause: DeadLetterCauseName, period: Duration, label?: string): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: DEFAULT_METRICS_NAMESPACE,
      metricName: METRIC_NAMES.deadLettered,
      dimensionsMap: { service: this.source.serviceName, [CAUSE_DIMENSION]: cause },
      statistic: cloudwatch.Stats.SUM,
      ...(label === undefined ? {} : { label }),
      period,
    });
  }

  /**
   * Age of the oldest message in the dead-letter queue, seconds: since SQS moved it there or the
   * relay copied it there (SQS's `ApproximateAgeOfOldestMessage` of a DLQ).
   */
  oldestDeadLetterAge(period: Duration, label?: string): cloudwatch.Metric {
    return this.source.deadLetterQueue.metricApproximateAgeOfOldestMessage({ period, statistic: cloudwatch.Stats.MAXIMUM, label });
  }

  /**
   * Age of the oldest message in the queue, seconds, as SQS counts it: a message received three times and not deleted no
   * longer counts (SQS moves it to the back): this is the age of a backlog the relay has not reached, not of the messages it
   * keeps handing back ({@link oldestReturnedMessageAge}).
   */
  oldestMessageAge(period: Duration, label?: string): cloudwatch.Metric {
    return this.source.queue.metricApproximateAgeOfOldestMessage({ period, statistic: cloudwatch.Stats.MAXIMUM, label });
  }

  /**
   * Age of the oldest message the relay handed back to the queue, seconds (its `AgeOfOldestReturnedMessage`, 0 when a batch
   * handed none back): the messages an outage or a webhook's refusals keep waiting, which SQS's own metric stops counting.
   */
  oldestReturnedMessageAge(period: Duration, label?: string): cloudwatch.Metric {
    return this.relay(METRIC_NAMES.ageOfOldestReturnedMessage, cloudwatch.Stats.MAXIMUM, { label, period });
  }

  /** Whole batches the function failed. */
  functionErrors(period: Duration, label?: string): cloudwatch.Metric {
    return this.source.function.metricErrors({ period, statistic: cloudwatch.Stats.SUM, label });
  }
}
