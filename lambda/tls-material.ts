/**
 * The PEM texts of mutual TLS (a client certificate, its key, a private CA) as the relay reads and
 * checks them: parsed from a secret's JSON or from files, refused when OpenSSL refuses them, and
 * made into a TLS context. Loaded at cold start (lambda/config.ts checks files at start); the rest
 * of mutual TLS (client-certificate.ts) loads with the first connection.
 */
import type { KeyObject, X509Certificate } from 'node:crypto';
import type { SecureContext } from 'node:tls';
import type { SecretSource } from './config';

/** Where the certificate, its key and the extra CA come from (see lambda/config.ts). */
export interface ClientCertificateSettings {
  /**
   * The sources, read and merged in order: a secret or files with `certificate` and `privateKey`
   * (and perhaps `caCertificate`), and perhaps a file with `caCertificate` only.
   */
  readonly sources: readonly SecretSource[];
}

/** The PEM texts of one source: a certificate with its key, a CA bundle, or both. */
export interface TlsMaterial {
  readonly certificate?: string;
  readonly privateKey?: string;
  readonly caCertificate?: string;
  /** When the certificate (its leaf) is valid, with `certificate`: for a warning, never a refusal. */
  readonly validity?: CertificateValidity;
}

/** A certificate's `notBefore` and `notAfter`. */
export interface CertificateValidity {
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** Error codes of a server certificate (the webhook's, the token endpoint's) the relay does not trust. */
export const UNTRUSTED_CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
]);

/** Where a private CA the relay should trust goes, for messages. */
export const PRIVATE_CA_HINT = "CA_CERTIFICATE_FILE or the client certificate secret's caCertificate";

/** Of {@link UNTRUSTED_CERTIFICATE_CODES}, an issuer the relay does not know: a CA to add here, not a certificate to fix there. */
const UNKNOWN_ISSUER_CODES: ReadonlySet<string> = new Set([...UNTRUSTED_CERTIFICATE_CODES].filter((code) => !code.startsWith('CERT_')));

/**
 * A failed connection (to the webhook, to the token endpoint) as the relay's lines quote it: its code and message. A
 * certificate of an issuer the relay does not know (self-signed, or from a private CA) says where such a CA goes, in place
 * of the advice Node.js adds to some (`--use-system-ca`), which is no setting of the relay's; an expired or rejected
 * certificate is the server's to fix, and is quoted as it is.
 */
export function connectionErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === undefined || code === '') return message;
  if (!UNKNOWN_ISSUER_CODES.has(code)) return `${code}: ${message}`;
  // OpenSSL's reason ("unable to verify the first certificate"), then Node.js's advice after a ';'.
  const reason = message.split(';', 1)[0];
  return `${code}: ${reason} (its TLS certificate's CA is not trusted: a private CA belongs in ${PRIVATE_CA_HINT})`;
}

/** The first line of what a JSON secret must look like, for messages. */
const EXPECTED_JSON = '{"certificate": "<PEM>", "privateKey": "<PEM>"} (and optionally "caCertificate")';

/** The platform's trusted CAs, with `NODE_EXTRA_CA_CERTS` where Node.js can say (22.15 and later). */
function platformCas(): string[] {
  const tls = process.getBuiltinModule('node:tls');
  const withExtra = (tls as { getCACertificates?: (type: string) => string[] }).getCACertificates?.('default');
  return withExtra ?? [...tls.rootCertificates];
}

/** The TLS context for `material`: the platform's CAs plus its own, its certificate and key. OpenSSL's checks apply. */
export function secureContextOf(material: TlsMaterial): SecureContext {
  const tls = process.getBuiltinModule('node:tls');
  return tls.createSecureContext({
    ...(material.caCertificate === undefined ? {} : { ca: [...platformCas(), material.caCertificate] }),
    ...(material.certificate === undefined ? {} : { cert: material.certificate, key: material.privateKey }),
  });
}

/** A private key protected by a passphrase: PKCS #8's form, or OpenSSL's traditional one (`Proc-Type: 4,ENCRYPTED`). */
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type:\s*4,ENCRYPTED/;

/** How to make an encrypted key one the relay takes, for messages. */
const DECRYPT_KEY_COMMAND = 'openssl pkey -in <key> -out <unencrypted key>';

/** The texts of a source, as a secret's JSON names them. */
export type TlsMaterialField = 'certificate' | 'privateKey' | 'caCertificate';

/**
 * A source refused for one of its texts alone: `field` says which, so that in local runs, where each text is a file of
 * its own, the error names that file's variable (config.ts).
 */
export class TlsMaterialError extends Error {
  constructor(
    readonly field: TlsMaterialField,
    /** What is wrong with it, after its name: "is not PEM text …". */
    readonly problem: string,
  ) {
    super(`"${field}" ${problem}`);
    this.name = 'TlsMaterialError';
  }
}

/** OpenSSL's reason, without anything of the PEM it read ("no start line", "key values mismatch"). */
function reasonOf(error: unknown): string {
  const reason = (error as { reason?: unknown } | undefined)?.reason;
  if (typeof reason === 'string' && reason !== '') return reason;
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : 'not a valid PEM certificate and key';
}

/**
 * Parses one source's text (JSON, as a secret holds it and as files are read, see secrets.ts) and
 * checks it with OpenSSL: a certificate that does not match its key, or text that is not PEM, is
 * refused here, never at a handshake. Messages never hold any of the text.
 */
