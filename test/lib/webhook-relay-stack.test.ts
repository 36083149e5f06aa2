/**
 * `WebhookRelayStack`: the outputs an operator reads after `cdk deploy`, the WebhookUrl
 * parameter that lets `cdk synth` work without a URL while `cdk deploy` demands one, relaying
 * from an existing queue by ARN, and no account or region lookups (offline synth).
 */
import { Token } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { WEBHOOK_URL_PARAMETER, WebhookRelayStack, type WebhookRelayStackProps } from '../../lib/webhook-relay-stack';
import { onlyResource, resourcesOf, testApp } from './helpers';

function stackWith(props: Partial<WebhookRelayStackProps> = {}): { stack: WebhookRelayStack; template: Template } {
  const stack = new WebhookRelayStack(testApp(), 'Relay', { relay: { webhookUrl: 'https://hooks.example.com/in' }, ...props });
  return { stack, template: Template.fromStack(stack) };
}

describe('WebhookRelayStack outputs', () => {
  const { template } = stackWith();
  const outputs = template.toJSON().Outputs as Record<string, { Value: unknown; Description: string }>;
  const queues = Object.entries(resourcesOf(template, 'AWS::SQS::Queue'));
  const queueId = queues.find(([, q]) => q.Properties.RedrivePolicy !== undefined)?.[0];
  const dlqId = queues.find(([, q]) => q.Properties.RedrivePolicy === undefined)?.[0];

  it('gives the queue URL and ARN, the DLQ URL, the alarm topic and the dashboard', () => {
    expect(outputs.QueueUrl?.Value).toEqual({ Ref: queueId });
    expect(outputs.QueueArn?.Value).toEqual({ 'Fn::GetAtt': [queueId, 'Arn'] });
    expect(outputs.DeadLetterQueueUrl?.Value).toEqual({ Ref: dlqId });
    expect(outputs.AlarmTopicArn?.Value).toEqual({ Ref: onlyResource(template, 'AWS::SNS::Topic').id });
    expect(outputs.DashboardName?.Value).toEqual({ Ref: onlyResource(template, 'AWS::CloudWatch::Dashboard').id });
    expect(JSON.stringify(outputs.DashboardUrl?.Value)).toContain('#dashboards/dashboard/');
  });

  it('describes every output', () => {
    for (const output of Object.values(outputs)) expect(output.Description.length).toBeGreaterThan(10);
  });
});

describe('WebhookRelayStack without a webhook URL', () => {
  const { stack, template } = stackWith({ relay: {} });
  const parameter = (template.toJSON().Parameters as Record<string, { AllowedPattern: string; Description: string }>)[
    WEBHOOK_URL_PARAMETER
  ];
  const pattern = new RegExp(parameter?.AllowedPattern ?? '^$');

  it('takes the URL from the WebhookUrl parameter, which has no default (deploy demands it)', () => {
    expect(parameter).toMatchObject({ Type: 'String', Description: expect.stringMatching(/-c webhookUrl=/) });
    expect(parameter).not.toHaveProperty('Default');
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ WEBHOOK_URL: { Ref: WEBHOOK_URL_PARAMETER } }) },
    });
  });

  it('lets CloudFormation refuse anything but an https URL without credentials', () => {
    expect(pattern.test('https://hooks.example.com/in?x=1')).toBe(true);
    expect(pattern.test('https://hooks.example.com')).toBe(true);
    expect(pattern.test('http://hooks.example.com/in')).toBe(false);
    expect(pattern.test('https://user:pw@hooks.example.com/in')).toBe(false);
    expect(pattern.test('')).toBe(false);
  });

  it('says so at synth time, naming -c webhookUrl', () => {
    Annotations.fromStack(stack).hasWarning('/Relay', Match.stringLikeRegexp('Deploy with -c webhookUrl=https://'));
  });

  it('accepts http in the parameter only with allowInsecureHttp', () => {
    const insecure = stackWith({ relay: { allowInsecureHttp: true } }).template.toJSON().Parameters as Record<
      string,
      { AllowedPattern: string }
    >;
    expect(new RegExp(insecure[WEBHOOK_URL_PARAMETER]?.AllowedPattern ?? '^$').test('http://relay.internal/in')).toBe(true);
  });
});

describe('WebhookRelayStack on existing queues', () => {
  const queueArn = 'arn:aws:sqs:eu-west-1:111122223333:orders';
  const deadLetterQueueArn = 'arn:aws:sqs:eu-west-1:111122223333:orders-dlq';
  const { template } = stackWith({
    queueArn,
    deadLetterQueueArn,
    relay: { webhookUrl: 'https://hooks.example.com/in', maxReceiveCount: 4 },
  });

  it('creates no queue and maps the existing one', () => {
    template.resourceCountIs('AWS::SQS::Queue', 0);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: queueArn });
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(outputs.QueueArn?.Value).toBe(queueArn);
    expect(JSON.stringify(outputs.DeadLetterQueueUrl?.Value)).toContain('orders-dlq');
  });

  it('requires the DLQ', () => {
    expect(() => stackWith({ queueArn })).toThrow(/deadLetterQueue is required/);
  });
});

describe('WebhookRelayStack environment', () => {
  it('is environment-agnostic: synth needs no account or region lookup', () => {
    const { stack, template } = stackWith();
    expect(Token.isUnresolved(stack.account)).toBe(true);
    expect(Token.isUnresolved(stack.region)).toBe(true);
    expect(JSON.stringify(template.toJSON())).not.toMatch(/\b\d{12}\b/);
  });

  it('tags every resource with the application', () => {
    const { template } = stackWith();
    template.hasResourceProperties('AWS::SQS::Queue', { Tags: Match.arrayWith([{ Key: 'application', Value: 'sqs-webhook-relay' }]) });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Tags: Match.arrayWith([{ Key: 'application', Value: 'sqs-webhook-relay' }]),
    });
  });
});
