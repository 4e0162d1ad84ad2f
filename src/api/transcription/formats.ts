/**
 * The timed OpenAI response formats of a transcription or translation: verbose_json, srt, vtt and
 * diarized_json. Engines give positions in samples at the input rate (words, segments, speaker
 * turns, each when they have them); these answers count in seconds, and build what an engine does
 * not give: segments from words split at pauses and sentence ends, or one segment for the whole
 * audio when there are no timings at all.
 */
import { deflateSync } from 'node:zlib';
import { type Audio, frameCount } from '../../audio/types.js';
import type { InferenceOutcome } from '../../runtime/runtime.js';
import { languageName } from './language-names.js';
import type { TranscriptRequest } from './request.js';
import { type Cue, toSrt, toVtt } from './subtitles.js';

/** A silence longer than this between two words starts a new segment. */
export const PAUSE_SECONDS = 0.5;
/** A word that ends a sentence ends its segment (closing quotes and brackets may follow). */
const SENTENCE_END = /[.!?\u3002\uff01\uff1f]["')\]\u201d]*$/;

export interface TimedWord {
  word: string;
  start: number;
  end: number;
  confidence: number;
}

export interface TimedSegment extends Cue {
  /** 0..1 when the engine gives one; 0 = unknown. */
  confidence: number;
}

/** Milliseconds are as fine as any engine's timing; more digits would be noise. */
const round3 = (x: number) => Math.round(x * 1000) / 1000;

export function audioSeconds(audio: Audio): number {
  return frameCount(audio) / audio.sampleRate;
}

/**
 * OpenAI's usage of a transcription: the input audio's length, in whole seconds rounded up, as
 * OpenAI answers it (its `seconds` is an integer); `duration` has the exact length.
 */
export function durationUsage(seconds: number): { type: 'duration'; seconds: number } {
  return { type: 'duration', seconds: Math.ceil(seconds) };
}

function wordsOf(outcome: InferenceOutcome): TimedWord[] {
  const rate = outcome.inputSampleRate;
  return (outcome.result.words ?? []).map((w) => ({
    word: w.word,
    start: round3(w.start_sample / rate),
    end: round3(w.end_sample / rate),
    confidence: w.confidence,
  }));
}

const meanConfidence = (words: readonly TimedWord[]) =>
  words.length === 0 ? 0 : words.reduce((sum, w) => sum + w.confidence, 0) / words.length;

/** Words grouped into segments: a new one after a pause over PAUSE_SECONDS or a sentence end. */
export function segmentsFromWords(words: readonly TimedWord[]): TimedSegment[] {
  const segments: TimedSegment[] = [];
  let current: TimedWord[] = [];
  const close = () => {
    if (current.length === 0) return;
    segments.push({
      start: current[0]!.start,
      end: current.at(-1)!.end,
      text: current.map((w) => w.word).join(' '),
      confidence: meanConfidence(current),
    });
    current = [];
  };
  for (const word of words) {
    const last = current.at(-1);
    if (last && (word.start - last.end > PAUSE_SECONDS || SENTENCE_END.test(last.word))) close();
    current.push(word);
  }
  close();
  return segments;
}

/** The words whose middle falls within [start, end), joined. */
function wordsWithin(words: readonly TimedWord[], start: number, end: number): TimedWord[] {
  return words.filter((w) => {
    const middle = (w.start + w.end) / 2;
    return middle >= start && middle < end;
  });
}

/** The engine's segments, else segments from its words, else the whole text as one segment. */
export function textSegments(outcome: InferenceOutcome, duration: number): TimedSegment[] {
  const rate = outcome.inputSampleRate;
  const text = outcome.result.text ?? '';
  const words = wordsOf(outcome);
  const given = outcome.result.segments ?? [];
  if (given.length > 0)
    return given.map((s, _, all) => {
      const start = round3(s.start_sample / rate);
      const end = round3(s.end_sample / rate);
      const inside = wordsWithin(words, start, end);
      // A segment without text takes its words, or the whole text when it is the only one.
      const fallback = inside.length > 0 || all.length > 1 ? inside.map((w) => w.word).join(' ') : text;
      return { start, end, text: s.text ?? fallback, confidence: s.confidence };
    });
  if (words.length > 0) return segmentsFromWords(words);
  return text.trim() === '' ? [] : [{ start: 0, end: round3(duration), text, confidence: 0 }];
}

/**
 * The most a subtitle cue shows: two lines of 42 characters, for at most 7 s (the usual broadcast
 * rule). An engine that gives one segment for a whole utterance (pocketsphinx: 190 characters over
 * 10.6 s for an 11 s clip) would otherwise put a paragraph on screen.
 */
export const MAX_CUE_CHARS = 84;
export const MAX_CUE_SECONDS = 7;

/** The cues of srt and vtt: the segments, each longer than a cue may be cut at its words. */
export function subtitleCues(outcome: InferenceOutcome, duration: number): Cue[] {
  const words = wordsOf(outcome);
  return textSegments(outcome, duration).flatMap((segment): Cue[] => {
    if (segment.text.length <= MAX_CUE_CHARS && segment.end - segment.start <= MAX_CUE_SECONDS)
      return [segment];
    const inside = wordsWithin(words, segment.start, segment.end);
    if (inside.length < 2) return [segment];
    const cues: Cue[] = [];
    let current: TimedWord[] = [];
    let chars = 0;
    for (const word of inside) {
      const first = current[0];
      if (
        first &&
        (chars + 1 + word.word.length > MAX_CUE_CHARS || word.end - first.start > MAX_CUE_SECONDS)
      ) {
        cues.push({
          start: first.start,
          end: current.at(-1)!.end,
          text: current.map((w) => w.word).join(' '),
        });
        current = [];
        chars = -1;
      }
      current.push(word);
      chars += 1 + word.word.length;
    }
    const first = current[0]!;
    cues.push({ start: first.start, end: current.at(-1)!.end, text: current.map((w) => w.word).join(' ') });
    return cues;
  });
}

/** OpenAI's zlib ratio: how repetitive a segment's text is (Whisper's hallucination check). */
function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length === 0 ? 0 : round3(bytes.length / deflateSync(bytes).length);
}

