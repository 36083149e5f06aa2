/**
 * The public face of `WebhookRelay`: its props (every optional one with its default), and the
 * error it raises for a prop AWS or the function would reject.
 */
import type { Duration } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
// Types from the modules that declare them, never from lambda/config.ts: the construct's
// declarations must not reach the function's runtime (Powertools, `aws-lambda`) types.
import type { BackoffPolicyName } from '../../lambda/retry-timing';
import type { LogLevel, OAuthClientAuthentication, PermanentFailureMode } from '../../lambda/settings';

/** Properties of {@link WebhookRelay}. Only the webhook's URL is required: `webhookUrl`, or `webhookUrlSecret`. */
export interface WebhookRelayProps {
  // ---- where messages go (function environment) ----

  /**
   * `WEBHOOK_URL`: where every message is POSTed. `https://`, unless `allowInsecureHttp`.
   * May be a token (e.g. a CloudFormation parameter); it is then validated at deploy time only.
   * Written into the template and the function's environment as given: a URL that carries a
   * token goes in {@link webhookUrlSecret} instead (synth warns about a query string).
   * @default none: give this or {@link webhookUrlSecret}
   */
  readonly webhookUrl?: string;
  /**
   * `WEBHOOK_URL_SECRET_ARN`: a secret holding the webhook's URL (the whole secret string), for a
   * URL that embeds a token: it then never appears in the template, the environment or a log.
   * The function may read it; it re-reads it every {@link secretsRefresh}, keeping the last good URL.
   * @default none: give this or {@link webhookUrl}
   */
  readonly webhookUrlSecret?: secretsmanager.ISecret;
  /** `ALLOW_INSECURE_HTTP`: allow a plain `http://` webhook (a private network). @default false */
  readonly allowInsecureHttp?: boolean;
  /** `HEADER_PREFIX`: prefix of the Carrier-compatible headers. @default 'X-Carrier-' */
  readonly headerPrefix?: string;
  /** `DEFAULT_CONTENT_TYPE`: for messages without a `Body.ContentType` attribute. @default 'application/json' */
  readonly defaultContentType?: string;
  /** `REQUEST_TIMEOUT_MS`: upper bound of one webhook request. @default 10 seconds */
  readonly requestTimeout?: Duration;
  /**
   * `MAX_CONCURRENCY`: webhook requests in flight at once within one invocation. Not to be
   * confused with {@link maxConcurrency}, the number of concurrent invocations.
   * @default 10
   */
  readonly requestConcurrency?: number;
  /**
   * `PACING`: each container adapts its pace (requests per second and in flight, never above
   * {@link requestConcurrency}) to the webhook's capacity: slower when its refusals (`429`, `503`, `504`, `408`,
   * timeouts) grow with the pace, not for refusals of single messages; paced from its rate-limit headers when it sends
   * them. `false` sends as fast as {@link requestConcurrency} allows.
   * @default true
   */
  readonly pacing?: boolean;
  /**
   * `PACE_KEY`: also pace each key on its own, beside the endpoint: the name of a message attribute whose value is the
   * key (a tenant id), or `MessageGroupId` for the message group. Unset: one pace for the endpoint.
   */
  readonly paceKey?: string;
  /**
   * `MAX_REQUESTS_PER_SECOND`: the webhook's known capacity, a ceiling on the whole relay's requests
   * per second. Each of the {@link maxConcurrency} concurrent invocations takes an even share
   * (`CONCURRENT_INVOCATIONS`, which the construct sets to {@link maxConcurrency}). `0` sets no ceiling.
   * @default 0 (no ceiling: {@link pacing} alone)
   */
  readonly maxRequestsPerSecond?: number;
  /** `DEADLINE_MARGIN_MS`: time kept back from the function's deadline for the SQS calls after the last request. @default 1 second */
  readonly deadlineMargin?: Duration;
  /** `BACKOFF`: delay policy for retries the webhook did not time itself. @default 'exponential' */
  readonly backoff?: BackoffPolicyName;
  /** `BACKOFF_BASE_SECONDS`, whole seconds. @default 2 seconds */
  readonly backoffBase?: Duration;
  /** `BACKOFF_MAX_SECONDS`, whole seconds. @default 300 seconds */
  readonly backoffMax?: Duration;
  /** `BACKOFF_SCHEDULE`: the delays of the `schedule` policy, one per receive (the last repeats), whole seconds. @default the handler's schedule */
  readonly backoffSchedule?: Duration[];
  /** `BACKOFF_JITTER`: add up to 25 % random jitter to backoff delays. @default true */
  readonly backoffJitter?: boolean;
  /** `PERMANENT_FAILURE`: dead-letter a permanent (non-retryable 4xx/3xx) failure at once, or retry it. @default 'dead-letter' */
  readonly permanentFailure?: PermanentFailureMode;
  /** `POWERTOOLS_LOG_LEVEL`. @default 'INFO' */
  readonly logLevel?: LogLevel;
  /**
   * `POWERTOOLS_SERVICE_NAME`: the `service` of every log line and the metrics' dimension, so it
   * must differ between relays whose dashboards should not mix. @default `name`
   */
  readonly serviceName?: string;

