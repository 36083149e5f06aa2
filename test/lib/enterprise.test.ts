/**
 * The template of a relay that reaches an enterprise's webhook: OAuth client credentials and a
 * client certificate by secret ARN (read access granted, no value anywhere), a proxy without
 * credentials, the function in a VPC with the permissions Lambda needs to attach it; the same from
 * the app's context keys, by ids, without a lookup.
 */
import { Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../lib/app';
import { ContextError, stackFromContext } from '../../lib/context';
import { WebhookRelay, WebhookRelayConfigError, type WebhookRelayProps } from '../../lib/index';
import { resourcesOf, testApp } from './helpers';

const URL_ = 'https://hooks.example.com/relay';
const OAUTH_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-oauth-AbCdEf';
const CERT_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-certificate-GhIjKl';

function relay(configure: (stack: Stack) => Partial<WebhookRelayProps> = () => ({})): { stack: Stack; template: Template } {
  const stack = new Stack(testApp(), 'Test');
  new WebhookRelay(stack, 'Relay', { webhookUrl: URL_, ...configure(stack) });
  return { stack, template: Template.fromStack(stack) };
}

/** The relay's function (a VPC of the stack brings a function of its own, for its default security group). */
function relayFunction(template: Template): Record<string, unknown> {
  const found = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).filter((f) =>
    String(f.Properties.Description).startsWith('sqs-webhook-relay'),
  );
  expect(found).toHaveLength(1);
  return (found[0] as { Properties: Record<string, unknown> }).Properties;
}

function environmentOf(template: Template): Record<string, unknown> {
  return (relayFunction(template).Environment as { Variables: Record<string, unknown> }).Variables;
}

