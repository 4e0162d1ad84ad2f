/**
 * The input audio formats of a realtime session and their decoding to samples. OpenAI's names come
 * in two shapes: GA `{type: "audio/pcm", rate: 24000}`, `{type: "audio/pcmu"}`, `{type:
 * "audio/pcma"}`, and beta `"pcm16"`, `"g711_ulaw"`, `"g711_alaw"`. OpenAI takes PCM at 24 kHz only;
 * voxd also takes any other `rate` (1000..384000), its extension. G.711 is 8 kHz by definition.
 * Samples are resampled to what the model wants by the runtime, as for any request.
 */
import type { Audio } from '../../audio/types.js';

export type Encoding = 'pcm16' | 'g711_ulaw' | 'g711_alaw';

export interface InputFormat {
  encoding: Encoding;
  /** Frames per second. */
  rate: number;
}

export const DEFAULT_FORMAT: Readonly<InputFormat> = Object.freeze({ encoding: 'pcm16', rate: 24000 });

/** The GA type names of each encoding. */
export const GA_TYPES: Record<string, Encoding> = {
  'audio/pcm': 'pcm16',
  'audio/pcmu': 'g711_ulaw',
  'audio/pcma': 'g711_alaw',
};

/** The GA format object of a format, as the session events show it. */
export function gaFormat(format: InputFormat): { type: string; rate?: number } {
  const type = Object.keys(GA_TYPES).find((name) => GA_TYPES[name] === format.encoding)!;
  return format.encoding === 'pcm16' ? { type, rate: format.rate } : { type };
}

/** Bytes of one sample of the encoding. */
export const bytesPerSample = (encoding: Encoding): number => (encoding === 'pcm16' ? 2 : 1);

/** ITU-T G.711 µ-law and A-law expansions, as tables: one lookup a byte. */
const ULAW = new Float32Array(256);
const ALAW = new Float32Array(256);
for (let i = 0; i < 256; i++) {
  const u = ~i & 0xff;
  const exponent = (u >> 4) & 7;
  const magnitude = (((u & 0x0f) << 3) + 0x84) << exponent;
  ULAW[i] = ((u & 0x80 ? 0x84 - magnitude : magnitude - 0x84) / 32768) as number;
  const a = i ^ 0x55;
  const segment = (a >> 4) & 7;
  const mantissa = a & 0x0f;
  const value = segment === 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (segment - 1);
  ALAW[i] = (a & 0x80 ? value : -value) / 32768;
}

/** Mono samples of `bytes` in `format`; a pcm16 odd trailing byte is the caller's to keep. */
export function decodeSamples(bytes: Uint8Array, encoding: Encoding): Float32Array {
  if (encoding === 'pcm16') {
    const count = bytes.length >> 1;
    const out = new Float32Array(count);
    const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
    for (let i = 0; i < count; i++) out[i] = view.getInt16(i * 2, true) / 32768;
    return out;
  }
  const table = encoding === 'g711_ulaw' ? ULAW : ALAW;
  const out = new Float32Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = table[bytes[i]!]!;
  return out;
}

/** The buffered pieces as one mono Audio at the format's rate. */
export function joinAudio(pieces: readonly Float32Array[], rate: number): Audio {
  const total = pieces.reduce((n, p) => n + p.length, 0);
  const samples = new Float32Array(total);
  let at = 0;
  for (const piece of pieces) {
    samples.set(piece, at);
    at += piece.length;
  }
  return { samples, sampleRate: rate, channels: 1 };
}
