/**
 * Mutual TLS: the client certificate the relay presents to the webhook, and the private CA it
 * trusts beside the platform's, for the webhook and for the OAuth token endpoint (which is never
 * presented the certificate: see {@link ClientCertificate.trustContext}). From a Secrets Manager secret (`CLIENT_CERTIFICATE_SECRET_ARN`,
 * JSON `{ "certificate": PEM, "privateKey": PEM, "caCertificate"?: PEM }`) or from files
 * (`CLIENT_CERTIFICATE_FILE` and `CLIENT_KEY_FILE`; `CA_CERTIFICATE_FILE`), each read through
 * {@link CachedSecret}: re-read every `SECRETS_REFRESH_SECONDS`, the last good value kept when a
 * read fails or a new value does not parse. New connections use the current certificate; kept-alive
 * ones keep theirs until they are closed (seconds: see transmitter.ts).
 *
 * It also watches the handshakes: a webhook that refuses the certificate (a TLS alert) or a
 * certificate of the webhook's that is not trusted is one ERROR naming the alert or the reason, when
 * it starts and when it changes, and one INFO when a handshake succeeds again; never one per record.
 * Loaded with the first connection (see connector.ts): a relay without mutual TLS never loads it.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SecureContext, TLSSocket } from 'node:tls';
import { CachedSecret, type CachedSecretOptions } from './secrets';
import {
  type ClientCertificateSettings,
  PRIVATE_CA_HINT,
  parseTlsMaterial,
  secureContextOf,
  type TlsMaterial,
  UNTRUSTED_CERTIFICATE_CODES,
  validityWarning,
} from './tls-material';

/** What a connection came to, for the log: accepted, or why not (a TLS alert's name, a certificate error's code) and the line that says so. */
type HandshakeState =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'refused'; readonly reason: string; readonly message: string; readonly alert?: string };

/**
 * The TLS alert a failed handshake carries, by its RFC 8446 name (`certificate_required`,
 * `unknown_ca`, `bad_certificate`, …), from OpenSSL's error code
 * (`ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED`); `undefined` for any other error.
 */
export function tlsAlertOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return undefined;
  const match = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_([A-Z_]+)$/.exec(code);
  return match === null ? undefined : (match[1] as string).toLowerCase();
}

/** What a {@link ClientCertificate} is built with besides its settings. */
export interface ClientCertificateOptions extends CachedSecretOptions {
  /** Where the handshake ERROR and INFO lines go (and the secret's, see {@link CachedSecret}). */
  readonly logger?: Pick<Logger, 'warn' | 'error' | 'info'>;
  /** How long a value read is used before it is read again (`SECRETS_REFRESH_SECONDS`). */
  readonly refreshSeconds: number;
}

/** The client certificate and extra CA of one webhook, kept fresh; long-lived, one per warm container. */
export class ClientCertificate {
  private readonly parts: readonly CachedSecret<TlsMaterial>[];
  /** The context built last, and the parts' values it was built from (the same objects while unchanged). */
  private built: { readonly from: readonly TlsMaterial[]; readonly context: SecureContext } | undefined;
  /** The same for {@link trustContext}. */
  private builtTrust: { readonly from: readonly TlsMaterial[]; readonly context: SecureContext } | undefined;
  private readonly logger: Pick<Logger, 'warn' | 'error' | 'info'> | undefined;
  /** The last handshake's outcome as logged; `undefined` before the first. */
  private state: HandshakeState | undefined;
  /** Each part's variable, for the validity WARN: where the operator renews the certificate. */
  private readonly origins: readonly string[];
  /** The values whose validity was checked: one WARN per certificate read, not per connection. */
  private readonly checked = new WeakSet<TlsMaterial>();

  constructor(settings: ClientCertificateSettings, options: ClientCertificateOptions) {
    this.logger = options.logger;
    this.parts = settings.sources.map(
      (source) => new CachedSecret(source, 'client certificate', parseTlsMaterial, options.refreshSeconds, options),
    );
    this.origins = settings.sources.map((source) =>
      source.kind === 'secrets-manager' ? 'CLIENT_CERTIFICATE_SECRET_ARN' : 'CLIENT_CERTIFICATE_FILE',
    );
  }

  /** Whether it presents a certificate (rather than only trusting an extra CA). */
  get presentsCertificate(): boolean {
    return this.built?.from.some((material) => material.certificate !== undefined) ?? false;
  }

  /**
   * The TLS context to connect with: at once when every part is fresh in memory, else once read.
   * @throws when a part was never read and cannot be now (the request then fails and is retried)
   */
  secureContext(signal?: AbortSignal): SecureContext | Promise<SecureContext> {
    return this.withMaterials(signal, (materials) => this.contextOf(materials, true));
  }

  /**
   * The TLS context of the OAuth token endpoint: the same trust (the platform's CAs and the private
   * CA), without the client certificate, which is the webhook's alone. As {@link secureContext}.
   */
  trustContext(signal?: AbortSignal): SecureContext | Promise<SecureContext> {
    return this.withMaterials(signal, (materials) => this.contextOf(materials, false));
  }

