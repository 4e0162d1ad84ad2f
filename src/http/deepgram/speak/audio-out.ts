/**
 * The engine's audio as a `/v1/speak` client asked for it: mono, at the query's rate, as
 * little-endian 16-bit PCM (`linear16`) or G.711 (`mulaw`, `alaw`). One SpeakAudio follows one
 * synthesis: its resampler carries the filter's history from one audio event to the next, so the
 * pieces joined are what the whole would have given, and `end` gives the tail.
 */
import { StreamResampler, toMono } from '../../../audio/convert.js';
import { floats, sliceAudio } from '../../../audio/pcm16-audio.js';
import { type Audio, heldSamples } from '../../../audio/types.js';
import { WAV_HEADER_BYTES, wavHeader } from '../../../audio/wav-encode.js';
import type { SpeakEncoding, SpeakFormat } from './format.js';

export class SpeakAudio {
  readonly #format: SpeakFormat;
  #resampler: StreamResampler | undefined;
  #from: number | undefined;

  constructor(format: SpeakFormat) {
    this.#format = format;
  }

  /** The bytes of one audio event (empty while the resampler still needs more input). */
  write(audio: Audio): Buffer {
    const mono = floats(toMono(audio));
    const target = this.#format.sampleRate;
    this.#from ??= audio.sampleRate;
    if (audio.sampleRate !== this.#from)
      throw new RangeError(
        `the engine's rate changed within one synthesis (${this.#from} -> ${audio.sampleRate})`,
      );
    if (audio.sampleRate === target) return encode(mono, this.#format.encoding);
    this.#resampler ??= new StreamResampler(audio.sampleRate, target);
    return encode(this.#resampler.push(mono), this.#format.encoding);
  }

  /** The last bytes, once the synthesis has ended. */
  end(): Buffer {
    const tail = this.#resampler?.flush();
    return tail && tail.length > 0 ? encode(tail, this.#format.encoding) : Buffer.alloc(0);
  }
}

/**
 * An engine's audio event (a whole sentence for voxd's synthesizers) is converted and sent in
 * slices of this many samples, the event loop free between two: the first bytes go out after one
 * slice's resampling rather than the whole sentence's (measured: 14 ms for 2 s of flite at 24 kHz,
 * the whole of it blocking the loop), and a Clear stops the rest between two slices.
 */
export const SLICE_SAMPLES = 2048;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Converts `piece` through `audio` slice by slice, handing each slice's bytes to `send` (awaited),
 * while `going()` holds.
 */
export async function relayAudio(
  piece: Audio,
  audio: SpeakAudio,
  send: (bytes: Buffer) => Promise<void>,
  going: () => boolean = () => true,
): Promise<void> {
  const length = heldSamples(piece).length;
  const step = SLICE_SAMPLES * piece.channels;
  for (let at = 0; at < length && going(); at += step) {
    if (at > 0) await nextTurn();
    await send(audio.write(sliceAudio(piece, at, at + step)));
  }
}

/** Samples in [-1, 1] as bytes of `encoding`. */
export function encode(samples: Float32Array, encoding: SpeakEncoding): Buffer {
  if (encoding === 'linear16') {
    const out = Buffer.allocUnsafe(samples.length * 2);
    for (let i = 0; i < samples.length; i++) out.writeInt16LE(toInt16(samples[i]!), i * 2);
    return out;
  }
  const law = encoding === 'mulaw' ? muLaw : aLaw;
  const out = Buffer.allocUnsafe(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = law(toInt16(samples[i]!));
  return out;
}

function toInt16(sample: number): number {
  const s = Math.max(-1, Math.min(1, sample));
  return s < 0 ? Math.round(s * 0x8000) : Math.round(s * 0x7fff);
}

const MU_BIAS = 0x84;
const MU_CLIP = 32635;

/** ITU-T G.711 mu-law of a 16-bit sample. */
export function muLaw(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  let magnitude = Math.min(Math.abs(sample), MU_CLIP) + MU_BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (magnitude & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (magnitude >> (exponent + 3)) & 0x0f;
  magnitude = ~(sign | (exponent << 4) | mantissa);
  return magnitude & 0xff;
}

/** ITU-T G.711 A-law of a 16-bit sample. */
export function aLaw(sample: number): number {
  const sign = sample >= 0 ? 0x80 : 0;
  const magnitude = Math.min(sample < 0 ? -sample - 1 : sample, 32767) >> 3;
  let value: number;
  if (magnitude < 32) value = magnitude >> 1;
  else {
    let exponent = 1;
    while (magnitude >> (exponent + 4) > 1 && exponent < 7) exponent++;
    value = (exponent << 4) | ((magnitude >> exponent) & 0x0f);
  }
  return (sign | value) ^ 0x55;
}

/** The WAV header of `dataBytes` of audio in `format` (PCM, or WAVE_FORMAT_ALAW/MULAW with 8 bits). */
export function speakWavHeader(format: SpeakFormat, dataBytes: number): Buffer {
  const header = wavHeader(format.sampleRate, 1, dataBytes);
  if (format.encoding === 'linear16') return header;
  header.writeUInt16LE(format.encoding === 'mulaw' ? 7 : 6, 20);
  header.writeUInt32LE(format.sampleRate, 28);
  header.writeUInt16LE(1, 32);
  header.writeUInt16LE(8, 34);
  header.writeUInt32LE(dataBytes, WAV_HEADER_BYTES - 4);
  header.writeUInt32LE(WAV_HEADER_BYTES - 8 + dataBytes, 4);
  return header;
}
