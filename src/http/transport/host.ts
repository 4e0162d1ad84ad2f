/**
 * The Host check of a keyless server, against DNS rebinding: a page of `evil.example` whose name
 * is made to resolve to voxd's address is, to the browser, of its own origin, so it may send
 * anything and read every answer (Origin and CORS cannot tell it apart). Only the Host header does:
 * it carries the name the page used. A name needs a dot to be anyone's in public DNS, so the names
 * no outside page can point at voxd are answered: IP addresses (no DNS at all), names without a dot
 * (`localhost`, a container's or a proxy upstream's name) and the special-use suffixes public DNS
 * never serves (`.localhost`, mDNS `.local`, `.internal`, `.home.arpa`); any other name only when
 * allowed_hosts lists it. The port is not compared: a rebinding page can only reach voxd on voxd's
 * own port, and a forwarded port (a container's published one) changes it legitimately.
 *
 * With API keys there is no check: a rebinding page cannot learn a key (the web UI keeps it under
 * voxd's own origin), so the key check guards, and a proxy's Host needs no listing.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { ServerConfig } from '../../config/types.js';
import { showValue, VoxdError } from '../../errors.js';

/** Suffixes no public DNS name has (RFC 6761, RFC 6762, ICANN's .internal, RFC 8375). */
const PRIVATE_SUFFIXES = ['.localhost', '.local', '.internal', '.home.arpa'];

/** A Host header's (or URL host's) name: lower case, without port, brackets or a final dot. */
export function hostnameOf(host: string): string {
  let name: string;
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    name = end < 0 ? host : host.slice(1, end);
  } else {
    const colon = host.indexOf(':');
    // More than one colon: an IPv6 address sent without brackets, not a port.
    name = colon < 0 || host.indexOf(':', colon + 1) >= 0 ? host : host.slice(0, colon);
  }
  name = name.toLowerCase();
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/**
 * Whether allowed_hosts lists `name` (from hostnameOf): itself, a `.suffix` entry above it, or, when
 * `wildcard`, `*`.
 */
export function listedHost(
  name: string,
  config: Pick<ServerConfig, 'allowed_hosts'>,
  wildcard = true,
): boolean {
  for (const raw of config.allowed_hosts) {
    const entry = hostnameOf(raw);
    if ((wildcard && entry === '*') || entry === name) return true;
    if (entry.startsWith('.') && (name === entry.slice(1) || name.endsWith(entry))) return true;
  }
  return false;
}

/** Whether a keyless server answers a request whose Host header is `host`. */
export function hostAllowed(host: string, config: Pick<ServerConfig, 'allowed_hosts'>): boolean {
  const name = hostnameOf(host);
  // No name at all is no browser's request: browsers always send the name they used.
  if (name === '' || isIP(name) !== 0 || !name.includes('.')) return true;
  if (PRIVATE_SUFFIXES.some((suffix) => name.endsWith(suffix))) return true;
  return listedHost(name, config);
}

/** Throws the 403 for a keyless server's request (or WebSocket upgrade) to a name it does not answer. */
export function checkHost(req: IncomingMessage, config: ServerConfig): void {
  if (config.api_keys.length > 0) return;
  const host = req.headers.host;
  if (host === undefined || hostAllowed(host, config)) return;
  throw new VoxdError(
    'E_HOST_NOT_ALLOWED',
    `Host ${showValue(host)} is not a name this server answers to: without API keys voxd answers IP addresses, names without a dot and .localhost, .local, .internal or .home.arpa names, so that no web page can reach it through a DNS name of its own; if the name is yours, add it with allowed_hosts (--allowed-hosts)`,
  );
}
