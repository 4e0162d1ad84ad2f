/** The audio limits of a request: the server's, the model's max_audio_seconds, its decoder and its caller. */
import type { IncomingMessage } from 'node:http';
import type { Codec } from '../../audio/ffmpeg.js';
import type { AudioLimits } from '../../audio/input.js';
import type { ModelConfig, ServerConfig } from '../../config/types.js';
import { callerOf } from '../transport/caller.js';

export function audioLimits(
  ctx: { config: ServerConfig; codec?: Codec; signal?: AbortSignal; req?: IncomingMessage },
  model?: ModelConfig,
): AudioLimits {
  return {
    maxSeconds: model?.max_audio_seconds ?? ctx.config.max_audio_seconds,
    maxBytes: ctx.config.max_request_body_bytes,
    codec: ctx.codec,
    signal: ctx.signal,
    owner: ctx.req ? callerOf(ctx.req, ctx.config) : undefined,
  };
}
