/**
 * The answer of `POST /v1/listen` in Deepgram's prerecorded shape (`@deepgram/sdk` 5.x
 * ListenV1Response): `metadata`, `results.channels[0].alternatives[0]` with the transcript, its
 * confidence and timed words, and `results.utterances` when asked (the words cut at pauses longer
 * than `utt_split`).
 */
import { randomUUID } from 'node:crypto';
import type { InferenceOutcome } from '../../../runtime/inference.js';
import type { ModelEntry } from '../../../runtime/model-entry.js';
import { type DeepgramWord, sessionFacts } from './messages.js';
import type { PrerecordedOptions } from './options.js';

const round3 = (x: number) => Math.round(x * 1000) / 1000;

const mean = (words: readonly DeepgramWord[]) =>
  words.length === 0 ? 0 : round3(words.reduce((n, w) => n + w.confidence, 0) / words.length);

const joined = (words: readonly DeepgramWord[]) => words.map((w) => w.word).join(' ');

/** The transcript's words with the engine's times; spread over the audio when it gave none. */
function wordsOf(outcome: InferenceOutcome, seconds: number): DeepgramWord[] {
  const said = (outcome.result.text ?? '').split(/\s+/).filter(Boolean);
  const timed = outcome.result.words ?? [];
  const rate = outcome.inputSampleRate;
  if (timed.length > 0 && timed.length === said.length)
    return timed.map((w, i) => ({
      word: said[i]!,
      start: round3(w.start_sample / rate),
      end: round3(w.end_sample / rate),
      confidence: w.confidence,
      punctuated_word: said[i]!,
    }));
  const step = said.length === 0 ? 0 : seconds / said.length;
  return said.map((word, i) => ({
    word,
    start: round3(i * step),
    end: round3((i + 1) * step),
    confidence: 0,
    punctuated_word: word,
  }));
}

/** Runs of words without a pause longer than `splitMs` between them. */
function utterancesOf(words: readonly DeepgramWord[], splitMs: number) {
  const runs: DeepgramWord[][] = [];
  for (const w of words) {
    const run = runs.at(-1);
    if (run && (w.start - run.at(-1)!.end) * 1000 <= splitMs) run.push(w);
    else runs.push([w]);
  }
  return runs.map((run) => ({
    start: run[0]!.start,
    end: run.at(-1)!.end,
    confidence: mean(run),
    channel: 0,
    transcript: joined(run),
    words: run,
    id: randomUUID(),
  }));
}

export function prerecordedAnswer(
  entry: ModelEntry,
  outcome: InferenceOutcome,
  audio: { seconds: number; sha256: string },
  options: PrerecordedOptions,
): { metadata: { request_id: string } & Record<string, unknown>; results: Record<string, unknown> } {
  const facts = sessionFacts(entry, 1);
  const words = wordsOf(outcome, audio.seconds);
  return {
    metadata: {
      transaction_key: 'deprecated',
      request_id: facts.requestId,
      sha256: audio.sha256,
      created: facts.created,
      duration: round3(audio.seconds),
      channels: 1,
      models: [facts.modelUuid],
      model_info: { [facts.modelUuid]: facts.modelInfo },
    },
    results: {
      channels: [{ alternatives: [{ transcript: joined(words), confidence: mean(words), words }] }],
      ...(options.utterances ? { utterances: utterancesOf(words, options.uttSplitMs) } : {}),
    },
  };
}
