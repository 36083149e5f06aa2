/**
 * The alarm factory: the six alarms an operator needs (DLQ not empty, oldest dead letter close to
 * its expiry, oldest message too old, either as SQS counts or handed back again and again,
 * function errors, circuit breaker open too long), each telling the topic when it fires and when
 * it is over, and what to run.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { durationText } from '../../lambda/duration-text';
import { METRIC_NAMES } from '../../lambda/metric-names';
import { DLQ_RETENTION } from './defaults';
import type { RelayMetricFactory, MonitoredRelay } from './metrics';
import { queryNames } from './queries';

/** The relay's alarms. */
export interface RelayAlarms {
  readonly deadLetterQueueNotEmpty: cloudwatch.Alarm;
  /** The oldest dead letter is close to the DLQ's retention, when SQS deletes it. */
  readonly deadLetterAge: cloudwatch.Alarm;
  /** The oldest message is too old, as SQS counts (until its third receive): a backlog the relay has not reached. */
  readonly oldestMessageAge: cloudwatch.Alarm;
  /** The oldest message the relay keeps handing back (an outage, a webhook refusing) is too old (the relay's count). */
  readonly returnedMessageAge: cloudwatch.Alarm;
  readonly functionErrors: cloudwatch.Alarm;
  readonly breakerOpen: cloudwatch.Alarm;
}

/** The thresholds of the alarms. */
export interface AlarmThresholds {
  readonly ageThresholdSeconds: number;
  readonly breakerAlarmSeconds: number;
  readonly deadLetterAgeAlarmSeconds: number;
}

/** The command an operator runs to see why messages are in the DLQ (`<QueueUrl>`: the stack's output). */
export const SUMMARY_COMMAND = 'npx sqs-webhook-relay dead-letters summary --queue-url <QueueUrl>';
/** The command that replays the dead letters of one status once the cause is fixed. */
export const REPLAY_COMMAND = 'npx sqs-webhook-relay dead-letters replay --queue-url <QueueUrl> --status <status>';

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
  const queries = queryNames(relay.name);
  // What is left of the DLQ's retention once the age alarm fires (the stack's DLQ keeps 14 days).
  const left = DLQ_RETENTION.toSeconds() - thresholds.deadLetterAgeAlarmSeconds;
  const action = new cloudwatchActions.SnsAction(topic);
  const alarm = (
    id: string,
    suffix: string,
    props: Omit<cloudwatch.AlarmProps, 'alarmName' | 'treatMissingData' | 'evaluationPeriods'>,
    // No data means no messages and no invocations: nothing is wrong.
    treatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
  ): cloudwatch.Alarm => {
    const created = new cloudwatch.Alarm(scope, id, {
      ...props,
      alarmName: `${relay.name}-${suffix}`,
      evaluationPeriods: 1,
      treatMissingData,
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
        `See why: ${SUMMARY_COMMAND} (or the Logs Insights query "${queries.deadLettersByCause}"). ` +
        `Fix the cause, then replay those: ${REPLAY_COMMAND}; or redrive them all from the SQS console (DLQ > Start DLQ redrive). ` +
        'docs/operations.md, When an alarm fires.',
    }),
    deadLetterAge: alarm('DeadLetterAgeAlarm', 'dlq-oldest-message-age', {
      metric: metrics.oldestDeadLetterAge(period),
      threshold: thresholds.deadLetterAgeAlarmSeconds,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      alarmDescription:
        `The oldest message in the dead-letter queue of ${relay.name} has been there for over ${durationText(thresholds.deadLetterAgeAlarmSeconds, 'days')}. ` +
        `SQS deletes dead letters after ${durationText(DLQ_RETENTION.toSeconds(), 'days')}: ${durationText(left, 'days')} are left at most to read and replay it ` +
        '(less for a message SQS moved itself at the backstop: its retention counts from when it was first sent). ' +
        `See what is there and how old: ${SUMMARY_COMMAND}; replay what was fixed: ${REPLAY_COMMAND}, or delete what never will be.`,
    }),
    oldestMessageAge: alarm('OldestMessageAgeAlarm', 'oldest-message-age', {
      metric: metrics.oldestMessageAge(period),
      threshold: thresholds.ageThresholdSeconds,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      alarmDescription:
        `The oldest message in the queue of ${relay.name} is older than ${durationText(thresholds.ageThresholdSeconds)} (SQS counts a message until its third receive): the relay cannot keep up or is not invoked, or the webhook began refusing. ` +
        'Check the dashboard (concurrency, function errors, retried vs delivered). Messages the relay keeps handing back have an alarm of their own (returned-message-age).',
    }),
    returnedMessageAge: alarm(
      'ReturnedMessageAgeAlarm',
      'returned-message-age',
      {
        metric: metrics.oldestReturnedMessageAge(period),
        threshold: thresholds.ageThresholdSeconds,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        alarmDescription:
          `A message the relay of ${relay.name} handed back to the queue is older than ${durationText(thresholds.ageThresholdSeconds)}: the webhook is down, failing (5xx) or pushing back (429/503). ` +
          `Check the dashboard (retried vs delivered, the breaker, the webhook's pace). It is OK again with the batch that delivers (or dead-letters) the last such message.`,
      },
      // A long hold or Retry-After leaves hours without an invocation: the alarm keeps its state through them (not OK, then
      // ALARM again) until a batch hands nothing back.
      cloudwatch.TreatMissingData.IGNORE,
    ),
    functionErrors: alarm('FunctionErrorsAlarm', 'function-errors', {
      metric: metrics.functionErrors(period),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      alarmDescription:
        `The relay function of ${relay.name} failed whole batches (invalid configuration, a crash or a timeout): every record of those batches is retried. ` +
        `Read the function logs for the error (Logs Insights: "${queries.messageAttempts}" for one message).`,
    }),
    breakerOpen: alarm(
      'BreakerOpenAlarm',
      'breaker-open',
      {
        metric: metrics.relay(METRIC_NAMES.breakerOpenSeconds, cloudwatch.Stats.MAXIMUM),
        threshold: thresholds.breakerAlarmSeconds,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        alarmDescription:
          `The webhook of ${relay.name} has looked down for ${durationText(thresholds.breakerAlarmSeconds)} (connection errors, timeouts, 502/503/504, or 500s to every request): the circuit breaker is holding messages back, one probe per interval. ` +
          (relay.retryWindow === undefined
            ? `Nothing is lost while messages have receives left (maxReceiveCount ${relay.maxReceiveCount}); restore the webhook before the DLQ alarm follows, or switch to a retry window (leave maxReceiveCount unset).`
            : `Nothing is dead-lettered for the outage within the retry window (${durationText(relay.retryWindow.toSeconds(), 'hours')}); restore the webhook before it runs out.`),
      },
      // An outage's holds grow to 15 minutes, and minutes pass with no invocation to publish the metric: the alarm keeps its
      // state through them (not OK, then ALARM again) until a batch publishes 0 after the webhook's return.
      cloudwatch.TreatMissingData.IGNORE,
    ),
  };
}
