/**
 * The small decisions of local mode, without processes: its settings, the demo webhook's
 * answers, how the handler's log lines read on a terminal, the printed commands, and how the
 * standalone relay finds its way to SQS.
 */
import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { SQSClient } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { describe, expect, test, vi } from 'vitest';
import { regionOfQueueHost } from '../../lambda/sqs-util';
import { awsCliCommand, formatBanner, type ReadyInfo, sendCommand, shellQuote } from '../../local/banner';
import { runsFromSource, subcommandPrefix } from '../../local/invocation';
import { demoReplyFor } from '../../local/sandbox/demo-webhook';
import { PortInUseError } from '../../local/sandbox/emulator';
import { PROJECT_ROOT } from '../../testkit/synth';
import { freeze } from '../support/freeze';
import { startSilentEndpoint } from '../support/silent-endpoint';
import { networkErrorCode, oneLine, sqsStartupError } from '../../local/errors';
import { readDeadLetter } from '../../local/dead-letters/dead-letter';
import { Pace } from '../../local/dead-letters/pace';
import { formatSummary, SummaryBuilder } from '../../local/dead-letters/summary';
import { connectionFor, describeExistingQueue } from '../../local/existing-queue';
import { createLocalLog, PLAIN, RelayLogger, renderHandlerEntry, terminalSafe } from '../../local/log';
import { visibilityTimeoutSecondsFor } from '../../lambda/aws-limits';
import { loadLocalSettings, mistypedVariables } from '../../local/settings';
import { prepareLocalStart } from '../../local/runner';
import { helpText } from '../../local/cli';
import { sleep } from '../../local/sleep';

