/**
 * The relay's configuration: every environment variable the function reads, parsed and
 * validated once at cold start. A bad value fails fast with a {@link ConfigError} that names
 * the variable and says what was expected, instead of failing record by record later.
 */
import { version } from '../package.json';
import { MAX_ATTRIBUTE_NAME_LENGTH } from './aws-limits';
import type { BreakerSettings } from './breaker';
import { ConfigError, type Env, read, readSetting } from './env';
import { HEADER_TOKEN, isLegalHeaderValue } from './header-rules';
import type { OAuthSettings } from './oauth-tokens';
import type { PacingSettings } from './pacer';
import { cidrRange, type ProxySettings } from './proxy';
import type { BackoffSettings } from './retry-timing';
import { MAX_BACKSTOP_RECEIVES } from './retry-window';
import type { SettingValueOf } from './setting-kinds';
import { FUNCTION_SETTINGS, type LogLevel, type PermanentFailureMode } from './settings';
import { MIN_SIGNING_KEY_BYTES, parseSigningKeys } from './signing';
import { isAttributeName, isQueueUrl, QUEUE_URL_EXAMPLE } from './sqs-util';
import { type ClientCertificateSettings, parseTlsMaterial, type TlsMaterialField, TlsMaterialError } from './tls-material';
import { checkSendUrl, parseProxyUrl, percentDecoded, redactUrl, type UrlProblem } from './url-rules';

/**
 * Where a secret comes from. Declared here, with the settings that choose it, rather than in
 * secrets.ts: the construct's declarations reach this module, and must not reach the Powertools
 * and `aws-lambda` types the reader in secrets.ts imports.
 */
export type SecretSource =
  | { readonly kind: 'literal'; readonly value: string }
  | { readonly kind: 'secrets-manager'; readonly secretId: string }
  /**
   * Files read together into one JSON object of their texts (`{ "<key>": "<contents>" }`), so that
   * a certificate and its key are always read as a pair.
   */
  | { readonly kind: 'files'; readonly files: Readonly<Record<string, string>> };

/** The validated configuration the handler runs with. */
export interface RelayConfig {
  /**
   * `POWERTOOLS_LOG_LEVEL`, as Powertools reads it (itself, from the environment): checked here because Powertools takes a
   * level it does not know for INFO, silently, and a hand edit of the function's environment deserves one line at start.
   */
  readonly logLevel: LogLevel;
  /** `WEBHOOK_URL`: where every record is POSTed; `undefined` when it is read from Secrets Manager ({@link webhookUrlSecret}). */
  readonly webhookUrl: URL | undefined;
  /**
   * `WEBHOOK_URL_SECRET_ARN`: the webhook's URL read from Secrets Manager (for a URL that embeds a
   * token), re-read every `SECRETS_REFRESH_SECONDS` as the other secrets are.
   */
  readonly webhookUrlSecret: SecretSource | undefined;
  /** `ALLOW_INSECURE_HTTP`: plain http to a host that is not loopback (checked again for a URL read from Secrets Manager). */
  readonly allowInsecureHttp: boolean;
  /** `HEADER_PREFIX`: prefix of the Carrier-compatible headers. */
  readonly headerPrefix: string;
  /** `DEFAULT_CONTENT_TYPE`: used when a message has no `Body.ContentType` attribute. */
  readonly defaultContentType: string;
  /** `REQUEST_TIMEOUT_MS`: upper bound of one webhook request, response body included. */
  readonly requestTimeoutMs: number;
  /** `MAX_CONCURRENCY`: webhook requests in flight at once per invocation. */
  readonly maxConcurrency: number;
  /** `DEADLINE_MARGIN_MS`: time kept back from the function's deadline for the SQS calls after the last request. */
  readonly deadlineMarginMs: number;
  readonly backoff: BackoffSettings;
  /** `PERMANENT_FAILURE`: dead-letter permanent failures at once, or retry them. */
  readonly permanentFailure: PermanentFailureMode;
  /** `DLQ_URL`: the dead-letter queue; when absent it is found from the source queue's redrive policy. */
  readonly deadLetterQueueUrl: string | undefined;
  /**
   * `MAX_RECEIVE_COUNT`: the redrive policy's count. With the retry window on, the backstop the
   * relay spaces retries to stay clear of (unset: SQS's 1,000); with it off, the count that dead-letters.
   */
  readonly maxReceiveCount: number;
  /** `RETRY_WINDOW_HOURS`, in seconds: how long a message's failures may go on before the relay dead-letters it; 0 = off. */
  readonly retryWindowSeconds: number;
  /** `PACING`, `MAX_REQUESTS_PER_SECOND` ÷ `CONCURRENT_INVOCATIONS`, `MAX_CONCURRENCY`: this container's pace. */
  readonly pacing: PacingSettings;
  /** `PACE_KEY`: the message attribute (or `MessageGroupId`) whose value is paced on its own; `undefined`: the endpoint only. */
  readonly paceKey: string | undefined;
  /** `User-Agent` of every delivery request. */
  readonly userAgent: string;
  /** `OUTAGE_*`: the circuit breaker. */
  readonly breaker: BreakerSettings;
  /** `SIGNING_SECRET_ARN` or `SIGNING_SECRET`: sign every request (Standard Webhooks) when set. */
  readonly signingSecret: SecretSource | undefined;
  /** `AUTH_SECRET_ARN` or `AUTH_HEADER`: the `Authorization` value of every request when set. */
  readonly authorization: SecretSource | undefined;
  /** `SECRETS_REFRESH_SECONDS`: how long a value read from Secrets Manager is used before it is read again. */
  readonly secretsRefreshSeconds: number;
  /** `OAUTH_*`: OAuth 2.0 client credentials for the webhook's requests, when `OAUTH_TOKEN_URL` is set. */
  readonly oauth: OAuthSettings | undefined;
  /** `CLIENT_CERTIFICATE_SECRET_ARN`, `CLIENT_CERTIFICATE_FILE` + `CLIENT_KEY_FILE`, `CA_CERTIFICATE_FILE`: mutual TLS and a private CA, when set. */
  readonly clientCertificate: ClientCertificateSettings | undefined;
  /** `HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY` (or their lower-case forms): a forward proxy, when one is set. */
  readonly proxy: ProxySettings | undefined;
}

