/**
 * Unit tests of lambda/config.ts: the environment variables of docs/contract.md (its first three sections), their defaults, and
 * the errors an operator sees for a bad value (each names the variable at fault).
 */
import { describe, expect, test, vi } from 'vitest';
import { version } from '../../package.json';
import { loadConfig } from '../../lambda/config';
import { configErrorOf } from '../support/config-errors';
import { BACKOFF_POLICIES } from '../../lambda/settings';
import { isLoopbackHost } from '../../lambda/url-rules';

const WEBHOOK_URL = 'https://hooks.example.com/incoming?tenant=1';
type Env = Record<string, string | undefined>;
const load = (env: Env) => loadConfig({ WEBHOOK_URL, ...env });

describe('defaults', () => {
  test('only WEBHOOK_URL set gives the documented defaults', () => {
    const config = loadConfig({ WEBHOOK_URL });
    // toMatchObject: the configuration grows (secrets, …); these are the contract's defaults (docs/contract.md).
    expect(config).toMatchObject({
      webhookUrl: new URL(WEBHOOK_URL),
      headerPrefix: 'X-Carrier-',
      defaultContentType: 'application/json',
      requestTimeoutMs: 10_000,
      maxConcurrency: 10,
      deadlineMarginMs: 1_000,
      backoff: { policy: 'exponential', baseSeconds: 2, maxSeconds: 300, jitter: true },
      permanentFailure: 'dead-letter',
      deadLetterQueueUrl: undefined,
      // The retry window is on and the queue's count unknown: SQS's largest, the backstop only.
      maxReceiveCount: 1_000,
      retryWindowSeconds: 86_400,
      pacing: { adaptive: true, maxInFlight: 10, maxRequestsPerSecond: undefined, sharedBy: 1 },
      paceKey: undefined,
      userAgent: `sqs-webhook-relay/${version}`,
    });
    expect(config.deadLetterQueueUrl).toBeUndefined();
    expect(config.webhookUrl?.href).toBe(WEBHOOK_URL);
    expect(config.userAgent).toMatch(/^sqs-webhook-relay\/\d+\.\d+\.\d+/);
  });

  test('blank and whitespace-only variables count as unset', () => {
    const config = load({
      HEADER_PREFIX: '',
      DEFAULT_CONTENT_TYPE: '   ',
      REQUEST_TIMEOUT_MS: '',
      MAX_CONCURRENCY: ' ',
      BACKOFF: '\t',
      BACKOFF_JITTER: '',
      PERMANENT_FAILURE: '',
      DLQ_URL: '  ',
      MAX_RECEIVE_COUNT: '',
    });
    expect(config).toEqual(loadConfig({ WEBHOOK_URL }));
  });

  test('reads process.env when no environment is passed', () => {
    vi.stubEnv('WEBHOOK_URL', 'https://from-process-env.example.com/');
    vi.stubEnv('MAX_CONCURRENCY', '3');
    try {
      const config = loadConfig();
      expect(config.webhookUrl?.hostname).toBe('from-process-env.example.com');
      expect(config.maxConcurrency).toBe(3);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('every variable is read', () => {
  test('custom values for every knob', () => {
    const config = load({
      HEADER_PREFIX: 'X-Relay-',
      DEFAULT_CONTENT_TYPE: 'text/plain; charset=utf-8',
      REQUEST_TIMEOUT_MS: '2500',
      MAX_CONCURRENCY: '50',
      DEADLINE_MARGIN_MS: '0',
      BACKOFF: 'fibonacci',
      BACKOFF_BASE_SECONDS: '5',
      BACKOFF_MAX_SECONDS: '600',
      BACKOFF_JITTER: 'false',
      PERMANENT_FAILURE: 'retry',
      DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq',
      MAX_RECEIVE_COUNT: '12',
    });
    expect(config).toMatchObject({
      headerPrefix: 'X-Relay-',
      defaultContentType: 'text/plain; charset=utf-8',
      requestTimeoutMs: 2500,
      maxConcurrency: 50,
      deadlineMarginMs: 0,
      backoff: { policy: 'fibonacci', baseSeconds: 5, maxSeconds: 600, jitter: false },
      permanentFailure: 'retry',
      deadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq',
      maxReceiveCount: 12,
    });
  });

  test('values are trimmed', () => {
    const config = load({ WEBHOOK_URL: `  ${WEBHOOK_URL}\n`, MAX_CONCURRENCY: ' 7 ', BACKOFF: ' linear ', HEADER_PREFIX: ' X-A- ' });
    expect(config.webhookUrl?.href).toBe(WEBHOOK_URL);
    expect(config.maxConcurrency).toBe(7);
    expect(config.backoff.policy).toBe('linear');
    expect(config.headerPrefix).toBe('X-A-');
  });

  test.each(['exponential', 'linear', 'fibonacci', 'fixed', 'none'] as const)('BACKOFF=%s', (policy) => {
    expect(load({ BACKOFF: policy }).backoff.policy).toBe(policy);
  });

  test('BACKOFF and PERMANENT_FAILURE are case-insensitive', () => {
    expect(load({ BACKOFF: 'Linear' }).backoff.policy).toBe('linear');
    expect(load({ PERMANENT_FAILURE: 'RETRY' }).permanentFailure).toBe('retry');
    expect(load({ PERMANENT_FAILURE: 'Dead-Letter' }).permanentFailure).toBe('dead-letter');
  });

  test.each([
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['yes', true],
    ['on', true],
    ['false', false],
    ['False', false],
    ['0', false],
    ['no', false],
    ['off', false],
  ])('BACKOFF_JITTER=%s is %s', (raw, expected) => {
    expect(load({ BACKOFF_JITTER: raw }).backoff.jitter).toBe(expected);
  });

  test('range bounds are inclusive', () => {
    expect(load({ REQUEST_TIMEOUT_MS: '1' }).requestTimeoutMs).toBe(1);
    expect(load({ REQUEST_TIMEOUT_MS: '900000' }).requestTimeoutMs).toBe(900_000);
    expect(load({ MAX_CONCURRENCY: '1' }).maxConcurrency).toBe(1);
    expect(load({ MAX_CONCURRENCY: '1000' }).maxConcurrency).toBe(1000);
    expect(load({ DEADLINE_MARGIN_MS: '60000' }).deadlineMarginMs).toBe(60_000);
    expect(load({ BACKOFF_BASE_SECONDS: '0', BACKOFF_MAX_SECONDS: '0' }).backoff).toMatchObject({ baseSeconds: 0, maxSeconds: 0 });
    expect(load({ BACKOFF_BASE_SECONDS: '43200', BACKOFF_MAX_SECONDS: '43200' }).backoff).toMatchObject({
      baseSeconds: 43_200,
      maxSeconds: 43_200,
    });
    expect(load({ MAX_RECEIVE_COUNT: '1' }).maxReceiveCount).toBe(1);
    expect(load({ MAX_RECEIVE_COUNT: '1000' }).maxReceiveCount).toBe(1000);
    expect(load({ MAX_CONCURRENCY: '007' }).maxConcurrency).toBe(7);
  });

  test('BACKOFF_MAX_SECONDS equal to BACKOFF_BASE_SECONDS is fine', () => {
    expect(load({ BACKOFF_BASE_SECONDS: '30', BACKOFF_MAX_SECONDS: '30' }).backoff).toMatchObject({ baseSeconds: 30, maxSeconds: 30 });
  });
});

describe('a bad value names its variable', () => {
  test.each([
    // Powertools would take it for INFO, silently.
    ['POWERTOOLS_LOG_LEVEL', 'VERBOSE'],
    ['REQUEST_TIMEOUT_MS', '0'],
    ['REQUEST_TIMEOUT_MS', '900001'],
    ['REQUEST_TIMEOUT_MS', '1.5'],
    ['REQUEST_TIMEOUT_MS', '-1'],
    ['REQUEST_TIMEOUT_MS', '1e3'],
    ['REQUEST_TIMEOUT_MS', '0x10'],
    ['REQUEST_TIMEOUT_MS', '10 000'],
    ['REQUEST_TIMEOUT_MS', '10s'],
    ['REQUEST_TIMEOUT_MS', '99999999999999999999'],
    ['MAX_CONCURRENCY', '0'],
    ['MAX_CONCURRENCY', '1001'],
    ['MAX_CONCURRENCY', 'ten'],
    ['MAX_CONCURRENCY', '+5'],
    ['DEADLINE_MARGIN_MS', '-5'],
    ['DEADLINE_MARGIN_MS', '60001'],
    ['BACKOFF_BASE_SECONDS', '43201'],
    ['BACKOFF_BASE_SECONDS', '2.5'],
    ['BACKOFF_MAX_SECONDS', '43201'],
    ['BACKOFF_MAX_SECONDS', 'Infinity'],
    ['MAX_RECEIVE_COUNT', '0'],
    ['MAX_RECEIVE_COUNT', '1001'],
    ['BACKOFF', 'quadratic'],
    ['BACKOFF', 'exponential,linear'],
    ['BACKOFF_JITTER', 'maybe'],
    ['BACKOFF_JITTER', 'truee'],
    ['PERMANENT_FAILURE', 'drop'],
    ['PERMANENT_FAILURE', 'deadletter'],
    ['HEADER_PREFIX', 'X Carrier-'],
    ['HEADER_PREFIX', 'X-Carrier:'],
    ['HEADER_PREFIX', 'X-Ünïcode-'],
    ['HEADER_PREFIX', 'X-(Relay)-'],
    ['DEFAULT_CONTENT_TYPE', 'text/plain; charset=ü'],
    ['DEFAULT_CONTENT_TYPE', 'text/\nplain'],
    ['DEFAULT_CONTENT_TYPE', 'text/plain\r\nX-Evil: 1'],
    ['DEFAULT_CONTENT_TYPE', 'a\u0000b'],
    ['PACE_KEY', 'tenant id'],
    ['PACE_KEY', 'tenant,region'],
    ['PACE_KEY', 'x'.repeat(257)],
    // SQS's rule for an attribute's name: no message could carry these, so nothing would be paced by them.
    ['PACE_KEY', 'AWS.tenant'],
    ['PACE_KEY', '.tenant'],
    ['PACE_KEY', 'tenant..id'],
    // The DLQ's name or ARN where its URL goes: every dead-letter copy would fail.
    ['DLQ_URL', 'orders-dlq'],
    ['DLQ_URL', 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq'],
    ['DLQ_URL', 'https://sqs.eu-west-1.amazonaws.com/orders-dlq'],
  ])('%s=%j', (variable, raw) => {
    const error = configErrorOf(() => load({ [variable]: raw }));
    expect(error.variable).toBe(variable);
    expect(error.name).toBe('ConfigError');
    expect(error.message).toContain(variable);
    expect(error.message).toContain(JSON.stringify(raw.trim()));
    expect(() => load({ [variable]: raw })).toThrow(new RegExp(variable));
  });

  test('the message says what was expected', () => {
    expect(() => load({ MAX_CONCURRENCY: '0' })).toThrow(/MAX_CONCURRENCY must be a whole number from 1 to 1000; got "0"/);
    for (const policy of BACKOFF_POLICIES) expect(() => load({ BACKOFF: 'quadratic' })).toThrow(policy);
    expect(() => load({ PERMANENT_FAILURE: 'drop' })).toThrow(/dead-letter, retry/);
  });

  test('PACE_KEY: a message attribute name, or MessageGroupId; CONCURRENT_INVOCATIONS shares what rate-limit headers announce', () => {
    expect(load({ PACE_KEY: 'tenant.id-2' }).paceKey).toBe('tenant.id-2');
    expect(load({ PACE_KEY: 'MessageGroupId' }).paceKey).toBe('MessageGroupId');
    expect(load({ CONCURRENT_INVOCATIONS: '5' }).pacing.sharedBy).toBe(5);
  });

  test('RETRY_WINDOW_HOURS: 0 (off) or from 1 minute, the documented 0.0167 included; less is refused as typed, never rounded', () => {
    expect(load({ RETRY_WINDOW_HOURS: '0' }).retryWindowSeconds).toBe(0);
    expect(load({ RETRY_WINDOW_HOURS: '0.016667' }).retryWindowSeconds).toBe(60);
    expect(load({ RETRY_WINDOW_HOURS: '0.0167' }).retryWindowSeconds).toBe(60);
    // 0.0166 hours is 59.76 s, which rounds to the minute it is short of.
    for (const raw of ['0.0001', '0.001', '0.016', '0.0166']) {
      const error = configErrorOf(() => load({ RETRY_WINDOW_HOURS: raw }));
      expect(error.variable).toBe('RETRY_WINDOW_HOURS');
      expect(error.message).toBe(
        `Invalid configuration: RETRY_WINDOW_HOURS must be 0 (off) or a number from 0.0167 (1 minute) to 323.95 (decimals allowed, e.g. 0.5); got "${raw}"`,
      );
    }
  });

  test('BACKOFF_MAX_SECONDS below BACKOFF_BASE_SECONDS', () => {
    const error = configErrorOf(() => load({ BACKOFF_BASE_SECONDS: '60', BACKOFF_MAX_SECONDS: '30' }));
    expect(error.variable).toBe('BACKOFF_MAX_SECONDS');
    expect(error.message).toMatch(/BACKOFF_MAX_SECONDS must be at least BACKOFF_BASE_SECONDS \(60\)/);
    // The default maximum (300) is below a large base too.
    expect(() => load({ BACKOFF_BASE_SECONDS: '301' })).toThrow(/BACKOFF_MAX_SECONDS/);
  });
});

describe('WEBHOOK_URL', () => {
  test('missing', () => {
    const error = configErrorOf(() => loadConfig({}));
    expect(error.variable).toBe('WEBHOOK_URL');
    expect(error.message).toMatch(/WEBHOOK_URL must be an absolute https:\/\/ URL.*got nothing/);
    expect(() => loadConfig({ WEBHOOK_URL: '   ' })).toThrow(/WEBHOOK_URL/);
  });

  test.each(['not a url', '/relative/path', 'hooks.example.com/incoming', 'https://', 'http://[::1'])('not an absolute URL: %j', (raw) => {
    expect(configErrorOf(() => loadConfig({ WEBHOOK_URL: raw })).variable).toBe('WEBHOOK_URL');
  });

  test.each([
    'ftp://hooks.example.com/',
    'file:///etc/passwd',
    'ws://localhost:8080/',
    'wss://hooks.example.com/',
    'data:text/plain,hi',
    'javascript:alert(1)',
    'mailto:ops@example.com',
  ])('a scheme other than http(s) is rejected, even with ALLOW_INSECURE_HTTP: %s', (raw) => {
    expect(() => loadConfig({ WEBHOOK_URL: raw })).toThrow(/WEBHOOK_URL/);
    expect(() => loadConfig({ WEBHOOK_URL: raw, ALLOW_INSECURE_HTTP: 'true' })).toThrow(/WEBHOOK_URL/);
  });

  test('https is accepted anywhere; scheme and host are case-insensitive', () => {
    expect(loadConfig({ WEBHOOK_URL: 'https://10.0.0.5:8443/hook' }).webhookUrl?.port).toBe('8443');
    expect(loadConfig({ WEBHOOK_URL: 'HTTPS://Hooks.Example.COM/In' }).webhookUrl?.href).toBe('https://hooks.example.com/In');
  });

  test.each([
    'http://localhost/hook',
    'http://localhost:8080/hook',
    'http://LOCALHOST:8080/',
    'http://127.0.0.1:3000/',
    'http://127.0.0.2/',
    'http://127.255.255.254/',
    'http://127.1/',
    'http://[::1]:3000/hook',
  ])('plain http is accepted for the loopback host of %s', (raw) => {
    expect(loadConfig({ WEBHOOK_URL: raw }).webhookUrl?.protocol).toBe('http:');
  });

  test.each([
    'http://example.com/hook',
    'http://10.0.0.1/',
    'http://192.168.1.10:8080/',
    'http://0.0.0.0/',
    'http://128.0.0.1/',
    // *.localhost is resolved by DNS on many machines (glibc): not loopback for certain.
    'http://foo.localhost/',
    'http://api.dev.localhost:9000/',
    'http://[::2]/',
    'http://[::ffff:10.0.0.1]/',
    'http://localhost.example.com/',
    'http://127.0.0.1.nip.io/',
    'http://mylocalhost/',
    'http://webhook/',
  ])('plain http to %s needs ALLOW_INSECURE_HTTP=true', (raw) => {
    const error = configErrorOf(() => loadConfig({ WEBHOOK_URL: raw }));
    expect(error.variable).toBe('WEBHOOK_URL');
    expect(error.message).toContain('ALLOW_INSECURE_HTTP=true');
    expect(loadConfig({ WEBHOOK_URL: raw, ALLOW_INSECURE_HTTP: 'true' }).webhookUrl?.protocol).toBe('http:');
  });

  test('ALLOW_INSECURE_HTTP accepts the boolean spellings and rejects others by name', () => {
    const http = 'http://webhook:8080/in';
    expect(loadConfig({ WEBHOOK_URL: http, ALLOW_INSECURE_HTTP: 'YES' }).webhookUrl?.host).toBe('webhook:8080');
    expect(() => loadConfig({ WEBHOOK_URL: http, ALLOW_INSECURE_HTTP: 'false' })).toThrow(/WEBHOOK_URL/);
    expect(() => loadConfig({ WEBHOOK_URL: http, ALLOW_INSECURE_HTTP: '0' })).toThrow(/WEBHOOK_URL/);
    expect(configErrorOf(() => loadConfig({ WEBHOOK_URL: http, ALLOW_INSECURE_HTTP: 'sure' })).variable).toBe('ALLOW_INSECURE_HTTP');
  });

  test.each([
    'https://user:s3cr3t-p4ss@hooks.example.com/in',
    'https://user@hooks.example.com/in',
    'https://:s3cr3t-p4ss@hooks.example.com/in',
    'http://admin:s3cr3t-p4ss@localhost:8080/',
  ])('credentials in the URL are rejected without echoing them: %s', (raw) => {
    const error = configErrorOf(() => loadConfig({ WEBHOOK_URL: raw }));
    expect(error.variable).toBe('WEBHOOK_URL');
    expect(error.message).toMatch(/without user:password/);
    expect(error.message).not.toContain('s3cr3t-p4ss');
    expect(error.message).not.toMatch(/user@|admin/);
  });
});

describe('secrets (signing and Authorization)', () => {
  const SIGNING = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

  test('none by default: requests are neither signed nor authorized', () => {
    const config = loadConfig({ WEBHOOK_URL });
    expect(config.signingSecret).toBeUndefined();
    expect(config.authorization).toBeUndefined();
    expect(config.secretsRefreshSeconds).toBe(300);
  });

  test('a value or a Secrets Manager id', () => {
    expect(load({ SIGNING_SECRET: SIGNING }).signingSecret).toEqual({ kind: 'literal', value: SIGNING });
    expect(load({ SIGNING_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:sign-AbCdEf' }).signingSecret).toEqual({
      kind: 'secrets-manager',
      secretId: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:sign-AbCdEf',
    });
    expect(load({ AUTH_HEADER: 'Bearer t0k3n' }).authorization).toEqual({ kind: 'literal', value: 'Bearer t0k3n' });
    expect(load({ AUTH_SECRET_ARN: 'auth-header' }).authorization).toEqual({ kind: 'secrets-manager', secretId: 'auth-header' });
  });

  test('both ways at once is refused, naming the *_ARN variable', () => {
    expect(configErrorOf(() => load({ SIGNING_SECRET: SIGNING, SIGNING_SECRET_ARN: 'sign' })).variable).toBe('SIGNING_SECRET_ARN');
    expect(configErrorOf(() => load({ AUTH_HEADER: 'Bearer x', AUTH_SECRET_ARN: 'auth' })).variable).toBe('AUTH_SECRET_ARN');
  });

  test.each([
    ['SIGNING_SECRET', 'not-a-whsec-s3cr3t'],
    ['SIGNING_SECRET', 'whsec_!!!s3cr3t!!!'],
    ['AUTH_HEADER', 'Bearer s3cr3t\r\nX-Evil: 1'],
    ['AUTH_HEADER', 'Bearer s3cr3t-ü'],
  ])('a bad %s value is refused by name without echoing it', (variable, value) => {
    const error = configErrorOf(() => load({ [variable]: value }));
    expect(error.variable).toBe(variable);
    expect(error.message).not.toContain('s3cr3t');
  });

  test('a signing key shorter than 24 bytes (Standard Webhooks) is refused in one line naming SIGNING_SECRET, without echoing it; 24 bytes pass', () => {
    const short = `whsec_${Buffer.from('s3cr3t key of 23 bytes.').toString('base64')}`;
    const error = configErrorOf(() => load({ SIGNING_SECRET: short }));
    expect(error.variable).toBe('SIGNING_SECRET');
    expect(error.message).toContain('signing secret #1 is a key of 23 bytes; Standard Webhooks asks for at least 24');
    expect(error.message).not.toContain(short.slice(6));
    expect(error.message).not.toContain('\n');
    // The second of two keys (rotation) is checked too.
    expect(configErrorOf(() => load({ SIGNING_SECRET: `${SIGNING} ${short}` })).message).toContain(
      'signing secret #2 is a key of 23 bytes',
    );
    expect(load({ SIGNING_SECRET: `whsec_${Buffer.from('exactly twenty-four byte').toString('base64')}` }).signingSecret).toBeDefined();
  });

  test.each(['-1', '86401', 'soon'])('SECRETS_REFRESH_SECONDS=%s is refused by name', (raw) => {
    expect(configErrorOf(() => load({ SECRETS_REFRESH_SECONDS: raw })).variable).toBe('SECRETS_REFRESH_SECONDS');
  });
});

describe('isLoopbackHost', () => {
  test.each(['localhost', 'LocalHost', '127.0.0.1', '127.0.0.2', '127.255.255.255', '::1', '[::1]'])('%s is loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  test.each([
    '',
    'foo.localhost',
    'a.b.localhost',
    'sqs.us-east-1.localhost',
    'example.com',
    'localhost.example.com',
    'notlocalhost',
    '10.0.0.1',
    '0.0.0.0',
    '126.255.255.255',
    '128.0.0.1',
    '::',
    '::2',
    '[::2]',
    '127.0.0.1.example.com',
    '127.example.com',
  ])('%j is not loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('checked whatever the URL', () => {
  test('a typo in ALLOW_INSECURE_HTTP fails even beside an https URL', () => {
    expect(() => load({ ALLOW_INSECURE_HTTP: 'ture' })).toThrow(/ALLOW_INSECURE_HTTP must be "true" or "false"/);
  });

  test('breaker and schedule settings', () => {
    expect(load({}).breaker).toEqual({ threshold: 5, probeIntervalSeconds: 10, maxHoldSeconds: 900 });
    expect(load({ OUTAGE_THRESHOLD: '0' }).breaker.threshold).toBe(0);
    expect(() => load({ OUTAGE_BACKOFF_SECONDS: '60', OUTAGE_BACKOFF_MAX_SECONDS: '30' })).toThrow(
      /OUTAGE_BACKOFF_MAX_SECONDS must be at least OUTAGE_BACKOFF_SECONDS/,
    );
    expect(load({ BACKOFF: 'schedule', BACKOFF_SCHEDULE: '5, 60,3600' }).backoff.schedule).toEqual([5, 60, 3600]);
    for (const bad of ['', '5,,6', '1.5', '-1', '43201', 'soon']) {
      expect(() => load({ BACKOFF_SCHEDULE: bad === '' ? ',' : bad })).toThrow(/BACKOFF_SCHEDULE must be comma-separated whole seconds/);
    }
  });
});
