/**
 * The input audio formats of a realtime session and their decoding to samples. OpenAI's names come
 * in two shapes: GA `{type: "audio/pcm", rate: 24000}`, `{type: "audio/pcmu"}`, `{type:
 * "audio/pcma"}`, and beta `"pcm16"`, `"g711_ulaw"`, `"g711_alaw"`. OpenAI takes PCM at 24 kHz only;
 * voxd also takes any other `rate` (1000..384000), its extension. G.711 is 8 kHz by definition.
 * Samples are resampled to what the model wants by the runtime, as for any request.
 */
import { decodeG711, decodePcm } from '../../audio/pcm.js';

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

/** Mono samples of `bytes` in `encoding` (audio/pcm.ts); a pcm16 odd trailing byte is the caller's to keep. */
export function decodeSamples(bytes: Uint8Array, encoding: Encoding): Float32Array {
  if (encoding === 'pcm16') return decodePcm(bytes, PCM16_MONO);
  return decodeG711(bytes, encoding === 'g711_ulaw' ? 'ulaw' : 'alaw');
}

const PCM16_MONO = { bits: 16, float: false, channels: 1 } as const;
