/**
 * How the relay's HTTP agents open a connection when a direct one with the platform's trust is not
 * enough: through a forward proxy's CONNECT tunnel (proxy.ts), presenting a client certificate and
 * trusting an extra CA (client-certificate.ts). Only new connections pass here: a request on a
 * kept-alive connection costs nothing more, and with neither configured there is no connector at
 * all (the agents are node:http's own). The implementation (connection-opener.ts) loads with the
 * first connection: a relay with neither configured never loads it, nor the cold start pays for it.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Agent as HttpAgent, ClientRequestArgs } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RelayConfig } from './config';

/** The options node:http's agent opens a connection with (host, port, servername, …). */
export type ConnectionOptions = ClientRequestArgs & { servername?: string };

/** Opens connections for an agent (see {@link connectingAgent}). */
export interface Connector {
  /**
   * Opens one connection and calls `done` with it, or with why not.
   * @param direct the agent's own way: a TCP connection, or TLS for node:https (over `options.socket` when given)
   */
  open(
    options: ConnectionOptions,
    direct: (options: ConnectionOptions) => Duplex,
    done: (error: Error | null, socket?: Duplex) => void,
  ): void;
}

/**
 * `Base` (node:http's or node:https's `Agent`, or a subclass) whose new connections `connector` opens,
 * through `createConnection`'s callback form, which node:http's agent documents for sockets made asynchronously.
 */
// biome-ignore lint/suspicious/noExplicitAny: a mixin's base constructor must take any arguments (TypeScript's rule for mixins)
export function connectingAgent<A extends new (...args: any[]) => HttpAgent>(Base: A, connector: Connector): A {
  return class extends Base {
    override createConnection(options: ConnectionOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | undefined {
      connector.open(
        options,
        (direct) => super.createConnection(direct) as Duplex,
        (error, socket) => callback?.(error, socket as Duplex),
      );
      return undefined;
    }
  };
}

/** A connector whose implementation `load` brings on the first connection it opens. */
function lazyConnector(load: () => Promise<Connector | undefined>): Connector {
  let loaded: Promise<Connector | undefined> | undefined;
  return {
    open(options, direct, done) {
      loaded ??= load();
      loaded.then(
        (connector) => {
          if (connector !== undefined) {
            connector.open(options, direct, done);
            return;
          }
          // Neither the proxy (NO_PROXY, a loopback host) nor a certificate applies: the agent's own way.
          let socket: Duplex;
          try {
            socket = direct(options);
          } catch (error) {
            done(error as Error);
            return;
          }
          done(null, socket);
        },
        (error: unknown) => done(error instanceof Error ? error : new Error(String(error))),
      );
    },
  };
}

/**
 * The connector of `config`'s webhook (its proxy, its client certificate), or `undefined` when it
 * has neither: the transmitter then uses node:http's agents as they are.
 * @param logger where the certificate's read failures and the handshakes' refusals are logged
 */
export function webhookConnector(
  config: Pick<RelayConfig, 'proxy' | 'clientCertificate' | 'secretsRefreshSeconds' | 'requestTimeoutMs'> & { readonly webhookUrl: URL },
  logger: Pick<Logger, 'warn' | 'error' | 'info'>,
): Connector | undefined {
  if (config.proxy === undefined && config.clientCertificate === undefined) return undefined;
  return lazyConnector(() => import('./connection-opener').then((opener) => opener.webhookOpener(config, logger)));
}

/**
 * The connector of the OAuth token endpoint, or `undefined` when a direct connection with the
 * platform's trust will do: its proxy, and for an `https://` endpoint the private CA the operator
 * trusts for the webhook (an endpoint behind the same CA is common); never the client certificate.
 * @param logger where the certificate's read failures are logged (the webhook's connector shares them)
 */
export function tokenEndpointConnector(
  config: Pick<RelayConfig, 'proxy' | 'clientCertificate' | 'secretsRefreshSeconds' | 'requestTimeoutMs'>,
  tokenUrl: URL,
  logger: Pick<Logger, 'warn' | 'error' | 'info'>,
): Connector | undefined {
  const trusts = config.clientCertificate !== undefined && tokenUrl.protocol === 'https:';
  if (config.proxy === undefined && !trusts) return undefined;
  return lazyConnector(() => import('./connection-opener').then((opener) => opener.tokenEndpointOpener(config, tokenUrl, logger)));
}
