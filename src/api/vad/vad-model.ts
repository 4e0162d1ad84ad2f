/**
 * The server's VAD model (`chunking_vad_model`), which finds speech for a transcription's
 * `chunking_strategy` and for a realtime session's server VAD. It must be a registered silero_vad
 * model; a request that needs it when it is not gets a 400 naming the field that asked for it.
 */
import type { ServerConfig } from '../../config/types.js';
import { invalidField } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';

export function requireVadModel(
  runtime: Runtime,
  config: Pick<ServerConfig, 'chunking_vad_model'>,
  field: string,
): string {
  const vadId = config.chunking_vad_model;
  const vad = runtime.has(vadId) ? runtime.get(vadId).config : undefined;
  if (vad?.family !== 'silero_vad')
    throw invalidField(
      field,
      `${field}: the server's chunking_vad_model ${JSON.stringify(vadId)} is ${vad ? `a ${vad.family} model, not silero_vad` : 'not registered'}; register a silero_vad model with that id, or leave ${field} out`,
    );
  return vadId;
}