describe('local settings', () => {
  test('defaults: the emulator on 4566, queue webhook-relay, one poller, batches of 10, a 30 s function', () => {
    expect(loadLocalSettings({}, true)).toEqual({
      queueUrl: undefined,
      sqsPort: 4566,
      queueName: 'webhook-relay',
      maxReceiveCount: undefined,
      batchSize: 10,
      maxBatchingWindowSeconds: 0,
      pollers: 1,
      concurrentInvocations: 1,
      functionTimeoutSeconds: 30,
      webhookUrl: undefined,
      demoWebhookPort: 0,
      logFormat: 'pretty',
      logLevel: 'INFO',
      healthCheckUrl: undefined,
      healthCheckIntervalSeconds: 5,
    });
    expect(loadLocalSettings({}, false).logFormat).toBe('json');
    expect(loadLocalSettings({ WEBHOOK_HEALTH_CHECK_URL: 'http://127.0.0.1:8080/health' }, false).healthCheckUrl?.href).toBe(
      'http://127.0.0.1:8080/health',
    );
    expect(() => loadLocalSettings({ WEBHOOK_HEALTH_CHECK_URL: 'ftp://x' }, false)).toThrow(/WEBHOOK_HEALTH_CHECK_URL/);
    expect(loadLocalSettings({ LOG_FORMAT: 'pretty' }, false).logFormat).toBe('pretty');
  });

  test.each([
    [{ SQS_PORT: '70000' }, 'SQS_PORT'],
    [{ BATCH_SIZE: '10001' }, 'BATCH_SIZE'],
    [{ POLLERS: 'two' }, 'POLLERS'],
    [{ FUNCTION_TIMEOUT_SECONDS: '0' }, 'FUNCTION_TIMEOUT_SECONDS'],
    [{ QUEUE_NAME: 'has space' }, 'QUEUE_NAME'],
    [{ QUEUE_URL: 'sqs://nope' }, 'QUEUE_URL'],
    [{ QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/' }, 'QUEUE_URL'],
    [{ LOG_FORMAT: 'xml' }, 'LOG_FORMAT'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ MAX_RECEIVE_COUNT: '0' }, 'MAX_RECEIVE_COUNT'],
    [{ QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders' }, 'WEBHOOK_URL'],
    [{ QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders', WEBHOOK_URL: '  ' }, 'WEBHOOK_URL'],
    [{ WEBHOOK_URL_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:url' }, 'WEBHOOK_URL_SECRET_ARN'],
    [{ POLLERS: '3', CONCURRENT_INVOCATIONS: '2' }, 'CONCURRENT_INVOCATIONS'],
    [{ CONCURRENT_INVOCATIONS: 'all' }, 'CONCURRENT_INVOCATIONS'],
  ])('%j is refused, naming the variable', (env, variable) => {
    expect(() => loadLocalSettings(env, true)).toThrow(expect.objectContaining({ name: 'ConfigError', variable }));
  });

  describe('plain http carries SigV4-signed calls and health checks only to loopback, or with ALLOW_INSECURE_HTTP', () => {
    const WEBHOOK = { WEBHOOK_URL: 'https://hooks.example.com/in' };
    test.each([
      [{ QUEUE_URL: 'http://sqs.internal:9324/000000000000/orders' }, 'QUEUE_URL'],
      [{ QUEUE_URL: 'http://10.0.0.5:4566/000000000000/orders' }, 'QUEUE_URL'],
      [
        { QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/1/orders', AWS_ENDPOINT_URL_SQS: 'http://vpce.internal:80' },
        'AWS_ENDPOINT_URL_SQS',
      ],
      [{ QUEUE_URL: 'http://127.0.0.1:4566/1/orders', AWS_ENDPOINT_URL: 'http://sqs.internal:4566' }, 'AWS_ENDPOINT_URL'],
      [{ WEBHOOK_HEALTH_CHECK_URL: 'http://worker:8080/health' }, 'WEBHOOK_HEALTH_CHECK_URL'],
      // The health check is asked by name, and *.localhost names go to DNS on many machines (glibc).
      [{ WEBHOOK_HEALTH_CHECK_URL: 'http://foo.localhost/health' }, 'WEBHOOK_HEALTH_CHECK_URL'],
      [
        { QUEUE_URL: 'http://sqs.us-east-1.localhost:4566/1/orders', AWS_ENDPOINT_URL_SQS: 'http://sqs.localhost:4566' },
        'AWS_ENDPOINT_URL_SQS',
      ],
    ])('%j is refused, naming the variable', (env, variable) => {
      const run = () => loadLocalSettings({ ...WEBHOOK, ...env }, false);
      expect(run).toThrow(expect.objectContaining({ name: 'ConfigError', variable }));
      expect(run).toThrow(/ALLOW_INSECURE_HTTP=true/);
      // The operator's say-so that the network is private.
      expect(() => loadLocalSettings({ ...WEBHOOK, ...env, ALLOW_INSECURE_HTTP: 'true' }, false)).not.toThrow();
    });

    test.each([
      { QUEUE_URL: 'http://127.0.0.1:4566/000000000000/orders' },
      { QUEUE_URL: 'http://localhost:9324/000000000000/orders' },
      { QUEUE_URL: 'http://[::1]:9324/000000000000/orders' },
      { QUEUE_URL: 'https://sqs.internal:9324/000000000000/orders' },
      // An AWS queue URL is not an endpoint: the SDK calls AWS's regional https endpoint.
      { QUEUE_URL: 'http://sqs.eu-west-1.amazonaws.com/123456789012/orders' },
      { QUEUE_URL: 'http://sqs.us-east-1.localhost:4566/000000000000/orders', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566' },
      // fauxqs's own queue URL: the daemon reaches a *.localhost host at 127.0.0.1, never through DNS.
      { QUEUE_URL: 'http://sqs.us-east-1.localhost:4566/000000000000/orders' },
      { WEBHOOK_HEALTH_CHECK_URL: 'http://127.0.0.1:8080/health' },
      { WEBHOOK_HEALTH_CHECK_URL: 'https://worker.internal/health' },
      // The sandbox talks to its own emulator, whatever the endpoint variables say.
      { AWS_ENDPOINT_URL_SQS: 'http://sqs.internal:4566' },
    ])('%j is accepted', (env) => {
      expect(() => loadLocalSettings({ ...WEBHOOK, ...env }, false)).not.toThrow();
    });

    test.each(['queue_url', 'QUEUE_ULR', 'QUEUEURL'])(
      'a near miss of QUEUE_URL (%s) refuses to start, naming it: the sandbox would run in its place',
      (typo) => {
        const url = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders';
        const env = { ...WEBHOOK, [typo]: url };
        expect(() => loadLocalSettings(env, false)).toThrow(
          expect.objectContaining({
            variable: 'QUEUE_URL',
            message: expect.stringContaining(`${typo} is set: a typo? Without QUEUE_URL the relay runs its own sandbox queue`),
          }),
        );
        // Set as well, QUEUE_URL decides: the near miss is only warned about.
        expect(() => loadLocalSettings({ ...env, QUEUE_URL: url }, false)).not.toThrow();
      },
    );

    test('ALLOW_INSECURE_HTTP is read strictly: a typo of its value is refused by name', () => {
      expect(() =>
        loadLocalSettings({ ...WEBHOOK, WEBHOOK_HEALTH_CHECK_URL: 'http://worker:8080/health', ALLOW_INSECURE_HTTP: 'ja' }, false),
      ).toThrow(expect.objectContaining({ variable: 'ALLOW_INSECURE_HTTP' }));
    });
  });

  test('variables one typo away from a setting are found, with the setting they resemble; other variables are not', () => {
    const env = {
      WEBHOOK_ULR: 'https://hooks.example.com',
      webhook_url: 'x',
      LOG_LEVLE: 'debug',
      BATCH_SIZES: '5',
      // Set, exact, unrelated or blank: not typos.
      WEBHOOK_URL: 'https://hooks.example.com',
      AWS_PROFILE: 'ops',
      HOSTNAME: 'box',
      NODE_OPTIONS: '--enable-source-maps',
      QUEUE_ULR: ' ',
      // Others' variables a typo away from a setting's: the SDK's endpoints of other services, the FTP proxy, a queue's ARN.
      AWS_ENDPOINT_URL_STS: 'https://sts.eu-west-1.amazonaws.com',
      AWS_ENDPOINT_URL_KMS: 'https://kms.eu-west-1.amazonaws.com',
      ftp_proxy: 'http://proxy.corp:3128',
      FTP_PROXY: 'http://proxy.corp:3128',
      QUEUE_ARN: 'arn:aws:sqs:eu-west-1:123456789012:orders',
      DLQ_ARN: 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq',
    };
    expect(Object.fromEntries(mistypedVariables(env))).toEqual({
      WEBHOOK_ULR: 'WEBHOOK_URL',
      webhook_url: 'WEBHOOK_URL',
      LOG_LEVLE: 'LOG_LEVEL',
      BATCH_SIZES: 'BATCH_SIZE',
    });
  });

  test('the pollers sharing the ceiling and a quota: POLLERS, or CONCURRENT_INVOCATIONS for daemons that share one webhook', () => {
    const io = { out: { write: () => true }, isTerminal: false, styles: PLAIN };
    const sharing = (env: Record<string, string>): string | undefined => prepareLocalStart(env, io).functionEnv.CONCURRENT_INVOCATIONS;
    expect(sharing({ POLLERS: '3' })).toBe('3');
    // Three daemons of two pollers each at one webhook: each poller takes a sixth of MAX_REQUESTS_PER_SECOND.
    expect(sharing({ POLLERS: '2', CONCURRENT_INVOCATIONS: '6' })).toBe('6');
  });

  test('the warning for a mistyped variable says whether the setting it resembles keeps its default or has a value of its own', () => {
    const warnings = (env: Record<string, string>): string[] => {
      const lines: string[] = [];
      prepareLocalStart(env, { out: { write: (text: string) => lines.push(text) }, isTerminal: false, styles: PLAIN });
      return lines.map((line) => (JSON.parse(line) as { message: string }).message);
    };
    expect(warnings({ WEBHOOK_ULR: 'http://127.0.0.1:3000/hook' })).toEqual([
      'WEBHOOK_ULR is not a setting of the relay; did you mean WEBHOOK_URL? (WEBHOOK_ULR is ignored: WEBHOOK_URL keeps its default)',
    ]);
    // The same setting given twice in different case: the upper-case one is read, so it is no default.
    expect(warnings({ WEBHOOK_URL: 'http://127.0.0.1:3000/a', webhook_url: 'http://127.0.0.1:3000/b' })).toEqual([
      'webhook_url is not a setting of the relay; did you mean WEBHOOK_URL? (webhook_url is ignored: the value of WEBHOOK_URL is used)',
    ]);
  });

  test("--help states the daemon's defaults, not the stack's", () => {
    const help = helpText();
    expect(help).not.toMatch(/\(default: the stack:/);
    expect(help).toMatch(/^ {2}CONCURRENT_INVOCATIONS +.*\(default: POLLERS\)$/m);
    expect(help).toMatch(/^ {2}WEBHOOK_URL +where each message is POSTed \(required with QUEUE_URL, else the demo webhook\)$/m);
    expect(help).toMatch(
      /^ {2}MAX_RECEIVE_COUNT +.*\(default: derived from the retry window .*with QUEUE_URL the queue's redrive policy\)$/m,
    );
    // The stack creates a signing key; the daemon signs only with one it is given.
    expect(help).toMatch(/^ {2}SIGNING_SECRET_ARN +.*\(Standard Webhooks\)$/m);
    expect(help).toMatch(/^ {2}POWERTOOLS_SERVICE_NAME +.*\(default: sqs-webhook-relay\)$/m);
    // The deployed function's alone: refused here, so not offered either.
    expect(help).not.toContain('WEBHOOK_URL_SECRET_ARN');
  });

  test('the visibility timeout is 6 times the function timeout plus the batching window, as in the stack, within SQS limits', () => {
    expect(visibilityTimeoutSecondsFor(30, 0)).toBe(180);
    // The stack's figure for the same settings (test/lib/webhook-relay.test.ts: 6 × 120 + 20).
    expect(visibilityTimeoutSecondsFor(120, 20)).toBe(740);
    expect(visibilityTimeoutSecondsFor(900, 300)).toBe(5_700);
    expect(visibilityTimeoutSecondsFor(900 * 10, 0)).toBe(43_200);
  });
});

describe('the demo webhook', () => {
  test.each([
    ['{"hello":"world"}', 1, 200, undefined],
    ['not json', 1, 200, undefined],
    ['[1,2]', 1, 200, undefined],
    ['{"retryAfter": 5}', 1, 429, '5'],
    ['{"retryAfter": 5}', 2, 200, undefined],
    ['{"retryAfter": 5, "times": 2}', 2, 429, '5'],
    ['{"status": 500}', 7, 500, undefined],
    ['{"status": 400}', 1, 400, undefined],
    ['{"status": 503, "retryAfter": 3}', 1, 503, '3'],
    ['{"status": 500, "times": 1}', 2, 200, undefined],
    ['{"status": "500"}', 1, 200, undefined],
    ['{"retryAfter": -1}', 1, 200, undefined],
  ])('%s on attempt %i: %i, Retry-After %s', (body, attempt, status, retryAfter) => {
    const reply = demoReplyFor(body, attempt);
    expect(reply.status).toBe(status);
    expect(reply.headers['Retry-After']).toBe(retryAfter);
  });
});

describe("the handler's lines on a terminal", () => {
  const render = (level: 'INFO' | 'WARN', attributes: Record<string, unknown>) => renderHandlerEntry(level, attributes, PLAIN, false);

  test('retries, last receives, dead-letters and deferred records read as one short line each', () => {
    expect(
      render('INFO', {
        message: 'Message not delivered; returned to the queue',
        messageId: 'm-1',
        outcome: 'retry',
        receiveCount: 1,
        status: 429,
        delaySeconds: 5,
        visibilitySeconds: 5,
      }),
    ).toBe('↻ retry in 5 s  m-1  receive 1 · HTTP 429');
    expect(
      render('WARN', {
        messageId: 'm-2',
        outcome: 'retry',
        receiveCount: 5,
        status: 0,
        error: 'connection: ECONNREFUSED',
        visibilitySeconds: 16,
      }),
    ).toBe('↻ retry in 16 s  m-2  receive 5 · no answer · connection: ECONNREFUSED · last receive: SQS moves it to the DLQ next');
    expect(
      render('WARN', {
        message: 'Message not delivered; its next attempt is the last in its retry window',
        messageId: 'm-5',
        outcome: 'retry',
        receiveCount: 7,
        status: 503,
        delaySeconds: 300,
        visibilitySeconds: 36,
      }),
    ).toBe('↻ retry in 36 s  m-5  receive 7 · HTTP 503 · next attempt is the last in its retry window');
    expect(render('INFO', { messageId: 'm-3', outcome: 'retry', receiveCount: 1, status: 500 })).toBe(
      '↻ retry after the visibility timeout  m-3  receive 1 · HTTP 500',
    );
    expect(render('WARN', { messageId: 'm-4', outcome: 'dead-lettered', receiveCount: 1, status: 400, response: 'bad input\n' })).toBe(
      '✗ dead-lettered  m-4  receive 1 · HTTP 400 · "bad input"',
    );
    expect(render('INFO', { messageId: 'm-5', outcome: 'not-attempted', receiveCount: 2, reason: 'deadline', visibilitySeconds: 0 })).toBe(
      '↻ not sent, back at once  m-5  receive 2 · deadline',
    );
  });

  test('a retry states the visibility the record was handed back with, not the delay asked for', () => {
    const retry = {
      message: 'Message not delivered; returned to the queue',
      messageId: 'm-6',
      outcome: 'retry',
      receiveCount: 3,
      status: 429,
    };
    // Retry-After: 5, spaced out to 35 s by the retry window; an hour's backoff stretched by a breaker hold.
    expect(render('INFO', { ...retry, delaySeconds: 5, visibilitySeconds: 35 })).toBe('↻ retry in 35 s  m-6  receive 3 · HTTP 429');
    expect(render('INFO', { ...retry, delaySeconds: 3600, visibilitySeconds: 18_060 })).toBe(
      '↻ retry in 5 hours 1 minute  m-6  receive 3 · HTTP 429',
    );
    expect(render('INFO', { ...retry, delaySeconds: 0, visibilitySeconds: 0 })).toBe('↻ retry at once  m-6  receive 3 · HTTP 429');
    // The change failed: SQS keeps the queue's default.
    expect(render('INFO', { ...retry, delaySeconds: 5, visibilityError: 'AccessDenied' })).toBe(
      '↻ retry after the visibility timeout  m-6  receive 3 · HTTP 429',
    );
    // Not sent because the webhook's pace holds the batch: back when the hold ends.
    expect(render('INFO', { messageId: 'm-7', outcome: 'not-attempted', receiveCount: 1, reason: 'paced', visibilitySeconds: 12 })).toBe(
      '↻ not sent, back in 12 s  m-7  receive 1 · paced',
    );
  });

  test('the batch summary is left to DEBUG; other lines show their message and fields without Lambda boilerplate', () => {
    expect(render('INFO', { message: 'Batch relayed', records: 3, cold_start: true })).toBeUndefined();
    expect(renderHandlerEntry('INFO', { message: 'Batch relayed', records: 3, function_name: 'x' }, PLAIN, true)).toBe(
      'INFO Batch relayed records=3',
    );
    expect(
      render('WARN', {
        message: 'Message attribute not sent as a header',
        attribute: 'bad',
        reason: 'not a legal header value',
        service: 's',
      }),
    ).toBe('WARN Message attribute not sent as a header attribute=bad reason="not a legal header value"');
  });

  test('a RelayLogger writes Powertools JSON in JSON mode and readable lines in pretty mode, and lets the runner observe entries', () => {
    const written: string[] = [];
    const seen: Record<string, unknown>[] = [];
    const out = { write: (text: string) => written.push(text) };
    const json = new RelayLogger({ serviceName: 'svc' }, createLocalLog('json', 'INFO', out), (attributes) => seen.push(attributes));
    json.warn('Message dead-lettered: the webhook refused it permanently', { messageId: 'm-9', outcome: 'dead-lettered', status: 410 });
    json.debug('not shown at INFO');
    const pretty = new RelayLogger({ serviceName: 'svc' }, createLocalLog('pretty', 'INFO', out));
    pretty.createChild({ serviceName: 'child' }).info('Message not delivered; returned to the queue', {
      messageId: 'm-8',
      outcome: 'retry',
      delaySeconds: 2,
      visibilitySeconds: 2,
      receiveCount: 1,
    });
    expect(written).toHaveLength(2);
    expect(JSON.parse(written[0] as string)).toMatchObject({
      level: 'WARN',
      service: 'svc',
      messageId: 'm-9',
      outcome: 'dead-lettered',
      status: 410,
    });
    expect(written[1]).toMatch(/^\d\d:\d\d:\d\d ↻ retry in 2 s {2}m-8 {2}receive 1\n$/);
    expect(seen).toEqual([expect.objectContaining({ messageId: 'm-9', outcome: 'dead-lettered' })]);
    expect(pretty).toBeInstanceOf(Logger);
  });
});

describe('text from outside, on a terminal', () => {
  /** Anything a terminal would act on: C0 but line feed and tab, DEL, C1. */
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
  const HOSTILE = [
    ['a title change (OSC … BEL)', 'a\u001b]0;pwned\u0007b', 'ab'],
    ['a title change (OSC … ST)', 'a\u001b]2;pwned\u001b\\b', 'ab'],
    ['a screen clear (CSI)', 'a\u001b[2J\u001b[Hb', 'ab'],
    ['colours', '\u001b[31;1mred\u001b[0m', 'red'],
    ['a carriage return rewriting the line', 'evil\r✓ delivered  fake', 'evil✓ delivered  fake'],
    ['an 8-bit CSI (C1)', 'a\u009b2Jb', 'ab'],
    ['an 8-bit OSC (C1)', 'a\u009d0;pwned\u009cb', 'ab'],
    ['a terminal reset (ESC c)', 'a\u001bcb', 'ab'],
    ['a hyperlink (OSC 8)', '\u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007', 'click'],
    ['a lone ESC, backspaces, a bell, NUL, DEL', 'a\u001b\u0008\u0008\u0007\u0000\u007fb', 'ab'],
    ['an unterminated OSC', 'a\u001b]0;never ends', 'a0;never ends'],
    ['a right-to-left override (bidi)', 'id=\u202edelivered\u202c ok', 'id=delivered ok'],
    ['bidi isolates', 'a\u2066b\u2067c\u2068d\u2069e', 'abcde'],
  ] as const;

  test.each(HOSTILE)('terminalSafe removes %s', (_label, text, safe) => {
    expect(terminalSafe(text)).toBe(safe);
    expect(terminalSafe(text)).not.toMatch(CONTROL);
  });

  test('plain text, unicode and (when the layout has room) line feeds and tabs are kept; otherwise they become spaces', () => {
    expect(terminalSafe('Grüße → 東京 🚀 "quoted"')).toBe('Grüße → 東京 🚀 "quoted"');
    expect(terminalSafe('line 1\n\tline 2\r\n', { multiline: true })).toBe('line 1\n\tline 2\n');
    expect(terminalSafe('line 1\n\tline 2')).toBe('line 1  line 2');
  });

  test('property: whatever the text, nothing a terminal acts on is left', () => {
    const unit = fc.oneof(
      fc.constantFrom('\u001b', '\u009b', '\u009d', '\u0007', '\r', '\n', '\t', '[', ']', ';', '\\', 'P', '2', 'J', 'm'),
      fc.integer({ min: 0, max: 0xff }).map((code) => String.fromCharCode(code)),
    );
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 60 }), fc.boolean(), (text, multiline) => {
        const safe = terminalSafe(text, { multiline });
        expect(safe).not.toMatch(CONTROL);
        if (!multiline) expect(safe).not.toMatch(/[\n\t]/);
      }),
      { numRuns: 2_000 },
    );
  });

  test("the handler's lines carry no control character from a producer's id, a webhook's answer or an error", () => {
    const render = (level: 'INFO' | 'WARN', attributes: Record<string, unknown>) => renderHandlerEntry(level, attributes, PLAIN, true);
    const lines = [
      render('WARN', {
        message: 'Claimed original message id ignored: the webhook sees the SQS id',
        messageId: 'm-1',
        claimedOriginalId: '\u001b]0;pwned\u0007\u001b[2Jforged',
        reason: 'not a legal message id',
      }),
      render('WARN', { messageId: 'm-2\r✓ delivered', outcome: 'dead-lettered', status: 400, response: 'no\u009b2J\u001b[31m way\r\nX' }),
      render('INFO', { messageId: 'm-3', outcome: 'retry', receiveCount: 1, error: 'protocol: \u001b[1A\rparse error\nforged line' }),
      render('INFO', { message: 'any\u001b[2K message', detail: { nested: 'a\u009bb' } }),
    ];
    for (const line of lines) {
      expect(line).not.toMatch(CONTROL);
      expect(line).not.toContain('\n');
    }
    expect(lines[0]).toContain('claimedOriginalId=forged');
    // The excerpt is JSON: its ESC shows as the six characters \u001b, harmless; the raw C1 CSI is gone.
    expect(lines[1]).toBe('✗ dead-lettered  m-2✓ delivered  HTTP 400 · "no\\u001b[31m way\\r\\nX"');
    expect(lines[2]).toBe('↻ retry after the visibility timeout  m-3  receive 1 · protocol: parse error forged line');
  });

  test("a dead-letters summary carries no control character from a dead letter's body, its reason's answer or its ids", () => {
    const now = Date.parse('2026-11-20T10:00:00Z');
    const reason = {
      cause: 'refused permanently',
      status: 404,
      response: 'no\u009b2J\rway',
      originalMessageId: 'orig\u009d0;pwned\u009c-1',
      deadLetteredAt: '2026-11-20T09:00:00Z',
    };
    const builder = new SummaryBuilder(now);
    builder.add(
      readDeadLetter(
        {
          MessageId: 'dlq-1',
          ReceiptHandle: 'r',
          // What SQS lets a body hold: \r, and C1 characters such as the 8-bit CSI.
          Body: 'line\r\u009b31mforged\u009b0m',
          Attributes: { SentTimestamp: String(now - 3_600_000) },
          MessageAttributes: { 'relay.dead-letter-reason': { DataType: 'String', StringValue: JSON.stringify(reason) } },
        },
        now,
      ),
    );
    const facts = { dlqUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q-dlq', approximate: { visible: 1, inFlight: 0 }, complete: true };
    const text = formatSummary(
      builder.result({ ...facts, notReleased: 0, notes: [], seconds: 1, messagesPerSecond: 1 }),
      now,
      () => 'replay',
    );
    expect(text).not.toMatch(CONTROL);
    expect(text).toContain('body      line forged');
    expect(text).toContain('response  no way');
    expect(text).toContain('(the webhook saw orig-1)');
  });
});

describe('the printed send commands', () => {
  const info: ReadyInfo = {
    mode: 'embedded',
    sqsEndpoint: 'http://127.0.0.1:4566',
    emulatorCredentials: true,
    region: 'us-east-1',
    queueUrl: 'http://127.0.0.1:4566/000000000000/webhook-relay',
    queueArn: 'arn:aws:sqs:us-east-1:000000000000:webhook-relay',
    dlqUrl: 'http://127.0.0.1:4566/000000000000/webhook-relay-dlq',
    maxReceiveCount: 5,
    retryWindowSeconds: 0,
    webhookUrl: 'http://127.0.0.1:1234/webhook',
    demoWebhook: true,
    fifo: false,
    pollers: 1,
    batchSize: 10,
    functionTimeoutSeconds: 30,
    visibilityTimeoutSeconds: 180,
  };

  test('quote what a shell would split or expand', () => {
    expect(shellQuote('http://127.0.0.1:4566/000000000000/q')).toBe('http://127.0.0.1:4566/000000000000/q');
    expect(shellQuote(`it's {"a": 1}`)).toBe(`'it'\\''s {"a": 1}'`);
  });

  test('send and the AWS CLI, with the credentials the CLI insists on for an emulator', () => {
    // Run from this repository's source, as `npm start` does: the clone's npm script.
    expect(sendCommand(info)).toBe(`npm run send -- --queue-url http://127.0.0.1:4566/000000000000/webhook-relay '{"hello":"world"}'`);
    expect(awsCliCommand(info)).toBe(
      `AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test aws sqs send-message --endpoint-url http://127.0.0.1:4566 --region us-east-1 --queue-url http://127.0.0.1:4566/000000000000/webhook-relay --message-body '{"hello":"world"}'`,
    );
    // The daemon on an emulator's queue reaches it with the same dummy credentials: so does its CLI line.
    expect(awsCliCommand({ ...info, queueUrl: 'http://127.0.0.1:9324/000000000000/jobs' })).toMatch(
      /^AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test aws sqs send-message /,
    );
    expect(
      awsCliCommand({
        ...info,
        emulatorCredentials: false,
        sqsEndpoint: undefined,
        region: 'eu-west-1',
        queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q.fifo',
        fifo: true,
      }),
    ).toBe(
      `aws sqs send-message --region eu-west-1 --queue-url https://sqs.eu-west-1.amazonaws.com/1/q.fifo --message-body '{"hello":"world"}' --message-group-id demo`,
    );
  });

  test("from the package's build, the printed commands are the installed bin's", () => {
    expect(subcommandPrefix('send', false)).toBe('npx sqs-webhook-relay send');
    expect(subcommandPrefix('dead-letters', false)).toBe('npx sqs-webhook-relay dead-letters');
    expect(subcommandPrefix('send', true)).toBe('npm run send --');
    expect(runsFromSource('file:///app/node_modules/sqs-webhook-relay/dist/sqs-webhook-relay.js')).toBe(false);
    expect(runsFromSource('file:///src/local/invocation.ts')).toBe(true);
  });

  test('the banner says how to read the DLQ', () => {
    expect(formatBanner(info, PLAIN)).toContain(
      `\n  npm run dead-letters -- summary --queue-url http://127.0.0.1:4566/000000000000/webhook-relay\n`,
    );
  });

  test("the banner's DLQ row says when a failing message goes there: after its retry window, worded in hours, or its receives", () => {
    const dlqRow = (change: Partial<ReadyInfo>): string | undefined =>
      formatBanner({ ...info, ...change }, PLAIN)
        .split('\n')
        .find((line) => line.startsWith('  DLQ URL'));
    expect(dlqRow({ retryWindowSeconds: 0 })).toMatch(/webhook-relay-dlq {2}after 5 receives$/);
    expect(dlqRow({ retryWindowSeconds: 86_400, maxReceiveCount: 483 })).toMatch(/ {2}after 24 hours of failures, or 483 receives$/);
    expect(dlqRow({ retryWindowSeconds: 1800, maxReceiveCount: undefined })).toMatch(/ {2}after 30 minutes of failures$/);
    expect(dlqRow({ retryWindowSeconds: 130_500, maxReceiveCount: undefined })).toMatch(/ {2}after 36 hours 15 minutes of failures$/);
  });

  test("the demo's 500 line says a failing message reaches the DLQ only when its retry window (or receive count) is spent", () => {
    const line500 = (change: Partial<ReadyInfo>): string | undefined =>
      formatBanner({ ...info, demoWebhook: true, ...change }, PLAIN)
        .split('\n')
        .find((line) => line.includes('500 every time'));
    expect(line500({ retryWindowSeconds: 86_400, maxReceiveCount: 483 })).toMatch(
      /500 every time: retried with backoff for 24 hours \(its retry window\), then moved to the DLQ$/,
    );
    expect(line500({ retryWindowSeconds: 72 })).toMatch(/retried with backoff for 1 minute 12 seconds \(its retry window\), then/);
    expect(line500({ retryWindowSeconds: 0, maxReceiveCount: 3 })).toMatch(
      /500 every time: retried with backoff, moved to the DLQ after 3 receives$/,
    );
    expect(line500({ dlqUrl: undefined })).toMatch(/500 every time: retried with backoff until it expires$/);
  });
});

describe('the standalone relay (QUEUE_URL)', () => {
  test('an AWS queue URL uses the SDK defaults, its region read from the host unless AWS_REGION says', () => {
    expect(connectionFor('https://sqs.eu-west-1.amazonaws.com/123456789012/orders', {})).toEqual({
      endpoint: undefined,
      region: 'eu-west-1',
      credentials: undefined,
    });
    expect(connectionFor('https://sqs.eu-west-1.amazonaws.com/123456789012/orders', { AWS_REGION: 'eu-central-1' }).region).toBe(
      'eu-central-1',
    );
    expect(regionOfQueueHost('us-west-2.queue.amazonaws.com')).toBe('us-west-2');
    expect(() => connectionFor('https://queue.amazonaws.com/123456789012/orders', {})).toThrow(
      expect.objectContaining({ variable: 'AWS_REGION' }),
    );
  });

  test('an emulator is its own endpoint and gets dummy credentials unless some are configured', () => {
    expect(connectionFor('http://localhost:9324/000000000000/orders', {})).toEqual({
      endpoint: 'http://localhost:9324',
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    // fauxqs's own queue URLs: *.localhost is no loopback for a webhook, but is an emulator's host here,
    // reached at 127.0.0.1 (not every resolver knows that *.localhost is loopback).
    expect(connectionFor('http://sqs.eu-west-1.localhost:4566/000000000000/orders', {})).toEqual({
      endpoint: 'http://127.0.0.1:4566',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    expect(
      connectionFor('http://sqs.eu-west-1.localhost:4566/000000000000/orders', {
        AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566',
        AWS_PROFILE: 'local',
      }),
    ).toEqual({
      endpoint: 'http://127.0.0.1:4566',
      region: 'eu-west-1',
      credentials: undefined,
    });
  });

  test('start-up errors become one line saying what to check', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(networkErrorCode(new Error('wrapped', { cause: refused }))).toBe('ECONNREFUSED');
    expect(sqsStartupError(refused, 'reading', 'http://127.0.0.1:1/0/q').message).toBe(
      'cannot reach SQS at http://127.0.0.1:1/0/q (ECONNREFUSED) while reading; is the endpoint right and running?',
    );
    const missing = Object.assign(new Error('The specified queue does not exist.'), { name: 'QueueDoesNotExist' });
    expect(sqsStartupError(missing, 'reading', 'u').message).toBe('no queue at u: The specified queue does not exist.');
    expect(oneLine(new TypeError('two\nlines'))).toBe('TypeError: two');
  });

  test("a start frozen past its calls' timeout (SIGSTOP, SIGCONT) reads the answer SQS gave meanwhile", async () => {
    // Its timer fires over a second late on the thaw: taken for a frozen process, not a silent SQS, the call gets a grace
    // in which the answer comes (from another process, which the freeze does not hold).
    const server = spawn(process.execPath, [
      '-e',
      `require('node:http').createServer((request, response) => { request.resume(); request.on('end', () => setTimeout(() => {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify({ Attributes: { QueueArn: 'arn:aws:sqs:us-east-1:000000000000:orders', VisibilityTimeout: '45' } }));
      }, 2_300)); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
    ]);
    try {
      const port = await new Promise<string>((resolve) => server.stdout.once('data', (data: Buffer) => resolve(data.toString().trim())));
      const endpoint = `http://127.0.0.1:${port}`;
      const sqs = new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 't', secretAccessKey: 't' } });
      const described = describeExistingQueue(sqs, `${endpoint}/000000000000/orders`, 500);
      await new Promise((resolve) => setTimeout(resolve, 50));
      freeze(2_000);
      await expect(described).resolves.toMatchObject({ visibilityTimeoutSeconds: 45, dlqUrl: undefined });
      sqs.destroy();
    } finally {
      server.kill();
    }
  });

  test('an SQS that takes the request and never answers fails the start in one line, in time, not for ever', async () => {
    const silent = await startSilentEndpoint();
    const sqs = new SQSClient({ endpoint: silent.endpoint, region: 'us-east-1', credentials: { accessKeyId: 't', secretAccessKey: 't' } });
    const queueUrl = `${silent.endpoint}/000000000000/orders`;
    try {
      const started = Date.now();
      await expect(describeExistingQueue(sqs, queueUrl, 200)).rejects.toThrow(
        `no answer from SQS at ${queueUrl} while reading the queue's attributes; is the endpoint right and running?`,
      );
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      sqs.destroy();
      await silent.close();
    }
  });

  test("a taken emulator port points at a queue of one's own, with its DLQ, whose recipe is where it says", () => {
    const { message } = new PortInUseError(4566);
    expect(message).toMatch(
      /^port 4566 is already in use .*; set SQS_PORT to a free port \(0: any\), or QUEUE_URL to a queue of your own in that emulator, with its DLQ /,
    );
    // Never the running queue itself: another sandbox's relay polls it too.
    expect(message).toMatch(/not to another `npm start`'s queue/);
    const [, page, heading] = /\(recipe: (docs\/[\w.-]+\.md), "([^"]+)"\)/.exec(message) ?? [];
    const doc = readFileSync(join(PROJECT_ROOT, page ?? 'missing'), 'utf8');
    expect(doc).toContain(`\n### ${heading}\n`);
    const recipe = doc.slice(doc.indexOf(`### ${heading}`)).split('```')[1] ?? '';
    expect(recipe).toMatch(/create-queue --queue-name orders-dlq/);
    expect(recipe).toMatch(/RedrivePolicy.*deadLetterTargetArn/);
  });
});

describe('the pause between attempts', () => {
  test('lasts its time when nothing stops it', async () => {
    const started = Date.now();
    await sleep(50, new AbortController().signal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  test('ends at once on a stop, or when stopped already, and leaves no listener on the signal', async () => {
    const stop = new AbortController();
    const pause = sleep(60_000, stop.signal);
    stop.abort();
    await pause; // would hold the test for a minute (and time it out) if the stop did not end it
    await sleep(60_000, stop.signal);
    const kept = new AbortController();
    const pending = sleep(20, kept.signal);
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(1);
    await pending;
    for (let round = 0; round < 3; round += 1) await sleep(1, kept.signal);
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(0);
  });
});

describe('replay --rate', () => {
  /** Readers taking batches of `batch` from `pace` on vitest's clock, as the command's do; each message's send time, ms after the first take, in order. */
  async function sendTimes(pace: Pace, readers: number, batches: number, batch: number): Promise<number[]> {
    const start = Date.now();
    const sent: number[] = [];
    const reader = async (): Promise<void> => {
      for (let taken = 0; taken < batches; taken += 1) {
        await pace.take(batch);
        for (let message = 0; message < batch; message += 1) sent.push(Date.now() - start);
      }
    };
    const all = Promise.all(Array.from({ length: readers }, reader));
    await vi.runAllTimersAsync();
    await all;
    return sent;
  }

  test('N a second from the first message: message m goes no sooner than m/N s after it, batches of ten included', async () => {
    vi.useFakeTimers();
    try {
      // 15 a second: the command's two readers of ten. Unfixed, ten went at once and twenty within the first second.
      const sent = await sendTimes(new Pace(15), 2, 3, 10);
      expect(sent).toHaveLength(60);
      for (const [index, at] of sent.entries()) expect(index * (1000 / 15)).toBeLessThanOrEqual(at);
      const firstSecond = sent.filter((at) => at < 1000).length;
      expect(firstSecond).toBeLessThanOrEqual(15);
      // And not slower: the last of 60 goes at the 59th message's turn.
      expect(sent.at(-1)).toBe(Math.ceil(59 * (1000 / 15)));
      // Under one a second, one at a time: the first at once, then one every 1/N s.
      expect(await sendTimes(new Pace(0.5), 1, 3, 1)).toEqual([0, 2000, 4000]);
    } finally {
      vi.useRealTimers();
    }
  });

  test('a pace that fell behind goes on from now, without a burst to catch up; an interrupted wait books nothing', async () => {
    vi.useFakeTimers();
    try {
      const pace = new Pace(10);
      expect(await sendTimes(pace, 1, 1, 10)).toEqual([900, 900, 900, 900, 900, 900, 900, 900, 900, 900]);
      vi.advanceTimersByTime(5_000); // SQS was slow: the pace is far behind
      expect((await sendTimes(pace, 1, 2, 5)).filter((_, index) => index % 5 === 0)).toEqual([400, 900]);
      const stop = new AbortController();
      const waiting = pace.take(10, stop.signal);
      stop.abort();
      expect(await waiting).toBe(false);
      expect(await pace.take(1, stop.signal)).toBe(false);
      // The aborted batch booked nothing: the next message's turn is still 100 ms after the last one sent.
      expect(await sendTimes(pace, 1, 1, 1)).toEqual([100]);
    } finally {
      vi.useRealTimers();
    }
  });
});
