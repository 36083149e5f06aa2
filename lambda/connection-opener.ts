/**
 * How the relay opens a connection through a forward proxy (proxy.ts) and with a client
 * certificate (client-certificate.ts): the part of connector.ts loaded with the first connection,
 * so that a relay with neither never loads it.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SecureContext, TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import { ClientCertificate } from './client-certificate';
import type { RelayConfig } from './config';
import type { ConnectionOptions, Connector } from './connector';
import { openTunnel, type ProxySettings, proxyFor } from './proxy';
import { type ClientCertificateSettings, PRIVATE_CA_HINT } from './tls-material';

/** What {@link connectorFor} builds a connector from. */
export interface ConnectorSettings {
  /** The one origin the agent connects to: the webhook, or the token endpoint. */
  readonly target: URL;
  readonly proxy: ProxySettings | undefined;
  /** The client certificate and extra CA, for `https://` targets. */
  readonly clientCertificate: ClientCertificate | undefined;
  /**
   * Only trust its CAs, never present the certificate nor watch the handshakes (those are the
   * webhook's): the OAuth token endpoint's way.
   */
  readonly trustOnly?: boolean;
  /** Bound on reaching the proxy and its answer to a CONNECT, ms (the request's own timeout bounds the rest). */
  readonly tunnelTimeoutMs: number;
}

/**
 * The connector for `target`, or `undefined` when a direct connection with the platform's trust
 * will do (no proxy for it, no certificate): node:http's agents as they are.
 */
export function connectorFor(settings: ConnectorSettings): Connector | undefined {
  const proxy = proxyFor(settings.proxy, settings.target);
  const tls = settings.target.protocol === 'https:' ? settings.clientCertificate : undefined;
  if (proxy === undefined && tls === undefined) return undefined;
  const { tunnelTimeoutMs, trustOnly = false } = settings;
  return {
    open(options, direct, done) {
      const overTls = (socket: Duplex | undefined): void => {
        if (tls === undefined) {
          done(null, socket === undefined ? direct(options) : direct({ ...options, socket } as ConnectionOptions));
          return;
        }
        const connect = (context: SecureContext): void => {
          // No TLS session resumed: a resumed session would keep the identity of a certificate since rotated.
          const withTls = { ...options, secureContext: context, session: undefined, ...(socket === undefined ? {} : { socket }) };
          const tlsSocket = direct(withTls as ConnectionOptions) as TLSSocket;
          if (!trustOnly) tls.watch(tlsSocket);
          done(null, tlsSocket);
        };
        let context: ReturnType<ClientCertificate['secureContext']>;
        try {
          context = trustOnly ? tls.trustContext() : tls.secureContext();
        } catch (error) {
          socket?.destroy();
          done(certificateUnavailable(error, trustOnly));
          return;
        }
        if (!(context instanceof Promise)) {
          connect(context);
          return;
        }
        context.then(connect, (error: unknown) => {
          socket?.destroy();
          done(certificateUnavailable(error, trustOnly));
        });
      };
      if (proxy === undefined) {
        overTls(undefined);
        return;
      }
      const host = options.host ?? options.hostname ?? 'localhost';
      const port = Number(options.port ?? (settings.target.protocol === 'https:' ? 443 : 80));
      openTunnel(proxy, host, port, tunnelTimeoutMs, (error, tunnel) => {
        if (error !== null || tunnel === undefined) done(error ?? new Error('no tunnel'));
        // Plain http inside the tunnel is the target's own protocol: the socket as it is.
        else if (settings.target.protocol === 'https:') overTls(tunnel);
        else done(null, tunnel);
      });
    },
  };
}

/** A client certificate that could not be read: the request fails before it is sent, and the record is retried. */
export class ClientCertificateUnavailableError extends Error {
  /** Node.js-style code, so that the transmitter classes it as the relay's own problem, not the webhook's. */
  readonly code = 'ERR_CLIENT_CERTIFICATE_UNAVAILABLE';

  /** @param what what could not be read: the client certificate, or (for the token endpoint) its source's CA */
  constructor(reason: string, what = 'the client certificate') {
    super(`${what} is not available: ${reason}`);
    this.name = 'ClientCertificateUnavailableError';
  }
}

function certificateUnavailable(error: unknown, trustOnly: boolean): ClientCertificateUnavailableError {
  return new ClientCertificateUnavailableError(
    error instanceof Error ? error.message : String(error),
    trustOnly ? `the private CA to trust (${PRIVATE_CA_HINT})` : undefined,
  );
}

/**
 * One {@link ClientCertificate} per configuration, shared by the webhook's connector and the token
 * endpoint's: the certificate's secret or files are read once for both, and warned about once.
 */
const certificates = new WeakMap<ClientCertificateSettings, ClientCertificate>();

function certificateOf(
  config: Pick<RelayConfig, 'clientCertificate' | 'secretsRefreshSeconds'>,
  logger: Pick<Logger, 'warn' | 'error' | 'info'>,
): ClientCertificate | undefined {
  const settings = config.clientCertificate;
  if (settings === undefined) return undefined;
  const certificate =
    certificates.get(settings) ?? new ClientCertificate(settings, { logger, refreshSeconds: config.secretsRefreshSeconds });
  certificates.set(settings, certificate);
  return certificate;
}

/**
 * The connector of `config`'s webhook: its proxy and its client certificate, or `undefined` when
 * neither applies to it.
 * @param logger where the certificate's read failures and the handshakes' refusals are logged
 */
export function webhookOpener(
  config: Pick<RelayConfig, 'proxy' | 'clientCertificate' | 'secretsRefreshSeconds' | 'requestTimeoutMs'> & { readonly webhookUrl: URL },
  logger: Pick<Logger, 'warn' | 'error' | 'info'>,
): Connector | undefined {
  return connectorFor({
    target: config.webhookUrl,
    proxy: config.proxy,
    clientCertificate: certificateOf(config, logger),
    tunnelTimeoutMs: config.requestTimeoutMs,
  });
}

/**
 * The connector of the OAuth token endpoint: its proxy, and the webhook's trust (the private CA of
 * `CA_CERTIFICATE_FILE` or the secret's `caCertificate`), never the client certificate itself.
 * `undefined` when neither applies to it.
 */
export function tokenEndpointOpener(
  config: Pick<RelayConfig, 'proxy' | 'clientCertificate' | 'secretsRefreshSeconds' | 'requestTimeoutMs'>,
  tokenUrl: URL,
  logger: Pick<Logger, 'warn' | 'error' | 'info'>,
): Connector | undefined {
  return connectorFor({
    target: tokenUrl,
    proxy: config.proxy,
    clientCertificate: certificateOf(config, logger),
    trustOnly: true,
    tunnelTimeoutMs: config.requestTimeoutMs,
  });
}
