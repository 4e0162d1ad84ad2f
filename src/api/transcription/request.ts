/**
 * The rules of a transcription or translation request that depend on the model or the route:
 * diarized_json needs a diarizer, translations have no speakers, a stream is json or text, chunking
 * neither streams nor splits a diarizer's audio. The fields' types and ranges were checked by the
 * route's schema (src/http/schemas/transcription-request.ts) before these run, and before any audio
 * is decoded; a bad one is a 400 naming the field.
 */
import { invalidField, showValue } from '../../errors.js';
import { AUTO_CHUNKING, type ChunkingStrategy } from './chunking.js';

export const RESPONSE_FORMATS = ['json', 'text', 'verbose_json', 'srt', 'vtt', 'diarized_json'] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];
/** Translations have no speakers (OpenAI's list). */
export const TRANSLATION_FORMATS = ['json', 'text', 'verbose_json', 'srt', 'vtt'] as const;

export interface TranscriptRequest {
  format: ResponseFormat;
  /** verbose_json carries `words` only when asked for, `segments` when asked for or by default. */
  words: boolean;
  segments: boolean;
  /** The sampling temperature the request named (0..1), echoed in verbose_json segments. */
  temperature: number | undefined;
  /** Set when the request asked for chunking_strategy: long audio is cut at silences. */
  chunking: ChunkingStrategy | undefined;
}

/** The OpenAI fields as the schema passed them (null is absent; a form's text already read as its type). */
export interface TranscriptFields {
  response_format?: ResponseFormat | null;
  stream?: boolean | string | null;
  temperature?: number | string | null;
  chunking_strategy?: 'auto' | ServerVad | null;
  timestamp_granularities?: string | string[] | null;
  'timestamp_granularities[]'?: string[];
}

interface ServerVad {
  prefix_padding_ms?: number;
  silence_duration_ms?: number;
  threshold?: number;
}

/** `auto`, or a `server_vad` object whose numbers replace auto's. */
function chunkingOf(value: TranscriptFields['chunking_strategy']): ChunkingStrategy | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto') return AUTO_CHUNKING;
  return {
    prefixPaddingMs: value.prefix_padding_ms ?? AUTO_CHUNKING.prefixPaddingMs,
    silenceDurationMs: value.silence_duration_ms ?? AUTO_CHUNKING.silenceDurationMs,
    threshold: value.threshold ?? AUTO_CHUNKING.threshold,
    maxChunkMs: AUTO_CHUNKING.maxChunkMs,
  };
}

/** timestamp_granularities from a JSON list or one value, else from a form's `timestamp_granularities[]`. */
function granularitiesOf(fields: TranscriptFields): string[] | undefined {
  const value = fields.timestamp_granularities ?? fields['timestamp_granularities[]'];
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? [value] : value;
}

/**
 * The OpenAI fields of a transcription (or, with `translation`, a translation), with the rules that
 * depend on the model: `diarization` says whether it is a diarizer, the only kind that answers
 * diarized_json and the one kind that takes its audio whole.
 */
export function parseTranscriptRequest(
  fields: TranscriptFields,
  model: { id: string; diarization: boolean },
  translation = false,
): TranscriptRequest {
  const format = fields.response_format ?? 'json';
  if (translation && !(TRANSLATION_FORMATS as readonly string[]).includes(format))
    throw invalidField(
      'response_format',
      `response_format: ${showValue(format)} is invalid; expected one of: ${TRANSLATION_FORMATS.join(', ')}`,
    );
  if (format === 'diarized_json' && !model.diarization)
    throw invalidField(
      'response_format',
      `response_format: "diarized_json" needs a diarization model; '${model.id}' is not one (use json, text, verbose_json, srt or vtt)`,
    );
  const stream = fields.stream === true;
  if (stream && format !== 'json' && format !== 'text')
    throw invalidField(
      'stream',
      `stream: a streamed response is json or text; response_format ${showValue(format)} does not stream`,
    );
  const chunking = chunkingOf(fields.chunking_strategy);
  if (chunking && stream)
    throw invalidField(
      'chunking_strategy',
      'chunking_strategy cannot be combined with stream: a chunked transcription answers once, at the end',
    );
  // Speaker labels are per run: a diarizer's chunks would each start again at speaker A.
  if (chunking && model.diarization)
    throw invalidField(
      'chunking_strategy',
      `chunking_strategy: '${model.id}' is a diarization model, which takes the audio whole; leave chunking_strategy out`,
    );
  const granularities = granularitiesOf(fields);
  const temperature = fields.temperature;
  return {
    format,
    words: granularities?.includes('word') ?? false,
    segments: granularities === undefined || granularities.includes('segment'),
    temperature: temperature === undefined || temperature === null ? undefined : Number(temperature),
    chunking,
  };
}
