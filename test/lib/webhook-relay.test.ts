/**
 * The `WebhookRelay` construct's template: what an operator gets by default, what every
 * non-default knob changes, attaching to an existing queue, and the synth-time errors for values
 * SQS, Lambda or the function would reject.
 */
import { CfnParameter, Duration, SecretValue, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config';
import { METRIC_NAMES } from '../../lambda/metric-names';
import {
  BACKOFF_POLICIES,
  METRICS_NAMESPACE,
  RELAY_METRICS,
  WebhookRelay,
  WebhookRelayConfigError,
  type WebhookRelayProps,
} from '../../lib/index';
import { dashboardWidgets, onlyResource, resourcesOf, testApp } from './helpers';

const URL_ = 'https://hooks.example.com/relay';

function relay(
  props: Partial<WebhookRelayProps> = {},
  configure?: (stack: Stack) => Partial<WebhookRelayProps>,
): { stack: Stack; relay: WebhookRelay; template: Template } {
  const stack = new Stack(testApp(), 'Test');
  const extra = configure?.(stack) ?? {};
  const construct = new WebhookRelay(stack, 'Relay', { webhookUrl: URL_, ...props, ...extra });
  return { stack, relay: construct, template: Template.fromStack(stack) };
}

/** The function's environment variables as the template states them. */
function environmentOf(template: Template): Record<string, unknown> {
  const { properties } = onlyResource(template, 'AWS::Lambda::Function');
  return (properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

/** Logical ids of the main queue (the one with a redrive policy) and the DLQ. */
function queueIds(template: Template): { queue: string; dlq: string } {
  const queues = Object.entries(resourcesOf(template, 'AWS::SQS::Queue'));
  const main = queues.find(([, q]) => q.Properties.RedrivePolicy !== undefined);
  const other = queues.find(([, q]) => q.Properties.RedrivePolicy === undefined);
  if (main === undefined || other === undefined) throw new Error('expected a queue and a DLQ');
  return { queue: main[0], dlq: other[0] };
}

describe('WebhookRelay with default props', () => {
  const { stack, template, relay: r } = relay();
  const ids = queueIds(template);

  it('creates a standard queue and a DLQ joined by a redrive policy whose count backs up the 24-hour window: 86,400 s / 180 s + 3 = 483', () => {
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [ids.dlq, 'Arn'] }, maxReceiveCount: 483 },
      FifoQueue: Match.absent(),
    });
  });

  it('keeps dead letters 14 days and main-queue messages 4 days', () => {
    expect(resourcesOf(template, 'AWS::SQS::Queue')[ids.dlq]?.Properties.MessageRetentionPeriod).toBe(14 * 24 * 3600);
    expect(resourcesOf(template, 'AWS::SQS::Queue')[ids.queue]?.Properties.MessageRetentionPeriod).toBe(4 * 24 * 3600);
  });

  it('takes messages of up to 1 MiB on both queues, stated rather than left to a default that was 256 KiB', () => {
    for (const id of [ids.queue, ids.dlq])
      expect(resourcesOf(template, 'AWS::SQS::Queue')[id]?.Properties.MaximumMessageSize).toBe(1_048_576);
  });

  it('encrypts both queues with SQS-managed keys', () => {
    for (const queue of Object.values(resourcesOf(template, 'AWS::SQS::Queue'))) {
      expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
      expect(queue.Properties.KmsMasterKeyId).toBeUndefined();
    }
  });

  it('denies every non-TLS request on both queues', () => {
    for (const id of [ids.queue, ids.dlq]) {
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: id }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Action: 'sqs:*',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
              Resource: { 'Fn::GetAtt': [id, 'Arn'] },
            }),
          ]),
        },
      });
    }
  });

  it('derives the visibility timeout as 6 × the function timeout (30 s → 180 s)', () => {
    const { properties } = onlyResource(template, 'AWS::Lambda::Function');
    expect(properties.Timeout).toBe(30);
    expect(resourcesOf(template, 'AWS::SQS::Queue')[ids.queue]?.Properties.VisibilityTimeout).toBe(6 * 30);
  });

  it('runs the handler on Node.js 24, ARM64, 256 MB, from lambda/handler.ts', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      MemorySize: 256,
      Handler: 'index.handler',
    });
  });

  it('gives the function every setting the handler reads, with the handler defaults', () => {
    expect(environmentOf(template)).toEqual({
      WEBHOOK_URL: URL_,
      ALLOW_INSECURE_HTTP: 'false',
      HEADER_PREFIX: 'X-Carrier-',
      DEFAULT_CONTENT_TYPE: 'application/json',
      REQUEST_TIMEOUT_MS: '10000',
      MAX_CONCURRENCY: '10',
      DEADLINE_MARGIN_MS: '1000',
      BACKOFF: 'exponential',
      BACKOFF_BASE_SECONDS: '2',
      BACKOFF_MAX_SECONDS: '300',
      BACKOFF_JITTER: 'true',
      PERMANENT_FAILURE: 'dead-letter',
      DLQ_URL: { Ref: ids.dlq },
      MAX_RECEIVE_COUNT: '483',
      RETRY_WINDOW_HOURS: '24',
      MAX_REQUESTS_PER_SECOND: '0',
      CONCURRENT_INVOCATIONS: '5',
      PACING: 'true',
      SIGNING_SECRET_ARN: { Ref: onlyResource(template, 'AWS::SecretsManager::Secret').id },
      SECRETS_REFRESH_SECONDS: '300',
      OUTAGE_THRESHOLD: '5',
      OUTAGE_BACKOFF_SECONDS: '10',
      OUTAGE_BACKOFF_MAX_SECONDS: '900',
      POWERTOOLS_SERVICE_NAME: 'Test-Relay',
      POWERTOOLS_METRICS_NAMESPACE: 'SqsWebhookRelay',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      NODE_OPTIONS: '--enable-source-maps',
    });
  });

  it('states exactly the configuration the handler would use without those variables', () => {
    // A drift detector: the construct's defaults and the handler's must not disagree.
    const deployTime: Record<string, string> = {
      DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dlq',
      SIGNING_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:signing-AbCdEf',
    };
    const stated = Object.fromEntries(
      Object.entries(environmentOf(template)).map(([name, value]) => [name, typeof value === 'string' ? value : deployTime[name]]),
    );
    const bare = { WEBHOOK_URL: URL_, MAX_RECEIVE_COUNT: '483', CONCURRENT_INVOCATIONS: '5', ...deployTime };
    expect(loadConfig(stated)).toEqual(loadConfig(bare));
  });

  it('writes logs to its own log group, kept one month', () => {
    const logGroup = onlyResource(template, 'AWS::Logs::LogGroup');
    expect(logGroup.properties.RetentionInDays).toBe(30);
    template.hasResourceProperties('AWS::Lambda::Function', { LoggingConfig: { LogGroup: { Ref: logGroup.id } } });
  });

  it('grants least privilege: its queue, its DLQ, its log group, and no wildcard resource', () => {
    const { properties } = onlyResource(template, 'AWS::IAM::Policy');
    const statements = (properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }).Statement;
    const byResource = new Map(statements.map((s) => [JSON.stringify(s.Resource), [s.Action].flat().sort()]));
    expect(byResource.get(JSON.stringify({ 'Fn::GetAtt': [ids.queue, 'Arn'] }))).toEqual([
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ]);
    // SendMessage alone: the function has the DLQ's URL (DLQ_URL) and never asks for it or its attributes.
    expect(byResource.get(JSON.stringify({ 'Fn::GetAtt': [ids.dlq, 'Arn'] }))).toEqual(['sqs:SendMessage']);
    const logGroup = onlyResource(template, 'AWS::Logs::LogGroup');
    expect(byResource.get(JSON.stringify({ 'Fn::GetAtt': [logGroup.id, 'Arn'] }))).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
    // The value of its own signing secret, and nothing else in Secrets Manager (no DescribeSecret: never called).
    const secret = onlyResource(template, 'AWS::SecretsManager::Secret');
    expect(byResource.get(JSON.stringify({ Ref: secret.id }))).toEqual(['secretsmanager:GetSecretValue']);
    expect(statements).toHaveLength(4);
    for (const s of statements) expect(JSON.stringify(s.Resource)).not.toMatch(/"\*"/);
    // No managed policy (AWSLambdaBasicExecutionRole would allow writing to any log group).
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
  });

  it('maps the queue to the function with partial batch responses, 10 records, 5 concurrent invocations, no window', () => {
    const fn = onlyResource(template, 'AWS::Lambda::Function');
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [ids.queue, 'Arn'] },
      FunctionName: { Ref: fn.id },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      ScalingConfig: { MaximumConcurrency: 5 },
      MaximumBatchingWindowInSeconds: Match.absent(),
    });
  });

  it('alarms on a non-empty DLQ: visible messages > 0 over 5 minutes, missing data not breaching', () => {
    const topic = onlyResource(template, 'AWS::SNS::Topic');
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'Test-Relay-dlq-not-empty',
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [ids.dlq, 'QueueName'] } }],
      Statistic: 'Maximum',
      Period: 300,
      EvaluationPeriods: 1,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: topic.id }],
      OKActions: [{ Ref: topic.id }],
      AlarmDescription: Match.stringLikeRegexp('redrive'),
    });
  });

  it('words the DLQ alarm and the dashboard by the retry window, not a receive count', () => {
    const descriptions = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).map((a) => String(a.Properties.AlarmDescription));
    const dlq = descriptions.find((d) => d.startsWith('Messages are in the dead-letter queue'));
    expect(dlq).toContain('kept failing for their whole retry window (24 hours)');
    expect(descriptions.join(' ')).not.toMatch(/failed \d+ times|outageTolerance/);
    const text = dashboardWidgets(stack).find((w) => w.type === 'text')?.markdown;
    expect(text).toContain('**dead-lettered** = refused permanently or kept failing for their whole retry window (24 hours)');
  });

  it('alarms when the oldest message is older than 30 minutes', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'Test-Relay-oldest-message-age',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [ids.queue, 'QueueName'] } }],
      Threshold: 1800,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms when a message the relay handed back is older than 30 minutes, on its own metric, through the quiet hours', () => {
    // SQS's age leaves out a message received three times: through an outage or a refusing webhook, only the relay's counts.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'Test-Relay-returned-message-age',
      Namespace: 'SqsWebhookRelay',
      MetricName: 'AgeOfOldestReturnedMessage',
      Dimensions: [{ Name: 'service', Value: 'Test-Relay' }],
      Statistic: 'Maximum',
      Threshold: 1800,
      ComparisonOperator: 'GreaterThanThreshold',
      // A long hold or Retry-After leaves hours without an invocation: the alarm keeps its state, 0 ends it.
      TreatMissingData: 'ignore',
    });
  });

  it('alarms on any function error', () => {
    const fn = onlyResource(template, 'AWS::Lambda::Function');
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'Test-Relay-function-errors',
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: fn.id } }],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('sends alarms to a TLS-only topic with no subscription unless an e-mail is given', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', 6);
    template.resourceCountIs('AWS::SNS::Subscription', 0);
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: [Match.objectLike({ Effect: 'Deny', Action: 'sns:Publish', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })],
      },
    });
  });

  describe('the dashboard', () => {
    const widgets = dashboardWidgets(stack);
    const metricLines = widgets.flatMap((w) => w.metrics.map((m) => ({ ...m, title: w.title })));
    const find = (namespace: string, metricName: string): typeof metricLines =>
      metricLines.filter((m) => m.namespace === namespace && m.metricName === metricName);

    it('is named after the relay', () => {
      template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'Test-Relay' });
    });

    it('shows delivered, retried and dead-lettered from the handler metrics (namespace SqsWebhookRelay, dimension service)', () => {
      for (const name of ['Delivered', 'Retried', 'DeadLettered']) {
        // (DeadLettered by cause, dimensions service and cause, has a graph of its own: test/lib/dead-letters.test.ts.)
        expect(find('SqsWebhookRelay', name).filter((m) => m.dimensions.cause === undefined)).toEqual([
          expect.objectContaining({ dimensions: { service: 'Test-Relay' }, options: expect.objectContaining({ stat: 'Sum' }) }),
        ]);
      }
    });

    it('shows webhook latency p50 and p99', () => {
      expect(
        find('SqsWebhookRelay', 'WebhookLatency')
          .map((m) => m.options.stat)
          .sort(),
      ).toEqual(['p50', 'p99']);
    });

    it("shows queue depth, oldest age, DLQ depth and the oldest dead letter's age", () => {
      expect(find('AWS/SQS', 'ApproximateNumberOfMessagesVisible')).toHaveLength(2);
      expect(find('AWS/SQS', 'ApproximateNumberOfMessagesNotVisible')).toHaveLength(1);
      expect(find('AWS/SQS', 'ApproximateAgeOfOldestMessage').map((m) => m.title)).toEqual([
        'Age of oldest message (s)',
        'Age of oldest dead letter (days)',
      ]);
    });

    it("draws the relay's age of the oldest message it handed back beside SQS's, on the same graph", () => {
      expect(find('SqsWebhookRelay', 'AgeOfOldestReturnedMessage')).toEqual([
        expect.objectContaining({
          title: 'Age of oldest message (s)',
          dimensions: { service: 'Test-Relay' },
          options: expect.objectContaining({ stat: 'Maximum' }),
        }),
      ]);
    });

    it('shows function errors, duration and concurrent executions', () => {
      expect(find('AWS/Lambda', 'Errors')).toHaveLength(1);
      expect(
        find('AWS/Lambda', 'Duration')
          .map((m) => m.options.stat)
          .sort(),
      ).toEqual(['Maximum', 'p50', 'p99']);
      expect(find('AWS/Lambda', 'ConcurrentExecutions')).toHaveLength(1);
    });

    it('shows the state of the six alarms', () => {
      expect(widgets.find((w) => w.type === 'alarm')?.alarms).toHaveLength(6);
    });

    it("shows the webhook's pace: the requests/s limit (average and slowest container), the in-flight limit, requests refused", () => {
      const pace = widgets.find((w) => w.title === 'Webhook pace');
      expect(pace?.metrics.map((m) => [m.namespace, m.metricName, m.options.stat ?? 'Average', m.dimensions])).toEqual([
        ['SqsWebhookRelay', 'PaceRequestsPerSecond', 'Average', { service: 'Test-Relay' }],
        ['SqsWebhookRelay', 'PaceRequestsPerSecond', 'Minimum', { service: 'Test-Relay' }],
        ['SqsWebhookRelay', 'PaceInFlightLimit', 'Average', { service: 'Test-Relay' }],
        ['SqsWebhookRelay', 'RequestsRefused', 'Sum', { service: 'Test-Relay' }],
      ]);
    });

    it('names the same metrics the handler publishes', () => {
      expect(RELAY_METRICS).toBe(METRIC_NAMES); // one list, imported, not copied
      for (const name of Object.values(METRIC_NAMES)) expect(find('SqsWebhookRelay', name).length, name).toBeGreaterThan(0);
      expect(METRICS_NAMESPACE).toBe('SqsWebhookRelay');
    });
  });

  it('exposes what a caller needs to extend it', () => {
    expect(r.queue.fifo).toBe(false);
    expect(r.maxReceiveCount).toBe(483);
    expect(r.retryWindow?.toSeconds()).toBe(86_400);
    expect(r.name).toBe('Test-Relay');
    expect(Object.keys(r.environment)).toContain('WEBHOOK_URL');
  });

  it('has no warnings', () => {
    Annotations.fromStack(stack).hasNoWarning('*', Match.anyValue());
  });
});

