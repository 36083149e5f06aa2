/**
 * The alarm factory: the four alarms an operator needs (DLQ not empty, oldest message too old,
 * function errors, circuit breaker open too long), each telling the topic when it fires and
 * when it is over.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { durationText } from '../../lambda/duration-text';
import type { RelayMetricFactory, MonitoredRelay } from './metrics';
import { RELAY_METRICS } from './props';

/** The relay's alarms. */
export interface RelayAlarms {
  readonly deadLetterQueueNotEmpty: cloudwatch.Alarm;
  readonly oldestMessageAge: cloudwatch.Alarm;
  readonly functionErrors: cloudwatch.Alarm;
  readonly breakerOpen: cloudwatch.Alarm;
}

/** The thresholds of the alarms. */
export interface AlarmThresholds {
  readonly ageThresholdSeconds: number;
  readonly breakerAlarmSeconds: number;
}

/** Why a message ends in the DLQ other than a permanent refusal, in words: its retry window ran out, or its receives did. */
export function givenUpText(relay: Pick<MonitoredRelay, 'retryWindow' | 'maxReceiveCount'>): string {
  return relay.retryWindow === undefined
    ? `failed ${relay.maxReceiveCount} times`
    : `kept failing for their whole retry window (${durationText(relay.retryWindow.toSeconds(), 'hours')})`;
}

/** Creates the alarms in `scope` (their ids are the template's logical ids: keep them). */
export function createAlarms(
  scope: Construct,
  relay: MonitoredRelay,
  metrics: RelayMetricFactory,
  topic: sns.ITopic,
  thresholds: AlarmThresholds,
): RelayAlarms {
  const period = Duration.minutes(5);
  const action = new cloudwatchActions.SnsAction(topic);
  const alarm = (
    id: string,
    suffix: string,
    props: Omit<cloudwatch.AlarmProps, 'alarmName' | 'treatMissingData' | 'evaluationPeriods'>,
  ): cloudwatch.Alarm => {
    const created = new cloudwatch.Alarm(scope, id, {
      ...props,
      alarmName: `${relay.name}-${suffix}`,
      evaluationPeriods: 1,
      // No data means no messages and no invocations: nothing is wrong.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    created.addAlarmAction(action);
    // Tell the operator when it is over, too (after a redrive, or when the webhook is back).
    created.addOkAction(action);
    return created;
  };
  return {
    deadLetterQueueNotEmpty: alarm('DeadLetterQueueNotEmptyAlarm', 'dlq-not-empty', {
      metric: metrics.deadLetterQueueDepth(period),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      alarmDescription:
        `Messages are in the dead-letter queue of ${relay.name}: the webhook refused them permanently or they ${givenUpText(relay)}. ` +
        "Read why in the DLQ messages' attributes and the function logs, fix the cause, then redrive from the SQS console (DLQ > Start DLQ redrive).",
    }),
    oldestMessageAge: alarm('OldestMessageAgeAlarm', 'oldest-message-age', {
      metric: metrics.oldestMessageAge(period),
      threshold: thresholds.ageThresholdSeconds,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      alarmDescription:
        `The oldest message in the queue of ${relay.name} is older than ${durationText(thresholds.ageThresholdSeconds)}: the webhook is down or pushing back (429/503), or the relay cannot keep up. ` +
        'Check the dashboard (retried vs delivered, webhook latency, function errors).',
    }),
    functionErrors: alarm('FunctionErrorsAlarm', 'function-errors', {
      metric: metrics.functionErrors(period),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      alarmDescription:
        `The relay function of ${relay.name} failed whole batches (invalid configuration, a crash or a timeout): every record of those batches is retried. ` +
        'Read the function logs for the error.',
    }),
    breakerOpen: alarm('BreakerOpenAlarm', 'breaker-open', {
      metric: metrics.relay(RELAY_METRICS.breakerOpenSeconds, cloudwatch.Stats.MAXIMUM),
      threshold: thresholds.breakerAlarmSeconds,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      alarmDescription:
        `The webhook of ${relay.name} has looked down for ${durationText(thresholds.breakerAlarmSeconds)} (connection errors, timeouts, 502/503/504): the circuit breaker is holding messages back, one probe per interval. ` +
        (relay.retryWindow === undefined
          ? `Nothing is lost while messages have receives left (maxReceiveCount ${relay.maxReceiveCount}); restore the webhook before the DLQ alarm follows, or switch to a retry window (leave maxReceiveCount unset).`
          : `Nothing is dead-lettered for the outage within the retry window (${durationText(relay.retryWindow.toSeconds(), 'hours')}); restore the webhook before it runs out.`),
    }),
  };
}