/** What a URL the relay sends requests to must be: the rule of `WEBHOOK_URL`. */
export const HTTPS_OR_LOOPBACK = 'an absolute https:// URL (http:// only for loopback hosts or with ALLOW_INSECURE_HTTP=true)';

/**
 * What a variable's URL must be, in this module's words, for a URL refused by the rule of
 * `url-rules.ts`: the webhook's, the token endpoint's, the daemon's health check and SQS endpoint.
 */
export function expectedUrl(problem: UrlProblem): string {
  switch (problem) {
    case 'not-a-url':
    case 'not-http':
      return HTTPS_OR_LOOPBACK;
    case 'plain-http':
      return `${HTTPS_OR_LOOPBACK}; set ALLOW_INSECURE_HTTP=true to allow plain http on a private network`;
    case 'credentials':
      return 'a URL without user:password (put credentials in a secret instead)';
  }
}

/** A URL as a message may show it: only its origin when it carries user:password, else redacted. */
function shownUrl(raw: string, problem: UrlProblem): string {
  return problem === 'credentials' ? new URL(raw).origin : redactUrl(raw);
}

/**
 * The webhook's URL as read from `WEBHOOK_URL_SECRET_ARN`: the rules of `WEBHOOK_URL`. Throws a
 * message that never quotes the value (it is a secret: a token is why it is kept there).
 */
export function parseWebhookUrlSecret(raw: string, allowInsecureHttp: boolean): URL {
  const url = checkSendUrl(raw.trim(), allowInsecureHttp);
  if (url instanceof URL) return url;
  throw new Error(`the value is not ${expectedUrl(url)}`);
}

/**
 * A URL the relay sends to (the webhook, the token endpoint), from variable `name`, under the
 * webhook URL's rule: `https`, or plain `http` to a loopback host or with `ALLOW_INSECURE_HTTP`;
 * never `user:password`. `undefined` when unset.
 */