type Statement = { Action: string | string[]; Resource: unknown };
function statementsOf(template: Template): Statement[] {
  return Object.values(resourcesOf(template, 'AWS::IAM::Policy')).flatMap(
    (policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
  );
}

describe('OAuth and a client certificate', () => {
  const { template } = relay((stack) => ({
    oauthTokenUrl: 'https://login.example.com/oauth2/token',
    oauthClientId: 'relay',
    oauthClientSecret: secretsmanager.Secret.fromSecretCompleteArn(stack, 'OAuth', OAUTH_ARN),
    oauthScope: 'orders:write',
    oauthClientAuthentication: 'client_secret_post',
    clientCertificateSecret: secretsmanager.Secret.fromSecretCompleteArn(stack, 'Certificate', CERT_ARN),
  }));

  it('the function gets the settings and the secrets by ARN, never a value', () => {
    expect(environmentOf(template)).toMatchObject({
      OAUTH_TOKEN_URL: 'https://login.example.com/oauth2/token',
      OAUTH_CLIENT_ID: 'relay',
      OAUTH_CLIENT_SECRET_ARN: OAUTH_ARN,
      OAUTH_SCOPE: 'orders:write',
      OAUTH_CLIENT_AUTHENTICATION: 'client_secret_post',
      CLIENT_CERTIFICATE_SECRET_ARN: CERT_ARN,
    });
    const text = JSON.stringify(template.toJSON());
    expect(text).not.toMatch(/"OAUTH_CLIENT_SECRET"|CLIENT_CERTIFICATE_FILE|CLIENT_KEY_FILE/);
  });

  it('the function may read both secrets, and nothing else of Secrets Manager beyond its signing key', () => {
    const grants = statementsOf(template).filter((s) => [s.Action].flat().includes('secretsmanager:GetSecretValue'));
    const resources = grants.flatMap((s) => [s.Resource].flat());
    expect(resources).toEqual(expect.arrayContaining([OAUTH_ARN, CERT_ARN]));
    expect(resources).toHaveLength(3);
  });
});

describe('without any of them', () => {
  it('no OAuth, certificate, proxy or VPC setting in the environment, no VPC configuration', () => {
    const { template } = relay();
    const names = Object.keys(environmentOf(template));
    expect(names.filter((name) => /OAUTH|CERTIFICATE|PROXY/.test(name))).toEqual([]);
    expect(relayFunction(template).VpcConfig).toBeUndefined();
    template.resourceCountIs('AWS::EC2::SecurityGroup', 0);
  });
});

describe('the refusals at synth', () => {
  it.each([
    [{ oauthTokenUrl: 'http://login.example.com/token', oauthClientId: 'x' }, 'oauthTokenUrl', /must be https:\/\//],
    [{ oauthTokenUrl: 'https://127.0.0.1/token', oauthClientId: 'x' }, 'oauthTokenUrl', /the function itself/],
    [{ oauthTokenUrl: 'https://login.example.com/token' }, 'oauthClientId', /OAUTH_CLIENT_ID/],
    [{ httpsProxy: 'http://user:pass@proxy.corp:3128' }, 'httpsProxy', /must not carry user:password/],
    [{ httpProxy: 'user:pass@proxy.corp:3128' }, 'httpProxy', /must not carry user:password/],
    [{ httpsProxy: 'ftp://proxy.corp' }, 'httpsProxy', /HTTPS_PROXY must be a proxy URL/],
    [{ httpsProxy: 'http://proxy.corp:3128', noProxy: '.corp,10.0.0.0/33' }, 'noProxy', /NO_PROXY must be .*CIDR.*"10.0.0.0\/33"/],
  ] as const)('%j is refused, naming %s', (props, prop, message) => {
    try {
      relay(() => props as Partial<WebhookRelayProps>);
      throw new Error('expected a WebhookRelayConfigError');
    } catch (error) {
      expect(error).toBeInstanceOf(WebhookRelayConfigError);
      expect((error as WebhookRelayConfigError).prop).toBe(prop);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain('pass@');
    }
  });

  it('OAuth without its client secret is refused by the function check', () => {
    expect(() => relay(() => ({ oauthTokenUrl: 'https://login.example.com/token', oauthClientId: 'x' }))).toThrow(
      /OAUTH_CLIENT_SECRET_ARN/,
    );
  });

  it('a proxy without credentials, and NO_PROXY, go to the function as they are', () => {
    const { template } = relay(() => ({ httpsProxy: 'http://proxy.corp:3128', noProxy: '.corp,10.0.0.0/8' }));
    expect(environmentOf(template)).toMatchObject({ HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: '.corp,10.0.0.0/8' });
  });
});

describe('a fixed egress address: the function in a VPC', () => {
  /** A VPC with one NAT gateway whose Elastic IP the stack owns: docs/operations.md's lines. */
  const { stack, template } = relay((s) => {
    const eip = new ec2.CfnEIP(s, 'EgressAddress');
    const vpc = new ec2.Vpc(s, 'Vpc', {
      maxAzs: 2,
      natGateways: 1,
      natGatewayProvider: ec2.NatProvider.gateway({ eipAllocationIds: [eip.attrAllocationId] }),
    });
    return { vpc };
  });

  it("runs in the VPC's private subnets with a security group of its own", () => {
    const vpcConfig = relayFunction(template).VpcConfig as { SubnetIds: unknown[]; SecurityGroupIds: unknown[] };
    expect(vpcConfig.SubnetIds).toHaveLength(2);
    expect(JSON.stringify(vpcConfig.SubnetIds)).toMatch(/PrivateSubnet/);
    expect(vpcConfig.SecurityGroupIds).toHaveLength(1);
    template.resourceCountIs('AWS::EC2::NatGateway', 1);
  });

  it('its role may create and delete the network interfaces Lambda attaches, and nothing more of EC2', () => {
    const ec2Actions = statementsOf(template)
      .flatMap((s) => [s.Action].flat())
      .filter((action) => action.startsWith('ec2:'))
      .sort();
    expect(ec2Actions).toEqual([
      'ec2:AssignPrivateIpAddresses',
      'ec2:CreateNetworkInterface',
      'ec2:DeleteNetworkInterface',
      'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSubnets',
      'ec2:UnassignPrivateIpAddresses',
    ]);
    // No managed policy: the role stays the construct's own.
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
  });

  it('cdk-nag finds nothing in the relay but what it acknowledges, with its reason', () => {
    const relayConstruct = stack.node.findChild('Relay');
    const violations = new AwsSolutionsChecks(relayConstruct, { verbose: true }).validateScope(relayConstruct).violations;
    expect(violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('given subnets and security groups are used as they are', () => {
    const { template: given } = relay((s) => {
      const vpc = ec2.Vpc.fromVpcAttributes(s, 'Imported', { vpcId: 'vpc-0123456789abcdef0', availabilityZones: ['eu-west-1a'] });
      return {
        vpc,
        vpcSubnets: { subnets: [ec2.Subnet.fromSubnetId(s, 'Subnet', 'subnet-0123456789abcdef0')] },
        securityGroups: [ec2.SecurityGroup.fromSecurityGroupId(s, 'Group', 'sg-0123456789abcdef0')],
      };
    });
    expect(relayFunction(given).VpcConfig).toEqual({
      SubnetIds: ['subnet-0123456789abcdef0'],
      SecurityGroupIds: ['sg-0123456789abcdef0'],
    });
    given.resourceCountIs('AWS::EC2::SecurityGroup', 0);
  });
});

describe('the context keys', () => {
  const get = (context: Record<string, unknown>) => (key: string) => context[key];

  it('vpcId, subnetIds and securityGroupIds: the VPC by ids; the stack synthesizes offline, with no lookup', () => {
    const app = testApp({
      webhookUrl: URL_,
      vpcId: 'vpc-0123456789abcdef0',
      subnetIds: 'subnet-0123456789abcdef0, subnet-0fedcba9876543210',
      oauthTokenUrl: 'https://login.example.com/oauth2/token',
      oauthClientId: 'relay',
      oauthClientSecretArn: OAUTH_ARN,
      clientCertificateSecretArn: CERT_ARN,
    });
    const stack = buildApp(app);
    const assembly = app.synth();
    // A lookup would leave "missing" context for the CLI to fetch with credentials.
    expect(assembly.manifest.missing ?? []).toEqual([]);
    const template = Template.fromStack(stack);
    expect(relayFunction(template).VpcConfig).toMatchObject({
      SubnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
    });
    expect(environmentOf(template)).toMatchObject({ OAUTH_CLIENT_SECRET_ARN: OAUTH_ARN, CLIENT_CERTIFICATE_SECRET_ARN: CERT_ARN });
    // A right setup synthesizes quietly: CDK's warnings about what an import by id lacks do not apply to the function.
    expect(Annotations.fromStack(stack).findWarning('*', Match.anyValue())).toEqual([]);
  });

  it.each([
    [{ subnetIds: 'subnet-0123456789abcdef0' }, 'subnetIds', /give vpcId too/],
    [{ vpcId: 'vpc-0123456789abcdef0' }, 'vpcId', /needs subnetIds too/],
    [{ vpcId: 'my-vpc', subnetIds: 'subnet-0123456789abcdef0' }, 'vpcId', /must be a VPC id/],
    [{ vpcId: 'vpc-0123456789abcdef0', subnetIds: 'subnet-1, nope' }, 'subnetIds', /comma-separated ids/],
    [
      { vpcId: 'vpc-0123456789abcdef0', subnetIds: 'subnet-0123456789abcdef0', securityGroupIds: 'default' },
      'securityGroupIds',
      /ids such as sg-/,
    ],
    [{ vpcId: 'vpc-0123456789abcdef0', subnetIds: ['subnet-0123456789abcdef0', 7] }, 'subnetIds', /or, in cdk.json, a JSON array/],
    [{ vpcId: 'vpc-0123456789abcdef0', subnetIds: [] }, 'subnetIds', /comma-separated ids/],
    [
      { vpcId: 'vpc-0123456789abcdef0', subnetIds: 'subnet-0123456789abcdef0, subnet-0123456789abcdef0' },
      'subnetIds',
      /lists subnet-0123456789abcdef0 more than once; give each id once$/,
    ],
    [
      {
        vpcId: 'vpc-0123456789abcdef0',
        subnetIds: ['subnet-0123456789abcdef0'],
        securityGroupIds: ['sg-0123456789abcdef0', 'sg-0123456789abcdef0'],
      },
      'securityGroupIds',
      /lists sg-0123456789abcdef0 more than once/,
    ],
    [{ oauthClientSecretArn: 'secret' }, 'oauthClientSecretArn', /must be an ARN/],
    [{ clientCertificateSecretArn: 'secret' }, 'clientCertificateSecretArn', /must be an ARN/],
  ] as const)('%j is refused, naming %s', (context, key, message) => {
    try {
      stackFromContext(get({ webhookUrl: URL_, ...context }));
      throw new Error('expected a ContextError');
    } catch (error) {
      expect(error).toBeInstanceOf(ContextError);
      expect((error as Error).message).toMatch(new RegExp(`^Context ${key} `));
      expect((error as Error).message).toMatch(message);
    }
  });

  it("subnetIds and securityGroupIds as cdk.json's JSON arrays: the same ids as comma-separated text", () => {
    const vpcId = 'vpc-0123456789abcdef0';
    const subnets = ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'];
    const fromArrays = stackFromContext(get({ vpcId, subnetIds: subnets, securityGroupIds: ['sg-0123456789abcdef0'] }));
    const fromText = stackFromContext(get({ vpcId, subnetIds: subnets.join(','), securityGroupIds: 'sg-0123456789abcdef0' }));
    expect(fromArrays.props.network).toEqual({ vpcId, subnetIds: subnets, securityGroupIds: ['sg-0123456789abcdef0'] });
    expect(fromArrays.props.network).toEqual(fromText.props.network);
  });

  it('the proxy and OAuth keys set their props', () => {
    const { props } = stackFromContext(
      get({ httpsProxy: 'http://proxy.corp:3128', noProxy: '.corp', oauthScope: 'a b', oauthClientAuthentication: 'CLIENT_SECRET_POST' }),
    );
    expect(props.relay).toMatchObject({
      httpsProxy: 'http://proxy.corp:3128',
      noProxy: '.corp',
      oauthScope: 'a b',
      oauthClientAuthentication: 'client_secret_post',
    });
  });
});
