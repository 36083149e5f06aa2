/**
 * What the synthesized template gives an operator for dead letters: the alarm on the oldest dead
 * letter before SQS deletes it (`-c deadLetterAgeAlarmDays`), the DLQ row of the dashboard (by
 * cause, the `cause` dimension the function publishes, and the oldest's age), the Logs Insights
 * query definitions, and alarm descriptions that name the commands and the queries.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { CAUSE_DIMENSION, DEAD_LETTER_CAUSE_LIST } from '../../lambda/dead-letter-causes';
import { buildApp } from '../../lib/app';
import { ContextError } from '../../lib/context';
import { WebhookRelay, WebhookRelayConfigError } from '../../lib/index';
import { DEAD_LETTER_LINES, MESSAGE_ID_PLACEHOLDER } from '../../lib/webhook-relay/queries';
import { dashboardWidgets, onlyResource, resourcesOf, testApp } from './helpers';

const WEBHOOK = { webhookUrl: 'https://hooks.example.com/relay' };

function synth(context: Record<string, unknown> = {}): { stack: Stack; template: Template } {
  const stack = buildApp(testApp({ ...WEBHOOK, ...context }));
  return { stack, template: Template.fromStack(stack) };
}

/** The logical id of the DLQ (the queue without a redrive policy). */
function dlqId(template: Template): string {
  const [id] =
    Object.entries(resourcesOf(template, 'AWS::SQS::Queue')).find(([, queue]) => queue.Properties.RedrivePolicy === undefined) ?? [];
  if (id === undefined) throw new Error('no DLQ');
  return id;
}

function alarmNamed(template: Template, suffix: string): Record<string, unknown> {
  const alarm = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).find((a) => String(a.Properties.AlarmName).endsWith(suffix));
  if (alarm === undefined) throw new Error(`no alarm *${suffix}`);
  return alarm.Properties;
}

