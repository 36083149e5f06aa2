/**
 * A forward proxy for the relay's own requests (the webhook's and the OAuth token endpoint's), as
 * corporate networks require: `HTTPS_PROXY` for `https://` targets, `HTTP_PROXY` for `http://`
 * ones, `NO_PROXY` for the hosts reached directly. Every request through a proxy goes through an
 * HTTP CONNECT tunnel (RFC 9110 §9.3.6), `https://` ones with TLS end to end inside it: the proxy
 * sees only the host and port. Credentials in the proxy's URL become `Proxy-Authorization: Basic`
 * on the CONNECT and are never part of a message: errors name the proxy by host and port only.
 * A loopback target is always reached directly.
 *
 * The AWS SDK's calls (SQS, Secrets Manager) do not go through it: in a VPC they take the NAT or
 * VPC endpoints, locally the SDK's own configuration.
 */
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import type { Socket } from 'node:net';
import { isLoopbackHost } from './url-rules';

/** The proxies of `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` (see lambda/config.ts). */
export interface ProxySettings {
  /** For `https://` targets. */
  readonly httpsProxy: URL | undefined;
  /** For `http://` targets. */
  readonly httpProxy: URL | undefined;
  /** `NO_PROXY`'s entries, lower-cased: hosts, domains, IP addresses and CIDR ranges reached directly; `*` for all. */
  readonly noProxy: readonly string[];
}

