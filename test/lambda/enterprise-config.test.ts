/**
 * The settings of OAuth, mutual TLS and the proxy as lambda/config.ts reads them: each error names
 * the variable as the user typed it and never repeats a secret; NO_PROXY's matching (proxy.ts);
 * and nothing set, nothing built (the transmitter's agents stay node:http's own).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, test } from 'vitest';
import { loadConfig } from '../../lambda/config';
import { configErrorOf } from '../support/config-errors';
import { webhookConnector } from '../../lambda/connector';
import { OAuthTokens } from '../../lambda/oauth-tokens';
import { proxyFor } from '../../lambda/proxy';
import { parseTlsMaterial } from '../../lambda/tls-material';
import { createCa } from '../../testkit/certificates';

const WEBHOOK_URL = 'https://hooks.example.com/incoming';
type Env = Record<string, string | undefined>;
const load = (env: Env) => loadConfig({ WEBHOOK_URL, ...env });
const OAUTH = { OAUTH_TOKEN_URL: 'https://login.example.com/oauth2/token', OAUTH_CLIENT_ID: 'relay', OAUTH_CLIENT_SECRET: 's3cr3t-value' };

describe('none of them set', () => {
  test('no OAuth, no certificate, no proxy: nothing is built, the transmitter keeps node:http agents', () => {
    const config = load({});
    expect(config).toMatchObject({ oauth: undefined, clientCertificate: undefined, proxy: undefined });
    expect(webhookConnector({ ...config, webhookUrl: new URL('https://hooks.example.com/') }, console)).toBeUndefined();
    expect(OAuthTokens.for(config, console)).toBeUndefined();
  });
});

describe('OAuth', () => {
  test('read with its defaults; the scope normalised to single spaces', () => {
    expect(load({ ...OAUTH, OAUTH_SCOPE: ' a:read\tb:write ' }).oauth).toEqual({
      tokenUrl: new URL(OAUTH.OAUTH_TOKEN_URL),
      clientId: 'relay',
      clientSecret: { kind: 'literal', value: 's3cr3t-value' },
      scope: 'a:read b:write',
      audience: undefined,
      clientAuthentication: 'client_secret_basic',
    });
    expect(load({ ...OAUTH, OAUTH_CLIENT_SECRET: undefined, OAUTH_CLIENT_SECRET_ARN: 'oauth-secret' }).oauth?.clientSecret).toEqual({
      kind: 'secrets-manager',
      secretId: 'oauth-secret',
    });
    expect(load({ ...OAUTH, OAUTH_CLIENT_AUTHENTICATION: 'CLIENT_SECRET_POST' }).oauth?.clientAuthentication).toBe('client_secret_post');
  });

  test.each([
    [{ OAUTH_CLIENT_ID: 'relay' }, 'OAUTH_TOKEN_URL', 'must be set when OAUTH_CLIENT_ID is'],
    [{ OAUTH_SCOPE: 'x' }, 'OAUTH_TOKEN_URL', 'must be set when OAUTH_SCOPE is'],
    [{ ...OAUTH, OAUTH_CLIENT_ID: undefined }, 'OAUTH_CLIENT_ID', 'required with OAUTH_TOKEN_URL'],
    [{ ...OAUTH, OAUTH_CLIENT_SECRET: undefined }, 'OAUTH_CLIENT_SECRET_ARN', 'required with OAUTH_TOKEN_URL'],
    [{ ...OAUTH, OAUTH_CLIENT_SECRET_ARN: 'arn' }, 'OAUTH_CLIENT_SECRET_ARN', 'give the secret one way'],
    [{ ...OAUTH, OAUTH_TOKEN_URL: 'http://login.example.com/token' }, 'OAUTH_TOKEN_URL', 'http:// only for loopback hosts'],
    [{ ...OAUTH, OAUTH_TOKEN_URL: 'https://id:pw@login.example.com/token' }, 'OAUTH_TOKEN_URL', 'without user:password'],
    [{ ...OAUTH, OAUTH_SCOPE: 'a "b"' }, 'OAUTH_SCOPE', 'scope names'],
    [
      { ...OAUTH, OAUTH_CLIENT_AUTHENTICATION: 'private_key_jwt' },
      'OAUTH_CLIENT_AUTHENTICATION',
      'one of client_secret_basic, client_secret_post',
    ],
    [{ ...OAUTH, AUTH_HEADER: 'Bearer static' }, 'AUTH_HEADER', 'unset when OAUTH_TOKEN_URL is set'],
    [{ ...OAUTH, AUTH_SECRET_ARN: 'auth' }, 'AUTH_SECRET_ARN', 'unset when OAUTH_TOKEN_URL is set'],
  ] as const)('%j is refused, naming %s', (env, variable, expected) => {
    const error = configErrorOf(() => load(env));
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(expected);
    expect(error.message).not.toContain('s3cr3t-value');
    expect(error.message).not.toContain('Bearer static');
  });

  test('the token URL follows the webhook URL rule: plain http to loopback, or with ALLOW_INSECURE_HTTP', () => {
    expect(load({ ...OAUTH, OAUTH_TOKEN_URL: 'http://127.0.0.1:8080/token' }).oauth?.tokenUrl.href).toBe('http://127.0.0.1:8080/token');
    expect(load({ ...OAUTH, OAUTH_TOKEN_URL: 'http://idp.internal/token', ALLOW_INSECURE_HTTP: 'true' }).oauth).toBeDefined();
  });
});

describe('the client certificate', () => {
  const dir = mkdtempSync(join(inject('scratchDir'), 'certificate-config-'));
  const ca = createCa();
  const issued = ca.client('relay');
  const other = ca.client('other');
  const file = (name: string, text: string): string => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  const certificate = file('relay.crt', issued.certificate);
  const key = file('relay.key', issued.privateKey);
  const caFile = file('ca.crt', ca.certificate);
  // A key of another type than the certificate's: OpenSSL's own check of a pair passes it.
  const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  // Passphrase-protected, in PKCS #8's form and in OpenSSL's traditional one: OpenSSL says only "bad decrypt".
  const derKey = createPrivateKey(issued.privateKey).export({ type: 'pkcs8', format: 'der' }).toString('latin1');
  const publicKey = createPublicKey(issued.privateKey).export({ type: 'spki', format: 'pem' }).toString();
  const encryptedKeys = (['pkcs8', 'pkcs1'] as const).map((type) =>
    createPrivateKey(issued.privateKey).export({ type, format: 'pem', cipher: 'aes-256-cbc', passphrase: 'passphrase' }).toString(),
  );

  test('files are one source read together; a secret and a CA file are two', () => {
    expect(load({ CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: key, CA_CERTIFICATE_FILE: caFile }).clientCertificate).toEqual({
      sources: [{ kind: 'files', files: { certificate, privateKey: key, caCertificate: caFile } }],
    });
    expect(load({ CLIENT_CERTIFICATE_SECRET_ARN: 'cert', CA_CERTIFICATE_FILE: caFile }).clientCertificate).toEqual({
      sources: [
        { kind: 'secrets-manager', secretId: 'cert' },
        { kind: 'files', files: { caCertificate: caFile } },
      ],
    });
    expect(load({ CA_CERTIFICATE_FILE: caFile }).clientCertificate).toEqual({
      sources: [{ kind: 'files', files: { caCertificate: caFile } }],
    });
  });

  test.each([
    [() => ({ CLIENT_CERTIFICATE_FILE: certificate }), 'CLIENT_KEY_FILE', 'go together'],
    [() => ({ CLIENT_KEY_FILE: key }), 'CLIENT_CERTIFICATE_FILE', 'go together'],
    [
      () => ({ CLIENT_CERTIFICATE_SECRET_ARN: 'cert', CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: key }),
      'CLIENT_CERTIFICATE_FILE',
      'one way',
    ],
    [() => ({ CLIENT_CERTIFICATE_FILE: join(dir, 'missing.crt'), CLIENT_KEY_FILE: key }), 'CLIENT_CERTIFICATE_FILE', 'ENOENT'],
    [
      () => ({ CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: file('other.key', other.privateKey) }),
      'CLIENT_CERTIFICATE_FILE',
      'key values mismatch',
    ],
    [() => ({ CA_CERTIFICATE_FILE: file('not-pem.crt', 'hello') }), 'CA_CERTIFICATE_FILE', 'not PEM'],
    [
      () => ({ CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: file('ec.key', ecKey) }),
      'CLIENT_CERTIFICATE_FILE',
      'the private key does not match the certificate (an ec key, an rsa certificate)',
    ],
    ...encryptedKeys.map(
      (encrypted, index) =>
        [
          () => ({ CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: file(`encrypted-${index}.key`, encrypted) }),
          'CLIENT_KEY_FILE',
          'the private key is encrypted (passphrase-protected); the relay takes it unencrypted (openssl pkey',
        ] as const,
    ),
    // The key file at fault alone is named, not the certificate's.
    [
      () => ({ CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: file('der.key', derKey) }),
      'CLIENT_KEY_FILE',
      'the private key is not PEM text',
    ],
    [
      () => ({ CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: file('certificate-as-key.key', issued.certificate) }),
      'CLIENT_KEY_FILE',
      'the private key is not a private key OpenSSL reads',
    ],
    [
      () => ({ CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: file('public.key', publicKey) }),
      'CLIENT_KEY_FILE',
      'the private key is not a private key OpenSSL reads',
    ],
    [
      () => ({ CLIENT_CERTIFICATE_FILE: key, CLIENT_KEY_FILE: key }),
      'CLIENT_CERTIFICATE_FILE',
      'the certificate is not a certificate OpenSSL reads',
    ],
    [() => ({ CA_CERTIFICATE_FILE: file('key-as-ca.crt', issued.privateKey) }), 'CA_CERTIFICATE_FILE', 'holds no certificate'],
    [
      () => ({ CLIENT_CERTIFICATE_FILE: certificate, CLIENT_KEY_FILE: key, CA_CERTIFICATE_FILE: file('not-pem-either.crt', 'hello') }),
      'CA_CERTIFICATE_FILE',
      'not PEM',
    ],
  ] as const)('%#: refused at start, naming %s', (env, variable, expected) => {
    const error = configErrorOf(() => load(env()));
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(expected);
    expect(error.message).not.toContain('PRIVATE KEY');
  });

  test("a secret's pair is held to the same rule: a key of another type than the certificate's is refused", () => {
    expect(() => parseTlsMaterial(JSON.stringify({ certificate: issued.certificate, privateKey: ecKey }))).toThrow(
      'the private key does not match the certificate',
    );
    expect(() => parseTlsMaterial(JSON.stringify({ certificate: issued.certificate, privateKey: issued.privateKey }))).not.toThrow();
  });

  test("a secret's encrypted key is refused saying so, not in OpenSSL's words", () => {
    for (const privateKey of encryptedKeys)
      expect(() => parseTlsMaterial(JSON.stringify({ certificate: issued.certificate, privateKey }))).toThrow(
        '"privateKey" is encrypted (passphrase-protected); the relay takes it unencrypted (openssl pkey',
      );
  });
});

describe('the proxy', () => {
  test('HTTPS_PROXY and HTTP_PROXY (or their lower-case forms), host:port alone meaning http://', () => {
    expect(load({ HTTPS_PROXY: 'proxy.corp:3128', no_proxy: '.corp, 10.0.0.0/8' }).proxy).toEqual({
      httpsProxy: new URL('http://proxy.corp:3128'),
      httpProxy: undefined,
      noProxy: ['.corp', '10.0.0.0/8'],
    });
    expect(load({ https_proxy: 'http://lower:1', HTTPS_PROXY: 'http://upper:2' }).proxy?.httpsProxy?.host).toBe('upper:2');
    expect(load({ http_proxy: 'http://lower:1' }).proxy?.httpProxy?.host).toBe('lower:1');
    expect(load({ NO_PROXY: 'x' }).proxy).toBeUndefined();
  });

  test.each(['ftp://proxy:21', 'http://', 'http://[bad'])('HTTPS_PROXY=%j is refused by name, without its credentials', (raw) => {
    const error = configErrorOf(() => load({ HTTPS_PROXY: raw }));
    expect(error.variable).toBe('HTTPS_PROXY');
  });

  test('a refused proxy URL is quoted without its password', () => {
    const error = configErrorOf(() => load({ https_proxy: 'socks5://user:hunter2@proxy:1080' }));
    expect(error.variable).toBe('https_proxy');
    expect(error.message).not.toContain('hunter2');
  });

  test.each(['http://relay:50%off@proxy:3128', 'http://us%er:pw@proxy:3128', 'relay:%E0%A4%A@proxy:3128'])(
    "a percent sign in the proxy's user:password that starts no escape is refused at start (%#), never quoted",
    (raw) => {
      const error = configErrorOf(() => load({ HTTPS_PROXY: raw }));
      expect(error.variable).toBe('HTTPS_PROXY');
      expect(error.message).toContain('percent-encoded');
      expect(error.message).not.toMatch(/50%off|us%er|%E0/);
    },
  );

  test('a user:password percent-encoded as it should be is taken', () => {
    expect(load({ HTTPS_PROXY: 'http://relay:50%25off%40x@proxy:3128' }).proxy?.httpsProxy?.password).toBe('50%25off%40x');
  });

  test.each([
    ['NO_PROXY', '.corp, 10.0.0.0/33', '10.0.0.0/33'],
    ['NO_PROXY', '10.0.0.0/8,fd00::/129', 'fd00::/129'],
    ['NO_PROXY', '10.0.0/8', '10.0.0/8'],
    ['NO_PROXY', 'corp.example/8', 'corp.example/8'],
    ['NO_PROXY', '10.0.0.0/', '10.0.0.0/'],
    ['NO_PROXY', '10.0.0.0/8.5', '10.0.0.0/8.5'],
    ['no_proxy', '/8', '/8'],
  ])('%s=%j, a malformed CIDR range that would cover no host, is refused at start, quoting it', (name, raw, quoted) => {
    const error = configErrorOf(() => load({ HTTPS_PROXY: 'http://proxy:3128', [name]: raw }));
    expect(error.variable).toBe(name);
    expect(error.message).toContain(`got ${JSON.stringify(quoted)}`);
  });

  test('CIDR ranges of either family, an IPv6 base in brackets, and prefixes 0 to the full length are taken', () => {
    const noProxy = '10.0.0.0/8, 0.0.0.0/0, 192.168.1.1/32, fd00::/8, [fd00::]/16, ::/0, ::1/128';
    expect(load({ HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: noProxy }).proxy?.noProxy).toHaveLength(7);
  });

  const settings = (noProxy: string[]) => ({ httpsProxy: new URL('http://proxy:3128'), httpProxy: undefined, noProxy });
  test.each([
    ['https://api.example.com/hook', ['example.com'], false],
    ['https://example.com/hook', ['.example.com'], false],
    ['https://a.b.example.com/hook', ['*.example.com'], false],
    ['https://notexample.com/hook', ['example.com'], true],
    // A fully qualified name (the root's trailing dot) is the same name, on either side.
    ['https://example.com./hook', ['example.com'], false],
    ['https://api.example.com./hook', ['.example.com'], false],
    ['https://example.com/hook', ['example.com.'], false],
    ['https://api.example.com/hook', ['*.example.com.'], false],
    ['https://example.com.:443/hook', ['example.com.:443'], false],
    ['https://notexample.com./hook', ['example.com'], true],
    ['https://example.com:8443/hook', ['example.com:443'], true],
    ['https://example.com/hook', ['example.com:443'], false],
    ['https://10.1.2.3/hook', ['10.0.0.0/8'], false],
    ['https://11.1.2.3/hook', ['10.0.0.0/8'], true],
    ['https://[fd00::1]/hook', ['fd00::/8'], false],
    ['https://[fd00::1]/hook', ['[fd00::]/8'], false],
    ['https://[fe80::1]/hook', ['fd00::/8'], true],
    ['https://10.1.2.3/hook', ['fd00::/8'], true],
    ['https://[fd00::1]/hook', ['10.0.0.0/8'], true],
    ['https://[fd00::1]:8443/hook', ['[fd00::1]:8443'], false],
    ['https://192.168.0.1/hook', ['192.168.0.1'], false],
    ['https://anything.io/hook', ['*'], false],
    ['https://127.0.0.1/hook', [], false],
    ['https://localhost:8443/hook', [], false],
    ['http://hooks.example.com/hook', [], false],
    ['https://hooks.example.com/hook', [], true],
  ] as const)('%s with NO_PROXY %j: through the proxy %s', (target, noProxy, proxied) => {
    expect(proxyFor(settings([...noProxy]), new URL(target)) !== undefined).toBe(proxied);
  });
});
