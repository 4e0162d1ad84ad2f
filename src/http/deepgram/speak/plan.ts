/**
 * What a `/v1/speak` request (the socket or the REST form) will speak with, settled from its query
 * before anything is held: the model (`model`: a voxd id or alias, or a Deepgram voice name standing
 * for deepgram_speak_model and deepgram_speak_voice), the audio format, and the engine request
 * every piece of text is made from (the voice resolved once, as POST /v1/audio/speech resolves it).
 */
import { speechRequest } from '../../../api/speech/request.js';
import type { ServerConfig } from '../../../config/types.js';
import type { Runtime } from '../../../runtime/runtime.js';
import { deepgramModel } from '../model-name.js';
import { speakFormat } from './format.js';
import type { SpeakPlan } from './session.js';

export async function speakPlan(
  query: URLSearchParams,
  deps: { runtime: Runtime; config: ServerConfig },
  rest: boolean,
  /** The REST form's whole text, checked against max_input_chars as every speech route checks it. */
  text = '',
): Promise<SpeakPlan> {
  const { runtime, config } = deps;
  const format = speakFormat(query, rest);
  const name = query.get('model') ?? undefined;
  const { entry, voice } = await deepgramModel(runtime, config, name, 'speak');
  const fields: Record<string, unknown> = {};
  if (voice !== undefined) fields['voice'] = voice;
  if (format.speed !== undefined) fields['speed'] = format.speed;
  const request = await speechRequest(entry, { text, textField: 'text', fields }, { config });
  return {
    model: entry.id,
    modelName: name ?? entry.id,
    request,
    format,
    maxChars: entry.config.max_input_chars ?? config.max_input_chars,
  };
}
