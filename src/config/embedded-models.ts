/**
 * What `voxd serve` serves with no `--config`: models whose engines ship with voxd, so a fresh
 * install speaks without any download. They load lazily, on first use. The synthesizers, the
 * recogniser and the diarizer are `streaming` models, so streamed and live routes work out of the
 * box; they answer plain requests and batches in full all the same.
 */
export const EMBEDDED_MODELS: readonly Record<string, unknown>[] = [
  { id: 'espeak', family: 'espeak_tts', task: 'tts', mode: 'streaming' },
  { id: 'festival', family: 'festival_tts', task: 'tts', mode: 'streaming' },
  { id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming' },
  { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming' },
  { id: 'silero-vad', family: 'silero_vad', task: 'vad' },
  { id: 'diarizer', family: 'classic_diar', task: 'diar', mode: 'streaming' },
];

/**
 * The model names OpenAI clients hard-code (LangChain sends `whisper-1` whatever it is told), each
 * mapped to the embedded model that does that job, so such a client works against a fresh voxd.
 * `model_aliases` (src/config/model-aliases.ts) repoints or removes them.
 */
export const DEFAULT_MODEL_ALIASES: Readonly<Record<string, string>> = {
  'whisper-1': 'pocketsphinx',
  'gpt-4o-transcribe': 'pocketsphinx',
  'gpt-4o-mini-transcribe': 'pocketsphinx',
  // LiveKit Agents 1.9's default realtime transcription model (`openai.STT` with no `model`).
  'gpt-realtime-whisper': 'pocketsphinx',
  // OpenAI's transcription with speakers: the diarizer's turns, with the text of
  // diarization_text_model (pocketsphinx), as src/api/transcription/diarized-text.ts joins them.
  'gpt-4o-transcribe-diarize': 'diarizer',
  'tts-1': 'flite',
  'tts-1-hd': 'flite',
  'gpt-4o-mini-tts': 'flite',
};
