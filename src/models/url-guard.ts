/**
 * What the installer may download from, and how a URL is shown. A download names a host that a
 * client chose, so without a guard voxd fetches from its own loopback routes, the machine's
 * private network or a cloud metadata address for whoever may install. Loopback, link-local,
 * private, shared (CGNAT), multicast and reserved addresses are refused, whether written in the
 * URL or resolved from a name (the check runs in the connection's own lookup, so a name cannot
 * resolve to a public address for the check and a private one for the connection), on every
 * redirect hop, unless `installer_allow_private_hosts`. The origins of the operator's mirrors
 * (VOXD_GITHUB_BASE_URL, VOXD_HF_BASE_URL) are trusted: an operator who points them at a local
 * mirror means it; their redirects to other origins are checked like any URL.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { VoxdError } from '../errors.js';

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::) IPv6 address. */
function embeddedV4(address: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!m) return undefined;
  if (m[1]) return m[1];
  const hi = Number.parseInt(m[2]!, 16);
  const lo = Number.parseInt(m[3]!, 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** Whether an IP address is loopback, link-local, private, shared, multicast or reserved. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedV4(address);
  return v4 !== undefined ? blocked.check(v4, 'ipv4') : blocked.check(address, 'ipv6');
}

/** How a URL appears in messages: no user or password, no query or fragment, at most 160 characters. */
export function showUrl(url: string): string {
  let text: string;
  try {
    const u = new URL(url);
    const query = u.search || u.hash ? '?...' : '';
    text = `${u.protocol}//${u.host}${u.pathname}${query}`;
  } catch {
    text = url.replace(/\/\/[^/@]*@/, '//');
  }
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** The URL without its user and password (what a manifest keeps). */
export function withoutUserinfo(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return url;
  }
}

/** Userinfo of any URL inside a text removed (an error from a lower layer may quote one). */
export const scrubUrls = (text: string) => text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, '$1');

export interface HostPolicy {
  /** Private targets allowed (installer_allow_private_hosts). */
  allowPrivate: boolean;
  /** Origins (`http://host:port`) always allowed: the operator's mirrors. */
  trustedOrigins: readonly string[];
}

export const PUBLIC_ONLY: HostPolicy = { allowPrivate: false, trustedOrigins: [] };

const refused = (url: string, address: string) =>
  new VoxdError(
    'E_DOWNLOAD',
    `download of ${showUrl(url)} refused: ${address} is a loopback, link-local or private address (set installer_allow_private_hosts to allow it)`,
  );

/** Whether the policy lets `url` through without looking at its addresses. */
const exempt = (url: URL, policy: HostPolicy) =>
  policy.allowPrivate || policy.trustedOrigins.includes(url.origin);

/**
 * Throws when `url`'s host is an IP address the policy refuses (a name is checked when it is
 * resolved, by `guardedLookup`).
 */
export function checkUrlHost(url: URL, policy: HostPolicy, original = url.href): void {
  if (exempt(url, policy)) return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && isPrivateAddress(host)) throw refused(original, host);
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** The `lookup` for a request to `url`: dns.lookup, refusing when any address is private. */
export function guardedLookup(url: URL, policy: HostPolicy, original: string) {
  if (exempt(url, policy)) return undefined;
  return (hostname: string, options: LookupOptions, callback: LookupCallback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const bad = addresses.find((a) => isPrivateAddress(a.address));
      if (bad) return callback(refused(original, `${hostname} (${bad.address})`) as never, []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}
