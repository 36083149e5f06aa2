/**
 * The operator dashboard: what was delivered, retried and dead-lettered, the webhook's latency,
 * the circuit breaker, the pace the webhook allows, the queues and the function, with each
 * alarm's threshold drawn on its graph.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { DEAD_LETTER_CAUSE_LIST } from '../../lambda/dead-letter-causes';
import { METRIC_NAMES } from '../../lambda/metric-names';
import { givenUpText, type RelayAlarms } from './alarms';
import { DLQ_RETENTION } from './defaults';
import type { MonitoredRelay, RelayMetricFactory } from './metrics';

/** The figures the dashboard draws as lines on its graphs. */
export interface DashboardMarks {
  readonly maxConcurrency: number;
  readonly timeoutSeconds: number;
  readonly ageThresholdSeconds: number;
  readonly breakerAlarmSeconds: number;
  readonly deadLetterAgeAlarmSeconds: number;
}

/** Seconds in a day: the dead letters' age is drawn in days, as their 14 days of retention are counted. */
const DAY_SECONDS = 86_400;

/** Creates the dashboard in `scope` (id `Dashboard`). */
export function createDashboard(
  scope: Construct,
  relay: MonitoredRelay,
  metrics: RelayMetricFactory,
  alarms: RelayAlarms,
  marks: DashboardMarks,
): cloudwatch.Dashboard {
  const { maxConcurrency, timeoutSeconds, ageThresholdSeconds, breakerAlarmSeconds, deadLetterAgeAlarmSeconds } = marks;
  const minute = Duration.minutes(1);
  const relayMetric = (metricName: string, label: string, statistic: string): cloudwatch.Metric =>
    metrics.relay(metricName, statistic, { label, period: minute });
  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: relay.name,
    defaultInterval: Duration.hours(3),
  });
  dashboard.addWidgets(
    new cloudwatch.TextWidget({
      markdown:
        `## sqs-webhook-relay: ${relay.name}\n` +
        'Producers send to the queue; the function POSTs each message to the webhook. **Delivered** = 2xx; **retried** = the webhook asked to see it again (429/5xx/timeout), with a delay; ' +
        `**dead-lettered** = refused permanently or ${givenUpText(relay)}. Anything in the DLQ needs an operator: \`sqs-webhook-relay dead-letters summary\` says why, \`… replay\` sends back what was fixed (docs/operations.md, Redriving the dead-letter queue).`,
      width: 24,
      height: 2,
    }),
  );
  dashboard.addWidgets(
    new cloudwatch.AlarmStatusWidget({
      title: 'Alarms',
      alarms: [
        alarms.deadLetterQueueNotEmpty,
        alarms.deadLetterAge,
        alarms.oldestMessageAge,
        alarms.returnedMessageAge,
        alarms.functionErrors,
        alarms.breakerOpen,
      ],
      width: 24,
      height: 2,
    }),
  );
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Deliveries (per minute)',
      left: [
        relayMetric(METRIC_NAMES.delivered, 'delivered', cloudwatch.Stats.SUM),
        relayMetric(METRIC_NAMES.retried, 'retried', cloudwatch.Stats.SUM),
        relayMetric(METRIC_NAMES.deadLettered, 'dead-lettered', cloudwatch.Stats.SUM),
      ],
      leftYAxis: { min: 0, showUnits: false },
      width: 12,
    }),
    new cloudwatch.GraphWidget({
      title: 'Webhook latency (ms)',
      left: [
        relayMetric(METRIC_NAMES.webhookLatency, 'p50', cloudwatch.Stats.p(50)),
        relayMetric(METRIC_NAMES.webhookLatency, 'p99', cloudwatch.Stats.p(99)),
      ],
      leftYAxis: { min: 0, showUnits: false },
      width: 12,
    }),
  );
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Circuit breaker: seconds open (webhook looks down)',
      left: [relayMetric(METRIC_NAMES.breakerOpenSeconds, 'open for (s)', cloudwatch.Stats.MAXIMUM)],
      leftAnnotations: [{ value: breakerAlarmSeconds, label: 'alarm', color: cloudwatch.Color.RED }],
      leftYAxis: { min: 0, showUnits: false },
      width: 24,
      height: 4,
    }),
  );
  // A container publishes its requests/s limit per batch only while the webhook holds it below
  // full speed, so a gap means "not paced".
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Webhook pace',
      left: [
        relayMetric(METRIC_NAMES.paceRequestsPerSecond, 'requests/s limit (average)', cloudwatch.Stats.AVERAGE),
        relayMetric(METRIC_NAMES.paceRequestsPerSecond, 'requests/s limit (slowest container)', cloudwatch.Stats.MINIMUM),
        relayMetric(METRIC_NAMES.paceInFlightLimit, 'in-flight limit (average)', cloudwatch.Stats.AVERAGE),
      ],
      right: [relayMetric(METRIC_NAMES.requestsRefused, 'refused (429/503/504/408/timeout, per minute)', cloudwatch.Stats.SUM)],
      leftYAxis: { min: 0, showUnits: false },
      rightYAxis: { min: 0, showUnits: false },
      width: 24,
      height: 6,
    }),
  );
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Queue depth',
      left: [
        relay.queue.metricApproximateNumberOfMessagesVisible({
          period: minute,
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'waiting (visible)',
        }),
        relay.queue.metricApproximateNumberOfMessagesNotVisible({
          period: minute,
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'in flight or delayed by a retry',
        }),
      ],
      leftYAxis: { min: 0, showUnits: false },
      width: 12,
    }),
    new cloudwatch.GraphWidget({
      title: 'Age of oldest message (s)',
      left: [
        metrics.oldestMessageAge(minute, 'oldest, until its third receive (SQS)'),
        metrics.oldestReturnedMessageAge(minute, 'oldest handed back (relay)'),
      ],
      leftAnnotations: [{ value: ageThresholdSeconds, label: 'alarm', color: cloudwatch.Color.RED }],
      leftYAxis: { min: 0, showUnits: false },
      width: 12,
    }),
  );
  // The dead letters: how many, why (the cause dimension), and how close the oldest is to SQS deleting it.
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Dead-letter queue depth',
      left: [
        relay.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: minute,
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'messages in the DLQ',
        }),
      ],
      leftAnnotations: [{ value: 0, label: 'anything above 0 alarms', color: cloudwatch.Color.RED }],
      leftYAxis: { min: 0, showUnits: false },
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: 'Dead-lettered by cause (per minute)',
      left: DEAD_LETTER_CAUSE_LIST.map((cause) => metrics.deadLetteredByCause(cause, minute, cause)),
      leftYAxis: { min: 0, showUnits: false },
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: 'Age of oldest dead letter (days)',
      left: [
        new cloudwatch.MathExpression({
          expression: `age / ${DAY_SECONDS}`,
          usingMetrics: { age: metrics.oldestDeadLetterAge(minute) },
          label: 'oldest dead letter',
          period: minute,
        }),
      ],
      leftAnnotations: [
        { value: deadLetterAgeAlarmSeconds / DAY_SECONDS, label: 'alarm', color: cloudwatch.Color.ORANGE },
        { value: DLQ_RETENTION.toDays(), label: 'SQS deletes it', color: cloudwatch.Color.RED },
      ],
      leftYAxis: { min: 0, max: DLQ_RETENTION.toDays(), showUnits: false },
      width: 8,
    }),
  );
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Function invocations and errors',
      left: [
        relay.function.metricInvocations({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'invocations' }),
        relay.function.metricErrors({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'errors (whole batch failed)' }),
        relay.function.metricThrottles({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'throttles' }),
      ],
      leftYAxis: { min: 0, showUnits: false },
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: 'Function duration (ms)',
      left: [
        relay.function.metricDuration({ period: minute, statistic: cloudwatch.Stats.p(50), label: 'p50' }),
        relay.function.metricDuration({ period: minute, statistic: cloudwatch.Stats.p(99), label: 'p99' }),
        relay.function.metricDuration({ period: minute, statistic: cloudwatch.Stats.MAXIMUM, label: 'max' }),
      ],
      leftAnnotations: [{ value: timeoutSeconds * 1000, label: 'timeout', color: cloudwatch.Color.RED }],
      leftYAxis: { min: 0, showUnits: false },
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: 'Concurrent executions',
      left: [
        relay.function.metric('ConcurrentExecutions', {
          period: minute,
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'concurrent executions',
        }),
      ],
      leftAnnotations: [{ value: maxConcurrency, label: 'event source maximum', color: cloudwatch.Color.ORANGE }],
      leftYAxis: { min: 0, showUnits: false },
      width: 8,
    }),
  );
  return dashboard;
}
