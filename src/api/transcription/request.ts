/**
 * The OpenAI transcription and translation fields beyond model/file: response_format,
 * timestamp_granularities, temperature, include, known speakers and chunking_strategy. Each is
 * checked before any audio is decoded; a bad one is a 400 naming the field and the value.
 */
import { invalidRequest, showValue } from '../../errors.js';
import { parseJsonText } from '../../util/json-text.js';
import { type Fields, optionalBool, optionalEnum, optionalString } from '../fields.js';
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

/**
 * Multipart sends a list as repeated `name[]` fields, which the plain field map collapses to the
 * last value; this puts every value of such a field back, as the array a JSON body would send.
 */
export function withListFields(
  fields: Fields,
  body: { lists: Iterable<readonly [string, string[]]> },
): Fields {
  for (const [name, values] of body.lists) if (name.endsWith('[]')) fields[name] = values;
  return fields;
}

/** A list of strings: a JSON array, repeated multipart `name[]` fields, or one string. */
function optionalList(fields: Fields, name: string, allowed?: readonly string[]): string[] | undefined {
  const key = [name, `${name}[]`].find((k) => fields[k] !== undefined && fields[k] !== null);
  if (key === undefined) return undefined;
  const value = fields[key];
  const list = typeof value === 'string' ? [value] : value;
  const expected = allowed ? `a list of: ${allowed.join(', ')}` : 'a list of strings';
  if (!Array.isArray(list) || !list.every((v) => typeof v === 'string'))
    throw invalidRequest(`${key}: ${showValue(value)} is invalid; expected ${expected}`);
  const bad = allowed && list.find((v) => !allowed.includes(v));
  if (bad !== undefined) throw invalidRequest(`${key}: ${showValue(bad)} is invalid; expected ${expected}`);
  return list;
}

/** A number from JSON or a decimal from a form field, within 0..1 as OpenAI allows. */
function optionalTemperature(fields: Fields): number | undefined {
  const value = fields['temperature'];
  if (value === undefined || value === null) return undefined;
  const number =
    typeof value === 'string' && /^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isFinite(number) || number < 0 || number > 1)
    throw invalidRequest(`temperature: ${showValue(value)} is invalid; expected a number from 0 to 1`);
  return number;
}

/** `auto`, or a `server_vad` object (JSON text in a form field) whose numbers replace auto's. */
function parseChunkingStrategy(fields: Fields): ChunkingStrategy | undefined {
  let value = fields['chunking_strategy'];
  if (value === undefined || value === null) return undefined;
  if (value === 'auto') return AUTO_CHUNKING;
  if (typeof value === 'string') value = parseJsonText(value, 'chunking_strategy');
  const type = (value as Record<string, unknown> | null)?.['type'];
  if (typeof value !== 'object' || value === null || Array.isArray(value) || type !== 'server_vad')
    throw invalidRequest(
      `chunking_strategy: ${showValue(fields['chunking_strategy'])} is invalid; expected "auto" or {"type":"server_vad",...}`,
    );
  const numbers: Record<string, number> = {};
  for (const key of ['prefix_padding_ms', 'silence_duration_ms', 'threshold']) {
    const field = (value as Record<string, unknown>)[key];
    if (field === undefined) continue;
    // threshold is a speech probability, so it also stays within 1.
    const max = key === 'threshold' ? 1 : Number.POSITIVE_INFINITY;
    if (typeof field !== 'number' || !Number.isFinite(field) || field < 0 || field > max)
      throw invalidRequest(
        `chunking_strategy.${key}: ${showValue(field)} is invalid; expected a number >= 0${key === 'threshold' ? ' and <= 1' : ''}`,
      );
    numbers[key] = field;
  }
  return {
    prefixPaddingMs: numbers['prefix_padding_ms'] ?? AUTO_CHUNKING.prefixPaddingMs,
    silenceDurationMs: numbers['silence_duration_ms'] ?? AUTO_CHUNKING.silenceDurationMs,
    threshold: numbers['threshold'] ?? AUTO_CHUNKING.threshold,
    maxChunkMs: AUTO_CHUNKING.maxChunkMs,
  };
}

/**
 * Reads and checks the OpenAI fields of a transcription (or, with `translation`, a translation).
 * `diarization` says whether the model is a diarizer: only those answer diarized_json.
 */
export function parseTranscriptRequest(
  fields: Fields,
  model: { id: string; diarization: boolean },
  translation = false,
): TranscriptRequest {
  const formats = translation ? TRANSLATION_FORMATS : RESPONSE_FORMATS;
  const format = optionalEnum<ResponseFormat>(fields, 'response_format', formats) ?? 'json';
  if (format === 'diarized_json' && !model.diarization)
    throw invalidRequest(
      `response_format: "diarized_json" needs a diarization model; '${model.id}' is not one (use json, text, verbose_json, srt or vtt)`,
    );
  if (optionalBool(fields, 'stream') === true && format !== 'json' && format !== 'text')
    throw invalidRequest(
      `stream: a streamed response is json or text; response_format ${showValue(format)} does not stream`,
    );
  optionalString(fields, 'prompt');
  optionalList(fields, 'include', ['logprobs']);
  optionalList(fields, 'known_speaker_names');
  optionalList(fields, 'known_speaker_references');
  const chunking = parseChunkingStrategy(fields);
  if (chunking && optionalBool(fields, 'stream') === true)
    throw invalidRequest(
      'chunking_strategy cannot be combined with stream: a chunked transcription answers once, at the end',
    );
  // Speaker labels are per run: a diarizer's chunks would each start again at speaker A.
  if (chunking && model.diarization)
    throw invalidRequest(
      `chunking_strategy: '${model.id}' is a diarization model, which takes the audio whole; leave chunking_strategy out`,
    );
  const granularities = optionalList(fields, 'timestamp_granularities', ['word', 'segment']);
  return {
    format,
    words: granularities?.includes('word') ?? false,
    segments: granularities === undefined || granularities.includes('segment'),
    temperature: optionalTemperature(fields),
    chunking,
  };
}
