/**
 * The API-key check, made once per request by the server after routing and before the handler.
 * Without keys it does nothing (voxd answers as audio.cpp does). With keys, every path but the open
 * ones needs a key, unknown paths included, so that nothing, not even which routes exist, is learnt
 * without one: a 404 or 405 is only told to a caller with a valid key.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { type ApiKey, type ApiScope, keyDigest, OPENABLE_PATHS } from '../../config/api-keys.js';
import type { ServerConfig } from '../../config/types.js';
import { VoxdError } from '../../errors.js';
import type { Route } from './route.js';

/** An EventSource cannot send headers, so this route also takes the key as `?api_key=`. */
export const STATUS_STREAM_PATH = '/v1/ui/status/stream';

/**
 * Nor can a browser's WebSocket: the realtime route takes `?api_key=` too (as speaches does), and
 * the subprotocol `openai-insecure-api-key.<key>` that OpenAI's browser clients offer.
 */
export const REALTIME_PATH = '/v1/realtime';
const KEY_PROTOCOL = 'openai-insecure-api-key.';

/**
 * Deepgram's WebSocket paths (src/http/deepgram/): a browser's Deepgram client offers the
 * subprotocols `token` and the key, as two entries.
 */
export const DEEPGRAM_LISTEN_PATH = '/v1/listen';
export const DEEPGRAM_SPEAK_PATH = '/v1/speak';
const DEEPGRAM_PATHS: readonly string[] = [DEEPGRAM_LISTEN_PATH, DEEPGRAM_SPEAK_PATH];

/** The key a Deepgram upgrade offers as the subprotocol after `token`, if any. */
function deepgramProtocolKey(req: IncomingMessage): string | undefined {
  const offered = req.headers['sec-websocket-protocol'];
  if (typeof offered !== 'string') return undefined;
  const protocols = offered.split(',').map((p) => p.trim());
  const at = protocols.indexOf('token');
  return at >= 0 ? protocols[at + 1] || undefined : undefined;
}

/**
 * OpenAI's prefix of an ephemeral key (minted by /v1/realtime/client_secrets, src/http/realtime/
 * client-secrets.ts): the check below tells one from an API key by it.
 */
export const EPHEMERAL_PREFIX = 'ek_';

/** The key a WebSocket upgrade offers among its subprotocols, if any. */
function protocolKey(req: IncomingMessage): string | undefined {
  const offered = req.headers['sec-websocket-protocol'];
  if (typeof offered !== 'string') return undefined;
  const key = offered
    .split(',')
    .map((p) => p.trim())
    .find((p) => p.startsWith(KEY_PROTOCOL));
  return key ? key.slice(KEY_PROTOCOL.length) || undefined : undefined;
}

/** `Bearer` is what the OpenAI SDKs send; `Token` what Deepgram's clients send. */
const BEARER = /^(?:Bearer|Token)[ \t]+(\S+)[ \t]*$/i;

/** The scope a request needs: `open` takes no key. `route` is undefined for a 404 or 405. */
function requiredScope(route: Route | undefined, path: string, config: ServerConfig): 'open' | ApiScope {
  if (config.open_endpoints.includes(path)) return 'open';
  if (route === undefined) return 'inference';
  if (route.scope === 'open')
    return (OPENABLE_PATHS as readonly string[]).includes(path) ? 'inference' : 'open';
  return route.scope;
}

/**
 * The caller's key: `Authorization: Bearer <key>` (what the OpenAI SDKs send) or `Token <key>`
 * (Deepgram's), else `X-Api-Key`, else, on the status stream, the realtime route and a WebSocket
 * bridge upgrade (`bridge`) only, the `api_key` query parameter (and on the realtime route first
 * the key subprotocol); on Deepgram's paths, the subprotocol after `token`.
 */
export function presentedKey(
  req: IncomingMessage,
  route: Route | undefined,
  queryKey: () => string | null,
  bridge = false,
): string | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = BEARER.exec(header);
    if (!match)
      throw new VoxdError(
        'E_INVALID_API_KEY',
        'the Authorization header must be "Bearer <key>" or "Token <key>"',
      );
    return match[1];
  }
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey !== '') return apiKey;
  if (route?.path === REALTIME_PATH) return protocolKey(req) ?? (queryKey() || undefined);
  if (route !== undefined && DEEPGRAM_PATHS.includes(route.path)) return deepgramProtocolKey(req);
  if (route?.path === STATUS_STREAM_PATH || bridge) return queryKey() || undefined;
  return undefined;
}

