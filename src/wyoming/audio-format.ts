/**
 * Wyoming's audio: `{rate, width, channels}` on audio-start and on each audio-chunk, the payload raw
 * little-endian PCM, signed for widths 2..4 and unsigned for width 1 (as WAV keeps it).
 */
import { decodePcmMono } from '../audio/pcm.js';
import { showValue } from '../errors.js';
import { WyomingError } from './framing.js';

export interface PcmFormat {
  rate: number;
  width: number;
  channels: number;
}

function field(data: Record<string, unknown>, key: string, min: number, max: number): number {
  const value = data[key];
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max)
    throw new WyomingError(
      'invalid_audio',
      `${key}: ${showValue(value)} is invalid; expected an integer from ${min} to ${max}`,
    );
  return value as number;
}

/** The format an audio-start or audio-chunk declares. */
export function pcmFormat(data: Record<string, unknown>): PcmFormat {
  return {
    rate: field(data, 'rate', 1000, 384_000),
    width: field(data, 'width', 1, 4),
    channels: field(data, 'channels', 1, 8),
  };
}

/** Whole frames in `payload`; a payload that is not whole frames is an error. */
export function frameCount(payload: Buffer, format: PcmFormat): number {
  const { width, channels } = format;
  if (payload.length % (width * channels) !== 0)
    throw new WyomingError(
      'invalid_audio',
      `audio-chunk: ${payload.length} bytes are not whole frames of ${channels} channel(s) of ${width} byte(s)`,
    );
  return payload.length / (width * channels);
}

/**
 * A chunk's samples averaged to one channel as they are read (audio/pcm.ts, decodePcmMono), so that
 * a wide format (384 kHz, 8 channels) never exists as Float32 of its own shape: 4 bytes per sample
 * of every channel was 4x an 8-bit chunk, and a whole utterance of them took gigabytes (probe
 * 2026-12, F9). The result is exactly `toMono` of the interleaved samples.
 */
export function decodeMono(payload: Buffer, format: PcmFormat): Float32Array {
  frameCount(payload, format);
  return decodePcmMono(payload, { bits: format.width * 8, float: false, channels: format.channels });
}
