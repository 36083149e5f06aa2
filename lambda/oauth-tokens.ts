/**
 * OAuth 2.0 client credentials for the webhook's requests: one bearer token per warm container,
 * fetched once and shared by every request (concurrent ones wait on the same fetch), renewed in the
 * background before `expires_in` runs out, and renewed at once when the webhook answers `401` to it.
 *
 * A token endpoint that fails or hangs is the relay's problem, not the record's nor the webhook's:
 * the records waiting on it are retried (never dead-lettered for it, never counted by the circuit
 * breaker), token requests are spaced out by a backoff rather than made per record, and the log gets
 * one line per change of state (ERROR: no token; WARN: a renewal failed, the current token still
 * valid; INFO: a token again), never one per record. The token and the client secret never appear
 * in a log line, an error, or a dead letter's reason: a webhook answer quoting the token is scrubbed.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { checkClientSecret, type RelayConfig, type SecretSource } from './config';
import { type Connector, tokenEndpointConnector } from './connector';
import { withoutSecrets } from './scrub';
import { FUNCTION_SETTINGS } from './settings';
import { CachedSecret, type CachedSecretOptions } from './secrets';
import type { GrantedToken, TokenRequest, TokenRequestError } from './token-endpoint';
import type { WebhookResult, WebhookTransmitter } from './transmitter';

/** `OAUTH_*`: the grant's parameters and where the client secret comes from. */
export interface OAuthSettings extends Omit<TokenRequest, 'userAgent'> {
  /** `OAUTH_CLIENT_SECRET_ARN` or `OAUTH_CLIENT_SECRET`. */
  readonly clientSecret: SecretSource;
}

/** A token in hand, and the `Authorization` value that carries it. */
export interface AccessToken {
  readonly kind: 'token';
  /** `Bearer <token>`. */
  readonly header: string;
}

/** No token could be had: the record is retried, after at least `retryInSeconds` (the next token request). */
export interface TokenUnavailable {
  readonly kind: 'unavailable';
  /** Why, for the record's log line: never the secret or a token. */
  readonly reason: string;
  readonly retryInSeconds: number;
}

/** The lifetime assumed for a token whose endpoint did not say (`expires_in` is optional): it is renewed at the latest then, or on a `401`. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 3_600;
/** A token is renewed this long before it expires (or a fifth of its lifetime earlier, if that is less). */
export const RENEW_BEFORE_EXPIRY_MS = 60_000;
/** A token is no longer sent this close to its expiry (or a tenth of its lifetime, if that is less): it could expire on the way. */
const EXPIRY_MARGIN_MS = 5_000;
/** The first wait after a failed token request; each further failure doubles it, up to {@link TOKEN_RETRY_MAX_MS}. */
export const TOKEN_RETRY_INITIAL_MS = 1_000;
/** The longest wait between token requests while they fail. */
export const TOKEN_RETRY_MAX_MS = 60_000;
/**
 * The longest a token endpoint's `Retry-After` keeps the relay from asking again: the circuit breaker's longest hold by
 * default (`OUTAGE_BACKOFF_MAX_SECONDS`); a longer one is taken as this.
 */
export const TOKEN_RETRY_AFTER_MAX_MS = FUNCTION_SETTINGS.OUTAGE_BACKOFF_MAX_SECONDS.default * 1000;
/**
 * A `401` renews a token only if it is at least this old: a webhook that refuses every token (a wrong
 * audience) must not cost a token request per record. The record refused with a younger one is retried.
 */
export const MIN_FORCED_RENEWAL_AGE_MS = 10_000;

/** The token held: when it was asked for, when to renew it, when to stop sending it. */
interface HeldToken {
  readonly token: AccessToken;
  readonly requestedAt: number;
  readonly renewAt: number;
  readonly expiresAt: number;
}

/** What the log last said about the tokens, so that it speaks once per change. */
type TokenState = 'ok' | 'renewal-failing' | 'failing';

