/**
 * What keeps a web page of another site from acting on a keyless voxd (probe F8). A page may send
 * a POST without asking first (a CORS "simple" request: `text/plain`, a form, multipart) and cannot
 * read the answer, but the work is done all the same: unloading models, registering them, deleting
 * packages. So on a keyless server a POST is refused when its Origin is another site's (origin.ts),
 * and when its Content-Type is not one its route reads: a JSON route takes `application/json`,
 * which a page cannot send to another origin without a preflight, which voxd does not grant. The
 * second check stands on its own for a browser that sends no Origin. A request without Origin
 * (curl, the SDKs, servers) is no page's; one without Content-Type is read as before, since every
 * browser sends Origin with a POST.
 *
 * `Sec-Fetch-Site` is not read: a browser that sends it sends Origin with every POST too, and it
 * is sent over HTTPS and to localhost only, so it would add no case the Origin check misses.
 * With API keys nothing here applies: a page cannot attach a key to another site's request. */
import type { IncomingMessage } from 'node:http';
import type { ServerConfig } from '../../config/types.js';
import { showValue, VoxdError } from '../../errors.js';
import { foreignOrigin, originAllowed } from './origin.js';
import type { Route } from './route.js';

/** The media types a route reads, as its declaration says: JSON for a body, multipart for form fields. */
function mediaTypesOf(route: Route): string[] {
  const types: string[] = [];
  if (route.body) types.push('application/json');
  if (route.form) types.push('multipart/form-data');
  return types;
}

/** Throws the 403 or 415 for a keyless server's POST that a page of another site could have sent. */
export function checkCrossSite(req: IncomingMessage, route: Route, config: ServerConfig): void {
  if (route.method !== 'POST' || config.api_keys.length > 0) return;
  const origin = req.headers.origin;
  if (origin !== undefined && !originAllowed(origin, req, config))
    throw foreignOrigin(origin, `call POST ${route.path}`);
  const header = req.headers['content-type'];
  // A route that declares neither reads no body, or raw audio (the live routes: chunked, which no
  // page can send over HTTP/1.1).
  const types = mediaTypesOf(route);
  if (header === undefined || types.length === 0) return;
  const media = header.split(';', 1)[0]!.trim().toLowerCase();
  // JSON reaches an upload-only route too: no page sends it unasked, and the route's own 400 says
  // what it takes.
  if (media === 'application/json' || types.includes(media)) return;
  throw new VoxdError(
    'E_UNSUPPORTED_MEDIA_TYPE',
    `Content-Type ${showValue(header)} is not read by POST ${route.path}: send ${types.join(' or ')} (without API keys voxd takes no other, so that no web page can send it a request unasked)`,
  );
}