describe('WebhookRelay with non-default props', () => {
  it('FIFO: both queues are FIFO, named <name>.fifo and <name>-dlq.fifo', () => {
    const { template } = relay({ fifo: true, queueName: 'orders' });
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.hasResourceProperties('AWS::SQS::Queue', { QueueName: 'orders.fifo', FifoQueue: true, RedrivePolicy: Match.anyValue() });
    template.hasResourceProperties('AWS::SQS::Queue', { QueueName: 'orders-dlq.fifo', FifoQueue: true, RedrivePolicy: Match.absent() });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 10, MaximumBatchingWindowInSeconds: Match.absent() });
  });

  it('a custom maxReceiveCount goes to the redrive policy and to MAX_RECEIVE_COUNT alike', () => {
    const { template } = relay({ maxReceiveCount: 12 });
    template.hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: Match.objectLike({ maxReceiveCount: 12 }) });
    expect(environmentOf(template).MAX_RECEIVE_COUNT).toBe('12');
  });

  it('a longer timeout lengthens the visibility timeout with it, window included (6 × 120 + 20)', () => {
    const { template } = relay({ timeout: Duration.minutes(2), batchSize: 500, maxBatchingWindow: Duration.seconds(20) });
    const ids = queueIds(template);
    expect(resourcesOf(template, 'AWS::SQS::Queue')[ids.queue]?.Properties.VisibilityTimeout).toBe(740);
    template.hasResourceProperties('AWS::Lambda::Function', { Timeout: 120 });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 500, MaximumBatchingWindowInSeconds: 20 });
  });

  it('every function knob reaches its environment variable', () => {
    const { template } = relay({
      allowInsecureHttp: true,
      webhookUrl: 'http://relay.internal:8080/in',
      headerPrefix: 'X-Relay-',
      defaultContentType: 'text/plain',
      requestTimeout: Duration.seconds(4),
      requestConcurrency: 25,
      deadlineMargin: Duration.millis(2500),
      backoff: 'schedule',
      backoffSchedule: [Duration.minutes(1), Duration.minutes(10), Duration.hours(1)],
      backoffBase: Duration.seconds(5),
      backoffMax: Duration.minutes(20),
      backoffJitter: false,
      permanentFailure: 'retry',
      logLevel: 'DEBUG',
      serviceName: 'orders-relay',
      pacing: false,
      maxRequestsPerSecond: 200,
      maxConcurrency: 8,
      retryWindow: Duration.minutes(90),
    });
    expect(environmentOf(template)).toMatchObject({
      PACING: 'false',
      MAX_REQUESTS_PER_SECOND: '200',
      CONCURRENT_INVOCATIONS: '8',
      RETRY_WINDOW_HOURS: '1.5',
      WEBHOOK_URL: 'http://relay.internal:8080/in',
      ALLOW_INSECURE_HTTP: 'true',
      HEADER_PREFIX: 'X-Relay-',
      DEFAULT_CONTENT_TYPE: 'text/plain',
      REQUEST_TIMEOUT_MS: '4000',
      MAX_CONCURRENCY: '25',
      DEADLINE_MARGIN_MS: '2500',
      BACKOFF: 'schedule',
      BACKOFF_SCHEDULE: '60,600,3600',
      BACKOFF_BASE_SECONDS: '5',
      BACKOFF_MAX_SECONDS: '1200',
      BACKOFF_JITTER: 'false',
      PERMANENT_FAILURE: 'retry',
      POWERTOOLS_LOG_LEVEL: 'DEBUG',
      POWERTOOLS_SERVICE_NAME: 'orders-relay',
    });
  });

  it('memory, log retention, concurrency, age threshold and e-mail subscription', () => {
    const { template } = relay({
      memorySize: 1024,
      logRetention: logs.RetentionDays.ONE_WEEK,
      maxConcurrency: 50,
      oldestMessageAgeThreshold: Duration.hours(2),
      alarmEmail: 'ops@example.com',
      retentionPeriod: Duration.days(14),
    });
    template.hasResourceProperties('AWS::Lambda::Function', { MemorySize: 1024 });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 7 });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { ScalingConfig: { MaximumConcurrency: 50 } });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateAgeOfOldestMessage', Threshold: 7200 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'AgeOfOldestReturnedMessage', Threshold: 7200 });
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    template.hasResourceProperties('AWS::SQS::Queue', { MessageRetentionPeriod: 14 * 24 * 3600, RedrivePolicy: Match.anyValue() });
  });

  it('an explicit visibility timeout above the minimum is used as given', () => {
    const { template } = relay({ visibilityTimeout: Duration.minutes(15) });
    template.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 900, RedrivePolicy: Match.anyValue() });
  });

  it('an existing alarm topic receives the alarms; no topic is created', () => {
    const { template } = relay({}, (stack) => ({
      alarmTopic: sns.Topic.fromTopicArn(stack, 'Ops', 'arn:aws:sns:eu-west-1:111122223333:ops'),
    }));
    template.resourceCountIs('AWS::SNS::Topic', 0);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmActions: ['arn:aws:sns:eu-west-1:111122223333:ops'] });
  });

  it('warns when a request could outlive the function', () => {
    const { stack } = relay({ timeout: Duration.seconds(5), requestTimeout: Duration.seconds(10) });
    Annotations.fromStack(stack).hasWarning('/Test/Relay', Match.stringLikeRegexp('requestTimeout.*exceeds the function timeout'));
  });
});

