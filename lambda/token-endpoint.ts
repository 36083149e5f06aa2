/**
 * One OAuth 2.0 client credentials grant (RFC 6749 §4.4): a POST to the token endpoint, the client
 * authenticated by HTTP Basic (`client_secret_basic`, §2.3.1) or in the form (`client_secret_post`),
 * and the token out of its JSON answer (§5.1), or why there is none (§5.2). The token endpoint is
 * reached as the webhook is: through the proxy when one applies, trusting the same private CA
 * (connector.ts), but never presented the client certificate.
 *
 * Neither the client secret nor a token ever appears in an error: the endpoint's own error text is
 * scrubbed of both before it is quoted. Loaded with the first token request (see oauth-tokens.ts).
 */
import type { ClientRequest, Agent as HttpAgent, IncomingMessage } from 'node:http';
import { connectingAgent, type Connector } from './connector';
import { isLegalHeaderValue } from './header-rules';
import { parseRetryAfter } from './retry-timing';
import { scrub } from './scrub';
import type { OAuthClientAuthentication } from './settings';
import { connectionErrorText } from './tls-material';

/** The grant's parameters, but for the client secret (read from its own source, see oauth-tokens.ts). */
export interface TokenRequest {
  readonly tokenUrl: URL;
  readonly clientId: string;
  readonly scope: string | undefined;
  readonly audience: string | undefined;
  readonly clientAuthentication: OAuthClientAuthentication;
  readonly userAgent: string;
}

/** A token as the endpoint granted it. */
export interface GrantedToken {
  readonly accessToken: string;
  /** `expires_in`, seconds; `undefined` when the endpoint did not say. */
  readonly expiresInSeconds: number | undefined;
}

/** No token came back: the message says why, without the secret, a token or the endpoint's query string. */
export class TokenRequestError extends Error {
  constructor(
    message: string,
    /** The endpoint's `Retry-After` (a `429`, a `503`), seconds: no token request before then. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'TokenRequestError';
  }
}

/** Bytes of a token endpoint's answer read at most: a token response is a few kB. */
const TOKEN_RESPONSE_LIMIT_BYTES = 64 * 1024;
/** Characters of the endpoint's own error description quoted in a message. */
const QUOTED_DESCRIPTION_CHARS = 200;

/** `application/x-www-form-urlencoded` encoding of one value (RFC 6749 Appendix B): spaces as `+`. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

/** The request body and the headers of one grant. */
function grantOf(request: TokenRequest, clientSecret: string): { body: string; authorization: string | undefined } {
  const form: string[] = ['grant_type=client_credentials'];
  if (request.scope !== undefined) form.push(`scope=${formEncode(request.scope)}`);
  // Not RFC 6749's, but what Auth0 and others need to mint a token for one API.
  if (request.audience !== undefined) form.push(`audience=${formEncode(request.audience)}`);
  if (request.clientAuthentication === 'client_secret_post') {
    form.push(`client_id=${formEncode(request.clientId)}`, `client_secret=${formEncode(clientSecret)}`);
    return { body: form.join('&'), authorization: undefined };
  }
  // RFC 6749 §2.3.1: the id and secret form-encoded, then joined by ':' and base64-encoded.
  const basic = Buffer.from(`${formEncode(request.clientId)}:${formEncode(clientSecret)}`, 'utf8').toString('base64');
  return { body: form.join('&'), authorization: `Basic ${basic}` };
}

/**
 * The client secret as the request carries it, each form an endpoint might quote back: as is,
 * form-encoded (the body of `client_secret_post`, the decoded Basic credentials), and the Basic
 * credentials themselves, whose base64 gives the secret back to anyone who reads it.
 */
function secretForms(clientSecret: string, authorization: string | undefined): string[] {
  const forms = [clientSecret, formEncode(clientSecret), encodeURIComponent(clientSecret)];
  if (authorization !== undefined) forms.push(authorization.slice('Basic '.length));
  return forms;
}

/** The endpoint named in messages: its origin and path, never a query string. */
function endpointName(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/** Reads the token out of a 2xx answer's JSON, or says why it is not usable. */
function tokenOf(text: string): GrantedToken {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new TokenRequestError('its answer is not JSON');
  }
  const { access_token: accessToken, token_type: tokenType, expires_in: expiresIn } = (parsed ?? {}) as Record<string, unknown>;
  if (typeof accessToken !== 'string' || accessToken === '') throw new TokenRequestError('its answer has no access_token');
  if (!isLegalHeaderValue(accessToken, Infinity)) throw new TokenRequestError('its access_token has characters not allowed in a header');
  if (tokenType !== undefined && (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'bearer'))
    throw new TokenRequestError(`its token_type is ${JSON.stringify(tokenType)}; the relay sends Bearer tokens only`);
  // Some endpoints send the number as a string ("3600").
  const seconds = typeof expiresIn === 'string' && /^\d+$/.test(expiresIn) ? Number(expiresIn) : expiresIn;
  const expiresInSeconds = typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
  return { accessToken, expiresInSeconds };
}

/** What a non-2xx answer says (RFC 6749 §5.2: `error` and `error_description`), scrubbed of the secret (`hidden`: its forms). */
function refusalOf(status: number, text: string, hidden: readonly string[]): string {
  let detail = '';
  try {
    const { error, error_description: description } = JSON.parse(text) as Record<string, unknown>;
    if (typeof error === 'string' && /^[\x20-\x7e]{1,64}$/.test(error)) detail = ` ${error}`;
    if (typeof description === 'string' && description !== '')
      detail += `: ${scrub(description, hidden).slice(0, QUOTED_DESCRIPTION_CHARS)}`;
  } catch {
    // Not RFC 6749's JSON: the status alone says enough.
  }
  return `it answered HTTP ${status}${detail}`;
}

/** Agents per connector: one request an hour needs no pool, only the connector's way to connect. */
const agents = new WeakMap<Connector, HttpAgent>();

/**
 * Asks the token endpoint for a token. Resolves with it; rejects with a {@link TokenRequestError}
 * that names the endpoint and what went wrong (never the secret).
 * @param connector how to reach the endpoint (a proxy), `undefined` for a direct connection
 * @param timeoutMs bound on the whole exchange
 * @param signal abandons it sooner (the invocation's time for it is up)
 */
export function requestToken(
  request: TokenRequest,
  clientSecret: string,
  connector: Connector | undefined,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<GrantedToken> {
  const url = request.tokenUrl;
  const name = endpointName(url);
  const { body, authorization } = grantOf(request, clientSecret);
  const hidden = secretForms(clientSecret, authorization);
  const client = process.getBuiltinModule(url.protocol === 'https:' ? 'node:https' : 'node:http');
  const agent = agentFor(client.Agent, connector);
  return new Promise<GrantedToken>((resolve, reject) => {
    let settled = false;
    let http: ClientRequest | undefined;
    const fail = (message: string, retryAfterSeconds?: number): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      http?.destroy();
      reject(new TokenRequestError(`the token endpoint ${name}: ${scrub(message, hidden)}`, retryAfterSeconds));
    };
    const succeed = (token: GrantedToken): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(token);
    };
    const onAbort = (): void => fail("abandoned: the invocation's time for it ran out");
    // The token request shares the webhook's bound: the line names it, for an endpoint slower than that.
    const timer = setTimeout(() => fail(`no complete answer within ${timeoutMs} ms (REQUEST_TIMEOUT_MS)`), timeoutMs);
    if (signal?.aborted) {
      onAbort();
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      http = client.request(url, { method: 'POST', headers: grantHeaders(request, body, authorization), agent });
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error));
      return;
    }
    http.on('error', (error: NodeJS.ErrnoException) => fail(connectionErrorText(error)));
    http.on('response', (response: IncomingMessage) => readGrant(response, hidden, succeed, fail));
    http.end(body);
  });
}