function secureUrl(env: Env, name: 'WEBHOOK_URL' | 'OAUTH_TOKEN_URL'): URL | undefined {
  const raw = read(env, name);
  // Read (and so validated) whatever the URL: a typo must not pass silently beside an https URL.
  const allowInsecure = setting(env, 'ALLOW_INSECURE_HTTP');
  if (raw === undefined) return undefined;
  const url = checkSendUrl(raw, allowInsecure);
  if (!(url instanceof URL)) throw new ConfigError(name, expectedUrl(url), shownUrl(raw, url));
  return url;
}

/** `WEBHOOK_URL`, or `undefined` when the URL is read from Secrets Manager (`WEBHOOK_URL_SECRET_ARN`). */
function webhookUrl(env: Env): URL | undefined {
  const name = 'WEBHOOK_URL';
  const secretId = read(env, 'WEBHOOK_URL_SECRET_ARN');
  const url = secureUrl(env, name);
  if (url !== undefined && secretId !== undefined)
    throw new ConfigError('WEBHOOK_URL_SECRET_ARN', 'unset when WEBHOOK_URL is set (give the URL one way)', secretId);
  if (url === undefined && secretId === undefined)
    throw new ConfigError(name, `${HTTPS_OR_LOOPBACK}, unless WEBHOOK_URL_SECRET_ARN names a Secrets Manager secret holding it`, undefined);
  return url;
}

/**
 * A secret given either as a Secrets Manager id (`<name>_ARN`, what the stack sets) or as the
 * value itself (for `npm start` and daemons, whose environment is already private).
 */
function secretSource(env: Env, literalName: string, arnName: string): SecretSource | undefined {
  const literal = read(env, literalName);
  const secretId = read(env, arnName);
  if (literal !== undefined && secretId !== undefined) {
    throw new ConfigError(arnName, `unset when ${literalName} is set (give the secret one way)`, secretId);
  }
  if (secretId !== undefined) return { kind: 'secrets-manager', secretId };
  return literal === undefined ? undefined : { kind: 'literal', value: literal };
}

/** Checks a secret given as a value now, at start; the message never repeats the value. */
function checkLiteral(
  source: SecretSource | undefined,
  name: string,
  check: (value: string) => void,
  expected: string,
): SecretSource | undefined {
  if (source?.kind !== 'literal') return source;
  try {
    check(source.value);
  } catch (error) {
    // The checks' messages never hold the value (signing.ts, checkAuthorizationValue): what is wrong, not what was given.
    throw new ConfigError(name, expected, `(value not shown: ${error instanceof Error ? error.message : 'invalid'})`);
  }
  return source;
}

/**
 * `SIGNING_SECRET_ARN` or `SIGNING_SECRET` (one way; a value given as such checked now): the keys
 * every request is signed with, and those the `dead-letters` command seals ids with.
 * @throws {ConfigError} for both set, or a value `parseSigningKeys` refuses
 */
export function signingSecret(env: Env): SecretSource | undefined {
  return checkLiteral(
    secretSource(env, 'SIGNING_SECRET', 'SIGNING_SECRET_ARN'),
    'SIGNING_SECRET',
    parseSigningKeys,
    `one or more whsec_<base64> keys of at least ${MIN_SIGNING_KEY_BYTES} bytes each, separated by spaces (the whsec_ prefix may be left out)`,
  );
}

/** Throws unless `value` can be sent as an `Authorization` header; the message never contains it. */
export function checkAuthorizationValue(value: string): string {
  if (value === '' || !isLegalHeaderValue(value, Infinity))
    throw new Error('the Authorization value has characters not allowed in a header');
  return value;
}

/**
 * The OAuth client secret without the whitespace around it, as its variable is read: a secret saved from a file keeps the
 * file's newline, which no client secret has (RFC 6749's are printable ASCII). Refuses an empty one; the message never holds
 * the value.
 */
export function checkClientSecret(value: string): string {
  const secret = value.trim();
  if (secret === '') throw new Error('the OAuth client secret is empty');
  return secret;
}

/** A setting of the function, from its variable (or its default), parsed by its kind. */
function setting<N extends keyof typeof FUNCTION_SETTINGS>(env: Env, name: N): SettingValueOf<(typeof FUNCTION_SETTINGS)[N]> {
  return readSetting(env, FUNCTION_SETTINGS[name]);
}