/** A proxy that could not open a tunnel: the message names it by host and port, never its credentials. */
export class ProxyTunnelError extends Error {
  constructor(
    message: string,
    /** The CONNECT's status, when the proxy answered one. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProxyTunnelError';
  }
}

/** `host:port` of a URL (the port made explicit), as a proxy is named in messages: never its user or password. */
export function proxyName(proxy: URL): string {
  return `${proxy.hostname}:${portOf(proxy)}`;
}

function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** The hostname without an IPv6 literal's brackets, lower-cased. */
function bareHost(hostname: string): string {
  return (hostname.startsWith('[') ? hostname.slice(1, -1) : hostname).toLowerCase();
}

/** `name` without one trailing dot: `example.com.` is `example.com`, named from the DNS root. */
function withoutRootDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** A CIDR range of `NO_PROXY`: its first address, prefix length and family. */
interface CidrRange {
  readonly base: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

/**
 * `entry` read as a CIDR range (`10.0.0.0/8`, `fd00::/8`, `[fd00::]/8`); `undefined` when it is none. An entry with a slash
 * can be nothing else (no host name has one), so lambda/config.ts refuses it at start rather than let it cover no host.
 */
export function cidrRange(entry: string): CidrRange | undefined {
  const slash = entry.indexOf('/');
  if (slash <= 0) return undefined;
  const net = process.getBuiltinModule('node:net');
  const base = bareHost(entry.slice(0, slash));
  const digits = entry.slice(slash + 1);
  const version = net.isIP(base);
  const prefix = Number(digits);
  if (version === 0 || !/^\d{1,3}$/.test(digits) || prefix > (version === 4 ? 32 : 128)) return undefined;
  return { base, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** True when `entry` (one of `NO_PROXY`'s) covers `host` (bare, lower-cased, no trailing dot) on `port`. */
function covers(entry: string, host: string, port: number): boolean {
  if (entry === '*') return true;
  const net = process.getBuiltinModule('node:net');
  if (entry.includes('/')) {
    const range = cidrRange(entry);
    const family = net.isIP(host);
    if (range === undefined || family !== (range.family === 'ipv4' ? 4 : 6)) return false;
    const list = new net.BlockList();
    list.addSubnet(range.base, range.prefix, range.family);
    return list.check(host, range.family);
  }
  // An optional port: host:443, [::1]:8443 (a bare IPv6 address has colons but no port).
  let name = entry;
  let entryPort: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed !== null) {
    name = bracketed[1] as string;
    entryPort = bracketed[2] === undefined ? undefined : Number(bracketed[2]);
  } else if (net.isIP(entry) === 0) {
    const colon = entry.lastIndexOf(':');
    if (colon > 0 && /^\d+$/.test(entry.slice(colon + 1))) {
      name = entry.slice(0, colon);
      entryPort = Number(entry.slice(colon + 1));
    }
  }
  if (entryPort !== undefined && entryPort !== port) return false;
  if (net.isIP(name) !== 0) return name === host;
  // A domain: example.com, .example.com and *.example.com all cover example.com and its subdomains;
  // `example.com.` (the root's dot, a fully qualified name) is the same name, on either side.
  const domain = withoutRootDot(name.replace(/^\*?\./, ''));
  return host === domain || host.endsWith(`.${domain}`);
}

/**
 * The proxy a request to `target` goes through, or `undefined` to connect directly: none is set
 * for its scheme, `NO_PROXY` covers its host, or the host is this machine (as Go's net/http
 * decides: a proxy elsewhere cannot reach it, and `npm start`'s demo webhook must not go out).
 */
export function proxyFor(settings: ProxySettings | undefined, target: URL): URL | undefined {
  if (settings === undefined || isLoopbackHost(target.hostname)) return undefined;
  const proxy = target.protocol === 'https:' ? settings.httpsProxy : settings.httpProxy;
  if (proxy === undefined) return undefined;
  const host = withoutRootDot(bareHost(target.hostname));
  const port = portOf(target);
  return settings.noProxy.some((entry) => covers(entry, host, port)) ? undefined : proxy;
}

/** The `Proxy-Authorization` value for a proxy URL's `user:password`, if it has one. */
function proxyAuthorization(proxy: URL): string | undefined {
  if (proxy.username === '' && proxy.password === '') return undefined;
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`;
}

/** The CONNECT request for a tunnel to `authority` (`host:port`) through `proxy`, with its `Proxy-Authorization` if any. */
function connectOptions(proxy: URL, authority: string, authorization: string | undefined): RequestOptions {
  return {
    protocol: proxy.protocol,
    hostname: bareHost(proxy.hostname),
    port: portOf(proxy),
    method: 'CONNECT',
    path: authority,
    // One connection per tunnel: a CONNECT's socket is the tunnel, never pooled.
    agent: false,
    headers: authorization === undefined ? { Host: authority } : { Host: authority, 'Proxy-Authorization': authorization },
  };
}

/** The error for a proxy's answer to the CONNECT that is not a 2xx (its socket then destroyed); `undefined` for a 2xx. */
function refusalOf(response: IncomingMessage, socket: Socket, name: string, authority: string): ProxyTunnelError | undefined {
  const status = response.statusCode ?? 0;
  if (status >= 200 && status <= 299) return undefined;
  socket.destroy();
  const why = status === 407 ? ' (proxy authentication required: check the user and password in its URL)' : '';
  return new ProxyTunnelError(`the proxy ${name} answered ${status} to CONNECT ${authority}${why}`, status);
}

/**
 * Opens an HTTP CONNECT tunnel through `proxy` to `host:port` and calls back with its socket, on
 * which the caller speaks to the target (TLS for an `https://` one) as on a direct connection.
 * Never calls back twice; an error's message names the proxy by host and port only.
 * @param host the target's hostname (an IPv6 literal with or without brackets)
 * @param timeoutMs bound on reaching the proxy and its answer to the CONNECT
 */
export function openTunnel(
  proxy: URL,
  host: string,
  port: number,
  timeoutMs: number,
  callback: (error: Error | null, socket?: Socket) => void,
): void {
  const bare = bareHost(host);
  const authority = bare.includes(':') ? `[${bare}]:${port}` : `${bare}:${port}`;
  const name = proxyName(proxy);
  const authorization = proxyAuthorization(proxy);
  const client = process.getBuiltinModule(proxy.protocol === 'https:' ? 'node:https' : 'node:http');
  let done = false;
  const finish = (error: Error | null, socket?: Socket): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    callback(error, socket);
  };
  let request: ClientRequest;
  try {
    request = client.request(connectOptions(proxy, authority, authorization));
  } catch (error) {
    finish(new ProxyTunnelError(`could not reach the proxy ${name}: ${error instanceof Error ? error.message : String(error)}`));
    return;
  }
  const timer = setTimeout(() => {
    request.destroy(new ProxyTunnelError(`no answer from the proxy ${name} to CONNECT ${authority} within ${timeoutMs} ms`));
  }, timeoutMs);
  request.once('connect', (response: IncomingMessage, socket: Socket, head: Buffer) => {
    const refused = refusalOf(response, socket, name, authority);
    if (refused !== undefined) {
      finish(refused);
      return;
    }
    // Bytes the target sent with the proxy's answer belong to the tunnel.
    if (head.length > 0) socket.unshift(head);
    finish(null, socket);
  });
  request.once('error', (error: Error) => {
    finish(
      error instanceof ProxyTunnelError
        ? error
        : new ProxyTunnelError(
            `could not reach the proxy ${name}: ${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`.replace(/ {2,}/g, ' '),
          ),
    );
  });
  // A proxy that answers the CONNECT with a body and closes, or with nothing at all.
  request.once('response', (response: IncomingMessage) => {
    response.destroy();
    finish(new ProxyTunnelError(`the proxy ${name} answered ${response.statusCode ?? 0} to CONNECT ${authority}`, response.statusCode));
  });
  request.end();
}
