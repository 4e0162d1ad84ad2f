/**
 * A diarizer finds who spoke when and hears no words, where OpenAI's `gpt-4o-transcribe-diarize`
 * gives both (and the AI SDK fails a transcription with no text). A transcription by a diarization
 * model therefore also runs the ASR model `diarization_text_model` names on the same audio, at the
 * same time, and answers with that model's text, words, segments and language beside the
 * diarizer's turns: diarized_json's segments then carry the words spoken in each turn.
 */

import type { EngineRequest, EngineResult, Segment, Word } from '../../engines/types.js';
import type { InferenceOutcome, Runtime } from '../../runtime/runtime.js';
import { registeredEntry } from '../model-lookup.js';
import { transcriptionRequest } from './engine-request.js';

/** Runs one model on one request (the route's busy timeout and client-gone signal). */
export type RunModel = (id: string, request: EngineRequest) => Promise<InferenceOutcome>;

/** The registered ASR model that gives a diarizer's text, if the server names one. */
export function textModelOf(runtime: Runtime): string | undefined {
  const name = runtime.config.diarization_text_model;
  if (name === '') return undefined;
  const entry = registeredEntry(runtime, name);
  return entry?.config.task === 'asr' ? entry.id : undefined;
}

/**
 * The diarizer `modelId` on `request`, with the text of the server's text model when there is one.
 * Both runs settle before this does, whichever fails, so neither is left running unanswered.
 */
export async function diarizeWithText(
  runtime: Runtime,
  modelId: string,
  request: EngineRequest,
  run: RunModel,
): Promise<InferenceOutcome> {
  const textId = textModelOf(runtime);
  if (textId === undefined) return run(modelId, request);
  // The prompt is about the words, so it goes with them; the diarizer's options (speaker counts)
  // mean nothing to the recogniser, which runs with its own defaults.
  const asr = transcriptionRequest(
    runtime.get(textId),
    { language: request.language || undefined, prompt: request.text || undefined },
    request.audio ? { audio: request.audio } : {},
  );
  const [diarized, heard] = await Promise.allSettled([run(modelId, request), run(textId, asr)]);
  if (diarized.status === 'rejected') throw diarized.reason;
  if (heard.status === 'rejected') throw heard.reason;
  return withText(diarized.value, heard.value);
}

/** The diarizer's outcome with the recogniser's text, its positions moved to the diarizer's rate. */
export function withText(diarized: InferenceOutcome, heard: InferenceOutcome): InferenceOutcome {
  const scale = diarized.inputSampleRate / heard.inputSampleRate;
  const at = <T extends Segment | Word>(item: T): T =>
    scale === 1
      ? item
      : {
          ...item,
          start_sample: Math.round(item.start_sample * scale),
          end_sample: Math.round(item.end_sample * scale),
        };
  const own = diarized.result;
  const text = heard.result;
  const result: EngineResult = { ...own, text: own.text || text.text || '' };
  const language = own.language ?? text.language;
  if (language !== undefined) result.language = language;
  const words = own.words ?? text.words?.map(at);
  if (words !== undefined) result.words = words;
  const segments = own.segments ?? text.segments?.map(at);
  if (segments !== undefined) result.segments = segments;
  return { ...diarized, result, wallMs: Math.max(diarized.wallMs, heard.wallMs) };
}
