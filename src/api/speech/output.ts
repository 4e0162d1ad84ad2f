/**
 * The audio a speech request answers with: its format (WAV and PCM made in-process; MP3, Opus,
 * AAC and FLAC through ffmpeg), its sample rate (`sample_rate`, resampled), whole or as it is made.
 */
import { conformAudioAsync } from '../../audio/audio-pool.js';
import { StreamResampler } from '../../audio/convert.js';
import {
  type Codec,
  contentTypeOf,
  type Encoder,
  SPEECH_ENCODINGS,
  type SpeechEncoding,
} from '../../audio/ffmpeg.js';
import { floats } from '../../audio/pcm16-audio.js';
import { type Audio, frameCount } from '../../audio/types.js';
import { MAX_SAMPLE_RATE, MIN_SAMPLE_RATE } from '../../audio/wav-decode.js';
import { encodePcm16, encodeWav } from '../../audio/wav-encode.js';
import type { ServerConfig } from '../../config/types.js';
import { invalidField, showValue } from '../../errors.js';
import { type Fields, optionalEnum } from '../fields.js';

export const SPEECH_FORMATS = ['wav', 'pcm', ...SPEECH_ENCODINGS, 'json', 'b64_json'] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];
/** What a stream can carry: raw PCM16, or encoded bytes as the encoder makes them. */
const STREAM_FORMATS = ['pcm', ...SPEECH_ENCODINGS] as const;
type StreamedFormat = (typeof STREAM_FORMATS)[number];

/**
 * The rate of OpenAI's `pcm`: 24 kHz 16-bit mono, which its clients hard-code (LiveKit's
 * `OPENAI_TTS_SAMPLE_RATE`, the SDKs' players). Headerless audio carries no rate to read.
 */
export const OPENAI_PCM_RATE = 24_000;

export interface SpeechOutput {
  format: SpeechFormat;
  /** Resample the model's audio to this rate; undefined keeps the model's own. */
  sampleRate?: number;
}

function isEncoding(format: string): format is SpeechEncoding {
  return (SPEECH_ENCODINGS as readonly string[]).includes(format);
}

/**
 * response_format (default: default_speech_format; a stream's default is pcm unless that is a
 * compressed format) and sample_rate, checked before any work: a compressed format this server
 * cannot encode is a 400 now, not after the synthesis. `pcm` without a sample_rate is at
 * `pcmRate` when one is given (OpenAI's route: OPENAI_PCM_RATE), else at the model's own rate.
 */
export function parseSpeechOutput(
  body: Fields,
  config: Pick<ServerConfig, 'default_speech_format'>,
  codec: Codec,
  streaming: boolean,
  pcmRate?: number,
): SpeechOutput {
  const fallback = config.default_speech_format;
  const format =
    optionalEnum(body, 'response_format', SPEECH_FORMATS) ??
    (streaming && !isEncoding(fallback) ? 'pcm' : fallback);
  if (streaming && !(STREAM_FORMATS as readonly string[]).includes(format))
    throw invalidField(
      'response_format',
      `response_format: "${format}" is invalid for a streamed response; expected one of: ${STREAM_FORMATS.join(', ')}`,
    );
  if (isEncoding(format) && !codec.info.encodings.includes(format))
    throw invalidField(
      'response_format',
      `response_format: "${format}" needs ffmpeg with its encoder, which this server does not have (install ffmpeg or set ffmpeg_path); wav and pcm always work`,
    );
  const raw = body['sample_rate'];
  if (raw === undefined || raw === null)
    return format === 'pcm' && pcmRate !== undefined ? { format, sampleRate: pcmRate } : { format };
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < MIN_SAMPLE_RATE || raw > MAX_SAMPLE_RATE)
    throw invalidField(
      'sample_rate',
      `sample_rate: ${showValue(raw)} is invalid; expected an integer in ${MIN_SAMPLE_RATE}..${MAX_SAMPLE_RATE}`,
    );
  return { format, sampleRate: raw };
}

/** The whole answer: bytes and their Content-Type (json/b64_json are the caller's). */
export async function encodeSpeech(
  audio: Audio,
  output: SpeechOutput,
  codec: Codec,
  signal: AbortSignal,
): Promise<{ body: Buffer; contentType: string; audio: Audio }> {
  const out = output.sampleRate
    ? await conformAudioAsync(audio, { sampleRate: output.sampleRate, channels: audio.channels })
    : audio;
  const { format } = output;
  if (isEncoding(format))
    return { body: await codec.encode(format, out, signal), contentType: contentTypeOf(format), audio: out };
  if (format === 'pcm')
    return { body: encodePcm16(out), contentType: 'application/octet-stream', audio: out };
  return { body: encodeWav(out), contentType: 'audio/wav', audio: out };
}

export function streamContentType(format: SpeechFormat): string {
  return isEncoding(format) ? contentTypeOf(format) : 'application/octet-stream';
}

/**
 * Speech pieces in, bytes out in order: PCM16 at once, or through an encoder started with the first
 * piece (which fixes the rate and channels). `sample_rate` resamples a mono stream piece by piece,
 * exactly as the whole would be.
 */
export class SpeechStreamWriter {
  #encoder: Encoder | undefined;
  #resampler: StreamResampler | undefined;
  #rate: number | undefined;

  constructor(
    private readonly output: SpeechOutput,
    private readonly codec: Codec,
    private readonly signal: AbortSignal,
    /** Receives the bytes to send, in order. */
    private readonly send: (bytes: Buffer) => Promise<void>,
  ) {}

  async write(audio: Audio): Promise<void> {
    if (this.output.format === 'pcm' && this.#keepsRate(audio)) {
      // The engine's samples as they are: PCM16 an engine made goes out without a float in between.
      if (frameCount(audio) > 0) await this.send(encodePcm16(audio));
      return;
    }
    const samples = this.#resample(audio);
    if (samples.length === 0) return;
    const piece: Audio = { samples, sampleRate: this.#rate!, channels: audio.channels };
    const format = this.output.format as StreamedFormat;
    if (format === 'pcm') return this.send(encodePcm16(piece));
    this.#encoder ??= await this.codec.openEncoder(format, piece, (chunk) => this.send(chunk), this.signal);
    await this.#encoder.write(samples);
  }

  /** Flushes the resampler and the encoder; resolves once the last byte was sent. */
  async end(): Promise<void> {
    const tail = this.#resampler?.flush();
    if (tail && tail.length > 0) {
      const piece: Audio = { samples: tail, sampleRate: this.#rate!, channels: 1 };
      if (this.output.format === 'pcm') await this.send(encodePcm16(piece));
      else await this.#encoder?.write(tail);
    }
    await this.#encoder?.end();
  }

  /** Stops the encoder (a failed or abandoned stream). */
  close(): void {
    this.#encoder?.kill();
  }

  /** Whether this piece goes out at its own rate (no `sample_rate`, or the engine's). */
  #keepsRate(audio: Audio): boolean {
    const target = this.output.sampleRate;
    this.#rate ??= target ?? audio.sampleRate;
    return target === undefined || target === audio.sampleRate;
  }

  #resample(audio: Audio): Float32Array {
    const target = this.output.sampleRate;
    this.#rate ??= target ?? audio.sampleRate;
    if (target === undefined || target === audio.sampleRate) return floats(audio);
    if (audio.channels !== 1)
      throw invalidField(
        'sample_rate',
        'sample_rate: a streamed answer can be resampled only from a mono model',
      );
    this.#resampler ??= new StreamResampler(audio.sampleRate, target);
    return this.#resampler.push(floats(audio));
  }
}
