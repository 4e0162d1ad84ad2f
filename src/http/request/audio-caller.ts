/**
 * An HTTP request as src/api's request builders see it (src/api/audio-limits.ts). Its signal and
 * its owner are read only when a limit is made: most requests carry no audio, and the signal of a
 * request is made on first read (LazyAbort).
 */
import type { AudioCaller } from '../../api/audio-limits.js';
import { callerOf } from '../transport/caller.js';
import type { RouteContext } from '../transport/route.js';

export function audioCaller(ctx: Pick<RouteContext, 'config' | 'codec' | 'signal' | 'req'>): AudioCaller {
  return {
    config: ctx.config,
    codec: ctx.codec,
    get signal() {
      return ctx.signal;
    },
    get owner() {
      return callerOf(ctx.req, ctx.config);
    },
  };
}
