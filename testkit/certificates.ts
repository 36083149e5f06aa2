/**
 * Certificates made in the test: a private CA, a server certificate it signs for the test hosts
 * (127.0.0.1, localhost, *.test), client certificates it signs, and a second CA nobody trusts.
 * Node.js's crypto makes the keys (it has no way to issue an X.509 certificate); node-forge signs
 * the certificates. Each key is RSA 2048: what Node.js and OpenSSL accept by default.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

/** A certificate with its key, both PEM. */
export interface IssuedCertificate {
  readonly certificate: string;
  readonly privateKey: string;
}

/** A CA: its certificate, and a function issuing certificates signed by it. */
export interface TestCa extends IssuedCertificate {
  /** A server certificate for `hosts` (IP addresses and DNS names, `*.` wildcards allowed). */
  server(hosts: readonly string[]): IssuedCertificate;
  /** A client certificate (extended key usage: clientAuth) with this common name. */
  /**
   * A client certificate (extended key usage: clientAuth) with this common name, valid from
   * `validFrom` (yesterday by default) for `validDays` (30).
   */
  client(commonName: string, options?: { readonly validDays?: number; readonly validFrom?: Date }): IssuedCertificate;
}

/** The test hosts a server certificate names by default (Node.js takes no wildcard directly under a top-level domain). */
export const TEST_HOSTS = ['127.0.0.1', 'localhost', 'webhook.test'] as const;

function keyPair(): { forgeKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; pem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e), pem };
}

/**
 * A certificate of `subject`'s key, signed by `issuer` (itself when absent), valid for `validDays`
 * from `from` (by default yesterday, and then until `validDays` from now).
 */
function issue(
  subject: string,
  key: forge.pki.rsa.PublicKey,
  issuer: { readonly name: string; readonly key: forge.pki.rsa.PrivateKey } | undefined,
  signingKey: forge.pki.rsa.PrivateKey,
  extensions: object[],
  validDays = 30,
  from?: Date,
): string {
  const certificate = forge.pki.createCertificate();
  certificate.publicKey = key;
  // Positive, 16 random bytes: what CAs do.
  certificate.serialNumber = `01${randomBytes(15).toString('hex')}`;
  const notBefore = from ?? new Date(Date.now() - 86_400_000);
  certificate.validity.notBefore = notBefore;
  certificate.validity.notAfter = new Date(notBefore.getTime() + (validDays + (from === undefined ? 1 : 0)) * 86_400_000);
  certificate.setSubject([{ name: 'commonName', value: subject }]);
  certificate.setIssuer([{ name: 'commonName', value: issuer?.name ?? subject }]);
  certificate.setExtensions(extensions);
  certificate.sign(signingKey, forge.md.sha256.create());
  return forge.pki.certificateToPem(certificate);
}

/** A new CA named `name`. */
export function createCa(name = 'sqs-webhook-relay test CA'): TestCa {
  const ca = keyPair();
  const certificate = issue(name, ca.publicKey, undefined, ca.forgeKey, [
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
  ]);
  const signer = { name, key: ca.forgeKey };
  return {
    certificate,
    privateKey: ca.pem,
    server(hosts) {
      const own = keyPair();
      const altNames = hosts.map((host) => (/^[\d.]+$|:/.test(host) ? { type: 7, ip: host } : { type: 2, value: host }));
      return {
        certificate: issue(hosts[0] ?? 'server', own.publicKey, signer, ca.forgeKey, [
          { name: 'basicConstraints', cA: false },
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
          { name: 'extKeyUsage', serverAuth: true },
          { name: 'subjectAltName', altNames },
        ]),
        privateKey: own.pem,
      };
    },
    client(commonName, options = {}) {
      const own = keyPair();
      return {
        certificate: issue(
          commonName,
          own.publicKey,
          signer,
          ca.forgeKey,
          [
            { name: 'basicConstraints', cA: false },
            { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
            { name: 'extKeyUsage', clientAuth: true },
          ],
          options.validDays,
          options.validFrom,
        ),
        privateKey: own.pem,
      };
    },
  };
}
