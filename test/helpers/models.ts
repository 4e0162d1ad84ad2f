/** Model entries for the configs that tests start servers with. */

/** A model of an embedded engine, loaded on its first use. */
export const lazyModel = (id: string, family: string, task: string, extra: Record<string, unknown> = {}) => ({
  id,
  family,
  task,
  lazy: true,
  ...extra,
});

/** The flite voice that tests speak with to make audio. */
export const FLITE = lazyModel('flite', 'flite_tts', 'tts');

/**
 * The default model aliases (OpenAI's names for flite's and pocketsphinx's jobs) in the order GET
 * /v1/models lists them, after the configured models.
 */
export const DEFAULT_ALIAS_IDS = [
  'tts-1',
  'tts-1-hd',
  'gpt-4o-mini-tts',
  'whisper-1',
  'gpt-4o-transcribe',
  'gpt-4o-mini-transcribe',
  'gpt-realtime-whisper',
];