/** A least and a most setting, the most at least the least: `[least, most]`. */
function range(
  env: Env,
  least: 'BACKOFF_BASE_SECONDS' | 'OUTAGE_BACKOFF_SECONDS',
  most: 'BACKOFF_MAX_SECONDS' | 'OUTAGE_BACKOFF_MAX_SECONDS',
): [number, number] {
  const [low, high] = [setting(env, least), setting(env, most)];
  if (high < low) throw new ConfigError(most, `at least ${least} (${low})`, String(high));
  return [low, high];
}

function breakerSettings(env: Env): BreakerSettings {
  const [probeIntervalSeconds, maxHoldSeconds] = range(env, 'OUTAGE_BACKOFF_SECONDS', 'OUTAGE_BACKOFF_MAX_SECONDS');
  return { threshold: setting(env, 'OUTAGE_THRESHOLD'), probeIntervalSeconds, maxHoldSeconds };
}

/** `RETRY_WINDOW_HOURS` in whole seconds (0: off); its kind refused anything between 0 and 1 minute as typed. */
function retryWindowSeconds(env: Env): number {
  return Math.round(setting(env, 'RETRY_WINDOW_HOURS') * 3600);
}

/**
 * This container's pace: the whole relay's ceiling split evenly over the invocations that share it (as is what the webhook's
 * rate-limit headers announce).
 */
function pacingSettings(env: Env): PacingSettings {
  const ceiling = setting(env, 'MAX_REQUESTS_PER_SECOND');
  const shares = setting(env, 'CONCURRENT_INVOCATIONS');
  return {
    adaptive: setting(env, 'PACING'),
    maxInFlight: setting(env, 'MAX_CONCURRENCY'),
    maxRequestsPerSecond: ceiling === 0 ? undefined : ceiling / shares,
    sharedBy: shares,
    requestTimeoutMs: setting(env, 'REQUEST_TIMEOUT_MS'),
  };
}

/**
 * `PACE_KEY`, when set: a message attribute's name under SQS's own rule (`isAttributeName`: a name
 * no message could carry would pace nothing), or `MessageGroupId`, which passes that rule too.
 */
function paceKey(env: Env): string | undefined {
  const name = read(env, 'PACE_KEY');
  if (name !== undefined && !isAttributeName(name)) {
    throw new ConfigError(
      'PACE_KEY',
      `a message attribute name (letters, digits, "_", "-", ".", up to ${MAX_ATTRIBUTE_NAME_LENGTH}) or MessageGroupId`,
      name,
    );
  }
  return name;
}

/** The `OAUTH_*` variables besides the token URL: any of them set without it is a mistake. */
const OAUTH_DETAILS = [
  'OAUTH_CLIENT_ID',
  'OAUTH_CLIENT_SECRET_ARN',
  'OAUTH_CLIENT_SECRET',
  'OAUTH_SCOPE',
  'OAUTH_AUDIENCE',
  'OAUTH_CLIENT_AUTHENTICATION',
] as const;

/** Printable ASCII and spaces, as an OAuth client id or audience must be to travel in a form or a header. */
const PRINTABLE = /^[\x20-\x7e]+$/;
/** RFC 6749 §3.3: scope tokens of `%x21 / %x23-5B / %x5D-7E`, separated by single spaces. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/** `OAUTH_*`, when `OAUTH_TOKEN_URL` is set. */
function oauthSettings(env: Env): OAuthSettings | undefined {
  const tokenUrl = secureUrl(env, 'OAUTH_TOKEN_URL');
  if (tokenUrl === undefined) {
    const stray = OAUTH_DETAILS.find((name) => read(env, name) !== undefined);
    if (stray !== undefined) throw new ConfigError('OAUTH_TOKEN_URL', `set when ${stray} is (the OAuth token endpoint)`, undefined);
    return undefined;
  }
  const clientId = read(env, 'OAUTH_CLIENT_ID');
  if (clientId === undefined || !PRINTABLE.test(clientId))
    throw new ConfigError('OAUTH_CLIENT_ID', 'the OAuth client id, printable ASCII (required with OAUTH_TOKEN_URL)', clientId);
  const clientSecret = checkLiteral(
    secretSource(env, 'OAUTH_CLIENT_SECRET', 'OAUTH_CLIENT_SECRET_ARN'),
    'OAUTH_CLIENT_SECRET',
    checkClientSecret,
    'the OAuth client secret',
  );
  if (clientSecret === undefined)
    throw new ConfigError(
      'OAUTH_CLIENT_SECRET_ARN',
      'a Secrets Manager secret holding the OAuth client secret, required with OAUTH_TOKEN_URL (OAUTH_CLIENT_SECRET, the value itself, for local runs)',
      undefined,
    );
  const rawScope = read(env, 'OAUTH_SCOPE');
  const scope = rawScope?.split(/\s+/).join(' ');
  if (scope !== undefined && !SCOPE.test(scope))
    throw new ConfigError('OAUTH_SCOPE', 'space-separated scope names of printable ASCII without " or \\', rawScope);
  const audience = read(env, 'OAUTH_AUDIENCE');
  if (audience !== undefined && !PRINTABLE.test(audience)) throw new ConfigError('OAUTH_AUDIENCE', 'printable ASCII', audience);
  const clientAuthentication = setting(env, 'OAUTH_CLIENT_AUTHENTICATION');
  return { tokenUrl, clientId, clientSecret, scope, audience, clientAuthentication };
}