export interface TranscriptAnswer {
  outcome: InferenceOutcome;
  audio: Audio;
  request: TranscriptRequest;
  task: 'transcribe' | 'translate';
  /** The language the request named, used when the engine reports none. */
  language: string | undefined;
}

/** The language heard (the engine's, else the request's), as Whisper names it; undefined if neither. */
function heardLanguage({ outcome, language }: Pick<TranscriptAnswer, 'outcome' | 'language'>) {
  const code = outcome.result.language ?? language;
  return code ? languageName(code) : undefined;
}

/**
 * The `json` answer: OpenAI's text and usage, with the language and the duration that verbose_json
 * gives (clients such as the AI SDK read them from any answer; it asks for json by default).
 */
export function transcriptJson(answer: Pick<TranscriptAnswer, 'outcome' | 'audio' | 'language'>) {
  const duration = audioSeconds(answer.audio);
  const language = heardLanguage(answer);
  return {
    text: answer.outcome.result.text ?? '',
    ...(language ? { language } : {}),
    duration: round3(duration),
    usage: durationUsage(duration),
  };
}

export function verboseJson(answer: TranscriptAnswer) {
  const { outcome, audio, request, task } = answer;
  const duration = audioSeconds(audio);
  const json: Record<string, unknown> = {
    task,
    language: heardLanguage(answer) ?? 'unknown',
    duration: round3(duration),
    text: outcome.result.text ?? '',
  };
  if (request.segments)
    json['segments'] = textSegments(outcome, duration).map((s, id) => ({
      id,
      // voxd decodes the audio whole: the segment start in 10 ms frames, as Whisper's seek counts.
      seek: Math.floor(s.start * 100),
      start: s.start,
      end: s.end,
      text: s.text,
      tokens: [],
      temperature: request.temperature ?? 0,
      avg_logprob: s.confidence > 0 && s.confidence <= 1 ? round3(Math.log(s.confidence)) : 0,
      compression_ratio: compressionRatio(s.text),
      no_speech_prob: 0,
    }));
  if (request.words) json['words'] = wordsOf(outcome).map(({ word, start, end }) => ({ word, start, end }));
  json['usage'] = durationUsage(duration);
  return json;
}

