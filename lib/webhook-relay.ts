/**
 * The `WebhookRelay` construct: an SQS queue (and its dead-letter queue), the Lambda function
 * that POSTs every message to a webhook, the event source mapping between them, alarms and a
 * dashboard. It wires the parts in `lib/webhook-relay/`: the props and their defaults (from the
 * settings registry), `resolveSettings` (every check and derived value, without a Stack), the
 * function's environment, and the metric / alarm / dashboard factories.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotations, Duration, Stack, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { functionCode, HANDLER_MODULE } from './bundle';
import { createAlarms, type RelayAlarms } from './webhook-relay/alarms';
import { createDashboard } from './webhook-relay/dashboard';
import { inContextKeys, PROPS_FROM_CONTEXT } from './webhook-relay/defaults';
import { functionEnvironment } from './webhook-relay/environment';
import { RelayMetricFactory } from './webhook-relay/metrics';
import { type WebhookRelayProps, WebhookRelayConfigError } from './webhook-relay/props';
import { createQueries, type RelayQueries } from './webhook-relay/queries';
import { relayQueues } from './webhook-relay/queues';
import { resolveSettings } from './webhook-relay/resolve';

/** The repository root, found from this file so synth works from any working directory. */
const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * An SQS queue relayed to an HTTP webhook by a Lambda function, with a dead-letter queue,
 * least-privilege permissions, alarms to an SNS topic and a CloudWatch dashboard.
 */
export class WebhookRelay extends Construct {
  /** The queue producers send to (created, or the one passed in). */
  readonly queue: sqs.IQueue;
  /** Where messages go when their retry window runs out (or after `maxReceiveCount` receives), or at once on a permanent failure. */
  readonly deadLetterQueue: sqs.IQueue;
  /** The relay function. */
  readonly function: lambda.Function;
  /** The function's log group. */
  readonly logGroup: logs.LogGroup;
  /** The topic every alarm notifies. */
  readonly alarmTopic: sns.ITopic;
  /** The operator dashboard. */
  readonly dashboard: cloudwatch.Dashboard;
  /** Alarms: DLQ not empty, oldest dead letter close to expiry, oldest message too old, function errors, circuit breaker open too long. */
  readonly alarms: RelayAlarms;
  /** Saved CloudWatch Logs Insights queries on the function's log group (`<name>/…`). */
  readonly queries: RelayQueries;
  /** The secret requests are signed with (created or passed in); `undefined` when not signing. */
  readonly signingSecret: secretsmanager.ISecret | undefined;
  /** The environment the function gets (tokens included), for inspection and extension. */
  readonly environment: Readonly<Record<string, string>>;
  /** The name of the dashboard, alarms and (by default) the service. */
  readonly name: string;
  /** The `service` dimension of the function's metrics. */
  readonly serviceName: string;
  /** The redrive policy's receive count: the retry window's backstop, or SQS's count semantics when the window is off. */
  readonly maxReceiveCount: number;
  /** How long a message's failures may go on before it is dead-lettered; `undefined` when `maxReceiveCount` decides instead. */
  readonly retryWindow: Duration | undefined;
  /** The queue and DLQ names it creates, when `queueName` gives them (SQS's names are the account's, per region). */
  private readonly createdQueueNames: readonly string[];

