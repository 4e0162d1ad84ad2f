/**
 * The audio limits of a request: the server's, the model's max_audio_seconds, the decoder and the
 * caller. Every front end (HTTP, Wyoming, the CLI) reads input audio under these; only where the
 * caller comes from differs (src/http/request/audio-caller.ts for HTTP).
 */
import type { Codec } from '../audio/ffmpeg.js';
import type { AudioLimits } from '../audio/input.js';
import type { SlotOwner } from '../audio/slots.js';
import type { ModelConfig, ServerConfig } from '../config/types.js';

/** Whoever sends a request, as its audio limits see it. */
export interface AudioCaller {
  config: ServerConfig;
  /** ffmpeg, for audio other than WAV; without it only WAV is taken. */
  codec?: Codec;
  /** The request's: aborting it stops the decoding. */
  readonly signal?: AbortSignal;
  /** Who waits for an ffmpeg child (an HTTP caller's API key or address), for their fair share. */
  readonly owner?: SlotOwner;
}

export function audioLimits(caller: AudioCaller, model?: ModelConfig): AudioLimits {
  return {
    maxSeconds: model?.max_audio_seconds ?? caller.config.max_audio_seconds,
    maxBytes: caller.config.max_request_body_bytes,
    codec: caller.codec,
    signal: caller.signal,
    owner: caller.owner,
  };
}