/**
 * The widest scope of the keys that match. Every stored digest is compared, in constant time and
 * without stopping at a match, so neither the key's length nor its place in the list shows in timing.
 */
function scopeOf(key: string, keys: readonly ApiKey[]): ApiScope | undefined {
  const digest = keyDigest(key);
  let scope: ApiScope | undefined;
  for (const stored of keys) {
    if (timingSafeEqual(stored.digest, digest) && scope !== 'admin') scope = stored.scope;
  }
  return scope;
}

/** The 401 of an ephemeral key anywhere but the realtime upgrade, which is all it is good for. */
function ephemeralElsewhere(path: string): VoxdError {
  return new VoxdError(
    'E_INVALID_API_KEY',
    `an ephemeral key (${EPHEMERAL_PREFIX}...) opens only a ${REALTIME_PATH} WebSocket session; ${path} needs an API key`,
  );
}

/** Whether the request's headers carry an ephemeral key (a keyless server reads no other key). */
function headerEphemeral(req: IncomingMessage): boolean {
  const header = req.headers.authorization;
  if (header !== undefined) return BEARER.exec(header)?.[1]?.startsWith(EPHEMERAL_PREFIX) ?? false;
  const apiKey = req.headers['x-api-key'];
  return typeof apiKey === 'string' && apiKey.startsWith(EPHEMERAL_PREFIX);
}

/**
 * Throws the 401 or 403 for a request that may not reach `route` (undefined: no such route).
 * `bridge`: the request is a WebSocket bridge's upgrade, which may give its key as `?api_key=`.
 */
export function authorize(
  req: IncomingMessage,
  path: string,
  route: Route | undefined,
  config: ServerConfig,
  queryKey: () => string | null,
  bridge = false,
): void {
  if (config.api_keys.length === 0) {
    // Refused here as with keys, so an app that works against a keyless server works with keys.
    if (headerEphemeral(req)) throw ephemeralElsewhere(path);
    return;
  }
  const needed = requiredScope(route, path, config);
  if (needed === 'open') return;
  const key = presentedKey(req, route, queryKey, bridge);
  if (key === undefined) {
    const how = DEEPGRAM_PATHS.includes(path)
      ? '"Authorization: Token <key>" (or Bearer), or from a browser the subprotocols "token" and the key'
      : '"Authorization: Bearer <key>"';
    throw new VoxdError('E_MISSING_API_KEY', `${path} needs an API key; send ${how}`);
  }
  // The key is never part of a message: a mistyped key is still close to a real one.
  const scope = scopeOf(key, config.api_keys);
  if (scope === undefined) {
    if (key.startsWith(EPHEMERAL_PREFIX)) throw ephemeralElsewhere(path);
    throw new VoxdError('E_INVALID_API_KEY', 'the API key is not valid');
  }
  if (needed === 'admin' && scope !== 'admin') {
    throw new VoxdError(
      'E_INSUFFICIENT_SCOPE',
      `${route?.method} ${path} needs an API key with the admin scope; this key's scope is ${scope}`,
    );
  }
}

/**
 * The key check of a realtime upgrade: a live ephemeral key (`live` finds what it was minted with)
 * is let in, keys or not, and what it was minted with returned; an ephemeral key that is not live
 * is a 401 even on a keyless server (the session it was minted for cannot be had, and the app
 * should mint another). Any other key, or none, is checked as on every route.
 */
export function authorizeRealtime<Minted>(
  req: IncomingMessage,
  path: string,
  route: Route,
  config: ServerConfig,
  queryKey: () => string | null,
  live: (key: string) => Minted | undefined,
): Minted | undefined {
  let key: string | undefined;
  try {
    key = presentedKey(req, route, queryKey);
  } catch (err) {
    // A keyless server takes any Authorization header, as it always has.
    if (config.api_keys.length > 0) throw err;
  }
  if (key?.startsWith(EPHEMERAL_PREFIX)) {
    const session = live(key);
    if (session) return session;
    // An API key may begin with the same three letters.
    if (config.api_keys.length === 0 || scopeOf(key, config.api_keys) === undefined)
      throw new VoxdError(
        'E_INVALID_API_KEY',
        `the ephemeral key has expired or was not minted by this server; mint another with POST /v1/realtime/client_secrets`,
      );
  }
  authorize(req, path, route, config, queryKey);
  return undefined;
}
