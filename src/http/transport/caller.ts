/**
 * Who a request is for the fair share of shared resources (the ffmpeg children): its API key when
 * the server has keys (the request was authorized with it by then), else its client address. The
 * key is kept only as its digest, shortened: enough to tell callers apart, never the key itself.
 */
import type { IncomingMessage } from 'node:http';
import type { Codec } from '../../audio/ffmpeg.js';
import { keyDigest } from '../../config/api-keys.js';
import type { ServerConfig } from '../../config/types.js';
import { presentedKey } from './auth.js';
import type { RouteContext } from './route.js';

export function callerOf(req: IncomingMessage, config: Pick<ServerConfig, 'api_keys'>): string {
  if (config.api_keys.length > 0) {
    let key: string | undefined;
    try {
      key = presentedKey(req, undefined, () => null);
    } catch {
      // A malformed header was refused before any handler ran; only the address is left.
    }
    if (key !== undefined) return `key:${keyDigest(key).toString('hex').slice(0, 16)}`;
  }
  return `address:${req.socket?.remoteAddress ?? 'unknown'}`;
}

/** The server's ffmpeg, its children taken for this request's caller. */
export function ownedCodec(ctx: Pick<RouteContext, 'codec' | 'req' | 'config'>): Codec {
  return ctx.codec.forOwner(callerOf(ctx.req, ctx.config));
}
