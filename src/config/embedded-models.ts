/**
 * What `voxd serve` serves with no `--config`: models whose engines ship with voxd, so a fresh
 * install speaks without any download. They load lazily, on first use.
 */
export const EMBEDDED_MODELS: readonly Record<string, unknown>[] = [
  { id: 'espeak', family: 'espeak_tts', task: 'tts' },
  { id: 'flite', family: 'flite_tts', task: 'tts' },
  { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr' },
  { id: 'silero-vad', family: 'silero_vad', task: 'vad' },
  { id: 'diarizer', family: 'classic_diar', task: 'diar' },
];