/** What {@link OAuthTokens} is built with besides its settings. */
export interface OAuthTokensOptions extends CachedSecretOptions {
  readonly logger?: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
  /** `SECRETS_REFRESH_SECONDS`, for the client secret. */
  readonly refreshSeconds: number;
  /** Bound on one token request, ms (`REQUEST_TIMEOUT_MS`). */
  readonly requestTimeoutMs: number;
  /** `User-Agent` of the token requests. */
  readonly userAgent: string;
  /** How the token endpoint is reached (a proxy); `undefined`: directly. */
  readonly connector?: Connector;
}

/** The time bounds of {@link OAuthTokens.send}. */
export interface SendBounds {
  /** The first request's timeout, ms. */
  readonly firstTimeoutMs: number;
  /** The resend's timeout, ms, worked out when it is sent (the relay's, see relay.ts). */
  readonly timeoutNow: () => number;
  /** Below this no resend starts: the record is retried instead. */
  readonly minimumMs: number;
  /** Abandons the wait for a renewed token (the invocation's time for requests is up). */
  readonly signal?: AbortSignal;
}

/**
 * The outcome of a record that got no token: retried after the relay's backoff or the next token
 * request, whichever is later. Its delay is kept past the record's retry window (as a webhook's
 * `Retry-After` is), so the relay never dead-letters a record because the token endpoint failed.
 * @param backoffSeconds the backoff policy's delay for the record
 */
export function tokenRetry(unavailable: TokenUnavailable, backoffSeconds: number | undefined) {
  return {
    kind: 'retry',
    delaySeconds: Math.max(backoffSeconds ?? 0, unavailable.retryInSeconds),
    delaySource: 'retry-after',
    error: unavailable.reason,
  } as const;
}

/** The tokens of one token endpoint and client: long-lived, one per warm container. */
export class OAuthTokens {
  private held: HeldToken | undefined;
  /** The token request in flight, shared by every request that waits for a token. */
  private fetching: Promise<AccessToken | TokenUnavailable> | undefined;
  /** Failed token requests in a row, and until when no new one is made. */
  private failures = 0;
  private retryAt = 0;
  private lastFailure = '';
  private state: TokenState = 'ok';
  private readonly clientSecret: CachedSecret<string>;
  private readonly request: TokenRequest;
  private readonly logger: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'> | undefined;

  constructor(
    settings: OAuthSettings,
    private readonly options: OAuthTokensOptions,
  ) {
    const { clientSecret, ...grant } = settings;
    this.request = { ...grant, userAgent: options.userAgent };
    this.logger = options.logger;
    this.clientSecret = new CachedSecret(clientSecret, 'OAuth client secret', checkClientSecret, options.refreshSeconds, options);
  }

  /**
   * The token to send now, if one is in hand and not about to expire; a renewal starts in the
   * background once it is due. No promise: this runs for every record.
   */
  peek(): AccessToken | undefined {
    const held = this.held;
    if (held === undefined) return undefined;
    const now = Date.now();
    if (now >= held.expiresAt) return undefined;
    if (now >= held.renewAt && this.fetching === undefined && now >= this.retryAt) void this.fetch(undefined);
    return held.token;
  }

  /**
   * The token, fetched if none is in hand (one request for all that wait). Never rejects.
   * @param signal abandons the wait, and a token request this call starts (the invocation's time for it is up)
   */
  get(signal?: AbortSignal): Promise<AccessToken | TokenUnavailable> {
    const token = this.peek();
    if (token !== undefined) return Promise.resolve(token);
    if (this.fetching === undefined) {
      if (Date.now() < this.retryAt) return Promise.resolve(this.unavailable());
      this.fetch(signal);
    }
    return this.waitFor(this.fetching as Promise<AccessToken | TokenUnavailable>, signal);
  }

