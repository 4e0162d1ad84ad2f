/**
 * What a request on input audio means to its model, whichever front end it came by (the HTTP
 * transcription routes, a realtime turn, Wyoming, `voxd transcribe`, a diarizer's text model): the
 * engine request with the model's default options under the request's `options`, then its
 * language, translation and temperature. Diarization and VAD runs take the same shape.
 */
import type { Audio } from '../../audio/types.js';
import type { ModelConfig, OptionMap } from '../../config/types.js';
import type { EngineRequest } from '../../engines/types.js';
import type { ModelEntry } from '../../runtime/model-entry.js';
import { withRequestOptions } from '../request-options.js';

/** What a transcription asks beyond its model and its audio. */
export interface TranscriptionAsk {
  language?: string;
  /** Context for the recogniser: audio.cpp's `text`, OpenAI's `prompt`. */
  prompt?: string;
  /** The request's own `options` object, over the model's defaults. */
  options?: unknown;
  /** Into English (Whisper's `task` option). */
  translate?: boolean;
  /** The sampling temperature the request named. */
  temperature?: number;
}

/** The audio a request runs on: whole, still arriving (a live route, a realtime turn), or none yet. */
export type AudioInput = { audio: Audio } | { liveAudio: AsyncIterable<Audio> } | Record<string, never>;

export function transcriptionRequest(
  entry: Pick<ModelEntry, 'config' | 'family'>,
  ask: TranscriptionAsk,
  input: AudioInput = {},
): EngineRequest {
  const options: OptionMap = withRequestOptions(entry.config.default_request_options, ask.options);
  if (ask.language) options['language'] = ask.language;
  if (ask.translate) options['task'] = 'translate';
  // Only an engine that lists temperature samples with it; the others decode greedily and ignore it.
  if (ask.temperature !== undefined && entry.family.params.some((p) => p.name === 'temperature'))
    options['temperature'] = String(ask.temperature);
  return { task: entry.config.task, ...input, text: ask.prompt, language: ask.language, options };
}

/** The language a model's default options name (its `language`), if they name one. */
export function defaultLanguage(model: ModelConfig): string | undefined {
  return model.default_request_options['language'] || undefined;
}