/** Speakers as letters in order of first appearance (A, B, ...), as OpenAI labels unknown speakers. */
function speakerLabels(ids: readonly number[]): Map<number, string> {
  const labels = new Map<number, string>();
  for (const id of ids) {
    if (labels.has(id)) continue;
    const n = labels.size;
    labels.set(id, n < 26 ? String.fromCharCode(65 + n) : `S${n + 1}`);
  }
  return labels;
}

/**
 * Speaker turns as OpenAI's diarization segments (`seg_0`, ...; speakers `A`, `B`, ... in order of
 * first appearance), each with the words spoken in it: diarized_json's and the realtime `.segment`
 * events'.
 */
export function diarizedSegments(outcome: InferenceOutcome) {
  const rate = outcome.inputSampleRate;
  const turns = outcome.result.speakerTurns ?? [];
  const words = wordsOf(outcome);
  const labels = speakerLabels(turns.map((t) => t.speaker_id));
  return turns.map((t, i) => {
    const start = round3(t.start_sample / rate);
    const end = round3(t.end_sample / rate);
    return {
      id: `seg_${i}`,
      start,
      end,
      text:
        t.text ??
        wordsWithin(words, start, end)
          .map((w) => w.word)
          .join(' '),
      speaker: labels.get(t.speaker_id)!,
    };
  });
}

/**
 * OpenAI's `logprobs` from the words' confidences (pocketsphinx: the lattice posterior; sherpa: the
 * mean probability of the word's tokens): one entry a word, not a token, as no engine here exposes
 * its tokens. Undefined when the engine gave no word a confidence.
 */
export function wordLogprobs(outcome: InferenceOutcome) {
  const words = (outcome.result.words ?? []).filter((w) => w.confidence > 0);
  if (words.length === 0) return undefined;
  return words.map((w) => ({
    token: w.word,
    logprob: Math.round(Math.log(Math.min(1, w.confidence)) * 1e4) / 1e4,
    bytes: [...Buffer.from(w.word, 'utf8')],
  }));
}

/** OpenAI's diarized_json: speaker turns as segments, each with the words spoken in it. */
export function diarizedJson({ outcome, audio }: TranscriptAnswer) {
  const duration = audioSeconds(audio);
  return {
    task: 'transcribe',
    duration: round3(duration),
    text: outcome.result.text ?? '',
    segments: diarizedSegments(outcome).map(({ id, ...rest }) => ({
      type: 'transcript.text.segment',
      id,
      ...rest,
    })),
    usage: durationUsage(duration),
  };
}

/** An answer as JSON or as text of a media type: what a route sends and the CLI writes. */
export type FormattedAnswer = { json: unknown } | { body: Buffer; contentType: string };

/** The answer for verbose_json, srt, vtt or diarized_json (json and text stay with the route). */
export function timedReply(answer: TranscriptAnswer): FormattedAnswer {
  const { format } = answer.request;
  if (format === 'diarized_json') return { json: diarizedJson(answer) };
  if (format === 'verbose_json') return { json: verboseJson(answer) };
  const cues = subtitleCues(answer.outcome, audioSeconds(answer.audio));
  if (format === 'srt')
    return { body: Buffer.from(toSrt(cues), 'utf8'), contentType: 'application/x-subrip; charset=utf-8' };
  return { body: Buffer.from(toVtt(cues), 'utf8'), contentType: 'text/vtt; charset=utf-8' };
}
