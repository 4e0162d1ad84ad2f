/**
 * What a speech request means, whichever front end it came by (the HTTP routes, Wyoming, `voxd
 * speak`): the model it names, checked to speak, and the engine request made from the text, the
 * model's default options under the request's options and knobs and speed, and the voice resolved
 * as voice.ts resolves it (presets, voice_dir, aliases).
 */
import type { Audio } from '../../audio/types.js';
import type { OptionMap } from '../../config/types.js';
import type { EngineRequest } from '../../engines/types.js';
import { voiceAliases } from '../../engines/voice-aliases.js';
import type { ModelEntry } from '../../runtime/model-entry.js';
import type { Runtime } from '../../runtime/runtime.js';
import { fileAccessOf } from '../../util/server-files.js';
import { type AudioCaller, audioLimits } from '../audio-limits.js';
import type { Fields } from '../fields.js';
import { modelEntry, requireTask } from '../model-lookup.js';
import { buildOptions, SPEECH_KNOBS } from '../request-options.js';
import { checkInputChars, SPEECH_TASKS } from './input-text.js';
import { speedOptions } from './speed.js';
import { resolveVoice, unalias } from './voice.js';

/** The speech model `name` (an id, an alias or an installed package), refused unless it speaks. */
export async function speechModel(runtime: Runtime, name: string, route: string): Promise<ModelEntry> {
  const entry = await modelEntry(runtime, name);
  requireTask(entry.config, SPEECH_TASKS, route);
  return entry;
}

/** What a speech request asks beyond its model. */
export interface SpeechAsk {
  text: string;
  /** The field that carried the text, for messages (`input` on HTTP, `text` elsewhere). */
  textField: string;
  /**
   * The request's other fields in the names of POST /v1/audio/speech: `voice`, `voice_ref`,
   * `reference_text`, `speed` or `speaking_rate`, `options` and the knobs (SPEECH_KNOBS).
   */
  fields: Fields;
  language?: string;
  /** Option `instruction`, above every other. */
  instructions?: string;
}

/**
 * The engine request of a speech request to `entry`: its text within max_input_chars, its options
 * (docs/api.md: defaults, `options`, knobs, then speed and instructions) and its voice. Voice files
 * (voice_ref, voice_dir) are read under the caller's audio limits.
 */
export async function speechRequest(
  entry: ModelEntry,
  ask: SpeechAsk,
  caller: AudioCaller,
): Promise<EngineRequest> {
  const { config } = caller;
  checkInputChars(ask.text, ask.textField, entry.config, config);
  const accepted = new Set(entry.family.params.map((p) => p.name));
  const options = {
    ...buildOptions(ask.fields, entry.config.default_request_options, SPEECH_KNOBS),
    ...speedOptions(ask.fields, accepted),
  };
  if (ask.instructions !== undefined) options['instruction'] = ask.instructions;
  const voice = await resolveVoice(
    ask.fields,
    entry.config,
    entry.presets,
    { voice_dir: config.voice_dir, access: fileAccessOf(config), limits: audioLimits(caller, entry.config) },
    voiceAliases(entry.family.voiceAliases, entry.config.voice_aliases),
  );
  return {
    task: entry.config.task,
    text: ask.text,
    language: ask.language,
    voiceId: voice.voiceId,
    voiceRef: voice.voiceRef,
    referenceText: voice.referenceText,
    options,
  };
}

/** What a live speech request (POST /v1/audio/speech/live) asks: its query, and its body's audio. */
export interface LiveSpeechAsk {
  text: string | undefined;
  language: string | undefined;
  voice: string | undefined;
  /** Option `system_prompt`, above every other. */
  instructions: string | undefined;
  /** The query's engine options (LIVE_SPEECH_OPTIONS), already text. */
  options: Readonly<Record<string, string | undefined>>;
  liveAudio: AsyncIterable<Audio>;
}

/**
 * The engine request of a live speech request. Its `voice` is only unaliased, as docs/api.md
 * documents for this route: its voice is a model voice or an OpenAI name, never a preset or a
 * voice_dir file.
 */
export function liveSpeechRequest(entry: ModelEntry, ask: LiveSpeechAsk): EngineRequest {
  const options: OptionMap = { ...entry.config.default_request_options };
  for (const [key, value] of Object.entries(ask.options)) if (value !== undefined) options[key] = value;
  if (ask.instructions !== undefined) options['system_prompt'] = ask.instructions;
  const aliases = voiceAliases(entry.family.voiceAliases, entry.config.voice_aliases);
  return {
    task: entry.config.task,
    text: ask.text,
    language: ask.language,
    voiceId: ask.voice ? unalias(ask.voice, aliases) : undefined,
    liveAudio: ask.liveAudio,
    options,
  };
}
