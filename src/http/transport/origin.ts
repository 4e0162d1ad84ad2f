/**
 * Which browser pages may act on voxd: a browser sends its page's Origin with every WebSocket
 * upgrade and every POST. With `cors_origins "*"` any page may; otherwise voxd's own pages (the web
 * UI, whose Origin is the host the request came to) and pages served under an allowed_hosts name
 * (the public name of a proxy that rewrites Host). Clients that are not browsers send no Origin.
 * A WebSocket needs the check whatever the keys (a page may read its messages); plain HTTP needs it
 * on a keyless server only (cross-site.ts), where nothing else stops a page's POST from acting.
 */
import type { IncomingMessage } from 'node:http';
import type { ServerConfig } from '../../config/types.js';
import { showValue, VoxdError } from '../../errors.js';
import { checkHost, hostnameOf, listedHost } from './host.js';

/** Whether a page of `origin` may act on voxd through `req`. */
export function originAllowed(origin: string, req: IncomingMessage, config: ServerConfig): boolean {
  if (config.cors_origins === '*') return true;
  let host: string;
  try {
    // `null` (a sandboxed frame, a file) has no host and fails here: no page that voxd serves.
    host = new URL(origin).host;
  } catch {
    return false;
  }
  if (host === '') return false;
  if (host === req.headers.host?.toLowerCase()) return true;
  // `*` turns the Host check off; it names no page, so it lets none in (that is cors_origins "*").
  return listedHost(hostnameOf(host), config, false);
}

/** The 403 for a page of another origin; `what` is what it would open or call. */
export function foreignOrigin(origin: string, what: string): VoxdError {
  return new VoxdError(
    'E_ORIGIN_NOT_ALLOWED',
    `a page of another origin may not ${what} (Origin ${showValue(origin)}); voxd takes pages of its own origin and of allowed_hosts names: add the page's name with --allowed-hosts, or start voxd with --cors-origins '*' to allow every page`,
  );
}

/**
 * Throws the 403 for a WebSocket upgrade to a name a keyless server does not answer (host.ts), or
 * from a page of another origin; `what` is what it would open.
 */
export function checkOrigin(req: IncomingMessage, config: ServerConfig, what: string): void {
  checkHost(req, config);
  const origin = req.headers.origin;
  if (origin === undefined || originAllowed(origin, req, config)) return;
  throw foreignOrigin(origin, `open ${what}`);
}
