/**
 * The function's environment: every variable of the registry that has a prop, written in the
 * variable's unit, then checked by the function's own `loadConfig`, so a value the function would
 * refuse at cold start fails synth instead, naming the prop.
 */
import { Duration, Token } from 'aws-cdk-lib';
import { loadConfig } from '../../lambda/config';
import { ConfigError } from '../../lambda/env';
import { DEFAULT_METRICS_NAMESPACE } from '../../lambda/metric-names';
import { oneOf } from '../../lambda/setting-kinds';
import { type Setting, SETTING_LIST } from '../../lambda/settings';
import { checkSendUrl, isLoopbackHost, parseProxyUrl, redactUrl } from '../../lambda/url-rules';
import { accepted, check, settingSeconds } from './checks';
import { PROP_OF_VARIABLE, RELAY_DEFAULTS } from './defaults';
import { type WebhookRelayProps, WebhookRelayConfigError } from './props';
import type { ResolvedSettings } from './resolve';

/** What only exists once the construct has built it: the DLQ's URL and the secrets' ARNs (tokens). */
export interface EnvironmentRefs {
  readonly deadLetterQueueUrl: string;
  readonly webhookUrlSecretArn?: string | undefined;
  readonly signingSecretArn: string | undefined;
  readonly authSecretArn: string | undefined;
  readonly oauthClientSecretArn?: string;
  readonly clientCertificateSecretArn?: string;
}

/** A prop's value as its variable is written: one of its choices as declared, `Duration`s in the variable's unit, lists comma-separated. */
function written(setting: Setting, value: unknown): string {
  if (setting.choices !== undefined) return accepted(oneOf(value, setting.choices), setting.prop ?? '', JSON.stringify(value));
  const one = (item: unknown): string => {
    if (!(item instanceof Duration)) return String(item);
    return String(setting.unit === 'ms' ? item.toMilliseconds() : settingSeconds(setting, item));
  };
  return Array.isArray(value) ? value.map(one).join(',') : one(value);
}

/**
 * The function's environment for `props`, as resolved.
 * @throws {WebhookRelayConfigError} naming the prop whose value the function would reject
 */
