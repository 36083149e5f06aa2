/**
 * The app's context keys, as an operator types them (`-c key=value`, always strings) and as
 * cdk.json holds them (JSON types): each reaches the template, a bad value stops synth with a
 * message naming the key, and `bin/webhook-relay.ts` prints that message without a stack trace.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../lib/app';
import { CONTEXT_KEYS, ContextError, DEFAULT_STACK_NAME } from '../../lib/context';
import { cdkSynth, offlineEnvironment, PROJECT_ROOT } from '../../testkit/synth';
import { onlyResource, testApp } from './helpers';

function synth(context: Record<string, unknown>): { stackName: string; template: Template; stack: Stack } {
  const stack = buildApp(testApp(context));
  return { stackName: stack.stackName, template: Template.fromStack(stack), stack };
}

function environmentOf(template: Template): Record<string, unknown> {
  return (onlyResource(template, 'AWS::Lambda::Function').properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

describe('context keys', () => {
  it('with none, builds the default stack with the WebhookUrl parameter', () => {
    const { stackName, template } = synth({});
    expect(stackName).toBe(DEFAULT_STACK_NAME);
    expect(Object.keys(template.toJSON().Parameters as object)).toContain('WebhookUrl');
  });

  it('as -c strings, every knob reaches the template', () => {
    const { stackName, template } = synth({
      webhookUrl: 'https://hooks.example.com/orders',
      stackName: 'OrdersRelay',
      alarmEmail: 'ops@example.com',
      fifo: 'true',
      queueName: 'orders',
      maxReceiveCount: '7',
      retentionPeriodDays: '10',
      visibilityTimeoutSeconds: '900',
      timeoutSeconds: '60',
      memorySize: '512',
      logRetentionDays: '90',
      batchSize: '5',
      maxConcurrency: '20',
      requestConcurrency: '4',
      requestTimeoutMs: '3000',
      deadlineMarginMs: '1500',
      backoff: 'LINEAR',
      backoffBaseSeconds: '3',
      backoffMaxSeconds: '120',
      backoffSchedule: '10, 20',
      backoffJitter: 'false',
      permanentFailure: 'retry',
      headerPrefix: 'X-Relay-',
      defaultContentType: 'text/plain',
      logLevel: 'warn',
      serviceName: 'orders',
      oldestMessageAgeAlarmMinutes: '45',
      pacing: 'false',
      maxRequestsPerSecond: '100',
    });
    expect(stackName).toBe('OrdersRelay');
    template.hasResourceProperties('AWS::SQS::Queue', {
      QueueName: 'orders.fifo',
      FifoQueue: true,
      VisibilityTimeout: 900,
      MessageRetentionPeriod: 10 * 86_400,
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 7 }),
    });
    template.hasResourceProperties('AWS::Lambda::Function', { Timeout: 60, MemorySize: 512 });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 90 });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 5, ScalingConfig: { MaximumConcurrency: 20 } });
    template.hasResourceProperties('AWS::SNS::Subscription', { Endpoint: 'ops@example.com' });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'OrdersRelay-oldest-message-age', Threshold: 2700 });
    template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'OrdersRelay' });
    expect(environmentOf(template)).toMatchObject({
      WEBHOOK_URL: 'https://hooks.example.com/orders',
      MAX_RECEIVE_COUNT: '7',
      MAX_CONCURRENCY: '4',
      REQUEST_TIMEOUT_MS: '3000',
      DEADLINE_MARGIN_MS: '1500',
      BACKOFF: 'linear',
      BACKOFF_BASE_SECONDS: '3',
      BACKOFF_MAX_SECONDS: '120',
      BACKOFF_SCHEDULE: '10,20',
      BACKOFF_JITTER: 'false',
      PERMANENT_FAILURE: 'retry',
      HEADER_PREFIX: 'X-Relay-',
      DEFAULT_CONTENT_TYPE: 'text/plain',
      POWERTOOLS_LOG_LEVEL: 'WARN',
      POWERTOOLS_SERVICE_NAME: 'orders',
      RETRY_WINDOW_HOURS: '0',
      PACING: 'false',
      MAX_REQUESTS_PER_SECOND: '100',
      CONCURRENT_INVOCATIONS: '20',
    });
  });

  it('retryWindowHours takes decimals, as a -c string or a JSON number, and derives the backstop from them', () => {
    for (const [raw, hours, backstop] of [
      ['0.5', '0.5', 13], // 1,800 s / 180 s + 3
      ['1.15', '1.15', 26], // 69 minutes, though 1.15 × 60 is 68.999… in floating point
      [36, '36', 723],
    ] as const) {
      const { template } = synth({ webhookUrl: 'https://hooks.example.com/x', retryWindowHours: raw });
      expect(environmentOf(template)).toMatchObject({ RETRY_WINDOW_HOURS: hours, MAX_RECEIVE_COUNT: String(backstop) });
      template.hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: Match.objectLike({ maxReceiveCount: backstop }) });
    }
  });

  it('as cdk.json JSON values (booleans, numbers), the same', () => {
    const { template } = synth({
      webhookUrl: 'https://hooks.example.com/x',
      fifo: true,
      maxReceiveCount: 3,
      batchSize: 8,
      backoffJitter: false,
      backoffSchedule: [10, 20],
    });
    template.hasResourceProperties('AWS::SQS::Queue', { FifoQueue: true, RedrivePolicy: Match.objectLike({ maxReceiveCount: 3 }) });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 8 });
    expect(environmentOf(template)).toMatchObject({ BACKOFF_JITTER: 'false', BACKOFF_SCHEDULE: '10,20' });
  });

  it('batch size and window for a standard queue', () => {
    const { template } = synth({ webhookUrl: 'https://hooks.example.com/x', batchSize: '100', maxBatchingWindowSeconds: '5' });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 100, MaximumBatchingWindowInSeconds: 5 });
  });

  it('an existing queue by ARN', () => {
    const { template } = synth({
      webhookUrl: 'https://hooks.example.com/x',
      queueArn: 'arn:aws:sqs:eu-west-1:111122223333:q',
      deadLetterQueueArn: 'arn:aws:sqs:eu-west-1:111122223333:d',
    });
    template.resourceCountIs('AWS::SQS::Queue', 0);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: 'arn:aws:sqs:eu-west-1:111122223333:q' });
  });

  it("an existing queue with retryWindowHours=0: SQS's count semantics, the queue's maxReceiveCount the rule", () => {
    const { template, stack } = synth({
      webhookUrl: 'https://hooks.example.com/x',
      queueArn: 'arn:aws:sqs:eu-west-1:111122223333:q',
      deadLetterQueueArn: 'arn:aws:sqs:eu-west-1:111122223333:d',
      maxReceiveCount: '5',
      retryWindowHours: '0',
    });
    expect(environmentOf(template)).toMatchObject({ RETRY_WINDOW_HOURS: '0', MAX_RECEIVE_COUNT: '5' });
    // No "redrive count too small for the window" warning: there is no window.
    Annotations.fromStack(stack).hasNoWarning('*', Match.stringLikeRegexp('retry window'));
  });

  it.each<[Record<string, unknown>, RegExp]>([
    [{ fifo: 'yes' }, /Context fifo \(-c fifo=…\) must be true or false; got "yes"/],
    [{ maxReceiveCount: 'five' }, /Context maxReceiveCount .* must be a whole number from 1 to 1000; got "five"/],
    [{ timeoutSeconds: '1.5' }, /Context timeoutSeconds .* must be a whole number/],
    [{ backoff: 'random' }, /Context backoff .* must be one of exponential/],
    [{ logRetentionDays: '10' }, /Context logRetentionDays .* must be one of CloudWatch Logs' retention periods \(1, 3, 5, 7, 14,/],
    [{ webhookURL: 'https://x.example.com/' }, /Context webhookURL .* did you mean webhookUrl\?/],
    [
      { webhookUrll: 'https://x.example.com/' },
      /^Context webhookUrll \(-c webhookUrll=…\) is not a key the app reads; did you mean webhookUrl\?$/,
    ],
    [{ alarmEmial: 'ops@example.com' }, /^Context alarmEmial .* is not a key the app reads; did you mean alarmEmail\?$/],
    [{ maxRecieveCount: '3' }, /did you mean maxReceiveCount\?$/],
    [{ visibilityTimeout: '900' }, /visibilityTimeout is the construct's prop; its context key is visibilityTimeoutSeconds$/],
    [{ WEBHOOK_URL: 'https://x.example.com/' }, /WEBHOOK_URL is an environment variable; its context key is webhookUrl$/],
    [{ colour: 'blue' }, /^Context colour .* is not a key the app reads \(the nearest is \w+; docs\/configuration.md lists them all\)$/],
    [{ deadLetterQueueArn: 'arn:aws:sqs:eu-west-1:1:d' }, /Context deadLetterQueueArn .* give queueArn too/],
    [{ backoffSchedule: '1m,10m' }, /Context backoffSchedule .* comma-separated whole seconds/],
    [{ backoffSchedule: [60, '10m'] }, /Context backoffSchedule .* comma-separated whole seconds .*; got \[60,"10m"\]$/],
  ])('rejects %j', (context, message) => {
    expect(() => synth(context)).toThrow(ContextError);
    expect(() => synth(context)).toThrow(message);
  });

  it("passes CDK's own keys: feature flags, the CLI's, lookups, and those the CLI writes to cdk.json", () => {
    const { stackName } = synth({
      '@aws-cdk/core:newStyleStackSynthesis': true,
      'aws:cdk:enable-path-metadata': true,
      'aws-cdk:enableDiffNoFail': 'true',
      'availability-zones:account=123456789012:region=eu-west-1': ['eu-west-1a'],
      'acknowledged-issue-numbers': [32775],
      'cli-telemetry': false,
      'cdk-migrate': true,
      'assets-ecr-repository-name': 'assets',
    });
    expect(stackName).toBe(DEFAULT_STACK_NAME);
  });

  it('retryWindowHours takes its documented lower bound, 0.0167: a window of 1 minute', () => {
    const stack = buildApp(testApp({ webhookUrl: 'https://hooks.example.com/x', retryWindowHours: '0.0167' }));
    expect(stack.relay.retryWindow?.toSeconds()).toBe(60);
  });

  it('values the construct rejects name the key, not the prop', () => {
    expect(() => synth({ webhookUrl: 'http://hooks.example.com/x' })).toThrow(
      /^Context webhookUrl \(-c webhookUrl=…\) must be https:\/\/ \(plain http only with allowInsecureHttp, -c allowInsecureHttp=true\)/,
    );
    expect(() => synth({ webhookUrl: 'https://x.example.com/', batchSize: '50' })).toThrow(/-c maxBatchingWindowSeconds=1/);
  });

  // Every key's mistakes, as `-c key=value` strings: one line naming the key (never the construct's
  // prop, never CDK's own stack-trace errors), saying what it takes and, where the limit has one, why.
  const WEBHOOK = { webhookUrl: 'https://hooks.example.com/x' };
  const QUEUE = { queueArn: 'arn:aws:sqs:eu-west-1:111122223333:q', deadLetterQueueArn: 'arn:aws:sqs:eu-west-1:111122223333:d' };
  it.each<[Record<string, string>, string, RegExp]>([
    [{ stackName: 'my_relay' }, 'stackName', /must start with a letter and have only letters, digits and "-".*got "my_relay"/],
    [{ stackName: 'x'.repeat(129) }, 'stackName', /at most 128 characters/],
    [{ fifo: 'true', batchSize: '20' }, 'batchSize', /at most 10 for a FIFO queue \(Lambda's limit for FIFO event sources\); got 20/],
    [
      {
        ...QUEUE,
        queueArn: 'arn:aws:sqs:eu-west-1:111122223333:q.fifo',
        deadLetterQueueArn: 'arn:aws:sqs:eu-west-1:111122223333:d.fifo',
        batchSize: '20',
      },
      'batchSize',
      /for a FIFO queue/,
    ],
    [{ fifo: 'true', maxBatchingWindowSeconds: '5' }, 'maxBatchingWindowSeconds', /not supported by Lambda for FIFO queues/],
    [{ timeoutSeconds: '0' }, 'timeoutSeconds', /from 1 to 900; got "0"/],
    [{ timeoutSeconds: '1200' }, 'timeoutSeconds', /from 1 to 900; got "1200"/],
    [{ visibilityTimeoutSeconds: '10' }, 'visibilityTimeoutSeconds', /at least 6 × timeoutSeconds \+ maxBatchingWindowSeconds = 180 s/],
    [{ visibilityTimeoutSeconds: '99999' }, 'visibilityTimeoutSeconds', /from 0 to 43200/],
    [{ memorySize: '64' }, 'memorySize', /from 128 to 10240/],
    [{ retentionPeriodDays: '30' }, 'retentionPeriodDays', /from 1 to 14; got "30"/],
    [{ maxReceiveCount: '0' }, 'maxReceiveCount', /from 1 to 1000/],
    [{ batchSize: '20000' }, 'batchSize', /from 1 to 10000/],
    [{ batchSize: '50' }, 'batchSize', /needs a maxBatchingWindowSeconds of at least 1 second/],
    [{ maxBatchingWindowSeconds: '301' }, 'maxBatchingWindowSeconds', /from 0 to 300/],
    [{ maxConcurrency: '1' }, 'maxConcurrency', /from 2 to 1000/],
    [{ requestConcurrency: '0' }, 'requestConcurrency', /from 1 to 1000/],
    [{ requestTimeoutMs: '0' }, 'requestTimeoutMs', /from 1 to 900000/],
    [{ deadlineMarginMs: '30000' }, 'deadlineMarginMs', /shorter than timeoutSeconds \(30 seconds\)/],
    [{ backoffBaseSeconds: '99999' }, 'backoffBaseSeconds', /from 0 to 43200/],
    [{ backoffBaseSeconds: '5', backoffMaxSeconds: '1' }, 'backoffMaxSeconds', /BACKOFF_MAX_SECONDS must be at least BACKOFF_BASE_SECONDS/],
    [{ backoffSchedule: '99999' }, 'backoffSchedule', /whole seconds from 0 to 43200/],
    [{ headerPrefix: 'X Bad' }, 'headerPrefix', /HEADER_PREFIX must be characters legal in a header name/],
    [{ defaultContentType: 'ä' }, 'defaultContentType', /printable ASCII media type/],
    [{ paceKey: 'AWS.tenant' }, 'paceKey', /PACE_KEY must be a message attribute name/],
    [{ logLevel: 'loud' }, 'logLevel', /must be one of TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL, SILENT/],
    [{ oldestMessageAgeAlarmMinutes: '0' }, 'oldestMessageAgeAlarmMinutes', /from 1 to 20160/],
    [{ signingSecretArn: 'nope' }, 'signingSecretArn', /must be an ARN such as arn:aws:secretsmanager:/],
    [{ authSecretArn: 'nope' }, 'authSecretArn', /must be an ARN such as arn:aws:secretsmanager:/],
    [
      { signing: 'false', signingSecretArn: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:relay-signing-AbCdEf' },
      'signing',
      /is false, but a signingSecretArn was given/,
    ],
    [{ secretsRefreshSeconds: '999999' }, 'secretsRefreshSeconds', /from 0 to 86400/],
    [{ outageThreshold: '5000' }, 'outageThreshold', /from 0 to 1000/],
    [{ outageBackoffSeconds: '0' }, 'outageBackoffSeconds', /from 1 to 43200/],
    [{ outageBackoffSeconds: '10', outageBackoffMaxSeconds: '5' }, 'outageBackoffMaxSeconds', /at least OUTAGE_BACKOFF_SECONDS/],
    [
      { outageToleranceHours: '24' },
      'outageToleranceHours',
      /^Context outageToleranceHours \(-c outageToleranceHours=…\) was replaced by retryWindowHours: /,
    ],
    [
      { retryWindowHours: '400' },
      'retryWindowHours',
      /must be 0 \(off\) or a number from 0.0167 \(1 minute\) to 323.95 \(decimals allowed, e.g. 0.5\); got "400"/,
    ],
    [{ retryWindowHours: '1e2' }, 'retryWindowHours', /decimals allowed/],
    [{ retryWindowHours: '-1' }, 'retryWindowHours', /decimals allowed/],
    [{ retryWindowHours: '0' }, 'retryWindowHours', /cannot be 0: .*leave retryWindowHours unset and set maxReceiveCount/],
    // Under the documented bound, as typed: never rounded to 0 ("cannot be 0") or up to 1 minute.
    ...['0.0001', '0.001', '0.0166'].map((hours): [Record<string, string>, string, RegExp] => [
      { retryWindowHours: hours },
      'retryWindowHours',
      new RegExp(
        `must be 0 \\(off\\) or a number from 0\\.0167 \\(1 minute\\) to 323\\.95 \\(decimals allowed, e\\.g\\. 0\\.5\\); got "${hours}"$`,
      ),
    ]),
    [
      { retryWindowHours: '24', maxReceiveCount: '10' },
      'retryWindowHours',
      /^Context retryWindowHours \(-c retryWindowHours=…\) and maxReceiveCount are two ways/,
    ],
    [
      { retryWindowHours: '90' },
      'retentionPeriodDays',
      /\(4 days\) is shorter than retryWindowHours \(90 hours\) plus its margin of 12 hours 3 minutes .*Raise retentionPeriodDays to at least 5 days \(/,
    ],
    // A key in whole days is asked for whole days.
    [
      { retentionPeriodDays: '1' },
      'retentionPeriodDays',
      /\(1 day\) is shorter than retryWindowHours \(24 hours\) .*Raise retentionPeriodDays to at least 2 days \(the whole days covering 1 day 12 hours 3 minutes; up to 14 days\) or shorten retryWindowHours$/,
    ],
    [{ maxRequestsPerSecond: '1.5' }, 'maxRequestsPerSecond', /must be a whole number from 0 to 1000000/],
    [{ breakerOpenAlarmMinutes: '0' }, 'breakerOpenAlarmMinutes', /from 1 to 1440/],
    [{ queueArn: 'nope' }, 'queueArn', /must be an ARN such as arn:aws:sqs:/],
    [{ queueArn: QUEUE.queueArn }, 'queueArn', /needs deadLetterQueueArn too/],
    [{ ...QUEUE, deadLetterQueueArn: 'nope' }, 'deadLetterQueueArn', /must be an ARN such as arn:aws:sqs:/],
    [{ ...QUEUE, queueArn: 'arn:aws:sqs:eu-west-1:111122223333:q.fifo' }, 'deadLetterQueueArn', /same kind as the queue \(FIFO\)/],
    [{ ...QUEUE, queueName: 'x' }, 'queueName', /applies to a queue the construct creates/],
    [{ queueName: 'bad name' }, 'queueName', /letters, digits/],
    [
      { queueName: 'orders.fifo' },
      'queueName',
      /ends in \.fifo, a FIFO queue's name, but fifo is not true: set -c fifo=true for FIFO queues/,
    ],
    [{ alarmEmail: 'nope' }, 'alarmEmail', /e-mail address/],
    [{ webhookUrl: 'nope' }, 'webhookUrl', /absolute URL/],
    [{ webhookUrl: 'https://localhost/' }, 'webhookUrl', /the function itself/],
  ])('%j: one line naming -c %s', (context, key, message) => {
    let error: unknown;
    try {
      synth({ ...WEBHOOK, ...context });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ContextError);
    const text = (error as Error).message;
    expect(text.startsWith(`Context ${key} (-c ${key}=…) `)).toBe(true);
    expect(text).toMatch(message);
    expect(text).not.toContain('\n');
    expect(text).not.toContain('WebhookRelay:');
  });

  it("the construct's warnings name the keys typed, not the props they set", () => {
    const warningsOf = (stack: Stack): string[] =>
      Annotations.fromStack(stack)
        .findWarning('*', Match.anyValue())
        .map((warning) => String(warning.entry.data));
    const backstop = warningsOf(synth({ ...WEBHOOK, ...QUEUE, retryWindowHours: '100' }).stack).find((text) =>
      text.includes('backstopBelowWindow'),
    );
    expect(backstop).toContain("Raise the redrive policy's maxReceiveCount to 1000, shorten retryWindowHours, or set it to 0");
    const cut = warningsOf(synth({ ...WEBHOOK, timeoutSeconds: '5', requestTimeoutMs: '10000' }).stack).find((text) =>
      text.includes('requestTimeoutCut'),
    );
    expect(cut).toMatch(/^requestTimeoutMs \(10 seconds\) plus deadlineMarginMs exceeds the function timeout \(5 seconds\)/);
    for (const text of [backstop, cut]) expect(text).not.toMatch(/\b(retryWindow|requestTimeout|deadlineMargin)\b/);
  });

  it('a webhook URL is named without its query string or credentials', () => {
    expect(() => synth({ webhookUrl: 'http://hooks.example.com/x?token=abc123' })).toThrow(/got "http:\/\/hooks\.example\.com\/x\?…"/);
    expect(() => synth({ webhookUrl: 'ftp://user:hunter2@hooks.example.com/x' })).toThrow(/got "ftp:\/\/…@hooks\.example\.com\/x"/);
  });

  it('every key is documented in docs/configuration.md', () => {
    const docs = readFileSync(join(PROJECT_ROOT, 'docs', 'configuration.md'), 'utf8');
    const missing = Object.keys(CONTEXT_KEYS).filter((key) => !docs.includes(`\`${key}\``));
    expect(missing).toEqual([]);
  });
});

describe('the webhook URL and its secrets', () => {
  const URL_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay-webhook-url-AbCdEf';

  it('cdk synth with a URL whose password holds "/" (it does not parse) fails in one line without the credentials', async () => {
    const failure = cdkSynth({ context: { webhookUrl: 'https://admin:TOP/SECRET@hooks.example.com/x?token=abc123' } });
    await expect(failure).rejects.toThrow(/cdk synth exited with 1/);
    const output = await failure.catch((error: Error) => error.message);
    expect(output).toContain(
      'Context webhookUrl (-c webhookUrl=…) must be an absolute URL such as https://example.com/hook; got "https://…@hooks.example.com/x?…"',
    );
    expect(output).not.toMatch(/admin|TOP|SECRET|abc123/);
  }, 60_000);

  it('a query string in -c webhookUrl: a synth warning that it sits in the template in clear, naming webhookUrlSecretArn, without the query', () => {
    const { stack, template } = synth({ webhookUrl: 'https://hooks.example.com/x?token=abc123' });
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('query string'));
    expect(warnings).toHaveLength(1);
    const text = JSON.stringify(warnings[0]?.entry.data);
    expect(text).toContain('webhookUrl https://hooks.example.com/x?… has a query string');
    expect(text).toContain('instead: -c webhookUrlSecretArn=…');
    expect(text).not.toContain('abc123');
    // As documented: the URL itself is in the template.
    expect(environmentOf(template).WEBHOOK_URL).toBe('https://hooks.example.com/x?token=abc123');
    // Without a query string, no warning.
    const clean = synth({ webhookUrl: 'https://hooks.example.com/x' });
    expect(Annotations.fromStack(clean.stack).findWarning('*', Match.stringLikeRegexp('query string'))).toEqual([]);
  });

  it('-c webhookUrlSecretArn: no URL in the template, no parameter, read access to that secret alone', () => {
    const { template } = synth({ webhookUrlSecretArn: URL_SECRET });
    const environment = environmentOf(template);
    expect(environment.WEBHOOK_URL_SECRET_ARN).toBe(URL_SECRET);
    expect(environment.WEBHOOK_URL).toBeUndefined();
    expect(template.toJSON().Parameters ?? {}).not.toHaveProperty('WebhookUrl');
    const statements = (
      onlyResource(template, 'AWS::IAM::Policy').properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }
    ).Statement;
    const grant = statements.find((statement) => [statement.Resource].flat().includes(URL_SECRET));
    expect([grant?.Action].flat()).toContain('secretsmanager:GetSecretValue');
  });

  it.each([
    [
      { webhookUrl: 'https://hooks.example.com/x', webhookUrlSecretArn: URL_SECRET },
      /\(-c webhookUrlSecretArn=…\) and webhookUrl are two ways of giving the URL; give one/,
    ],
    [{ webhookUrlSecretArn: 'relay-webhook-url' }, /webhookUrlSecretArn \(-c webhookUrlSecretArn=…\) must be an ARN such as/],
  ])('%j stops synth naming the key', (context, message) => {
    expect(() => synth(context)).toThrow(ContextError);
    expect(() => synth(context)).toThrow(message);
  });
});

describe('bin/webhook-relay.ts', () => {
  it('prints one line naming the key for a bad value, and exits 1 without a stack trace', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'bin/webhook-relay.ts'], {
      cwd: PROJECT_ROOT,
      env: { ...offlineEnvironment(), CDK_CONTEXT_JSON: JSON.stringify({ webhookUrl: 'https://hooks.example.com/x', batchSize: '50' }) },
      encoding: 'utf8',
    });
    expect(result.status).toBe(1);
    expect(result.stderr.trim()).toBe(
      'Context batchSize (-c batchSize=…) of 50 (above 10) needs a maxBatchingWindowSeconds of at least 1 second (-c maxBatchingWindowSeconds=1), as Lambda requires',
    );
  });

  it("a stack name CloudFormation refuses: one line, not CDK's stack trace", () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'bin/webhook-relay.ts'], {
      cwd: PROJECT_ROOT,
      env: {
        ...offlineEnvironment(),
        CDK_CONTEXT_JSON: JSON.stringify({ webhookUrl: 'https://hooks.example.com/x', stackName: 'my_relay' }),
      },
      encoding: 'utf8',
    });
    expect(result.status).toBe(1);
    expect(result.stderr.trim()).toBe(
      'Context stackName (-c stackName=…) must start with a letter and have only letters, digits and "-", at most 128 characters (CloudFormation\'s rule); got "my_relay"',
    );
  });
});

describe('npx cdk synth', () => {
  // The CLI adds its own context (aws:cdk:*, cdk.json's feature flags); a mistyped key of the
  // operator's still stops synth, with the key and the one meant, before anything is bundled.
  it.each([
    ['alarmEmial', 'alarmEmail', 'ops@example.com'],
    ['webhookUrll', 'webhookUrl', 'https://hooks.example.com/x'],
  ])(
    '-c %s=… stops synth naming the key and %s',
    async (key, meant, value) => {
      const context: Record<string, string> =
        key === 'webhookUrll' ? { [key]: value } : { webhookUrl: 'https://hooks.example.com/x', [key]: value };
      const failure = await cdkSynth({ context }).then(
        () => undefined,
        (error: Error) => error.message,
      );
      expect(failure).toMatch(/^cdk synth exited with 1:/);
      const lines = (failure ?? '').split('\n').filter((line) => line.trim() !== '');
      expect(lines).toContain(`Context ${key} (-c ${key}=…) is not a key the app reads; did you mean ${meant}?`);
      expect(lines.filter((line) => /^\s+at /.test(line))).toEqual([]);
    },
    60_000,
  );
});