describe('the stack, for dead letters', () => {
  const { stack, template } = synth();
  const name = stack.stackName;

  it('alarms when the oldest dead letter is 10 days old, saying SQS deletes it at 14 and 4 days are left', () => {
    const topic = onlyResource(template, 'AWS::SNS::Topic');
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `${name}-dlq-oldest-message-age`,
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId(template), 'QueueName'] } }],
      Statistic: 'Maximum',
      Threshold: 10 * 86_400,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: topic.id }],
      OKActions: [{ Ref: topic.id }],
    });
    const description = String(alarmNamed(template, '-dlq-oldest-message-age').AlarmDescription);
    expect(description).toContain('for over 10 days');
    expect(description).toContain('SQS deletes dead letters after 14 days: 4 days are left at most');
    expect(description).toContain('dead-letters summary --queue-url <QueueUrl>');
    expect(description).toContain('dead-letters replay --queue-url <QueueUrl> --status <status>');
    expect(description.length).toBeLessThanOrEqual(1024); // CloudWatch's limit
    template.resourceCountIs('AWS::CloudWatch::Alarm', 6);
  });

  it('names the commands and the Logs Insights query in the DLQ alarm', () => {
    const description = String(alarmNamed(template, '-dlq-not-empty').AlarmDescription);
    expect(description).toContain('npx sqs-webhook-relay dead-letters summary --queue-url <QueueUrl>');
    expect(description).toContain(`Logs Insights query "${name}/dead letters by cause and status"`);
    expect(description).toContain('Start DLQ redrive');
    expect(description.length).toBeLessThanOrEqual(1024);
  });

  it('saves three Logs Insights queries on the function log group, named after the relay', () => {
    const logGroup = onlyResource(template, 'AWS::Logs::LogGroup');
    const queries = Object.values(resourcesOf(template, 'AWS::Logs::QueryDefinition')).map((q) => q.Properties);
    expect(queries.map((q) => q.Name)).toEqual([
      `${name}/attempts of one message`,
      `${name}/dead letters by cause and status`,
      `${name}/refusals by status over time`,
    ]);
    for (const query of queries) expect(query.LogGroupNames).toEqual([{ Ref: logGroup.id }]);
    const [attempts, byCause, refusals] = queries.map((q) => String(q.QueryString));
    expect(attempts).toContain(`filter messageId = "${MESSAGE_ID_PLACEHOLDER}" or claimedOriginalId = "${MESSAGE_ID_PLACEHOLDER}"`);
    expect(attempts).toContain('sort @timestamp asc');
    expect(byCause).toContain(`filter message like ${DEAD_LETTER_LINES}`);
    expect(byCause).toContain('stats count(*) as messages by message, status');
    expect(refusals).toContain('stats count(*) as answers by bin(5m), status');
  });

  it("adds a dead-letter row to the dashboard: the DLQ's depth, dead-lettered by cause, and the oldest's age in days against the alarm and the 14 days", () => {
    const widgets = dashboardWidgets(stack);
    const byCause = widgets.find((w) => w.title === 'Dead-lettered by cause (per minute)');
    expect(byCause?.metrics.map((m) => [m.namespace, m.metricName, m.dimensions, m.options.stat, m.options.label])).toEqual(
      DEAD_LETTER_CAUSE_LIST.map((cause) => ['SqsWebhookRelay', 'DeadLettered', { service: name, [CAUSE_DIMENSION]: cause }, 'Sum', cause]),
    );
    const age = widgets.find((w) => w.title === 'Age of oldest dead letter (days)');
    expect(age?.metrics.find((m) => m.metricName === 'ApproximateAgeOfOldestMessage')?.dimensions).toEqual({ QueueName: '<token>' });
    expect(age?.annotations.map((a) => [a.value, a.label])).toEqual([
      [10, 'alarm'],
      [14, 'SQS deletes it'],
    ]);
    expect(widgets.find((w) => w.type === 'alarm')?.alarms).toHaveLength(6);
    // Its three graphs share one row.
    const titles = widgets.map((w) => w.title);
    const depth = titles.indexOf('Dead-letter queue depth');
    expect(titles.slice(depth, depth + 3)).toEqual([
      'Dead-letter queue depth',
      'Dead-lettered by cause (per minute)',
      'Age of oldest dead letter (days)',
    ]);
  });

  it('-c deadLetterAgeAlarmDays moves the threshold and what the description says is left', () => {
    const { template: seven } = synth({ deadLetterAgeAlarmDays: '7' });
    const alarm = alarmNamed(seven, '-dlq-oldest-message-age');
    expect(alarm.Threshold).toBe(7 * 86_400);
    expect(String(alarm.AlarmDescription)).toContain('7 days are left at most');
    for (const days of ['0', '14', 'ten']) expect(() => synth({ deadLetterAgeAlarmDays: days })).toThrow(ContextError);
    expect(() => synth({ deadLetterAgeAlarmDays: '14' })).toThrow(/deadLetterAgeAlarmDays/);
  });

  it('the prop deadLetterAgeAlarmThreshold takes 1 hour to 13 days', () => {
    const withProp = (threshold: Duration): Template => {
      const stack = new Stack(testApp(), 'P');
      new WebhookRelay(stack, 'Relay', { ...WEBHOOK, deadLetterAgeAlarmThreshold: threshold });
      return Template.fromStack(stack);
    };
    expect(alarmNamed(withProp(Duration.hours(36)), '-dlq-oldest-message-age').Threshold).toBe(36 * 3600);
    expect(String(alarmNamed(withProp(Duration.hours(36)), '-dlq-oldest-message-age').AlarmDescription)).toContain(
      '12 days 12 hours are left',
    );
    expect(() => withProp(Duration.days(14))).toThrow(WebhookRelayConfigError);
    expect(() => withProp(Duration.minutes(30))).toThrow(/deadLetterAgeAlarmThreshold must be from 1 hour to 13 days/);
  });

  it('describes the DLQ output with the command that reads it', () => {
    template.hasOutput('DeadLetterQueueUrl', { Description: Match.stringLikeRegexp('dead-letters summary') });
  });
});