  /** `build` of the parts' values: at once when every part is fresh in memory, else once read. */
  private withMaterials(
    signal: AbortSignal | undefined,
    build: (materials: readonly TlsMaterial[]) => SecureContext,
  ): SecureContext | Promise<SecureContext> {
    const known = this.parts.map((part) => part.peek());
    if (known.every((material) => material !== undefined)) return build(known as TlsMaterial[]);
    return Promise.all(this.parts.map((part) => part.get(signal))).then(build);
  }

  private contextOf(materials: readonly TlsMaterial[], presenting: boolean): SecureContext {
    const built = presenting ? this.built : this.builtTrust;
    if (built !== undefined && built.from.length === materials.length && built.from.every((material, i) => material === materials[i]))
      return built.context;
    this.checkValidity(materials);
    const merged: { certificate?: string; privateKey?: string; caCertificate?: string } = {};
    const cas: string[] = [];
    for (const material of materials) {
      if (presenting && material.certificate !== undefined) {
        merged.certificate = material.certificate;
        merged.privateKey = material.privateKey;
      }
      if (material.caCertificate !== undefined) cas.push(material.caCertificate);
    }
    if (cas.length > 0) merged.caCertificate = cas.join('\n');
    const context = secureContextOf(merged);
    if (presenting) this.built = { from: materials, context };
    else this.builtTrust = { from: materials, context };
    return context;
  }

  /**
   * One WARN for each certificate newly read (at the first connection, and after a rotation) that
   * has expired, is not valid yet, or expires within days: presented all the same (the webhook
   * decides; a clock may be off), but the operator hears of it before the webhook refuses it.
   */
  private checkValidity(materials: readonly TlsMaterial[]): void {
    materials.forEach((material, i) => {
      if (material.validity === undefined || this.checked.has(material)) return;
      this.checked.add(material);
      const warning = validityWarning(material.validity, Date.now());
      if (warning !== undefined)
        this.logger?.warn(warning, {
          notBefore: material.validity.notBefore.toISOString(),
          notAfter: material.validity.notAfter.toISOString(),
          from: this.origins[i],
        });
    });
  }

  /**
   * Watches one new connection: a refusal is logged once as ERROR when it starts or changes, an
   * answer after one once as INFO. A refusal is a TLS alert from the webhook, its certificate not
   * trusted here, or, when a certificate was presented, the connection closed by the webhook right
   * after the handshake without a byte of answer: TLS 1.3 servers check the client's certificate
   * after the client considers the handshake done, and some (Node.js's) then close without an alert.
   * Acceptance is the first byte of an answer.
   */
  watch(socket: TLSSocket): void {
    let handshaken = false;
    let failed = false;
    const onError = (error: Error): void => {
      failed = true;
      const alert = tlsAlertOf(error);
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (alert !== undefined) {
        const certificate = this.presentsCertificate ? 'the client certificate' : 'the connection (no client certificate is configured)';
        this.observe({
          kind: 'refused',
          reason: `TLS alert ${alert}`,
          alert,
          message: `The webhook refused ${certificate} with the TLS alert ${alert}`,
        });
      } else if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
        this.observe({
          kind: 'refused',
          reason: `certificate not for this host (${code})`,
          message: `The webhook's TLS certificate does not name the webhook's host (${code})`,
        });
      } else if (UNTRUSTED_CERTIFICATE_CODES.has(code)) {
        this.observe({
          kind: 'refused',
          reason: `certificate not trusted (${code})`,
          message: `The webhook's TLS certificate is not trusted (${code}): its CA belongs in ${PRIVATE_CA_HINT}`,
        });
      }
    };
    const onData = (): void => {
      stop();
      this.observe({ kind: 'accepted' });
    };
    const onClose = (): void => {
      stop();
      if (handshaken && !failed && this.presentsCertificate)
        this.observe({
          kind: 'refused',
          reason: 'closed right after the TLS handshake',
          message:
            'The webhook closed the connection right after the TLS handshake, without an answer: it does not seem to accept the client certificate',
        });
    };
    const stop = (): void => {
      socket.removeListener('error', onError);
      socket.removeListener('data', onData);
      socket.removeListener('close', onClose);
    };
    // `on`, not `once`: an error with no listener left would be thrown.
    socket.on('error', onError);
    socket.once('close', onClose);
    // By then node:http reads the socket (its own 'data' listener is on): one more listener takes nothing from it.
    socket.once('secureConnect', () => {
      handshaken = true;
      socket.once('data', onData);
    });
  }

  private observe(next: HandshakeState): void {
    const was = this.state;
    if (next.kind === 'accepted') {
      this.state = next;
      if (was?.kind === 'refused') this.logger?.info('The webhook accepts the TLS connection again', { previously: was.reason });
      return;
    }
    if (was?.kind === 'refused' && was.reason === next.reason) return;
    this.state = next;
    const presented = this.presentsCertificate;
    this.logger?.error(`${next.message}; records are retried`, {
      reason: next.reason,
      ...(next.alert === undefined ? {} : { tlsAlert: next.alert }),
      clientCertificate: presented ? 'presented' : 'none',
    });
  }
}
