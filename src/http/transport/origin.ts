/**
 * Which browser pages may open voxd's WebSockets (realtime sessions, the WebSocket bridge): a
 * browser sends its page's Origin, and with `cors_origins "*"` any page may, otherwise only voxd's
 * own pages (the web UI), whose Origin is the host the upgrade came to. Clients that are not
 * browsers send no Origin. (HTTP requests need no such check: CORS keeps other pages from reading
 * answers, which a WebSocket has no equivalent of.)
 */
import type { IncomingMessage } from 'node:http';
import type { ServerConfig } from '../../config/types.js';
import { VoxdError } from '../../errors.js';

/** Throws the 403 for an upgrade from a page of another origin; `what` is what it would open. */
export function checkOrigin(req: IncomingMessage, config: ServerConfig, what: string): void {
  const origin = req.headers.origin;
  if (origin === undefined || config.cors_origins === '*') return;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  if (host === undefined || host !== req.headers.host)
    throw new VoxdError(
      'E_FORBIDDEN',
      `a page of another origin may not open ${what} (Origin ${JSON.stringify(origin).slice(0, 100)}); start voxd with --cors-origins '*' to allow it`,
    );
}