  // ---- naming ----

  /**
   * Names the dashboard and the alarms (`<name>-dlq-not-empty`, …) and is the default service
   * name. Letters, digits, `-` and `_`; each relay of a stack its own (synth refuses a second).
   * @default `<stack name>-<construct id>`
   */
  readonly name?: string;

  // ---- the queues ----

  /**
   * An existing queue to relay from, instead of creating one. It needs a dead-letter queue:
   * either its own (a `Queue` created with `deadLetterQueue`) or {@link deadLetterQueue}.
   * @default a new queue
   */
  readonly queue?: sqs.IQueue;
  /**
   * The dead-letter queue of an existing {@link queue} whose redrive policy this construct cannot
   * see (an imported queue). {@link maxReceiveCount} must then equal that redrive policy's count.
   * @default the dead-letter queue of {@link queue}'s own redrive policy
   */
  readonly deadLetterQueue?: sqs.IQueue;
  /** Create FIFO queues (`.fifo`). @default false */
  readonly fifo?: boolean;
  /**
   * Name of the queue to create (the DLQ gets `<name>-dlq`; `.fifo` is appended for FIFO; a name ending in `.fifo` needs
   * {@link fifo}); synth refuses one whose queues another relay of the stack names too. @default generated by CloudFormation
   */
  readonly queueName?: string;
  /**
   * `RETRY_WINDOW_HOURS`: how long a message's failures may go on, from its first receive, before
   * the relay gives up on it and dead-letters it ("retry window exhausted"). `429`/`503` with
   * `Retry-After` and circuit-breaker holds cost it only the time they take. Whole seconds, from
   * 1 minute to 13 days 11 hours 57 minutes (323.95 hours): the queue's retention, at most SQS's
   * 14 days, must cover it plus 12 hours and one visibility timeout (180 s by default; a longer
   * one lowers the bound, and synth names it).
   * The redrive policy's count is then only a backstop for crashes, derived from the window (see
   * {@link maxReceiveCount}). To give up after a number of receives instead, set
   * {@link maxReceiveCount} and leave this unset: the window is then off. With an existing
   * {@link queue}, whose redrive policy is its own, `Duration.seconds(0)` switches the window off
   * instead: the queue's count alone decides.
   * @default 24 hours
   */
  readonly retryWindow?: Duration;
  /**
   * Receives before SQS moves a message to the DLQ (the redrive policy); also `MAX_RECEIVE_COUNT`.
   * Setting it on a created queue chooses SQS's count semantics: the retry window is off
   * (`RETRY_WINDOW_HOURS=0`), so it may not be given with {@link retryWindow}. With an existing
   * {@link queue} it states that queue's redrive policy instead, and the window stays on unless
   * {@link retryWindow} is 0.
   * @default derived from the retry window: the window over the visibility timeout, plus 3, within 10 to 1,000 (483 with the defaults)
   */
  readonly maxReceiveCount?: number;
  /** How long the main queue keeps a message. The DLQ always keeps 14 days. @default 4 days */
  readonly retentionPeriod?: Duration;
  /**
   * The created queue's visibility timeout. @default 6 × `timeout` + `maxBatchingWindow`, as
   * Lambda recommends; an explicit value may not be lower.
   */
  readonly visibilityTimeout?: Duration;

