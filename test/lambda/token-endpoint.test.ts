/**
 * lambda/token-endpoint.ts against a server on 127.0.0.1 that answers what a test says: what
 * counts as a token (RFC 6749 §5.1), what a refusal says (§5.2), and what never leaves it (the
 * secret, even when the endpoint quotes it back).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { requestToken, TokenRequestError } from '../../lambda/token-endpoint';

/** What the endpoint received: its form body and `Authorization` header. */
interface Received {
  readonly form: string;
  readonly authorization: string | undefined;
}
let answer: { status: number; body: string | ((received: Received) => string); hang?: boolean } = { status: 200, body: '{}' };
const server: Server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (answer.hang === true) return;
    res.writeHead(answer.status, { 'Content-Type': 'application/json' });
    const received = { form: Buffer.concat(chunks).toString(), authorization: req.headers.authorization };
    res.end(typeof answer.body === 'string' ? answer.body : answer.body(received));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
afterAll(() => {
  server.closeAllConnections();
  server.close();
});
const { port } = server.address() as AddressInfo;
const request = {
  tokenUrl: new URL(`http://127.0.0.1:${port}/token?tenant=secret-tenant`),
  clientId: 'relay',
  scope: undefined,
  audience: undefined,
  clientAuthentication: 'client_secret_basic' as const,
  userAgent: 'test',
};
const SECRET = 'the-client-secret';

async function failure(
  secret = SECRET,
  clientAuthentication: 'client_secret_basic' | 'client_secret_post' = 'client_secret_basic',
): Promise<string> {
  try {
    await requestToken({ ...request, clientAuthentication }, secret, undefined, 1_000);
  } catch (error) {
    expect(error).toBeInstanceOf(TokenRequestError);
    return (error as Error).message;
  }
  throw new Error('expected a TokenRequestError');
}

describe('a token', () => {
  test.each([
    ['{"access_token":"abc","token_type":"Bearer","expires_in":3600}', 3600],
    ['{"access_token":"abc","token_type":"bearer","expires_in":"120"}', 120],
    ['{"access_token":"abc"}', undefined],
    ['{"access_token":"abc","expires_in":-5}', undefined],
  ])('%s gives expires_in %s', async (body, expiresInSeconds) => {
    answer = { status: 200, body };
    expect(await requestToken(request, SECRET, undefined, 1_000)).toEqual({ accessToken: 'abc', expiresInSeconds });
  });

  test.each([
    ['not json', 'its answer is not JSON'],
    ['{"token_type":"Bearer"}', 'its answer has no access_token'],
    ['{"access_token":"a\\nb"}', 'characters not allowed in a header'],
    ['{"access_token":"abc","token_type":"mac"}', 'the relay sends Bearer tokens only'],
  ])('%s is not usable: %s', async (body, reason) => {
    answer = { status: 200, body };
    expect(await failure()).toContain(reason);
  });
});

describe('no token', () => {
  test("a refusal names the status, RFC 6749's error and its description, scrubbed of the secret; never the query string", async () => {
    answer = { status: 400, body: JSON.stringify({ error: 'invalid_scope', error_description: `scope refused for ${SECRET}` }) };
    const message = await failure();
    expect(message).toBe(`the token endpoint http://127.0.0.1:${port}/token: it answered HTTP 400 invalid_scope: scope refused for …`);
    expect(message).not.toContain('secret-tenant');
  });

  test.each(['client_secret_basic', 'client_secret_post'] as const)(
    'an endpoint quoting the request it got (%s) quotes none of the secret, nor the credentials that encode it',
    async (clientAuthentication) => {
      // Characters that form-encoding changes: the secret travels as a%2Bb%2Fc%3D+d%25 or inside base64.
      const secret = 'a+b/c= d%e-f';
      answer = {
        status: 400,
        body: ({ form, authorization }) => {
          const basic = authorization?.replace(/^Basic /, '') ?? '';
          const decoded = Buffer.from(basic, 'base64').toString();
          return JSON.stringify({ error: 'invalid_request', error_description: `got ${form} with ${authorization} (${decoded})` });
        },
      };
      const message = await failure(secret, clientAuthentication);
      expect(message).toContain('invalid_request: got grant_type=client_credentials');
      for (const form of [secret, new URLSearchParams({ v: secret }).toString().slice(2), encodeURIComponent(secret)])
        expect(message).not.toContain(form);
      expect(message).not.toMatch(/Basic [A-Za-z0-9+/]{8,}/);
    },
  );

  test('an endpoint that never answers is abandoned at the timeout', async () => {
    answer = { status: 200, body: '', hang: true };
    expect(await failure()).toContain('no complete answer within 1000 ms (REQUEST_TIMEOUT_MS)');
  });

  test('an abort signal ends the wait sooner', async () => {
    answer = { status: 200, body: '', hang: true };
    const message = await requestToken(request, SECRET, undefined, 10_000, AbortSignal.timeout(50)).catch((error: Error) => error.message);
    expect(message).toContain("abandoned: the invocation's time for it ran out");
  });

  test('an answer past 64 KiB is not read to its end', async () => {
    answer = { status: 200, body: JSON.stringify({ access_token: 'x'.repeat(70_000) }) };
    expect(await failure()).toContain('longer than 65536 bytes');
  });
});
