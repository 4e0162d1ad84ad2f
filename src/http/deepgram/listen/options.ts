/**
 * The query of a `/v1/listen` socket: Deepgram's parameters, checked before the upgrade so a bad
 * value is an HTTP 400 naming the parameter and the value, as Deepgram refuses it. What voxd acts
 * on: `encoding`, `sample_rate`, `channels`, `interim_results`, `endpointing`, `utterance_end_ms`,
 * `vad_events` (and `model`, resolved by the socket). Deepgram's other parameters are accepted when
 * their values are well-formed and change nothing (docs/deepgram.md lists them); a name Deepgram
 * does not have is ignored too, as a newer client's parameter would be.
 */
import { showValue, VoxdError } from '../../../errors.js';
import type { Encoding } from '../../realtime/audio-format.js';

/** Deepgram's raw encodings that voxd decodes, and the realtime decoder's name for each. */
const ENCODINGS: Record<string, Encoding> = { linear16: 'pcm16', mulaw: 'g711_ulaw', alaw: 'g711_alaw' };

/**
 * The shortest silence that ends an utterance. Silero's spans split at 100 ms of silence, and
 * words within a sentence are often 100-200 ms apart: a shorter window (LiveKit asks for 25 ms,
 * Deepgram's default is 10) would end an utterance between most words.
 */
export const ENDPOINTING_FLOOR_MS = 200;

/** The silence that ends an utterance under `endpointing=false` (it sets no speech_final). */
export const UNMARKED_SILENCE_MS = 1000;

/** Deepgram's default endpointing (ms), floored like any other. */
const DEFAULT_ENDPOINTING_MS = 10;

export interface ListenOptions {
  /** The model parameter as the client sent it. */
  model: string | undefined;
  /** Raw audio in this encoding; undefined: a WAV stream (header first). */
  encoding: Encoding | undefined;
  /** Frames per second of raw audio. */
  sampleRate: number;
  channels: number;
  interimResults: boolean;
  /** The silence that ends an utterance (the floor applied). */
  silenceMs: number;
  /** Whether an utterance ended by silence sets speech_final (endpointing is not `false`). */
  endpointing: boolean;
  /** Audio without a new word after which UtteranceEnd is sent; undefined: never. */
  utteranceEndMs: number | undefined;
  vadEvents: boolean;
}

/** Deepgram's parameters that are accepted as booleans and change nothing here. */
const IGNORED_FLAGS = [
  'punctuate',
  'smart_format',
  'diarize',
  'dictation',
  'filler_words',
  'numerals',
  'profanity_filter',
  'no_delay',
  'mip_opt_out',
  'detect_entities',
  'multichannel',
];

/** Deepgram's parameters that are accepted as text (some repeated) and change nothing here. */
const IGNORED_TEXT = [
  'language',
  'keyterm',
  'keywords',
  'tag',
  'extra',
  'redact',
  'replace',
  'search',
  'version',
  'diarize_model',
];

/** The socket's options from the upgrade URL's query; a VoxdError naming the parameter when one is bad. */
export function listenOptions(query: URLSearchParams): ListenOptions {
  for (const name of IGNORED_FLAGS) flag(query, name, false);
  for (const name of IGNORED_TEXT) for (const value of query.getAll(name)) text(name, value);
  if (query.has('callback'))
    throw bad('callback', query.get('callback'), 'voxd sends results on the socket only; leave callback out');
  const encoding = encodingOf(query.get('encoding'));
  const interimResults = flag(query, 'interim_results', false);
  const endpointingRaw = query.get('endpointing');
  const endpointing = endpointingRaw !== 'false';
  const asked =
    endpointingRaw === null || endpointingRaw === 'true'
      ? DEFAULT_ENDPOINTING_MS
      : endpointing
        ? integer(query, 'endpointing', DEFAULT_ENDPOINTING_MS, 0, 60_000)
        : UNMARKED_SILENCE_MS;
  const utteranceEnd = query.get('utterance_end_ms');
  return {
    model: query.get('model') ?? undefined,
    encoding,
    sampleRate: sampleRateOf(query, encoding),
    channels: channelsOf(query),
    interimResults,
    silenceMs: endpointing ? Math.max(ENDPOINTING_FLOOR_MS, asked) : UNMARKED_SILENCE_MS,
    endpointing,
    utteranceEndMs: utteranceEnd === null ? undefined : integer(query, 'utterance_end_ms', 0, 1, 600_000),
    vadEvents: flag(query, 'vad_events', false),
  };
}