  // ---- the function and its event source ----

  /** Function timeout (1 s to 15 min). @default 30 seconds */
  readonly timeout?: Duration;
  /** Function memory, MB (128 to 10,240). @default 256 */
  readonly memorySize?: number;
  /** Retention of the function's log group. @default one month */
  readonly logRetention?: logs.RetentionDays;
  /** Records per invocation: standard queues 1 to 10,000 (above 10 needs `maxBatchingWindow` ≥ 1 s), FIFO 1 to 10. @default 10 */
  readonly batchSize?: number;
  /** How long the event source gathers records before invoking (0 to 300 s; not for FIFO). @default none (invoke at once) */
  readonly maxBatchingWindow?: Duration;
  /**
   * The event source's maximum concurrent invocations (2 to 1,000): with `requestConcurrency`,
   * the most requests the webhook sees at once (5 × 10 = 50 by default).
   * @default 5
   */
  readonly maxConcurrency?: number;

  // ---- alarms ----

  /** E-mail address subscribed to the alarm topic (the subscription must be confirmed). @default no subscription */
  readonly alarmEmail?: string;
  /** An existing topic for the alarms. @default a new topic */
  readonly alarmTopic?: sns.ITopic;
  /**
   * Alarm when the oldest message in the queue is older than this (1 minute to 14 days): as SQS counts it, and among the
   * messages the relay handed back (which SQS stops counting at their third receive). @default 30 minutes
   */
  readonly oldestMessageAgeThreshold?: Duration;

  // ---- secrets (Secrets Manager; never plaintext in the template) ----

  /**
   * Sign every request (Standard Webhooks). With no `signingSecret` the construct creates one
   * (a random 48-character key, valid as `whsec_<key>`); `false` sends no signatures.
   * @default true
   */
  readonly signing?: boolean;
  /** `SIGNING_SECRET_ARN`: an existing secret holding the signing key(s), instead of a created one. @default a created secret (see `signing`) */
  readonly signingSecret?: secretsmanager.ISecret;
  /** `AUTH_SECRET_ARN`: a secret holding the whole `Authorization` value sent with every request. @default no `Authorization` header */
  readonly authSecret?: secretsmanager.ISecret;
  /** `SECRETS_REFRESH_SECONDS`: how long the function uses a secret value before reading it again. @default 5 minutes */
  readonly secretsRefresh?: Duration;

  // ---- reaching the webhooks enterprises run: OAuth, mutual TLS, a proxy, a fixed egress address ----