describe('WebhookRelay on an existing queue: its protection is checked', () => {
  /** The visibility timeout the construct asks for (6 × 30 s): no other warning in the way. */
  const THREE_MINUTES = Duration.minutes(3);
  /** The protection warnings of a synth (ids and texts). */
  function protection(configure: (stack: Stack) => Partial<WebhookRelayProps>): { id: string; text: string }[] {
    const { stack } = relay({ maxReceiveCount: 3, retryWindow: Duration.seconds(0) }, configure);
    return Annotations.fromStack(stack)
      .findWarning('*', Match.anyValue())
      .map((warning) => ({ text: String(warning.entry.data), id: /\[ack: ([^\]]+)\]/.exec(String(warning.entry.data))?.[1] ?? '' }))
      .filter((warning) => /encrypted|TLS/.test(warning.text));
  }

  it('queues of this app made as the construct makes its own (encrypted, TLS only): no warning', () => {
    expect(
      protection((stack) => {
        const dlq = new sqs.Queue(stack, 'D', { enforceSSL: true, encryption: sqs.QueueEncryption.KMS_MANAGED });
        return {
          queue: new sqs.Queue(stack, 'Q', {
            visibilityTimeout: THREE_MINUTES,
            enforceSSL: true,
            deadLetterQueue: { queue: dlq, maxReceiveCount: 3 },
          }),
        };
      }),
    ).toEqual([]);
  });

  it('a queue of this app unencrypted and without a TLS policy, its DLQ likewise: a warning for each, naming the fix', () => {
    const warnings = protection((stack) => {
      const dlq = new sqs.Queue(stack, 'D', { queueName: 'orders-dlq', encryption: sqs.QueueEncryption.UNENCRYPTED });
      return {
        queue: new sqs.Queue(stack, 'Q', {
          queueName: 'orders',
          visibilityTimeout: THREE_MINUTES,
          encryption: sqs.QueueEncryption.UNENCRYPTED,
          deadLetterQueue: { queue: dlq, maxReceiveCount: 3 },
        }),
      };
    });
    expect(warnings.map((warning) => warning.id)).toEqual([
      'sqs-webhook-relay:queueNotEncrypted',
      'sqs-webhook-relay:queueAllowsPlainHttp',
      'sqs-webhook-relay:queueNotEncrypted',
      'sqs-webhook-relay:queueAllowsPlainHttp',
    ]);
    expect(warnings[0]?.text).toContain('The queue (orders) is not encrypted at rest (encryption: UNENCRYPTED)');
    expect(warnings[3]?.text).toContain('The deadLetterQueue (orders-dlq) accepts requests without TLS');
    expect(warnings[3]?.text).toContain('enforceSSL: true');
  });

  it('a TLS policy of its own (a QueuePolicy naming the queue) counts as enforceSSL does', () => {
    const warnings = protection((stack) => {
      const dlq = new sqs.Queue(stack, 'D', { enforceSSL: true });
      const queue = new sqs.Queue(stack, 'Q', { visibilityTimeout: THREE_MINUTES, deadLetterQueue: { queue: dlq, maxReceiveCount: 3 } });
      const policy = new sqs.QueuePolicy(stack, 'TlsOnly', { queues: [queue] });
      policy.document.addStatements(
        new iam.PolicyStatement({
          effect: iam.Effect.DENY,
          actions: ['sqs:*'],
          principals: [new iam.AnyPrincipal()],
          resources: [queue.queueArn],
          conditions: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      );
      return { queue };
    });
    expect(warnings).toEqual([]);
  });

  it('imported queues: one warning that their protection cannot be seen, naming both and how to check', () => {
    const warnings = protection((stack) => ({
      queue: sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:111122223333:orders'),
      deadLetterQueue: sqs.Queue.fromQueueArn(stack, 'D', 'arn:aws:sqs:eu-west-1:111122223333:orders-dlq'),
    }));
    expect(warnings.map((warning) => warning.id)).toEqual(['sqs-webhook-relay:importedQueueProtection']);
    expect(warnings[0]?.text).toContain('the imported queue (orders) and deadLetterQueue (orders-dlq) are encrypted at rest and refuse');
    expect(warnings[0]?.text).toContain('aws sqs get-queue-attributes');
  });

  it("an imported DLQ: the same warning asks for its retention, 14 days, which the dead-letter age alarm counts on; a DLQ of the app's is checked instead", () => {
    const importedDlq = protection((stack) => ({
      queue: sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:111122223333:orders'),
      deadLetterQueue: sqs.Queue.fromQueueArn(stack, 'D', 'arn:aws:sqs:eu-west-1:111122223333:orders-dlq'),
    }));
    expect(importedDlq.map((warning) => warning.id)).toEqual(['sqs-webhook-relay:importedQueueProtection']);
    expect(importedDlq[0]?.text).toContain('nor how long the deadLetterQueue keeps a dead letter');
    expect(importedDlq[0]?.text).toContain('--attribute-names SqsManagedSseEnabled KmsMasterKeyId Policy MessageRetentionPeriod)');
    expect(importedDlq[0]?.text).toContain(
      'a MessageRetentionPeriod of 1209600 (14 days) on the deadLetterQueue, which the dlq-oldest-message-age alarm counts on',
    );
    const ownDlq = protection((stack) => ({
      queue: sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:111122223333:orders'),
      deadLetterQueue: new sqs.Queue(stack, 'D', { enforceSSL: true, retentionPeriod: Duration.days(14) }),
    }));
    expect(ownDlq.map((warning) => warning.id)).toEqual(['sqs-webhook-relay:importedQueueProtection']);
    expect(ownDlq[0]?.text).not.toContain('MessageRetentionPeriod');
  });
});

describe('WebhookRelay: two in one stack', () => {
  /** Two relays in one stack, the second's error if it is refused. */
  function twoRelays(first: Partial<WebhookRelayProps>, second: Partial<WebhookRelayProps>): Error | undefined {
    const stack = new Stack(testApp(), 'Test');
    new WebhookRelay(stack, 'Orders', { webhookUrl: URL_, ...first });
    try {
      new WebhookRelay(stack, 'Invoices', { webhookUrl: URL_, ...second });
    } catch (error) {
      return error as Error;
    }
    Template.fromStack(stack);
    return undefined;
  }

  it('each with its own name and queue names: both synthesize', () => {
    expect(twoRelays({}, {})).toBeUndefined();
    expect(twoRelays({ name: 'orders', queueName: 'orders' }, { name: 'invoices', queueName: 'invoices' })).toBeUndefined();
  });

  it.each<[string, Partial<WebhookRelayProps>, Partial<WebhookRelayProps>, string]>([
    [
      'the same name',
      { name: 'orders' },
      { name: 'orders' },
      'WebhookRelay: name "orders" is already the name of the WebhookRelay at Test/Orders in this stack: its alarms, dashboard and queries would take the same names, which a deploy refuses; give each relay its own name',
    ],
    [
      'a name the other has by default',
      {},
      { name: 'Test-Orders' },
      'WebhookRelay: name "Test-Orders" is already the name of the WebhookRelay at Test/Orders in this stack',
    ],
    [
      'the same queueName',
      { name: 'orders', queueName: 'orders' },
      { name: 'invoices', queueName: 'orders' },
      'WebhookRelay: queueName gives a queue the name orders, which the WebhookRelay at Test/Orders in this stack creates too; a deploy would refuse the second: give each relay its own queueName',
    ],
    [
      "a queueName that is the other's DLQ",
      { name: 'orders', queueName: 'orders' },
      { name: 'invoices', queueName: 'orders-dlq' },
      'WebhookRelay: queueName gives a queue the name orders-dlq, which the WebhookRelay at Test/Orders in this stack creates too',
    ],
  ])('%s: refused at synth in one line naming the prop and the other relay', (_, first, second, message) => {
    const error = twoRelays(first, second);
    expect(error).toBeInstanceOf(WebhookRelayConfigError);
    expect(error?.message.startsWith(message)).toBe(true);
    expect(error?.message).not.toContain('\n');
  });
});

describe('WebhookRelay secrets: the value, nothing more', () => {
  it('a secret by partial ARN, with a KMS key: GetSecretValue on the ARN and its suffix, and decrypt through Secrets Manager only', () => {
    const { template } = relay({}, (stack) => ({
      signingSecret: secretsmanager.Secret.fromSecretAttributes(stack, 'S', {
        secretPartialArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-signing',
        encryptionKey: new kms.Key(stack, 'SigningKey'),
      }),
    }));
    const statements = (onlyResource(template, 'AWS::IAM::Policy').properties.PolicyDocument as { Statement: unknown[] }).Statement;
    expect(statements).toContainEqual({
      Action: 'secretsmanager:GetSecretValue',
      Effect: 'Allow',
      Resource: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-signing-??????',
    });
    expect(JSON.stringify(statements)).not.toContain('DescribeSecret');
    // The key's own policy lets the function decrypt, through Secrets Manager only (as grantRead does).
    const keyPolicy = JSON.stringify(onlyResource(template, 'AWS::KMS::Key').properties.KeyPolicy);
    expect(keyPolicy).toContain('kms:Decrypt');
    expect(keyPolicy).toMatch(/kms:ViaService.*secretsmanager\./);
  });
});

describe('WebhookRelay on an existing queue', () => {
  it('a Queue with its own DLQ: relays from it, uses its DLQ and receive count, creates no queue', () => {
    const { template, relay: r } = relay({}, (stack) => {
      const dlq = new sqs.Queue(stack, 'TheirDlq', { enforceSSL: true });
      const queue = new sqs.Queue(stack, 'TheirQueue', {
        visibilityTimeout: Duration.minutes(5),
        deadLetterQueue: { queue: dlq, maxReceiveCount: 9 },
        enforceSSL: true,
      });
      return { queue };
    });
    template.resourceCountIs('AWS::SQS::Queue', 2); // theirs only
    const ids = queueIds(template);
    expect(ids.queue).toMatch(/^TheirQueue/);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: { 'Fn::GetAtt': [ids.queue, 'Arn'] } });
    expect(environmentOf(template)).toMatchObject({ DLQ_URL: { Ref: ids.dlq }, MAX_RECEIVE_COUNT: '9' });
    expect(r.maxReceiveCount).toBe(9);
  });

  it('an imported queue with its DLQ given: grants on those ARNs only', () => {
    const queueArn = 'arn:aws:sqs:eu-west-1:111122223333:orders';
    const dlqArn = 'arn:aws:sqs:eu-west-1:111122223333:orders-dlq';
    const { template } = relay({ maxReceiveCount: 3 }, (stack) => ({
      queue: sqs.Queue.fromQueueArn(stack, 'Q', queueArn),
      deadLetterQueue: sqs.Queue.fromQueueArn(stack, 'D', dlqArn),
    }));
    template.resourceCountIs('AWS::SQS::Queue', 0);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: queueArn });
    const { properties } = onlyResource(template, 'AWS::IAM::Policy');
    const resources = (properties.PolicyDocument as { Statement: { Resource: unknown }[] }).Statement.map((s) => s.Resource);
    expect(resources).toEqual(expect.arrayContaining([queueArn, dlqArn]));
    expect(environmentOf(template).MAX_RECEIVE_COUNT).toBe('3');
    expect(JSON.stringify(environmentOf(template).DLQ_URL)).toContain('orders-dlq');
  });

  it("a DLQ encrypted with the app's KMS key: the function may generate a data key and decrypt with it, nothing more", () => {
    const { template } = relay({}, (stack) => {
      const key = new kms.Key(stack, 'DlqKey');
      const dlq = new sqs.Queue(stack, 'TheirDlq', {
        enforceSSL: true,
        encryption: sqs.QueueEncryption.KMS,
        encryptionMasterKey: key,
        retentionPeriod: Duration.days(14),
      });
      return {
        queue: new sqs.Queue(stack, 'TheirQueue', {
          visibilityTimeout: Duration.minutes(3),
          enforceSSL: true,
          deadLetterQueue: { queue: dlq, maxReceiveCount: 500 },
        }),
      };
    });
    const keyId = Object.keys(resourcesOf(template, 'AWS::KMS::Key'))[0];
    const statements = (onlyResource(template, 'AWS::IAM::Policy').properties.PolicyDocument as { Statement: { Action: unknown }[] })
      .Statement;
    const onKey = statements.filter((statement) => JSON.stringify(statement.Action).includes('kms:'));
    // What SQS asks of a producer to an SSE-KMS queue; no kms:Encrypt or kms:ReEncrypt*, in the role or the key's policy.
    expect(onKey).toEqual([
      { Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Effect: 'Allow', Resource: { 'Fn::GetAtt': [keyId, 'Arn'] } },
    ]);
    expect(JSON.stringify(template.toJSON())).not.toMatch(/kms:Encrypt|kms:ReEncrypt|kms:GenerateDataKey\*/);
  });

  it('an imported FIFO queue: FIFO batch limits apply', () => {
    expect(() =>
      relay({ batchSize: 20, maxBatchingWindow: Duration.seconds(1) }, (stack) => ({
        queue: sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:111122223333:orders.fifo'),
        deadLetterQueue: sqs.Queue.fromQueueArn(stack, 'D', 'arn:aws:sqs:eu-west-1:111122223333:orders-dlq.fifo'),
      })),
    ).toThrow(/batchSize must be at most 10 for a FIFO queue \(Lambda's limit for FIFO event sources\); got 20/);
  });

  it.each([
    [
      'no DLQ anywhere',
      (stack: Stack) => ({ queue: sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:1:q') }),
      /deadLetterQueue is required with an existing queue/,
    ],
    [
      'a DLQ of another kind',
      (stack: Stack) => ({
        queue: sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:1:q'),
        deadLetterQueue: sqs.Queue.fromQueueArn(stack, 'D', 'arn:aws:sqs:eu-west-1:1:d.fifo'),
      }),
      /same kind as the queue \(standard\)/,
    ],
    [
      'a visibility timeout shorter than the function timeout',
      (stack: Stack) => ({
        queue: new sqs.Queue(stack, 'Q', {
          visibilityTimeout: Duration.seconds(10),
          deadLetterQueue: { queue: new sqs.Queue(stack, 'D'), maxReceiveCount: 3 },
        }),
      }),
      /visibility timeout of 10 s, shorter than the function timeout \(30 s\)/,
    ],
    [
      'settings for a queue the construct does not create',
      (stack: Stack) => ({ retentionPeriod: Duration.days(1), queue: sqs.Queue.fromQueueArn(stack, 'Q', 'arn:aws:sqs:eu-west-1:1:q') }),
      /retentionPeriod applies to a queue the construct creates/,
    ],
    [
      'a receive count that contradicts the queue',
      (stack: Stack) => ({
        maxReceiveCount: 4,
        queue: new sqs.Queue(stack, 'Q', {
          visibilityTimeout: Duration.minutes(3),
          deadLetterQueue: { queue: new sqs.Queue(stack, 'D'), maxReceiveCount: 3 },
        }),
      }),
      /maxReceiveCount \(4\) differs from the queue's redrive policy \(3\)/,
    ],
  ])('rejects %s', (_name, configure, message) => {
    expect(() => relay({}, configure)).toThrow(message);
  });

  it('warns when the visibility timeout is below 6 × the function timeout', () => {
    const { stack } = relay({}, (s) => ({
      queue: new sqs.Queue(s, 'Q', {
        visibilityTimeout: Duration.seconds(60),
        deadLetterQueue: { queue: new sqs.Queue(s, 'D'), maxReceiveCount: 3 },
      }),
    }));
    Annotations.fromStack(stack).hasWarning('/Test/Relay', Match.stringLikeRegexp('below 6 × timeout'));
  });
});

describe('WebhookRelay synth-time validation', () => {
  it.each<[string, Partial<WebhookRelayProps>, RegExp]>([
    ['a relative URL', { webhookUrl: 'hooks.example.com/x' }, /webhookUrl must be an absolute URL/],
    ['a plain-http URL', { webhookUrl: 'http://hooks.example.com/x' }, /webhookUrl must be https:\/\/ .*allowInsecureHttp/],
    ['an ftp URL', { webhookUrl: 'ftp://hooks.example.com/x' }, /webhookUrl must be an https:\/\/ URL/],
    ['credentials in the URL', { webhookUrl: 'https://user:pw@hooks.example.com/x' }, /must not carry user:password/],
    ['a loopback URL', { webhookUrl: 'https://127.0.0.1:8443/x' }, /points at 127\.0\.0\.1, which in Lambda is the function itself/],
    ['a timeout over 15 minutes', { timeout: Duration.minutes(16) }, /timeout must be from 1 second to 15 minutes/],
    ['a fractional timeout', { timeout: Duration.millis(1500) }, /timeout must be a whole number of seconds/],
    ['64 MB of memory', { memorySize: 64 }, /memorySize must be a whole number from 128 to 10240/],
    ['a batch of 11 without a window', { batchSize: 11 }, /batchSize of 11 \(above 10\) needs a maxBatchingWindow of at least 1 second/],
    [
      'a batch of 10,001',
      { batchSize: 10_001, maxBatchingWindow: Duration.seconds(5) },
      /batchSize must be a whole number from 1 to 10000/,
    ],
    ['a batch of 0', { batchSize: 0 }, /batchSize must be a whole number from 1 to 10/],
    [
      'a FIFO batch of 11',
      { fifo: true, batchSize: 11, maxBatchingWindow: Duration.seconds(1) },
      /batchSize must be at most 10 for a FIFO queue \(Lambda's limit for FIFO event sources\); got 11/,
    ],
    [
      'a FIFO batching window',
      { fifo: true, maxBatchingWindow: Duration.seconds(2) },
      /maxBatchingWindow is not supported by Lambda for FIFO/,
    ],
    ['a window over 5 minutes', { maxBatchingWindow: Duration.seconds(301) }, /maxBatchingWindow must be from 0 seconds to 5 minutes/],
    ['a maximum concurrency of 1', { maxConcurrency: 1 }, /maxConcurrency must be a whole number from 2 to 1000/],
    [
      'a visibility timeout below 6 × timeout',
      { visibilityTimeout: Duration.seconds(100) },
      /visibilityTimeout \(100 s\) must be at least 6 × timeout \+ maxBatchingWindow = 180 s/,
    ],
    [
      'a visibility timeout over 12 hours',
      { visibilityTimeout: Duration.hours(13) },
      /visibilityTimeout must be from 0 seconds to 12 hours/,
    ],
    ['a receive count of 0', { maxReceiveCount: 0 }, /maxReceiveCount must be a whole number from 1 to 1000/],
    [
      'a fractional rate ceiling',
      { maxRequestsPerSecond: 2.5 },
      /maxRequestsPerSecond is rejected by the function: .*MAX_REQUESTS_PER_SECOND must be a whole number/,
    ],
    ['a retention over 14 days', { retentionPeriod: Duration.days(15) }, /retentionPeriod must be from 1 minute to 14 days/],
    [
      'a margin as long as the timeout',
      { timeout: Duration.seconds(2), deadlineMargin: Duration.seconds(2) },
      /deadlineMargin \(2 seconds\) must be shorter than timeout/,
    ],
    [
      'an unknown backoff',
      { backoff: 'random' as WebhookRelayProps['backoff'] },
      new RegExp(`backoff must be one of ${BACKOFF_POLICIES.join(', ')}; got "random"`),
    ],
    [
      'a schedule delay over 12 hours',
      { backoff: 'schedule', backoffSchedule: [Duration.hours(13)] },
      /backoffSchedule must be from 0 seconds to 12 hours/,
    ],
    [
      'a backoff base above its maximum',
      { backoffBase: Duration.minutes(10) },
      /backoffMax is rejected by the function: .*BACKOFF_MAX_SECONDS must be at least BACKOFF_BASE_SECONDS/,
    ],
    ['a header prefix with a space', { headerPrefix: 'X Carrier-' }, /headerPrefix is rejected by the function: .*HEADER_PREFIX/],
    [
      'a pace key with a space',
      { paceKey: 'tenant id' },
      /paceKey is rejected by the function: .*PACE_KEY must be a message attribute name/,
    ],
    [
      'a request concurrency of 0',
      { requestConcurrency: 0 },
      /requestConcurrency is rejected by the function: .*MAX_CONCURRENCY must be a whole number from 1 to 1000/,
    ],
    ['a bad e-mail', { alarmEmail: 'ops at example' }, /alarmEmail must be an e-mail address/],
    [
      'an age threshold under a minute',
      { oldestMessageAgeThreshold: Duration.seconds(30) },
      /oldestMessageAgeThreshold must be from 1 minute to 14 days/,
    ],
    ['a name with a space', { name: 'my relay' }, /name must be 1 to 200 letters, digits/],
    ['a queue name with a dot', { queueName: 'a.b' }, /queueName must be letters, digits/],
    [
      "a FIFO queue's name for a standard queue",
      { queueName: 'orders.fifo' },
      /queueName ends in \.fifo, a FIFO queue's name, but fifo is not true: set fifo/,
    ],
    ["a FIFO queue's name with fifo false", { queueName: 'orders.fifo', fifo: false }, /queueName ends in \.fifo/],
  ])('rejects %s', (_name, props, message) => {
    expect(() => relay(props)).toThrow(message);
  });

  // What a JavaScript app can pass that TypeScript would refuse: one line naming the prop, never a
  // TypeError from deep inside, never a value quietly read otherwise ('false' is a true string).
  it.each([
    ['timeout', 20, /^WebhookRelay: timeout must be a Duration, such as Duration\.seconds\(30\); got the number 20$/],
    ['retryWindow', 24, /^WebhookRelay: retryWindow must be a Duration, such as Duration\.hours\(24\); got the number 24$/],
    ['requestTimeout', 5000, /^WebhookRelay: requestTimeout must be a Duration, such as Duration\.millis\(10000\); got the number 5000$/],
    ['backoffBase', 5, /^WebhookRelay: backoffBase must be a Duration/],
    ['secretsRefresh', '60', /^WebhookRelay: secretsRefresh must be a Duration, .*; got the string "60"$/],
    ['backoffSchedule', [60, 600], /^WebhookRelay: backoffSchedule must be a non-empty array of Durations, such as \[Duration\.seconds/],
    ['backoffSchedule', [], /^WebhookRelay: backoffSchedule must be a non-empty array of Durations, .*; got an array \(\[\]\)$/],
    ['signing', 'false', /^WebhookRelay: signing must be true or false; got the string "false"$/],
    ['fifo', 1, /^WebhookRelay: fifo must be true or false; got the number 1$/],
    ['maxConcurrency', '20', /^WebhookRelay: maxConcurrency must be a number; got the string "20"$/],
    ['memorySize', '512', /^WebhookRelay: memorySize must be a number; got the string "512"$/],
    ['webhookUrl', 123, /^WebhookRelay: webhookUrl must be a string; got the number 123$/],
    ['alarmEmail', ['ops@example.com'], /^WebhookRelay: alarmEmail must be a string; got an array/],
    [
      'signingSecret',
      'arn:aws:secretsmanager:eu-west-1:1:secret:s',
      /^WebhookRelay: signingSecret must be a secret \(secretsmanager\.ISecret\); got the string/,
    ],
    ['queue', 'arn:aws:sqs:eu-west-1:1:q', /^WebhookRelay: queue must be a queue \(sqs\.IQueue\); got the string/],
    ['alarmTopic', 'arn:aws:sns:eu-west-1:1:t', /^WebhookRelay: alarmTopic must be a topic \(sns\.ITopic\); got the string/],
  ])('a JavaScript app passing %s = %j: one line naming it', (prop, value, message) => {
    expect(() => relay({ [prop]: value } as never)).toThrow(message);
    expect(() => relay({ [prop]: value } as never)).toThrow(WebhookRelayConfigError);
  });

  it('a JavaScript app passing no props: one line saying what they must be', () => {
    const stack = new Stack(testApp(), 'Test');
    expect(() => new WebhookRelay(stack, 'Relay', undefined as never)).toThrow(
      /^WebhookRelay: props must be an object such as \{ webhookUrl/,
    );
  });

  it('throws WebhookRelayConfigError naming the prop', () => {
    try {
      relay({ batchSize: 20 });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(WebhookRelayConfigError);
      expect((error as WebhookRelayConfigError).prop).toBe('batchSize');
    }
  });

  it('a DLQ without an existing queue is rejected', () => {
    expect(() => relay({}, (stack) => ({ deadLetterQueue: sqs.Queue.fromQueueArn(stack, 'D', 'arn:aws:sqs:eu-west-1:1:d') }))).toThrow(
      /deadLetterQueue is only for an existing queue/,
    );
  });

  it('a token URL (a parameter) is left to deploy time', () => {
    const stack = new Stack(testApp(), 'Test');
    const url = new CfnParameter(stack, 'Url', { type: 'String' }).valueAsString;
    expect(() => new WebhookRelay(stack, 'Relay', { webhookUrl: url })).not.toThrow();
  });

  it('an e-mail from a parameter goes to the subscription; a number or a Duration from one is refused in one line naming the prop', () => {
    const stack = new Stack(testApp(), 'Test');
    const email = new CfnParameter(stack, 'Email', { type: 'String' });
    new WebhookRelay(stack, 'Relay', { webhookUrl: URL_, alarmEmail: email.valueAsString });
    Template.fromStack(stack).hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: { Ref: 'Email' } });

    const tokens = new Stack(testApp(), 'Tokens');
    const count = new CfnParameter(tokens, 'Count', { type: 'Number' }).valueAsNumber;
    for (const [prop, value] of [
      ['batchSize', count],
      ['maxConcurrency', count],
      ['maxRequestsPerSecond', count],
      ['timeout', Duration.seconds(count)],
      ['retryWindow', Duration.millis(count)],
      ['backoffSchedule', [Duration.seconds(60), Duration.seconds(count)]],
    ] as const) {
      expect(() => new WebhookRelay(tokens, `Relay-${prop}`, { webhookUrl: URL_, [prop]: value })).toThrow(
        new RegExp(`^WebhookRelay: ${prop} must be a value known at synth, not a token \\(a CfnParameter, an attribute\\)`),
      );
    }
  });
});

describe('WebhookRelay secrets', () => {
  it('signs with a created secret by default: a generated key, read access to it alone, its ARN in the environment', () => {
    const { template, relay: r } = relay();
    const secret = onlyResource(template, 'AWS::SecretsManager::Secret');
    expect(secret.properties.GenerateSecretString).toEqual({ PasswordLength: 48, ExcludePunctuation: true, IncludeSpace: false });
    expect(secret.properties.SecretString).toBeUndefined(); // never a value in the template
    expect(environmentOf(template).SIGNING_SECRET_ARN).toEqual({ Ref: secret.id });
    expect(r.signingSecret).toBeDefined();
  });

  it('signing false: no secret, no signature variable', () => {
    const { template, relay: r } = relay({ signing: false });
    template.resourceCountIs('AWS::SecretsManager::Secret', 0);
    expect(environmentOf(template).SIGNING_SECRET_ARN).toBeUndefined();
    expect(r.signingSecret).toBeUndefined();
    expect(() =>
      relay({ signing: false }, (stack) => ({ signingSecret: secretsmanager.Secret.fromSecretNameV2(stack, 'S', 'mine') })),
    ).toThrow(/signing is false, but a signingSecret was given/);
  });

  it('an existing signing secret and an auth secret: referenced by ARN, readable by the function, nothing created', () => {
    const signingArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-signing-AbCdEf';
    const authArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-auth-GhIjKl';
    const { template } = relay({}, (stack) => ({
      signingSecret: secretsmanager.Secret.fromSecretCompleteArn(stack, 'Signing', signingArn),
      authSecret: secretsmanager.Secret.fromSecretCompleteArn(stack, 'Auth', authArn),
    }));
    template.resourceCountIs('AWS::SecretsManager::Secret', 0);
    expect(environmentOf(template)).toMatchObject({ SIGNING_SECRET_ARN: signingArn, AUTH_SECRET_ARN: authArn });
    const statements = (
      onlyResource(template, 'AWS::IAM::Policy').properties.PolicyDocument as { Statement: { Action: string[]; Resource: unknown }[] }
    ).Statement;
    for (const arn of [signingArn, authArn]) {
      // CDK may merge both grants into one statement with two resources.
      const grant = statements.find((s) => [s.Resource].flat().includes(arn));
      expect([grant?.Action].flat().sort(), arn).toEqual(['secretsmanager:GetSecretValue']);
    }
    expect(JSON.stringify(template.toJSON())).not.toMatch(/AUTH_HEADER|SIGNING_SECRET"/);
  });
});

describe('WebhookRelay webhookUrlSecret', () => {
  it('the URL from a secret: its ARN in the environment, no WEBHOOK_URL, read access for the function', () => {
    const { template } = relay({ webhookUrl: undefined }, (stack) => ({
      webhookUrlSecret: new secretsmanager.Secret(stack, 'Url', {
        secretStringValue: SecretValue.unsafePlainText('https://h.example.com/?t=1'),
      }),
    }));
    const environment = environmentOf(template);
    const secret = Object.keys(resourcesOf(template, 'AWS::SecretsManager::Secret')).find((id) => id.startsWith('Url'));
    expect(environment.WEBHOOK_URL_SECRET_ARN).toEqual({ Ref: secret });
    expect(environment.WEBHOOK_URL).toBeUndefined();
    const statements = (
      onlyResource(template, 'AWS::IAM::Policy').properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }
    ).Statement;
    expect(statements.some((statement) => JSON.stringify(statement.Resource).includes(String(secret)))).toBe(true);
  });

  it.each([
    ['both', { webhookUrl: URL_ }, /^WebhookRelay: webhookUrl and webhookUrlSecret are two ways of giving the URL; give one$/],
    ['neither', { webhookUrl: undefined }, /^WebhookRelay: webhookUrl is required \(or webhookUrlSecret, a secret holding it\)$/],
  ])('%s: refused naming webhookUrl', (_case, props, message) => {
    expect(() =>
      relay(props, (stack) =>
        _case === 'both' ? { webhookUrlSecret: secretsmanager.Secret.fromSecretNameV2(stack, 'U', 'webhook-url') } : {},
      ),
    ).toThrow(message);
  });
});

describe('WebhookRelay signing secret known at synth', () => {
  const plain = (value: string) => (stack: Stack) => ({
    signingSecret: new secretsmanager.Secret(stack, 'Mine', { secretStringValue: SecretValue.unsafePlainText(value) }),
  });
  const generated = (options: secretsmanager.SecretStringGenerator) => (stack: Stack) => ({
    signingSecret: new secretsmanager.Secret(stack, 'Mine', { generateSecretString: options }),
  });

  it.each([
    [
      'a value of 23 bytes',
      plain(`whsec_${Buffer.from('twenty-three bytes long').toString('base64')}`),
      /^WebhookRelay: signingSecret holds a value the function would refuse: signing secret #1 is a key of 23 bytes; Standard Webhooks asks for at least 24 \(32 base64 characters\)$/,
    ],
    [
      'a value that is not base64',
      plain('whsec_not*base64!'),
      /signingSecret holds a value the function would refuse: signing secret #1 is not of the form/,
    ],
    [
      '28 generated characters (21 bytes)',
      generated({ excludePunctuation: true, includeSpace: false, passwordLength: 28 }),
      /^WebhookRelay: signingSecret generates 28 characters, a key of 21 bytes: a Standard Webhooks key is base64 of at least 24 bytes; generate it with/,
    ],
    [
      'Secrets Manager’s defaults (32 characters with punctuation)',
      generated({}),
      /signingSecret generates punctuation or spaces, which are not base64/,
    ],
    [
      'a JSON document',
      generated({ excludePunctuation: true, secretStringTemplate: '{}', generateStringKey: 'key' }),
      /generates a JSON document/,
    ],
    ['49 characters', generated({ excludePunctuation: true, passwordLength: 49 }), /generates 49 characters, which is not base64/],
  ])('%s fails synth naming signingSecret, never echoing the value', (_case, configure, message) => {
    let error: unknown;
    try {
      relay({}, configure);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(WebhookRelayConfigError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toMatch(/dHdlbnR5|not\*base64/);
  });

  it.each([
    ['a value of 24 bytes', plain(`whsec_${Buffer.from('exactly twenty-four byte').toString('base64')}`)],
    [
      'two keys while rotating',
      plain(`whsec_${Buffer.from('exactly twenty-four byte').toString('base64')} whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw`),
    ],
    ['32 generated letters and digits', generated({ excludePunctuation: true, includeSpace: false, passwordLength: 32 })],
    [
      'an imported secret (checked when the function reads it)',
      (stack: Stack) => ({ signingSecret: secretsmanager.Secret.fromSecretNameV2(stack, 'S', 'mine') }),
    ],
  ])('%s passes', (_case, configure) => {
    expect(() => relay({}, configure)).not.toThrow();
  });
});

describe('WebhookRelay outages', () => {
  it('passes the breaker settings to the function', () => {
    const { template } = relay({ outageThreshold: 3, outageBackoff: Duration.seconds(10), outageBackoffMax: Duration.minutes(5) });
    expect(environmentOf(template)).toMatchObject({
      OUTAGE_THRESHOLD: '3',
      OUTAGE_BACKOFF_SECONDS: '10',
      OUTAGE_BACKOFF_MAX_SECONDS: '300',
    });
  });

  it.each([
    [
      'a maxReceiveCount with a retry window',
      { retryWindow: Duration.hours(4), maxReceiveCount: 10 },
      /retryWindow and maxReceiveCount are two ways/,
    ],
    ['a zero retry window', { retryWindow: Duration.seconds(0) }, /retryWindow cannot be 0: .* set maxReceiveCount/],
    [
      'a retry window under a minute',
      { retryWindow: Duration.seconds(30) },
      /retryWindow must be from 1 minute to 13 days 11 hours 57 minutes \(323.95 hours\); got 30 seconds/,
    ],
    [
      'a retention shorter than the window plus its margin',
      { retryWindow: Duration.hours(90) },
      /^WebhookRelay: retentionPeriod \(4 days\) is shorter than retryWindow \(90 hours\) plus its margin of 12 hours 3 minutes .* Raise retentionPeriod to at least 5 days \(the whole days covering 4 days 6 hours 3 minutes; up to 14 days\) or shorten retryWindow$/,
    ],
    [
      'with maxReceiveCount, a retention shorter than its receives can take',
      { backoff: 'schedule' as const, maxReceiveCount: 20, retentionPeriod: Duration.days(2) },
      // 15 min (the breaker's longest interval) twice, 1 h + 25 % jitter, then SQS's 12 h seventeen times.
      /retentionPeriod \(2 days\) is shorter than the longest 20 receives can take with these settings \(8 days 13 hours 45 minutes\)/,
    ],
    ['an outage interval above 12 hours', { outageBackoffMax: Duration.hours(13) }, /outageBackoffMax must be from 1 second to 12 hours/],
  ])('rejects %s', (_name, props, message) => {
    expect(() => relay(props)).toThrow(message);
  });

  it('a retry window derives the backstop and goes to RETRY_WINDOW_HOURS in hours, exact to the second', () => {
    const { template, relay: r } = relay({ retryWindow: Duration.minutes(20) });
    const ids = queueIds(template);
    // 1,200 s over the 180 s visibility timeout, plus 3 kept for crashes, but never below 10.
    expect(resourcesOf(template, 'AWS::SQS::Queue')[ids.queue]?.Properties.RedrivePolicy).toMatchObject({ maxReceiveCount: 10 });
    expect(environmentOf(template)).toMatchObject({ RETRY_WINDOW_HOURS: '0.333333', MAX_RECEIVE_COUNT: '10' });
    expect(loadConfig({ WEBHOOK_URL: URL_, RETRY_WINDOW_HOURS: '0.333333' }).retryWindowSeconds).toBe(1_200);
    expect(r.retryWindow?.toSeconds()).toBe(1_200);
    const long = relay({ retryWindow: Duration.days(13), retentionPeriod: Duration.days(14) });
    expect(environmentOf(long.template)).toMatchObject({ RETRY_WINDOW_HOURS: '312', MAX_RECEIVE_COUNT: '1000' });
  });

  it("maxReceiveCount alone is SQS's count semantics: the window off (RETRY_WINDOW_HOURS=0), and the alarms count receives", () => {
    const { template, relay: r } = relay({ maxReceiveCount: 8 });
    expect(environmentOf(template)).toMatchObject({ RETRY_WINDOW_HOURS: '0', MAX_RECEIVE_COUNT: '8' });
    expect(r.retryWindow).toBeUndefined();
    const descriptions = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).map((a) => String(a.Properties.AlarmDescription));
    expect(descriptions.join(' ')).toContain('the webhook refused them permanently or they failed 8 times');
  });

  it('an existing queue keeps the window on, its redrive count the backstop, and warns when that count is too small for it', () => {
    const existing = (maxReceiveCount: number) =>
      relay({}, (stack) => ({
        queue: new sqs.Queue(stack, 'Own', {
          visibilityTimeout: Duration.seconds(180),
          deadLetterQueue: {
            queue: new sqs.Queue(stack, 'OwnDlq', { enforceSSL: true, retentionPeriod: Duration.days(14) }),
            maxReceiveCount,
          },
          enforceSSL: true,
        }),
      }));
    const small = existing(5);
    expect(environmentOf(small.template)).toMatchObject({ RETRY_WINDOW_HOURS: '24', MAX_RECEIVE_COUNT: '5' });
    Annotations.fromStack(small.stack).hasWarning(
      '/Test/Relay',
      Match.stringLikeRegexp(
        'after 5 receives, fewer than the 483 a retry window of 24 hours takes at a visibility timeout of 180 s: the window may end at the backstop first',
      ),
    );
    // In an app of one's own, the props by their names.
    Annotations.fromStack(small.stack).hasWarning(
      '/Test/Relay',
      Match.stringLikeRegexp('Raise .* to 483, shorten retryWindow, or set it to 0'),
    );
    Annotations.fromStack(existing(483).stack).hasNoWarning('*', Match.anyValue());
  });

  it("an existing queue with retryWindow 0: SQS's count semantics, its redrive count the rule, no window warnings", () => {
    const {
      template,
      stack,
      relay: r,
    } = relay({ retryWindow: Duration.seconds(0) }, (s) => ({
      queue: new sqs.Queue(s, 'Own', {
        visibilityTimeout: Duration.seconds(180),
        retentionPeriod: Duration.hours(1),
        deadLetterQueue: {
          queue: new sqs.Queue(s, 'OwnDlq', { enforceSSL: true, retentionPeriod: Duration.days(14) }),
          maxReceiveCount: 5,
        },
        enforceSSL: true,
      }),
    }));
    expect(environmentOf(template)).toMatchObject({ RETRY_WINDOW_HOURS: '0', MAX_RECEIVE_COUNT: '5' });
    expect(r.retryWindow).toBeUndefined();
    // Neither the backstop nor the retention (1 hour) is judged against a window that is off.
    Annotations.fromStack(stack).hasNoWarning('*', Match.anyValue());
    const descriptions = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).map((a) => String(a.Properties.AlarmDescription));
    expect(descriptions.join(' ')).toContain('failed 5 times');
    // A created queue is switched to count semantics by maxReceiveCount, not by a zero window.
    expect(() => relay({ retryWindow: Duration.seconds(0) })).toThrow(/retryWindow cannot be 0: .* set maxReceiveCount/);
  });

  it("warns when an existing queue's retention is shorter than the window plus its margin", () => {
    const { stack } = relay({ retryWindow: Duration.hours(48) }, (s) => ({
      queue: new sqs.Queue(s, 'Own', {
        visibilityTimeout: Duration.seconds(180),
        retentionPeriod: Duration.days(2),
        deadLetterQueue: { queue: new sqs.Queue(s, 'OwnDlq', { enforceSSL: true }), maxReceiveCount: 1_000 },
        enforceSSL: true,
      }),
    }));
    Annotations.fromStack(stack).hasWarning(
      '/Test/Relay',
      Match.stringLikeRegexp(
        'keeps a message 2 days, less than the retry window \\(48 hours\\) plus its margin \\(12 hours 3 minutes\\).*at least 2 days 12 hours 3 minutes',
      ),
    );
  });

  it("warns when an existing DLQ of this app keeps dead letters less than 14 days (SQS's default is 4): gone before the age alarm", () => {
    const withDlq = (retentionPeriod?: Duration) =>
      relay({}, (s) => ({
        queue: new sqs.Queue(s, 'Own', {
          visibilityTimeout: Duration.seconds(180),
          deadLetterQueue: { queue: new sqs.Queue(s, 'OwnDlq', { enforceSSL: true, retentionPeriod }), maxReceiveCount: 483 },
          enforceSSL: true,
        }),
      })).stack;
    Annotations.fromStack(withDlq()).hasWarning(
      '/Test/Relay',
      Match.stringLikeRegexp(
        'The deadLetterQueue keeps a message 4 days, less than the 14 days of the DLQ the construct creates, which the dlq-oldest-message-age alarm counts on.*retentionPeriod: Duration.days\\(14\\)',
      ),
    );
    Annotations.fromStack(withDlq(Duration.days(14))).hasNoWarning('*', Match.anyValue());
  });

  it('alarms when the breaker has been open 5 minutes, from the metric the handler publishes', () => {
    const { template } = relay();
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'SqsWebhookRelay',
      MetricName: METRIC_NAMES.breakerOpenSeconds,
      Dimensions: [{ Name: 'service', Value: 'Test-Relay' }],
      Statistic: 'Maximum',
      Period: 60,
      Threshold: 300,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      // The minutes an outage leaves without an invocation keep it in ALARM, not OK then ALARM again.
      TreatMissingData: 'ignore',
    });
  });

  it("words a window of hours and minutes in hours, and thresholds with every unit (not the two of CDK's toHumanString)", () => {
    const { stack, template } = relay({
      retryWindow: Duration.minutes(90 * 60 + 30),
      retentionPeriod: Duration.days(14),
      oldestMessageAgeThreshold: Duration.minutes(24 * 60 + 61),
      breakerOpenAlarmThreshold: Duration.minutes(61),
    });
    const descriptions = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).map((a) => String(a.Properties.AlarmDescription));
    const all = descriptions.join('\n');
    expect(all).toContain('kept failing for their whole retry window (90 hours 30 minutes)');
    expect(all).toContain('is older than 1 day 1 hour 1 minute:');
    expect(all).toContain('has looked down for 1 hour 1 minute (');
    expect(all).toContain('within the retry window (90 hours 30 minutes);');
    expect(dashboardWidgets(stack).find((w) => w.type === 'text')?.markdown).toContain('whole retry window (90 hours 30 minutes)');
  });
});