  /**
   * A token other than `rejected`, which the webhook answered `401` to: the one another request
   * already renewed it to, or a new one. Unavailable while `rejected` is younger than
   * {@link MIN_FORCED_RENEWAL_AGE_MS}: sent again, it would be refused again, and the record
   * dead-lettered for a token revoked just after it was issued.
   */
  renew(rejected: AccessToken, signal?: AbortSignal): Promise<AccessToken | TokenUnavailable> {
    const held = this.held;
    if (held?.token === rejected) {
      const renewableAt = held.requestedAt + MIN_FORCED_RENEWAL_AGE_MS;
      if (Date.now() < renewableAt)
        return Promise.resolve({
          kind: 'unavailable',
          reason: `the webhook answered 401 to an OAuth token under ${MIN_FORCED_RENEWAL_AGE_MS / 1000} s old, renewed no sooner`,
          retryInSeconds: Math.ceil((renewableAt - Date.now()) / 1000),
        });
      // The webhook no longer takes it: no request may send it again.
      this.held = undefined;
      this.retryAt = 0;
    }
    return this.get(signal);
  }

  /**
   * The tokens `config` asks for, or `undefined` when `OAUTH_TOKEN_URL` is unset. The token endpoint
   * is reached through the proxy when one applies to it, trusting the webhook's private CA, without
   * the webhook's client certificate.
   */
  static for(
    config: Pick<RelayConfig, 'oauth' | 'proxy' | 'clientCertificate' | 'secretsRefreshSeconds' | 'requestTimeoutMs' | 'userAgent'>,
    logger: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>,
  ): OAuthTokens | undefined {
    const { oauth } = config;
    if (oauth === undefined) return undefined;
    return new OAuthTokens(oauth, {
      logger,
      refreshSeconds: config.secretsRefreshSeconds,
      requestTimeoutMs: config.requestTimeoutMs,
      userAgent: config.userAgent,
      connector: tokenEndpointConnector(config, oauth.tokenUrl, logger),
    });
  }

  /**
   * Sends a request whose headers carry `token` (its `Authorization` value) and, if the webhook
   * answers `401`, renews the token and sends it once more on the same attempt; a second `401` is
   * the webhook's answer. A token too young to renew ({@link renew}) leaves the record to be retried. A webhook answer
   * that quotes a token is scrubbed of it.
   * @param request the headers (the value replaced for the resend) and body
   */
  async send(
    token: AccessToken,
    request: { readonly headers: string[]; readonly body: Buffer },
    transmitter: Pick<WebhookTransmitter, 'post'>,
    { firstTimeoutMs, timeoutNow, minimumMs, signal }: SendBounds,
  ): Promise<WebhookResult | TokenUnavailable> {
    const { headers, body } = request;
    const post = (timeoutMs: number): Promise<WebhookResult> => transmitter.post(headers, body, timeoutMs);
    const valueIndex = headers.lastIndexOf(token.header);
    const first = await post(firstTimeoutMs);
    if (first.kind !== 'response' || first.status !== 401 || valueIndex < 0) return scrubbed(first, token);
    const renewed = await this.renew(token, signal);
    if (renewed.kind === 'unavailable') return renewed;
    const timeoutMs = timeoutNow();
    if (timeoutMs < minimumMs)
      return { kind: 'unavailable', reason: 'OAuth token renewed after a 401, but no time was left to resend', retryInSeconds: 0 };
    headers[valueIndex] = renewed.header;
    return scrubbed(scrubbed(await post(timeoutMs), renewed), token);
  }

  /** Waits for `fetching`, or until `signal` aborts (the fetch goes on for whoever else waits). */
  private waitFor(
    fetching: Promise<AccessToken | TokenUnavailable>,
    signal: AbortSignal | undefined,
  ): Promise<AccessToken | TokenUnavailable> {
    if (signal === undefined) return fetching;
    if (signal.aborted) return Promise.resolve(this.abandoned());
    return new Promise((resolve) => {
      const onAbort = (): void => resolve(this.abandoned());
      signal.addEventListener('abort', onAbort, { once: true });
      void fetching.then((result) => {
        signal.removeEventListener('abort', onAbort);
        resolve(result);
      });
    });
  }

  private abandoned(): TokenUnavailable {
    return { kind: 'unavailable', reason: "OAuth token unavailable: the invocation's time ran out waiting for it", retryInSeconds: 0 };
  }