export function functionEnvironment(props: WebhookRelayProps, resolved: ResolvedSettings, refs: EnvironmentRefs): Record<string, string> {
  const allowInsecureHttp = props.allowInsecureHttp ?? RELAY_DEFAULTS.allowInsecureHttp;
  check(
    (props.webhookUrl === undefined) !== (refs.webhookUrlSecretArn === undefined),
    'webhookUrl',
    props.webhookUrl === undefined
      ? 'is required (or webhookUrlSecret, a secret holding it)'
      : 'and webhookUrlSecret are two ways of giving the URL; give one',
  );
  if (props.webhookUrl !== undefined && !Token.isUnresolved(props.webhookUrl)) checkWebhookUrl(props.webhookUrl, allowInsecureHttp);
  if (props.oauthTokenUrl !== undefined && !Token.isUnresolved(props.oauthTokenUrl))
    checkWebhookUrl(props.oauthTokenUrl, allowInsecureHttp, 'oauthTokenUrl');
  for (const prop of ['httpsProxy', 'httpProxy'] as const) {
    const proxy = props[prop] === undefined || Token.isUnresolved(props[prop]) ? undefined : parseProxyUrl(props[prop]);
    // The function would send them to the proxy, but the template would hold them in clear.
    check(
      proxy === undefined || (proxy.username === '' && proxy.password === ''),
      prop,
      'must not carry user:password (it would be stored in the template in clear); let the proxy admit the function by its network (a VPC security group) instead',
    );
  }

  // Values the construct derives or creates, rather than takes from a prop as is.
  const derived: Readonly<Record<string, string | undefined>> = {
    // The URL, so the function never needs GetQueueAttributes to find its DLQ.
    DLQ_URL: refs.deadLetterQueueUrl,
    MAX_RECEIVE_COUNT: String(resolved.maxReceiveCount),
    // Hours with up to 6 decimals: the function rounds hours × 3600 back to these exact seconds.
    RETRY_WINDOW_HOURS: String(Number((resolved.retryWindowSeconds / 3600).toFixed(6))),
    // The event source's ceiling: how many invocations share MAX_REQUESTS_PER_SECOND.
    CONCURRENT_INVOCATIONS: String(resolved.maxConcurrency),
    // Secrets by ARN only: the function reads the values from Secrets Manager at run time.
    WEBHOOK_URL_SECRET_ARN: refs.webhookUrlSecretArn,
    SIGNING_SECRET_ARN: refs.signingSecretArn,
    AUTH_SECRET_ARN: refs.authSecretArn,
    OAUTH_CLIENT_SECRET_ARN: refs.oauthClientSecretArn,
    CLIENT_CERTIFICATE_SECRET_ARN: refs.clientCertificateSecretArn,
    OUTAGE_THRESHOLD: String(resolved.breaker.threshold),
    OUTAGE_BACKOFF_SECONDS: String(resolved.breaker.probeIntervalSeconds),
    OUTAGE_BACKOFF_MAX_SECONDS: String(resolved.breaker.maxHoldSeconds),
    POWERTOOLS_SERVICE_NAME: resolved.serviceName,
    POWERTOOLS_METRICS_NAMESPACE: DEFAULT_METRICS_NAMESPACE,
  };
  const given = props as unknown as Readonly<Record<string, unknown>>;
  const defaults = RELAY_DEFAULTS as unknown as Readonly<Record<string, unknown>>;
  const environment: Record<string, string> = {};
  for (const setting of SETTING_LIST) {
    const variable = setting.variable;
    if (setting.scope !== 'function' || variable === undefined) continue;
    if (variable in derived) {
      const value = derived[variable];
      if (value !== undefined) environment[variable] = value;
      continue;
    }
    if (setting.prop === undefined) continue;
    // Unset and without a default of the construct's (BACKOFF_SCHEDULE): the handler's own default applies.
    const value = given[setting.prop] ?? defaults[setting.prop];
    if (value === undefined) continue;
    environment[variable] = written(setting, value);
  }
  // Stack traces point at lambda/*.ts lines instead of the minified bundle.
  environment.NODE_OPTIONS = '--enable-source-maps';

  // The function validates this environment at cold start; running the same validation now
  // turns a crash-looping deployment into a synth error. Tokens are deploy-time values: stand-ins.
  const secretArn = 'arn:aws:secretsmanager:region:000000000000:secret:deploy-time';
  const standIns: Record<string, string> = {
    WEBHOOK_URL: 'https://deploy-time.invalid/',
    WEBHOOK_URL_SECRET_ARN: secretArn,
    SIGNING_SECRET_ARN: secretArn,
    AUTH_SECRET_ARN: secretArn,
    OAUTH_TOKEN_URL: 'https://deploy-time.invalid/token',
    OAUTH_CLIENT_SECRET_ARN: secretArn,
    CLIENT_CERTIFICATE_SECRET_ARN: secretArn,
    HTTPS_PROXY: 'http://deploy-time.invalid:3128',
    HTTP_PROXY: 'http://deploy-time.invalid:3128',
  };
  const literal = Object.fromEntries(
    Object.entries(environment).map(([name, value]) => [name, Token.isUnresolved(value) ? standIns[name] : value]),
  );
  try {
    loadConfig(literal);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new WebhookRelayConfigError(PROP_OF_VARIABLE[error.variable] ?? error.variable, `is rejected by the function: ${error.message}`);
  }
  return environment;
}

/**
 * The deploy-side rules for a webhook URL (and the token endpoint's, `prop`): the function's
 * (`checkSendUrl`), worded for the prop (the URL redacted: a token in its query string or
 * user:password would land in the log), and not this machine (a function cannot reach it).
 */
function checkWebhookUrl(raw: string, allowInsecureHttp: boolean, prop = 'webhookUrl'): void {
  const url = checkSendUrl(raw, allowInsecureHttp);
  const shown = JSON.stringify(redactUrl(raw));
  switch (url) {
    case 'not-a-url':
      throw new WebhookRelayConfigError(prop, `must be an absolute URL such as https://example.com/hook; got ${shown}`);
    case 'not-http':
      throw new WebhookRelayConfigError(prop, `must be an https:// URL; got ${shown}`);
    case 'plain-http':
      throw new WebhookRelayConfigError(
        prop,
        `must be https:// (plain http only with allowInsecureHttp, -c allowInsecureHttp=true); got ${shown}`,
      );
    case 'credentials':
      throw new WebhookRelayConfigError(
        prop,
        'must not carry user:password (it would be stored in the template in clear); use an auth secret',
      );
  }
  check(
    !isLoopbackHost(url.hostname),
    prop,
    `points at ${url.hostname}, which in Lambda is the function itself; use a host the function can reach`,
  );
}
