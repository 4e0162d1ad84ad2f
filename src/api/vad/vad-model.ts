/**
 * The server's VAD model, which finds speech for a transcription's `chunking_strategy` and for a
 * realtime session's server VAD: `chunking_vad_model` when that is a registered silero_vad model,
 * else the one silero_vad model registered, if there is exactly one (a config that registers its
 * VAD under another id, `vad` say, should not need the setting too). A request that needs it when
 * there is none gets a 400 naming the field that asked for it.
 */
import type { Audio } from '../../audio/types.js';
import type { ServerConfig } from '../../config/types.js';
import type { EngineRequest } from '../../engines/types.js';
import { invalidField } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';

const FAMILY = 'silero_vad';

export function requireVadModel(
  runtime: Runtime,
  config: Pick<ServerConfig, 'chunking_vad_model'>,
  field: string,
): string {
  const vadId = config.chunking_vad_model;
  const vad = runtime.has(vadId) ? runtime.get(vadId).config : undefined;
  if (vad?.family === FAMILY) return vadId;
  const others = runtime
    .snapshots()
    .map((m) => m.id)
    .filter((id) => runtime.get(id).config.family === FAMILY);
  if (others.length === 1) return others[0]!;
  throw invalidField(
    field,
    `${field}: the server's chunking_vad_model ${JSON.stringify(vadId)} is ${vad ? `a ${vad.family} model, not ${FAMILY}` : 'not registered'}${others.length > 1 ? ` and ${others.length} ${FAMILY} models are (${others.join(', ')}): set chunking_vad_model to one` : `; register a ${FAMILY} model`}, or leave ${field} out`,
  );
}

/**
 * A run of the server's VAD model over `audio`, for the speech in it: the threshold clamped to
 * silero's 0.01..0.99 (OpenAI's range is 0..1), and the shortest silence that splits two spans.
 * The model's default_request_options do not apply: the server uses it as a tool, and these two
 * options are what its callers (the chunker, the speech detector) depend on.
 */
export function vadRequest(audio: Audio, threshold: number, minSilenceMs: number): EngineRequest {
  return {
    task: 'vad',
    audio,
    options: {
      threshold: String(Math.min(0.99, Math.max(0.01, threshold))),
      min_silence_ms: String(minSilenceMs),
    },
  };
}
