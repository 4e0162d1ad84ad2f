/**
 * Voice aliases: the voice names OpenAI clients send (`alloy`, `nova`, ...) mapped to an engine's
 * own voices, so a client written for OpenAI works unmodified. A family may declare a default map
 * (EngineFamily.voiceAliases); a model's `voice_aliases` config overrides or extends it. An OpenAI
 * name the family does not map speaks in the model's default voice rather than failing.
 */

/** The voices OpenAI's /v1/audio/speech accepts (gpt-4o-mini-tts and tts-1 together). */
export const OPENAI_VOICES = [
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'fable',
  'nova',
  'onyx',
  'sage',
  'shimmer',
  'verse',
  'marin',
  'cedar',
] as const;

export type VoiceAliasMap = Readonly<Record<string, string>>;

/**
 * Every alias a model answers to, each with its engine voice id; `undefined` means the model's
 * default voice. Configured aliases win over the family's defaults.
 */
export function voiceAliases(
  familyDefaults: VoiceAliasMap | undefined,
  configured: VoiceAliasMap | undefined,
): Map<string, string | undefined> {
  const table = new Map<string, string | undefined>();
  for (const name of OPENAI_VOICES) table.set(name, undefined);
  for (const [name, voice] of Object.entries(familyDefaults ?? {})) table.set(name, voice);
  for (const [name, voice] of Object.entries(configured ?? {})) table.set(name, voice);
  return table;
}

/** The tail of an unknown-voice message, pointing at the aliases as well as the engine's voices. */
export const ALIAS_HINT = 'or an OpenAI voice name such as alloy or nova (GET /v1/audio/voices lists them)';
