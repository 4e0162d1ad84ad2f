/**
 * Raw sample bytes to float samples in [-1, 1], for every front end that receives them: WAV data
 * (wav-decode.ts and the audio worker), the live HTTP body, realtime appends (PCM16 and G.711) and
 * Wyoming chunks. One tight loop per encoding rather than a per-sample reader callback, because
 * this runs over every sample of every input. Callers that hold the event loop convert in slices
 * (realtime and Wyoming: issue 38); these functions convert what they are given.
 */
import { HOST_LITTLE_ENDIAN } from './types.js';

/** How samples are stored: little-endian, 8-bit unsigned (silence at 128), 16/24/32-bit signed, or 32/64-bit float. */
export interface PcmEncoding {
  bits: number;
  float: boolean;
  /** Interleaved channels: only whole frames are decoded. */
  channels: number;
}

/**
 * Decodes the whole frames of `data` (a trailing partial frame is ignored) into `into` at `offset`,
 * or into a new array. Float input beyond full scale is clamped and NaN becomes 0.
 */
export function decodePcm(
  data: Uint8Array,
  encoding: PcmEncoding,
  into?: Float32Array,
  offset = 0,
): Float32Array {
  const { channels, bits, float } = encoding;
  const width = bits / 8;
  const n = Math.floor(data.byteLength / (width * channels)) * channels;
  const out = into ?? new Float32Array(n);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);

  if (float && bits === 32) {
    for (let i = offset, p = 0; i < offset + n; i++, p += 4) out[i] = clampUnit(view.getFloat32(p, true));
  } else if (float) {
    for (let i = offset, p = 0; i < offset + n; i++, p += 8) out[i] = clampUnit(view.getFloat64(p, true));
  } else if (bits === 8) {
    for (let i = offset, p = 0; i < offset + n; i++, p++) out[i] = (view.getUint8(p) - 128) / 128;
  } else if (bits === 16 && HOST_LITTLE_ENDIAN && data.byteOffset % 2 === 0) {
    // The common case (PCM16 on a little-endian host, the data 2-byte aligned): a typed-array read
    // costs about half the DataView's.
    pcm16ToFloats(new Int16Array(data.buffer, data.byteOffset, n), out, offset);
  } else if (bits === 16) {
    for (let i = offset, p = 0; i < offset + n; i++, p += 2) out[i] = view.getInt16(p, true) / 32768;
  } else if (bits === 24) {
    for (let i = offset, p = 0; i < offset + n; i++, p += 3) {
      const u = view.getUint8(p) | (view.getUint8(p + 1) << 8) | (view.getUint8(p + 2) << 16);
      out[i] = ((u << 8) >> 8) / 8388608; // shift up and back to sign-extend bit 23
    }
  } else {
    for (let i = offset, p = 0; i < offset + n; i++, p += 4) out[i] = view.getInt32(p, true) / 2147483648;
  }
  return out;
}

/** 16-bit samples in this machine's order (an engine's output, pcm16-audio.ts) as floats (v / 32768). */
export function pcm16ToFloats(pcm16: Int16Array, into?: Float32Array, offset = 0): Float32Array {
  const out = into ?? new Float32Array(pcm16.length);
  for (let i = 0; i < pcm16.length; i++) out[offset + i] = pcm16[i]! / 32768;
  return out;
}

/** Frames decoded at a time by decodePcmMono: its scratch is this many frames of every channel. */
const MONO_BLOCK_FRAMES = 4096;

/**
 * Whole frames of `data` averaged to one channel as they are decoded, so that a wide input (384 kHz,
 * 8 channels) never exists as floats of its own shape (Wyoming: probe 2026-12, F9). The values are
 * exactly toMono's (convert.ts) of decodePcm's.
 */
export function decodePcmMono(data: Uint8Array, encoding: PcmEncoding): Float32Array {
  const { channels } = encoding;
  if (channels === 1) return decodePcm(data, encoding);
  const frameBytes = (encoding.bits / 8) * channels;
  const frames = Math.floor(data.byteLength / frameBytes);
  const out = new Float32Array(frames);
  if (!encoding.float && (encoding.bits === 16 || encoding.bits === 32))
    return intPcmMono(data, encoding.bits, channels, out);
  const block = new Float32Array(Math.min(frames, MONO_BLOCK_FRAMES) * channels);
  for (let first = 0; first < frames; first += MONO_BLOCK_FRAMES) {
    const count = Math.min(MONO_BLOCK_FRAMES, frames - first);
    decodePcm(data.subarray(first * frameBytes, (first + count) * frameBytes), encoding, block);
    for (let f = 0, p = 0; f < count; f++) {
      let sum = 0;
      for (let c = 0; c < channels; c++, p++) sum += block[p]!;
      out[first + f] = sum / channels;
    }
  }
  return out;
}

/**
 * decodePcmMono's common wide inputs (16- and 32-bit integers) in one pass: each sample is read,
 * rounded to float32 as decodePcm stores it, and summed into its frame, so the values are the same
 * as the block path's without writing every channel out first (4x faster for 8 channels of 32 bits).
 */
function intPcmMono(data: Uint8Array, bits: 16 | 32, channels: number, out: Float32Array): Float32Array {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const width = bits / 8;
  const scale = bits === 16 ? 32768 : 2147483648;
  for (let f = 0, p = 0; f < out.length; f++) {
    let sum = 0;
    for (let c = 0; c < channels; c++, p += width)
      sum += Math.fround((bits === 16 ? view.getInt16(p, true) : view.getInt32(p, true)) / scale);
    out[f] = sum / channels;
  }
  return out;
}

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

/** G.711 bytes (one sample each, mono) as floats. */
export function decodeG711(bytes: Uint8Array, law: 'ulaw' | 'alaw'): Float32Array {
  const table = law === 'ulaw' ? ULAW : ALAW;
  const out = new Float32Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = table[bytes[i]!]!;
  return out;
}

/**
 * Float input may hold values beyond full scale, or NaN/Infinity in a corrupt file; clamped so
 * every decoded sample honours the [-1, 1] contract that engines and the resampler rely on.
 */
function clampUnit(v: number): number {
  return v > 1 ? 1 : v >= -1 ? v : v < -1 ? -1 : 0;
}