/** Reads a PEM file given in `name` now, at start, so that a wrong path fails here rather than at the first request. */
function pemFile(name: string, path: string): string {
  try {
    return process.getBuiltinModule('node:fs').readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(name, `a readable PEM file (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`, path);
  }
}

/** The variable of the file each text comes from, in local runs. */
const PEM_FILE_VARIABLES: Readonly<Record<TlsMaterialField, string>> = {
  certificate: 'CLIENT_CERTIFICATE_FILE',
  privateKey: 'CLIENT_KEY_FILE',
  caCertificate: 'CA_CERTIFICATE_FILE',
};

/** What each text is, for a file's error, where the secret's field names mean nothing. */
const PEM_FILE_CONTENTS: Readonly<Record<TlsMaterialField, string>> = {
  certificate: 'the certificate',
  privateKey: 'the private key',
  caCertificate: 'the CA bundle',
};

/**
 * Reads PEM files (`paths`, by the text each holds) and checks them as a secret's texts would be; the message names the
 * file at fault, or for the pair (a key that is not the certificate's) the first one, and never their text.
 */
function checkPemFiles(paths: Partial<Record<TlsMaterialField, string>>): void {
  const fields = Object.keys(paths) as TlsMaterialField[];
  const texts = Object.fromEntries(fields.map((field) => [field, pemFile(PEM_FILE_VARIABLES[field], paths[field] as string)]));
  try {
    parseTlsMaterial(JSON.stringify(texts));
  } catch (error) {
    if (error instanceof TlsMaterialError) {
      const { field, problem } = error;
      throw new ConfigError(PEM_FILE_VARIABLES[field], `PEM that OpenSSL accepts (${PEM_FILE_CONTENTS[field]} ${problem})`, paths[field]);
    }
    const first = fields[0] as TlsMaterialField;
    const given = fields.length === 1 ? paths[first] : `${paths.certificate} with the key ${paths.privateKey}`;
    throw new ConfigError(PEM_FILE_VARIABLES[first], `PEM that OpenSSL accepts (${(error as Error).message})`, given);
  }
}

