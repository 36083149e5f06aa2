/**
 * `WebhookRelayStack`: one `WebhookRelay` and the outputs an operator needs after
 * `npx cdk deploy`. The stack is environment-agnostic (no account or region lookups), so
 * `npx cdk synth` works offline and without credentials.
 */
import { Annotations, CfnOutput, CfnParameter, Fn, Stack, type StackProps, Tags } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { WebhookRelay } from './webhook-relay';
import type { WebhookRelayProps } from './webhook-relay/props';

/** Properties of {@link WebhookRelayStack}. */
export interface WebhookRelayStackProps extends StackProps {
  /**
   * The relay's settings. `webhookUrl` may be left out: the template then takes it from the
   * CloudFormation parameter `WebhookUrl`, so `cdk synth` works without it while `cdk deploy`
   * refuses to run until a URL is given (by `-c webhookUrl=…` or `--parameters WebhookUrl=…`).
   */
  readonly relay: Omit<
    WebhookRelayProps,
    | 'webhookUrl'
    | 'webhookUrlSecret'
    | 'queue'
    | 'deadLetterQueue'
    | 'alarmTopic'
    | 'signingSecret'
    | 'authSecret'
    | 'oauthClientSecret'
    | 'clientCertificateSecret'
    | 'vpc'
    | 'vpcSubnets'
    | 'securityGroups'
  > & {
    readonly webhookUrl?: string;
  };
  /** A Secrets Manager secret holding the webhook's URL (one that embeds a token), instead of `relay.webhookUrl`. */
  readonly webhookUrlSecretArn?: string;
  /** Relay from this existing queue (same account and region) instead of creating one. */
  readonly queueArn?: string;
  /** The existing queue's dead-letter queue; required with `queueArn`. */
  readonly deadLetterQueueArn?: string;
  /** An existing Secrets Manager secret with the signing key(s), instead of one the stack creates. */
  readonly signingSecretArn?: string;
  /** A Secrets Manager secret holding the `Authorization` value to send. */
  readonly authSecretArn?: string;
  /** A Secrets Manager secret holding the OAuth client secret (with `relay.oauthTokenUrl`). */
  readonly oauthClientSecretArn?: string;
  /** A Secrets Manager secret holding the client certificate (mutual TLS), as JSON. */
  readonly clientCertificateSecretArn?: string;
  /**
   * Put the function in an existing VPC, by ids: imported as they are, never looked up, so that
   * `cdk synth` stays offline. The subnets are the function's (private ones leaving by a NAT gateway).
   */
  readonly network?: {
    readonly vpcId: string;
    readonly subnetIds: readonly string[];
    /** @default one security group created, all outbound allowed */
    readonly securityGroupIds?: readonly string[];
  };
}

/** A secret by complete ARN (ending in the 6-character suffix Secrets Manager adds) or partial ARN. */
function importSecret(scope: Construct, id: string, arn: string): secretsmanager.ISecret {
  return /-[A-Za-z0-9]{6}$/.test(arn)
    ? secretsmanager.Secret.fromSecretCompleteArn(scope, id, arn)
    : secretsmanager.Secret.fromSecretPartialArn(scope, id, arn);
}

/** The name of the parameter that stands in for a webhook URL not given at synth time. */
export const WEBHOOK_URL_PARAMETER = 'WebhookUrl';

/** The relay stack: queue, DLQ, function, alarms, dashboard and their outputs. */
export class WebhookRelayStack extends Stack {
  /** The relay this stack deploys. */
  readonly relay: WebhookRelay;

