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

/** What {@link connectorFor} builds a connector from. */
export interface ConnectorSettings {
  /** The one origin the agent connects to: the webhook, or the token endpoint. */
  readonly target: URL;
  readonly proxy: ProxySettings | undefined;
  /** The client certificate and extra CA, for `https://` targets. */
  readonly clientCertificate: ClientCertificate | undefined;
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
  const { tunnelTimeoutMs } = settings;
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
          tls.watch(tlsSocket);
          done(null, tlsSocket);
        };
        let context: ReturnType<ClientCertificate['secureContext']>;
        try {
          context = tls.secureContext();
        } catch (error) {
          socket?.destroy();
          done(certificateUnavailable(error));
          return;
        }
        if (!(context instanceof Promise)) {
          connect(context);
          return;
        }
        context.then(connect, (error: unknown) => {
          socket?.destroy();
          done(certificateUnavailable(error));
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

  constructor(reason: string) {
    super(`the client certificate is not available: ${reason}`);
    this.name = 'ClientCertificateUnavailableError';
  }
}

function certificateUnavailable(error: unknown): ClientCertificateUnavailableError {
  return new ClientCertificateUnavailableError(error instanceof Error ? error.message : String(error));
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
  const settings = config.clientCertificate;
  return connectorFor({
    target: config.webhookUrl,
    proxy: config.proxy,
    clientCertificate:
      settings === undefined ? undefined : new ClientCertificate(settings, { logger, refreshSeconds: config.secretsRefreshSeconds }),
    tunnelTimeoutMs: config.requestTimeoutMs,
  });
}