/** The agent that reaches the endpoint through `connector` (one per connector, kept), or none for a direct connection. */
function agentFor(Agent: typeof HttpAgent, connector: Connector | undefined): HttpAgent | false {
  if (connector === undefined) return false;
  const agent = agents.get(connector) ?? new (connectingAgent(Agent, connector))({ keepAlive: false });
  agents.set(connector, agent);
  return agent;
}

/** The headers of the token request. */
function grantHeaders(request: TokenRequest, body: string, authorization: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {
    'Content-Type': 'application/x-www-form-urlencoded',
    'Content-Length': String(Buffer.byteLength(body)),
    Accept: 'application/json',
    'User-Agent': request.userAgent,
  };
  if (authorization !== undefined) headers.Authorization = authorization;
  return headers;
}

/** Reads the endpoint's answer, at most {@link TOKEN_RESPONSE_LIMIT_BYTES}, to the token it grants or the reason it does not. */
function readGrant(
  response: IncomingMessage,
  hidden: readonly string[],
  succeed: (token: GrantedToken) => void,
  fail: (message: string, retryAfterSeconds?: number) => void,
): void {
  const chunks: Buffer[] = [];
  let read = 0;
  response.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > TOKEN_RESPONSE_LIMIT_BYTES) fail(`its answer is longer than ${TOKEN_RESPONSE_LIMIT_BYTES} bytes`);
    else chunks.push(chunk);
  });
  response.on('error', (error: Error) => fail(`its answer broke off: ${error.message}`));
  response.on('end', () => {
    const status = response.statusCode ?? 0;
    const text = Buffer.concat(chunks).toString('utf8');
    if (status < 200 || status > 299) {
      fail(refusalOf(status, text, hidden), parseRetryAfter(response.headers['retry-after'], Date.now()));
      return;
    }
    try {
      succeed(tokenOf(text));
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error));
    }
  });
}
