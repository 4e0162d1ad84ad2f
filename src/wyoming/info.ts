/**
 * The `info` answer to `describe`: voxd's registered models as Wyoming programs. One `asr` program
 * whose models are the ASR models (each model's id is its name); one `tts` program whose voices are
 * the speech models' own voices (tts-voices.ts), the model a voiceless `synthesize` gets first.
 * Only registered models appear: an installable package that is not on disk is not offered.
 */
import { registeredEntry } from '../api/model-lookup.js';
import { SPEECH_TASKS } from '../api/speech/input-text.js';
import { defaultLanguage } from '../api/transcription/engine-request.js';
import type { ModelConfig } from '../config/types.js';
import type { Runtime } from '../runtime/runtime.js';
import { VERSION } from '../version.js';
import { defaultSpeechModel, modelVoices } from './tts-voices.js';

const ATTRIBUTION = { name: 'voxd', url: '' };

/** Languages a model declares (`language` in its default options), else English, which every embedded engine speaks. */
function languagesOf(model: ModelConfig): string[] {
  const language = defaultLanguage(model);
  return language === undefined ? ['en'] : [language];
}

export function describeInfo(runtime: Runtime): Record<string, unknown> {
  const asr: Record<string, unknown>[] = [];
  const voices: Record<string, unknown>[] = [];
  let streams = false;
  const first = defaultSpeechModel(runtime);
  const models = runtime.snapshots().sort((a, b) => Number(b.id === first) - Number(a.id === first));
  for (const { id, task } of models) {
    const entry = registeredEntry(runtime, id);
    if (!entry) continue;
    const languages = languagesOf(entry.config);
    const artifact = { attribution: ATTRIBUTION, installed: true, version: VERSION };
    if (task === 'asr') {
      streams ||= entry.family.liveInput === true;
      asr.push({ ...artifact, name: id, description: `${entry.config.family} (${id})`, languages });
    } else if (SPEECH_TASKS.includes(entry.config.task)) {
      for (const voice of modelVoices(entry)) voices.push({ ...artifact, ...voice, languages });
    }
  }
  const program = (kind: string) => ({
    name: `voxd-${kind}`,
    attribution: ATTRIBUTION,
    installed: true,
    description: `voxd ${kind === 'asr' ? 'speech recognition' : 'speech synthesis'}`,
    version: VERSION,
  });
  return {
    asr: asr.length ? [{ ...program('asr'), models: asr, supports_transcript_streaming: streams }] : [],
    tts: voices.length ? [{ ...program('tts'), voices, supports_synthesize_streaming: true }] : [],
    handle: [],
    intent: [],
    wake: [],
    mic: [],
    snd: [],
  };
}