  constructor(scope: Construct, id: string, props: WebhookRelayProps) {
    super(scope, id);
    // Every check and derived value, before anything is created.
    const resolved = resolveSettings(props, `${Stack.of(this).stackName}-${id}`);
    // Warnings name the props, or the -c keys when the app set every prop from one (this repository's app).
    const worded = this.node.tryGetContext(PROPS_FROM_CONTEXT) === true ? inContextKeys : (message: string) => message;
    for (const warning of resolved.warnings) Annotations.of(this).addWarningV2(warning.id, worded(warning.message));
    this.name = resolved.name;
    const { queues } = resolved;
    this.createdQueueNames = queues.kind === 'create' && queues.names !== undefined ? [queues.names.queue, queues.names.dlq] : [];
    this.refuseNamesTaken();
    this.serviceName = resolved.serviceName;
    this.maxReceiveCount = resolved.maxReceiveCount;
    this.retryWindow = resolved.retryWindowSeconds > 0 ? Duration.seconds(resolved.retryWindowSeconds) : undefined;

    const { queue, deadLetterQueue } = relayQueues(this, resolved);
    this.queue = queue;
    this.deadLetterQueue = deadLetterQueue;

    this.signingSecret = resolved.signing ? (props.signingSecret ?? this.createSigningSecret()) : undefined;
    this.environment = functionEnvironment(props, resolved, {
      deadLetterQueueUrl: deadLetterQueue.queueUrl,
      webhookUrlSecretArn: props.webhookUrlSecret?.secretArn,
      signingSecretArn: this.signingSecret?.secretArn,
      authSecretArn: props.authSecret?.secretArn,
      oauthClientSecretArn: props.oauthClientSecret?.secretArn,
      clientCertificateSecretArn: props.clientCertificateSecret?.secretArn,
    });

    // ---- the function ----
    this.logGroup = new logs.LogGroup(this, 'LogGroup', { retention: resolved.logRetention });
    // An explicit role instead of AWSLambdaBasicExecutionRole: that managed policy may write to
    // any log group; this one writes to its own only.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `sqs-webhook-relay ${this.name}: consume its queue, send to its DLQ, write its logs`,
    });
    this.logGroup.grantWrite(role);

    const runtime = lambda.Runtime.NODEJS_24_X; // pinned rather than NODEJS_LATEST: a CDK upgrade never changes it unannounced
    this.function = new lambda.Function(this, 'Function', {
      // Bundled by esbuild on this machine, split so the SDK clients load on first use (lib/bundle.ts).
      code: functionCode({ entry: join(PROJECT_ROOT, 'lambda', 'handler.ts'), projectRoot: PROJECT_ROOT, runtime }),
      handler: `${HANDLER_MODULE}.handler`,
      runtime,
      architecture: lambda.Architecture.ARM_64,
      memorySize: resolved.memorySize,
      timeout: resolved.timeout,
      role,
      logGroup: this.logGroup,
      description: `sqs-webhook-relay ${this.name}: POSTs each message of its queue to the webhook`,
      environment: this.environment,
      // A VPC when given (a NAT gateway's fixed address): no lookup here, the caller's VPC as it is.
      vpc: props.vpc,
      vpcSubnets: props.vpcSubnets,
      securityGroups: props.securityGroups,
    });
    if (props.vpc !== undefined) this.grantNetworkInterfaces(role);

    this.function.addEventSource(
      new SqsEventSource(queue, {
        batchSize: resolved.batchSize,
        // 0 is Lambda's default: leave the property out rather than state it.
        maxBatchingWindow: resolved.windowSeconds === 0 ? undefined : Duration.seconds(resolved.windowSeconds),
        maxConcurrency: resolved.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );
    // The event source's grant covers ReceiveMessage, DeleteMessage, ChangeMessageVisibility,
    // GetQueueUrl and GetQueueAttributes on this queue only; the function needs just SendMessage
    // on its DLQ besides (for dead-lettering permanent failures at once). Not grantSendMessages:
    // it adds GetQueueAttributes and GetQueueUrl, and the function has the DLQ's URL (DLQ_URL).
    deadLetterQueue.grant(this.function, 'sqs:SendMessage');
    // A DLQ encrypted with a KMS key of the app: what SQS asks of a producer, not grantEncryptDecrypt's
    // kms:Encrypt and kms:ReEncrypt* besides (SQS encrypts with the data key it generates).
    deadLetterQueue.encryptionMasterKey?.grant(this.function, 'kms:GenerateDataKey', 'kms:Decrypt');
    // The value of exactly the secrets it sends with, nothing else in Secrets Manager.
    for (const secret of [
      this.signingSecret,
      props.authSecret,
      props.webhookUrlSecret,
      props.oauthClientSecret,
      props.clientCertificateSecret,
    ]) {
      if (secret !== undefined) this.grantSecretValue(secret);
    }

    // ---- monitoring ----
    this.alarmTopic =
      props.alarmTopic ?? new sns.Topic(this, 'AlarmTopic', { displayName: `sqs-webhook-relay ${this.name} alarms`, enforceSSL: true });
    if (props.alarmEmail !== undefined) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    const metrics = new RelayMetricFactory(this);
    this.queries = createQueries(this, this.name, this.logGroup);
    this.alarms = createAlarms(this, this, metrics, this.alarmTopic, resolved);
    this.dashboard = createDashboard(this, this, metrics, this.alarms, resolved);
  }

  /**
   * A relay of the same stack with this `name` (its alarms, dashboard and queries) or a queue name
   * of this one would synthesize, then fail at deploy: those names are unique in an account and
   * region. Refused here, naming the prop and the other relay.
   * @throws {WebhookRelayConfigError}
   */
  private refuseNamesTaken(): void {
    for (const other of Stack.of(this).node.findAll()) {
      if (!(other instanceof WebhookRelay) || other === this) continue;
      if (other.name === this.name)
        throw new WebhookRelayConfigError(
          'name',
          `${JSON.stringify(this.name)} is already the name of the WebhookRelay at ${other.node.path} in this stack: its alarms, dashboard and queries would take the same names, which a deploy refuses; give each relay its own name`,
        );
      const taken = this.createdQueueNames.find((queueName) => other.createdQueueNames.includes(queueName));
      if (taken !== undefined)
        throw new WebhookRelayConfigError(
          'queueName',
          `gives a queue the name ${taken}, which the WebhookRelay at ${other.node.path} in this stack creates too; a deploy would refuse the second: give each relay its own queueName`,
        );
    }
  }

  /**
   * Lets the function read `secret`'s value: `GetSecretValue` alone (not `grantRead`, which adds
   * `DescribeSecret`: the function never asks for it), and decrypting with the secret's own key.
   */
  private grantSecretValue(secret: secretsmanager.ISecret): void {
    // As grantRead names it: a partial ARN matches the six characters Secrets Manager appends.
    const arn = secret.secretFullArn ?? `${secret.secretArn}-??????`;
    this.function.addToRolePolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [arn] }));
    secret.encryptionKey?.grantDecrypt(
      new kms.ViaServicePrincipal(`secretsmanager.${Stack.of(this).region}.amazonaws.com`, this.function.grantPrincipal),
    );
  }

  /**
   * What Lambda needs to attach the function to the VPC's subnets: the actions of AWS's managed
   * `AWSLambdaVPCAccessExecutionRole`, which the function's own role (made explicit so that it
   * writes to its own log group only) does not get by itself. EC2 takes no resource for the
   * Describe actions, and Lambda creates the interfaces before their ids exist: `*`, as AWS's policy.
   */
  private grantNetworkInterfaces(role: iam.Role): void {
    const policy = new iam.Policy(this, 'NetworkInterfaces', {
      statements: [
        new iam.PolicyStatement({
          actions: [
            'ec2:CreateNetworkInterface',
            'ec2:DescribeNetworkInterfaces',
            'ec2:DescribeSubnets',
            'ec2:DeleteNetworkInterface',
            'ec2:AssignPrivateIpAddresses',
            'ec2:UnassignPrivateIpAddresses',
          ],
          resources: ['*'],
        }),
      ],
    });
    policy.attachToRole(role);
    // The function's creation must wait for it, or Lambda refuses to attach it to the subnets.
    this.function.node.addDependency(policy);
    Validations.of(policy).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        "Lambda's VPC access needs these EC2 network-interface actions on *: AWS's own AWSLambdaVPCAccessExecutionRole grants the same; the Describe actions take no resource, and the interfaces do not exist before Lambda creates them.",
    });
  }

  /** A random signing key in Secrets Manager: 48 letters and digits, which is valid base64 (36 bytes). */
  private createSigningSecret(): secretsmanager.Secret {
    const secret = new secretsmanager.Secret(this, 'SigningSecret', {
      description: `sqs-webhook-relay ${this.name}: Standard Webhooks signing key (use it as whsec_<value> in the webhook)`,
      generateSecretString: { passwordLength: 48, excludePunctuation: true, includeSpace: false },
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'A webhook signing key cannot rotate on a schedule: the webhook owner must trust the new key before the relay signs with it alone. ' +
        'Rotate by hand: put "<new> <old>" in the secret (the relay signs with both), update the webhook, then leave only "<new>".',
    });
    return secret;
  }
}