export function parseTlsMaterial(raw: string): TlsMaterial {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`not JSON: expected ${EXPECTED_JSON}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`not a JSON object: expected ${EXPECTED_JSON}`);
  const { certificate, privateKey, caCertificate } = parsed as Record<string, unknown>;
  for (const [name, value] of Object.entries({ certificate, privateKey, caCertificate })) {
    if (value !== undefined && (typeof value !== 'string' || !value.includes('-----BEGIN ')))
      throw new TlsMaterialError(name as TlsMaterialField, 'is not PEM text (-----BEGIN …)');
  }
  if ((certificate === undefined) !== (privateKey === undefined))
    throw new Error(`"${certificate === undefined ? 'certificate' : 'privateKey'}" is missing: the certificate and its key go together`);
  if (certificate === undefined && caCertificate === undefined)
    throw new Error(`has neither a certificate nor a CA: expected ${EXPECTED_JSON}`);
  // Each read alone first, so that an error names the text at fault; the pair is then checked on what was read.
  const pair =
    typeof certificate === 'string' ? { leaf: readCertificate(certificate), key: readPrivateKey(privateKey as string) } : undefined;
  const material = { certificate, privateKey, caCertificate } as TlsMaterial;
  try {
    secureContextOf(material);
  } catch (error) {
    throw new Error(`refused by OpenSSL: ${reasonOf(error)}`);
  }
  const validity = pair === undefined ? undefined : checkKeyMatches(pair.leaf, pair.key);
  if (material.caCertificate !== undefined && !CERTIFICATE_BLOCK.test(material.caCertificate))
    throw new TlsMaterialError('caCertificate', 'holds no certificate (-----BEGIN CERTIFICATE-----): a CA bundle is certificates');
  return validity === undefined ? material : { ...material, validity };
}

/** `certificate`'s first certificate (the leaf); throws unless OpenSSL reads one there (a key in its place, say). */
function readCertificate(certificate: string): X509Certificate {
  try {
    return new (process.getBuiltinModule('node:crypto').X509Certificate)(certificate);
  } catch (error) {
    throw new TlsMaterialError('certificate', `is not a certificate OpenSSL reads (${reasonOf(error)})`);
  }
}

/**
 * `privateKey` read; throws unless it is a key OpenSSL reads without a passphrase: read alone, before the pair, so that the
 * error is the key's (OpenSSL's word for an encrypted key, "bad decrypt", says neither which text nor what to do).
 */
function readPrivateKey(privateKey: string): KeyObject {
  if (ENCRYPTED_KEY.test(privateKey))
    throw new TlsMaterialError(
      'privateKey',
      `is encrypted (passphrase-protected); the relay takes it unencrypted (${DECRYPT_KEY_COMMAND} decrypts it)`,
    );
  try {
    return process.getBuiltinModule('node:crypto').createPrivateKey(privateKey);
  } catch (error) {
    throw new TlsMaterialError('privateKey', `is not a private key OpenSSL reads (${reasonOf(error)})`);
  }
}

/** The start of a PEM certificate, as a CA bundle holds them (OpenSSL's `TRUSTED CERTIFICATE` too). */
const CERTIFICATE_BLOCK = /-----BEGIN (?:TRUSTED )?CERTIFICATE-----/;

/**
 * Throws unless `key` is the key of `leaf`, the certificate's first. OpenSSL checks a pair only
 * when both are of one type: an RSA key beside an EC certificate passes it, and the handshake then
 * presents no certificate at all. Returns the leaf's validity.
 */
function checkKeyMatches(leaf: X509Certificate, key: KeyObject): CertificateValidity {
  if (!leaf.checkPrivateKey(key))
    throw new Error(
      `the private key does not match the certificate (an ${key.asymmetricKeyType ?? 'unknown'} key, an ${leaf.publicKey.asymmetricKeyType ?? 'unknown'} certificate)`,
    );
  // OpenSSL's own text ("Jan  1 00:00:00 2030 GMT"), which Date reads; validFromDate is Node.js 22.10's.
  return { notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo) };
}

/** A certificate this close to its `notAfter` is warned about when read. */
export const EXPIRY_WARNING_DAYS = 14;

const DAY_MS = 86_400_000;

/**
 * The WARN to log for a certificate valid from `validity.notBefore` to `validity.notAfter`, read at
 * `now`: expired, not yet valid, or expiring within {@link EXPIRY_WARNING_DAYS}; `undefined` when
 * none applies. It names the dates only, never anything else of the certificate.
 */
export function validityWarning(validity: CertificateValidity, now: number): string | undefined {
  const { notBefore, notAfter } = validity;
  if (now > notAfter.getTime())
    return `The client certificate expired on ${notAfter.toISOString()}; it is still presented, and webhooks that check it refuse it: renew it`;
  if (now < notBefore.getTime())
    return `The client certificate is not valid before ${notBefore.toISOString()}; it is still presented, and webhooks that check it refuse it until then`;
  const daysLeft = Math.ceil((notAfter.getTime() - now) / DAY_MS);
  if (daysLeft <= EXPIRY_WARNING_DAYS)
    return `The client certificate expires on ${notAfter.toISOString()}, in ${daysLeft} day${daysLeft === 1 ? '' : 's'}: renew it`;
  return undefined;
}