function encodingOf(value: string | null): Encoding | undefined {
  if (value === null) return undefined;
  const encoding = Object.hasOwn(ENCODINGS, value) ? ENCODINGS[value] : undefined;
  if (encoding === undefined)
    throw bad(
      'encoding',
      value,
      `voxd takes ${Object.keys(ENCODINGS).join(', ')} raw audio, or a WAV stream with encoding left out`,
    );
  return encoding;
}

/** Raw audio needs its rate (as Deepgram requires); a WAV stream's header gives its own. */
function sampleRateOf(query: URLSearchParams, encoding: Encoding | undefined): number {
  if (encoding !== undefined && !query.has('sample_rate'))
    throw new VoxdError(
      'E_INVALID_REQUEST',
      'sample_rate: missing; raw audio (encoding) needs its sample rate, as Deepgram requires',
      { param: 'sample_rate' },
    );
  return integer(query, 'sample_rate', 16000, 1000, 384_000);
}

function channelsOf(query: URLSearchParams): number {
  const channels = integer(query, 'channels', 1, 1, 8);
  if (channels > 1) throw bad('channels', String(channels), 'voxd transcribes one channel; send mono audio');
  return channels;
}

function flag(query: URLSearchParams, name: string, fallback: boolean): boolean {
  const value = query.get(name);
  if (value === null) return fallback;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw bad(name, value, 'expected true or false');
}

function integer(query: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const value = query.get(name);
  if (value === null) return fallback;
  const n = /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw bad(name, value, `expected an integer from ${min} to ${max}`);
  return n;
}

function text(name: string, value: string): void {
  if (value.length > 1024) throw bad(name, `${value.slice(0, 40)}...`, 'longer than 1024 characters');
}

function bad(name: string, value: string | null, why: string): VoxdError {
  return new VoxdError('E_INVALID_REQUEST', `${name}: ${showValue(value ?? '')} is invalid; ${why}`, {
    param: name,
  });
}

/** What `POST /v1/listen` (prerecorded audio) acts on. */
export interface PrerecordedOptions {
  model: string | undefined;
  /** Raw audio in this encoding, at sampleRate with channels; undefined: a file voxd decodes. */
  encoding: Encoding | undefined;
  sampleRate: number;
  channels: number;
  /** Whether to answer `results.utterances` too. */
  utterances: boolean;
  /** The pause that splits two utterances, in ms (Deepgram's `utt_split`, seconds, default 0.8). */
  uttSplitMs: number;
}

/** The prerecorded form's query; the same parameters as the socket's, where they apply. */
export function prerecordedOptions(query: URLSearchParams): PrerecordedOptions {
  for (const name of [...IGNORED_FLAGS, 'interim_results', 'vad_events', 'paragraphs'])
    flag(query, name, false);
  for (const name of IGNORED_TEXT) for (const value of query.getAll(name)) text(name, value);
  if (query.has('callback'))
    throw bad(
      'callback',
      query.get('callback'),
      'voxd answers in the response and calls no URL; leave callback out',
    );
  const encoding = encodingOf(query.get('encoding'));
  const split = query.get('utt_split');
  const uttSplit = split === null ? 0.8 : Number(split);
  if (!(uttSplit > 0 && uttSplit <= 60)) throw bad('utt_split', split, 'expected seconds from 0 to 60');
  return {
    model: query.get('model') ?? undefined,
    encoding,
    sampleRate: sampleRateOf(query, encoding),
    channels: integer(query, 'channels', 1, 1, 8),
    utterances: flag(query, 'utterances', false),
    uttSplitMs: uttSplit * 1000,
  };
}