/** The client certificate and extra CA: from a secret, or files (read and checked now), or both (a secret and a CA file). */
function clientCertificate(env: Env): ClientCertificateSettings | undefined {
  const secretId = read(env, 'CLIENT_CERTIFICATE_SECRET_ARN');
  const certificateFile = read(env, 'CLIENT_CERTIFICATE_FILE');
  const keyFile = read(env, 'CLIENT_KEY_FILE');
  const caFile = read(env, 'CA_CERTIFICATE_FILE');
  if (secretId !== undefined && (certificateFile !== undefined || keyFile !== undefined)) {
    const name = certificateFile === undefined ? 'CLIENT_KEY_FILE' : 'CLIENT_CERTIFICATE_FILE';
    throw new ConfigError(
      name,
      'unset when CLIENT_CERTIFICATE_SECRET_ARN is set (give the certificate one way)',
      certificateFile ?? keyFile,
    );
  }
  if ((certificateFile === undefined) !== (keyFile === undefined)) {
    const missing = certificateFile === undefined ? 'CLIENT_CERTIFICATE_FILE' : 'CLIENT_KEY_FILE';
    throw new ConfigError(missing, 'set too: a client certificate and its private key go together', undefined);
  }
  const files: Record<string, string> = {};
  if (certificateFile !== undefined && keyFile !== undefined) Object.assign(files, { certificate: certificateFile, privateKey: keyFile });
  if (caFile !== undefined) files.caCertificate = caFile;
  // The pair and the CA checked apart (OpenSSL reads them apart too), so that an error names the file at fault.
  if (certificateFile !== undefined && keyFile !== undefined) {
    checkPemFiles({ certificate: certificateFile, privateKey: keyFile });
  }
  if (caFile !== undefined) checkPemFiles({ caCertificate: caFile });
  const sources: SecretSource[] = [];
  if (secretId !== undefined) sources.push({ kind: 'secrets-manager', secretId });
  if (Object.keys(files).length > 0) sources.push({ kind: 'files', files });
  return sources.length === 0 ? undefined : { sources };
}

/** The proxy variable that holds the value: `name`, or its lower-case form when `name` is unset, as curl reads them. */
function proxyVariable(env: Env, name: 'HTTPS_PROXY' | 'HTTP_PROXY' | 'NO_PROXY'): string {
  return read(env, name) === undefined ? name.toLowerCase() : name;
}

/** A proxy URL from `name` (or its lower-case form); `host:port` alone means `http://host:port`, as curl reads it. */
function proxyUrl(env: Env, name: 'HTTPS_PROXY' | 'HTTP_PROXY'): URL | undefined {
  const variable = proxyVariable(env, name);
  const raw = read(env, variable);
  if (raw === undefined) return undefined;
  const url = parseProxyUrl(raw);
  if (url === undefined)
    throw new ConfigError(variable, 'a proxy URL such as http://proxy.example.com:3128 (user:password@ allowed)', redactUrl(raw));
  // Decoded for Proxy-Authorization on the first connection: a stray % would fail there, every request, not here.
  if (percentDecoded(url.username) === undefined || percentDecoded(url.password) === undefined)
    throw new ConfigError(variable, 'a proxy URL whose user:password is percent-encoded (a % written %25)', redactUrl(raw));
  return url;
}

/** `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY`, when a proxy is set. */
function proxySettings(env: Env): ProxySettings | undefined {
  const httpsProxy = proxyUrl(env, 'HTTPS_PROXY');
  const httpProxy = proxyUrl(env, 'HTTP_PROXY');
  if (httpsProxy === undefined && httpProxy === undefined) return undefined;
  // Comma- or space-separated, as curl and Go read it.
  const variable = proxyVariable(env, 'NO_PROXY');
  const noProxy = (read(env, variable) ?? '')
    .split(/[\s,]+/)
    .map((entry) => entry.toLowerCase())
    .filter((entry) => entry !== '');
  // curl and Go take a malformed range for a host name, which covers nothing: the requests it was meant for would go through
  // the proxy, and fail there, with nothing to say why.
  const badRange = noProxy.find((entry) => entry.includes('/') && cidrRange(entry) === undefined);
  if (badRange !== undefined)
    throw new ConfigError(variable, 'host names, IP addresses or CIDR ranges such as 10.0.0.0/8 or fd00::/8, comma-separated', badRange);
  return { httpsProxy, httpProxy, noProxy };
}

/**
 * `DLQ_URL`, when set: a queue URL. Anything else (the DLQ's name, its ARN) would fail every dead-letter copy, so that
 * every refused record would come back, never dead-lettered, until SQS moved it at the backstop without its reason.
 */
function deadLetterQueueUrl(env: Env): string | undefined {
  const raw = read(env, 'DLQ_URL');
  if (raw !== undefined && !isQueueUrl(raw))
    throw new ConfigError('DLQ_URL', `an SQS queue URL such as ${QUEUE_URL_EXAMPLE}`, redactUrl(raw));
  return raw;
}