  constructor(scope: Construct, id: string, props: WebhookRelayStackProps) {
    const {
      relay,
      queueArn,
      deadLetterQueueArn,
      signingSecretArn,
      authSecretArn,
      webhookUrlSecretArn,
      oauthClientSecretArn,
      clientCertificateSecretArn,
      network,
      ...stackProps
    } = props;
    super(scope, id, {
      description: 'sqs-webhook-relay: an SQS queue relayed to an HTTP webhook by a Lambda function',
      ...stackProps,
    });
    Tags.of(this).add('application', 'sqs-webhook-relay');

    const webhookUrlSecret = webhookUrlSecretArn === undefined ? undefined : importSecret(this, 'WebhookUrlSecret', webhookUrlSecretArn);
    const webhookUrl =
      relay.webhookUrl ?? (webhookUrlSecret === undefined ? this.webhookUrlParameter(relay.allowInsecureHttp === true) : undefined);
    let queue: sqs.IQueue | undefined;
    let deadLetterQueue: sqs.IQueue | undefined;
    if (queueArn !== undefined) {
      queue = sqs.Queue.fromQueueArn(this, 'ExistingQueue', queueArn);
      if (deadLetterQueueArn !== undefined) deadLetterQueue = sqs.Queue.fromQueueArn(this, 'ExistingDeadLetterQueue', deadLetterQueueArn);
      Annotations.of(this).addInfo(
        `Relaying from the existing queue ${queueArn}: its visibility timeout must be at least 6 × the function timeout, and maxReceiveCount must equal its redrive policy's.`,
      );
    }

    const signingSecret = signingSecretArn === undefined ? undefined : importSecret(this, 'ExistingSigningSecret', signingSecretArn);
    const authSecret = authSecretArn === undefined ? undefined : importSecret(this, 'AuthSecret', authSecretArn);

    const oauthClientSecret =
      oauthClientSecretArn === undefined ? undefined : importSecret(this, 'OAuthClientSecret', oauthClientSecretArn);
    const clientCertificateSecret =
      clientCertificateSecretArn === undefined ? undefined : importSecret(this, 'ClientCertificateSecret', clientCertificateSecretArn);

    this.relay = new WebhookRelay(this, 'Relay', {
      ...relay,
      webhookUrl,
      webhookUrlSecret,
      queue,
      deadLetterQueue,
      signingSecret,
      authSecret,
      oauthClientSecret,
      clientCertificateSecret,
      ...(network === undefined ? {} : this.importNetwork(network)),
    });

    const output = (id: string, value: string, description: string): CfnOutput => new CfnOutput(this, id, { value, description });
    output('QueueUrl', this.relay.queue.queueUrl, 'Send messages here (SendMessage QueueUrl)');
    output('QueueArn', this.relay.queue.queueArn, 'The queue, for IAM policies of producers');
    output(
      'DeadLetterQueueUrl',
      this.relay.deadLetterQueue.queueUrl,
      'Messages the webhook refused, or that kept failing for their whole retry window (or maxReceiveCount times); why: npx sqs-webhook-relay dead-letters summary --queue-url <QueueUrl>, then replay what was fixed',
    );
    output('AlarmTopicArn', this.relay.alarmTopic.topicArn, 'SNS topic every alarm notifies; subscribe more endpoints here');
    output('DashboardName', this.relay.dashboard.dashboardName, 'CloudWatch dashboard of the relay');
    output(
      'DashboardUrl',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's Fn::Sub placeholders, not a template literal
      Fn.sub('https://${AWS::Region}.console.aws.amazon.com/cloudwatch/home?region=${AWS::Region}#dashboards/dashboard/${Name}', {
        Name: this.relay.dashboard.dashboardName,
      }),
      'The dashboard in the AWS console',
    );
    if (this.relay.signingSecret !== undefined) {
      output(
        'SigningSecretArn',
        this.relay.signingSecret.secretArn,
        'The signing key; give it to the webhook owner as whsec_<value> (aws secretsmanager get-secret-value --secret-id <arn>)',
      );
    }
    output('FunctionName', this.relay.function.functionName, 'The relay function (logs: aws logs tail --follow <log group>)');
    output('LogGroupName', this.relay.logGroup.logGroupName, "The function's log group");
  }

  /**
   * The VPC, subnets and security groups by id, as the construct takes them: imported without a
   * lookup (`Vpc.fromLookup` would need credentials and a context file at synth).
   */
  private importNetwork(
    network: NonNullable<WebhookRelayStackProps['network']>,
  ): Pick<WebhookRelayProps, 'vpc' | 'vpcSubnets' | 'securityGroups'> {
    // The zones are not needed: the subnets are given by id. A list token keeps fromVpcAttributes' checks content.
    const vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', { vpcId: network.vpcId, availabilityZones: Fn.getAzs() });
    const subnets = network.subnetIds.map((id, index) => ec2.Subnet.fromSubnetId(this, `Subnet${index}`, id));
    // CDK warns of what an import by id lacks; the function needs neither, and a warning on every synth of a right setup teaches to ignore them.
    const annotations = Annotations.of(this);
    annotations.acknowledgeWarning(
      '@aws-cdk/aws-ec2:vpcAttributeIsListTokenavailabilityZones',
      'The subnets are given by id: the function needs no list of zones',
    );
    annotations.acknowledgeWarning('@aws-cdk/aws-ec2:noSubnetRouteTableId', 'The function is put in the subnets, never routes them');
    return {
      vpc,
      vpcSubnets: { subnets },
      securityGroups: network.securityGroupIds?.map((id, index) =>
        ec2.SecurityGroup.fromSecurityGroupId(this, `SecurityGroup${index}`, id),
      ),
    };
  }

  /** Stands in for a webhook URL not given at synth time; CloudFormation then demands it at deploy. */
  private webhookUrlParameter(allowInsecureHttp: boolean): string {
    Annotations.of(this).addWarningV2(
      'sqs-webhook-relay:noWebhookUrl',
      `No webhookUrl in context: the template takes it from the CloudFormation parameter ${WEBHOOK_URL_PARAMETER}. Deploy with -c webhookUrl=https://… (or --parameters ${WEBHOOK_URL_PARAMETER}=https://…).`,
    );
    return new CfnParameter(this, WEBHOOK_URL_PARAMETER, {
      type: 'String',
      description: 'Where every message is POSTed. Give it at synth time instead with: npx cdk deploy -c webhookUrl=https://…',
      allowedPattern: allowInsecureHttp ? '^https?://[^\\s/@]+(/\\S*)?$' : '^https://[^\\s/@]+(/\\S*)?$',
      constraintDescription: allowInsecureHttp
        ? 'must be an http:// or https:// URL without credentials'
        : 'must be an https:// URL without credentials',
    }).valueAsString;
  }
}
