/**
 * cdk-nag's AwsSolutions pack over every shape of the stack: no finding, error or warning, and
 * none acknowledged away but two, each with its reason (the signing key's rotation; in a VPC, the
 * network-interface actions Lambda needs on `*`): the stack complies by construction. A control proves the checker
 * actually sees this app's resources, and the app itself registers the pack (synth fails).
 */
import { Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../lib/app';
import { testApp } from './helpers';

const variants: Record<string, Record<string, unknown>> = {
  'default (standard queues)': { webhookUrl: 'https://hooks.example.com/in' },
  'FIFO with an e-mail subscription': { webhookUrl: 'https://hooks.example.com/in', fifo: 'true', alarmEmail: 'ops@example.com' },
  'large batches with a window': {
    webhookUrl: 'https://hooks.example.com/in',
    batchSize: '1000',
    maxBatchingWindowSeconds: '10',
    maxConcurrency: '100',
  },
  'an existing queue by ARN': {
    webhookUrl: 'https://hooks.example.com/in',
    queueArn: 'arn:aws:sqs:eu-west-1:111122223333:q',
    deadLetterQueueArn: 'arn:aws:sqs:eu-west-1:111122223333:d',
  },
  'no webhookUrl (the parameter)': {},
  'in a VPC by ids, with OAuth and a client certificate': {
    webhookUrl: 'https://hooks.example.com/in',
    vpcId: 'vpc-0123456789abcdef0',
    subnetIds: 'subnet-0123456789abcdef0,subnet-0fedcba9876543210',
    oauthTokenUrl: 'https://login.example.com/oauth2/token',
    oauthClientId: 'relay',
    oauthClientSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-oauth-AbCdEf',
    clientCertificateSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-certificate-AbCdEf',
  },
};

function findings(scope: IConstruct): { rule: string; severity: string; resources: string[] }[] {
  return new AwsSolutionsChecks(scope, { verbose: true }).validateScope(scope).violations.map((v) => ({
    rule: v.ruleName,
    severity: v.severity ?? 'error',
    resources: v.violatingResources.map((r) => r.constructPath ?? ''),
  }));
}

describe('cdk-nag AwsSolutions', () => {
  it.each(Object.entries(variants))('%s: no error and no warning', (_name, context) => {
    const stack = buildApp(testApp(context));
    expect(findings(stack)).toEqual([]);
  });

  it('one finding is acknowledged, with its reason: no scheduled rotation of the signing key', () => {
    const stack = buildApp(testApp(variants['default (standard queues)']));
    const acknowledged = stack.node
      .findAll()
      .flatMap((c) =>
        c.node.metadata
          .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
          .map((m) => ({ path: c.node.path, data: JSON.stringify(m.data) })),
      );
    expect(acknowledged).toHaveLength(1);
    expect(acknowledged[0]?.path).toMatch(/SigningSecret$/);
    expect(acknowledged[0]?.data).toContain('AwsSolutions-SMG4');
    expect(acknowledged[0]?.data).toMatch(/Rotate by hand/);
  });

  it('control: the checker does flag a non-compliant queue in this app', () => {
    const stack = buildApp(testApp(variants['default (standard queues)']));
    new sqs.Queue(stack, 'Rogue');
    expect(
      findings(stack)
        .map((f) => f.rule)
        .sort(),
    ).toEqual(['AwsSolutions-SQS3', 'AwsSolutions-SQS4']);
  });

  it('the app registers the pack: a finding fails synthesis', () => {
    const app = testApp(variants['default (standard queues)']);
    const stack = buildApp(app);
    new sqs.Queue(stack, 'Rogue');
    expect(() => app.synth()).toThrow(/AwsSolutions-SQS4/);
  });
});