/** `HEADER_PREFIX` or `DEFAULT_CONTENT_TYPE`, checked as what a request may carry (header-rules.ts). */
function headerSetting(env: Env, name: 'HEADER_PREFIX' | 'DEFAULT_CONTENT_TYPE'): string {
  const value = setting(env, name);
  if (name === 'HEADER_PREFIX' && !HEADER_TOKEN.test(value))
    throw new ConfigError(name, 'characters legal in a header name (letters, digits, "-")', value);
  if (name === 'DEFAULT_CONTENT_TYPE' && !isLegalHeaderValue(value, Infinity))
    throw new ConfigError(name, 'a printable ASCII media type', value);
  return value;
}

/** `AUTH_HEADER` or `AUTH_SECRET_ARN`, and `OAUTH_*`: one `Authorization` at most. */
function authorizationSettings(env: Env): Pick<RelayConfig, 'authorization' | 'oauth'> {
  const authorization = checkLiteral(
    secretSource(env, 'AUTH_HEADER', 'AUTH_SECRET_ARN'),
    'AUTH_HEADER',
    checkAuthorizationValue,
    'a legal header value (printable ASCII, e.g. "Bearer <token>")',
  );
  const oauth = oauthSettings(env);
  if (oauth !== undefined && authorization !== undefined) {
    const name = authorization.kind === 'literal' ? 'AUTH_HEADER' : 'AUTH_SECRET_ARN';
    throw new ConfigError(
      name,
      'unset when OAUTH_TOKEN_URL is set (the OAuth token is the Authorization header)',
      authorization.kind === 'literal' ? '(value not shown)' : read(env, name),
    );
  }
  return { authorization, oauth };
}

/**
 * Parses and validates the relay's configuration from environment variables.
 * @throws {ConfigError} naming the first variable that is missing or malformed.
 */
export function loadConfig(env: Env = process.env): RelayConfig {
  const headerPrefix = headerSetting(env, 'HEADER_PREFIX');
  const defaultContentType = headerSetting(env, 'DEFAULT_CONTENT_TYPE');
  const [baseSeconds, maxSeconds] = range(env, 'BACKOFF_BASE_SECONDS', 'BACKOFF_MAX_SECONDS');
  const windowSeconds = retryWindowSeconds(env);
  const url = webhookUrl(env);
  const urlSecretId = read(env, 'WEBHOOK_URL_SECRET_ARN');
  const { authorization, oauth } = authorizationSettings(env);
  return {
    logLevel: setting(env, 'POWERTOOLS_LOG_LEVEL'),
    webhookUrl: url,
    webhookUrlSecret: url === undefined && urlSecretId !== undefined ? { kind: 'secrets-manager', secretId: urlSecretId } : undefined,
    allowInsecureHttp: setting(env, 'ALLOW_INSECURE_HTTP'),
    headerPrefix,
    defaultContentType,
    requestTimeoutMs: setting(env, 'REQUEST_TIMEOUT_MS'),
    maxConcurrency: setting(env, 'MAX_CONCURRENCY'),
    deadlineMarginMs: setting(env, 'DEADLINE_MARGIN_MS'),
    backoff: {
      policy: setting(env, 'BACKOFF'),
      baseSeconds,
      maxSeconds,
      jitter: setting(env, 'BACKOFF_JITTER'),
      schedule: setting(env, 'BACKOFF_SCHEDULE'),
    },
    permanentFailure: setting(env, 'PERMANENT_FAILURE'),
    deadLetterQueueUrl: deadLetterQueueUrl(env),
    // Not told the queue's count, with the retry window on: SQS's largest, a backstop only.
    maxReceiveCount:
      read(env, 'MAX_RECEIVE_COUNT') === undefined && windowSeconds > 0 ? MAX_BACKSTOP_RECEIVES : setting(env, 'MAX_RECEIVE_COUNT'),
    retryWindowSeconds: windowSeconds,
    pacing: pacingSettings(env),
    paceKey: paceKey(env),
    userAgent: `sqs-webhook-relay/${version}`,
    breaker: breakerSettings(env),
    signingSecret: signingSecret(env),
    authorization,
    secretsRefreshSeconds: setting(env, 'SECRETS_REFRESH_SECONDS'),
    oauth,
    clientCertificate: clientCertificate(env),
    proxy: proxySettings(env),
  };
}
