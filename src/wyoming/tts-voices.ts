/**
 * The voices a speech model offers Home Assistant through Wyoming's `info`, and the model that
 * speaks when a `synthesize` names none. Home Assistant shows each listed voice by its
 * description, sorted, and sends no voice until the user picks one, so the list names each voice
 * the engine really has once, and the default is decided here, where synthesis reads it too.
 */
import { registeredEntry } from '../api/model-lookup.js';
import { SPEECH_TASKS } from '../api/speech/input-text.js';
import { voiceAliases } from '../engines/voice-aliases.js';
import type { ModelEntry } from '../runtime/model-entry.js';
import type { Runtime } from '../runtime/runtime.js';

export interface TtsVoice {
  /** `model` (its default voice) or `model:voice`, as synthesize's `voice.name` takes them. */
  name: string;
  description: string;
  /** The engine's voices, for `voice {name: model, speaker}`; only on the bare model's entry. */
  speakers?: { name: string }[];
}

/**
 * OpenAI clients that name no model get `tts-1`, so the model it names (flite, in the embedded
 * set) also speaks for a Wyoming client that names no voice: both protocols then sound the same,
 * and a fresh server's default is its quickest clear voice rather than whichever registered first.
 */
const DEFAULT_SPEECH_NAME = 'tts-1';

/** The registered model a `synthesize` without a voice goes to, or undefined when none speaks. */
export function defaultSpeechModel(runtime: Runtime): string | undefined {
  const named = registeredEntry(runtime, DEFAULT_SPEECH_NAME);
  if (named && SPEECH_TASKS.includes(named.config.task)) return named.id;
  return runtime.snapshots().find((m) => SPEECH_TASKS.includes(m.task as never))?.id;
}

/**
 * One entry per engine voice: the model itself (its default voice), then `model:voice` for each
 * other. A family whose `voice` parameter is an enum (flite, festival) has exactly those voices;
 * one with open-ended voice ids (espeak) offers the voices its aliases speak. OpenAI names are not
 * listed (most share a voice: flite has 5 voices for 13 names) but named in the descriptions, and
 * still synthesize. An alias whose voice the enum lacks would fail, so it is left out.
 */
export function modelVoices(entry: ModelEntry): TtsVoice[] {
  const id = entry.id;
  const row = entry.family.params.find((p) => p.name === 'voice');
  const own = row?.type === 'enum' ? (row.values ?? []) : [];
  const defaultVoice = entry.config.load_options['voice'] ?? row?.default;
  // Each engine voice with the OpenAI names that speak it; '' is the default voice.
  const names = new Map<string, string[]>([['', []]]);
  for (const voice of own) if (voice !== defaultVoice) names.set(voice, []);
  for (const [alias, target] of voiceAliases(entry.family.voiceAliases, entry.config.voice_aliases)) {
    const voice = target === undefined || target === defaultVoice ? '' : target;
    if (own.length > 0 && voice !== '' && !own.includes(voice)) continue;
    const list = names.get(voice) ?? [];
    names.set(voice, [...list, alias]);
  }
  const described = (voice: string | undefined, aliases: string[]) =>
    [id, voice, aliases.length > 0 ? `(${aliases.join(', ')})` : undefined].filter(Boolean).join(' ');
  return [...names].map(([voice, aliases]) =>
    voice === ''
      ? {
          name: id,
          description: described(defaultVoice, aliases),
          ...(own.length > 0 ? { speakers: own.map((name) => ({ name })) } : {}),
        }
      : { name: `${id}:${voice}`, description: described(voice, aliases) },
  );
}