  private unavailable(): TokenUnavailable {
    const retryInSeconds = Math.max(0, Math.ceil((this.retryAt - Date.now()) / 1000));
    return {
      kind: 'unavailable',
      reason: `OAuth token unavailable (${this.failures} failed token request${this.failures === 1 ? '' : 's'} in a row; next in ${retryInSeconds} s): ${this.lastFailure}`,
      retryInSeconds,
    };
  }

  /** Starts the one token request; `signal` abandons it (a renewal in the background has none but the timeout). */
  private fetch(signal: AbortSignal | undefined): Promise<AccessToken | TokenUnavailable> {
    const fetching = this.requestNew(signal).finally(() => {
      this.fetching = undefined;
    });
    this.fetching = fetching;
    return fetching;
  }

  private async requestNew(signal: AbortSignal | undefined): Promise<AccessToken | TokenUnavailable> {
    const requestedAt = Date.now();
    let granted: GrantedToken;
    try {
      const secret = await this.clientSecret.get(signal);
      // The exchange itself loads with the first token request: a relay without OAuth never loads it.
      const { requestToken } = await import('./token-endpoint');
      granted = await requestToken(this.request, secret, this.options.connector, this.options.requestTimeoutMs, signal);
    } catch (error) {
      // A TokenRequestError's (token-endpoint.ts, loaded with the first request: read by name, not imported).
      const retryAfterSeconds = (error as Partial<TokenRequestError> | undefined)?.retryAfterSeconds;
      return this.failed(error instanceof Error ? error.message : String(error), retryAfterSeconds);
    }
    const lifetimeMs = (granted.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS) * 1000;
    const token: AccessToken = { kind: 'token', header: `Bearer ${granted.accessToken}` };
    this.held = {
      token,
      requestedAt,
      // Counted from when it was asked for: the endpoint's clock started no earlier.
      renewAt: requestedAt + lifetimeMs - Math.min(RENEW_BEFORE_EXPIRY_MS, lifetimeMs / 5),
      expiresAt: requestedAt + lifetimeMs - Math.min(EXPIRY_MARGIN_MS, lifetimeMs / 10),
    };
    if (this.state !== 'ok') {
      this.logger?.info('OAuth token obtained again', { failedRequests: this.failures, tokenUrl: endpointOf(this.request.tokenUrl) });
    }
    this.state = 'ok';
    this.failures = 0;
    this.retryAt = 0;
    return token;
  }

  /** @param retryAfterSeconds the endpoint's `Retry-After`, when it said how long to wait: no sooner than that */
  private failed(reason: string, retryAfterSeconds: number | undefined): TokenUnavailable {
    this.failures += 1;
    const backoffMs = Math.min(TOKEN_RETRY_MAX_MS, TOKEN_RETRY_INITIAL_MS * 2 ** Math.min(this.failures - 1, 16));
    const retryMs = Math.max(backoffMs, Math.min(TOKEN_RETRY_AFTER_MAX_MS, (retryAfterSeconds ?? 0) * 1000));
    this.retryAt = Date.now() + retryMs;
    this.lastFailure = reason;
    const stillValid = this.held !== undefined && Date.now() < this.held.expiresAt;
    const state: TokenState = stillValid ? 'renewal-failing' : 'failing';
    const attributes = {
      tokenUrl: endpointOf(this.request.tokenUrl),
      error: reason,
      failedRequests: this.failures,
      retryInSeconds: retryMs / 1000,
    };
    if (state !== this.state) {
      if (state === 'failing')
        this.logger?.error('No OAuth token: the token request failed; records are retried, never sent without a token', attributes);
      else this.logger?.warn('OAuth token renewal failed; the current token is sent until it expires', attributes);
    } else {
      this.logger?.debug('OAuth token request failed again', attributes);
    }
    this.state = state;
    return this.unavailable();
  }
}

/** The token endpoint as logged: origin and path, never a query string. */
function endpointOf(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/** `result` with `token` cut out of the webhook's answer, which is logged and may become a dead letter's reason. */
function scrubbed(result: WebhookResult, token: AccessToken): WebhookResult {
  return withoutSecrets(result, [token.header.slice('Bearer '.length)]);
}