  /**
   * `OAUTH_TOKEN_URL`: authenticate with OAuth 2.0 client credentials (RFC 6749 §4.4). Every request
   * carries `Authorization: Bearer <token>`: one token per container, renewed before it expires and
   * on a `401` (the record is then resent once). `https://`; needs {@link oauthClientId} and
   * {@link oauthClientSecret}; not with {@link authSecret}.
   * @default no OAuth
   */
  readonly oauthTokenUrl?: string;
  /** `OAUTH_CLIENT_ID`: the OAuth client id. @default none (required with {@link oauthTokenUrl}) */
  readonly oauthClientId?: string;
  /** `OAUTH_CLIENT_SECRET_ARN`: the secret holding the OAuth client secret (plain text); the function is granted read access. @default none (required with {@link oauthTokenUrl}) */
  readonly oauthClientSecret?: secretsmanager.ISecret;
  /** `OAUTH_SCOPE`: the scopes asked for, space-separated. @default none (the token endpoint's default) */
  readonly oauthScope?: string;
  /** `OAUTH_AUDIENCE`: the audience asked for (Auth0 and others). @default none */
  readonly oauthAudience?: string;
  /** `OAUTH_CLIENT_AUTHENTICATION`: HTTP Basic (`client_secret_basic`) or the form (`client_secret_post`). @default 'client_secret_basic' */
  readonly oauthClientAuthentication?: OAuthClientAuthentication;
  /**
   * `CLIENT_CERTIFICATE_SECRET_ARN`: mutual TLS. A secret holding JSON
   * `{ "certificate": "<PEM>", "privateKey": "<PEM>", "caCertificate"?: "<PEM>" }`: the certificate is
   * presented to the webhook, `caCertificate` (a private CA) trusted beside the public CAs. Re-read
   * every {@link secretsRefresh}; the function is granted read access.
   * @default no client certificate
   */
  readonly clientCertificateSecret?: secretsmanager.ISecret;
  /**
   * `HTTPS_PROXY`: a forward proxy for the `https://` webhook and token requests
   * (`http://host:port`; an HTTP CONNECT tunnel, TLS end to end). No `user:password`: it would be in
   * the template; use a proxy that admits the function's security group instead.
   * @default no proxy
   */
  readonly httpsProxy?: string;
  /** `HTTP_PROXY`: the same for an `http://` webhook. @default no proxy */
  readonly httpProxy?: string;
  /** `NO_PROXY`: hosts, domains, IP addresses and CIDR ranges reached without the proxy, comma-separated. @default none */
  readonly noProxy?: string;
  /**
   * Put the function in this VPC: with a NAT gateway on the way out, its Elastic IP is the one
   * address the webhook sees (docs/operations.md, "A fixed egress address"). The function then
   * reaches SQS and Secrets Manager through the NAT gateway or VPC endpoints too. The role is given
   * the network-interface permissions Lambda needs.
   * @default none: the function runs in Lambda's own network, from AWS's changing addresses
   */
  readonly vpc?: ec2.IVpc;
  /** The function's subnets in {@link vpc}: private ones that leave by the NAT gateway. @default the VPC's private subnets with egress */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /** The function's security groups in {@link vpc}. @default one created, allowing all outbound traffic */
  readonly securityGroups?: ec2.ISecurityGroup[];

  // ---- outages ----

  /**
   * `OUTAGE_THRESHOLD`: failures in a row that open the circuit breaker (outage signs, or server errors such as `500`
   * that go on for 5 s); 0 switches it off. @default 5
   */
  readonly outageThreshold?: number;
  /** `OUTAGE_BACKOFF_SECONDS`: while the breaker is open, one probe per this long; also the shortest hold. @default 10 seconds */
  readonly outageBackoff?: Duration;
  /** `OUTAGE_BACKOFF_MAX_SECONDS`: the longest a record held back by the open breaker stays away. @default 15 minutes */
  readonly outageBackoffMax?: Duration;
  /** Alarm when the breaker has been open this long: the operator hears of the outage before anything is dead-lettered. @default 5 minutes */
  readonly breakerOpenAlarmThreshold?: Duration;
  /**
   * Alarm when the oldest message in the dead-letter queue is this old (1 hour to 13 days): the DLQ
   * keeps a message 14 days, so the rest is the time left to read and replay it before SQS deletes it.
   * @default 10 days
   */
  readonly deadLetterAgeAlarmThreshold?: Duration;
}

/** A prop value that SQS, Lambda or the function would reject. `prop` names the offending prop. */
export class WebhookRelayConfigError extends Error {
  constructor(
    readonly prop: string,
    message: string,
  ) {
    super(`WebhookRelay: ${prop} ${message}`);
    this.name = 'WebhookRelayConfigError';
  }
}
