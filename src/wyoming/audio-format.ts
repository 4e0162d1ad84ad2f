/**
 * Wyoming's audio: `{rate, width, channels}` on audio-start and on each audio-chunk, the payload raw
 * little-endian PCM, signed for widths 2..4 and unsigned for width 1 (as WAV keeps it). Samples go to
 * the runtime as they are, interleaved; it converts them to what the model wants.
 */
import type { Audio } from '../audio/types.js';
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
      `${key}: ${JSON.stringify(value)} is invalid; expected an integer from ${min} to ${max}`,
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

/** A chunk's samples; a payload that is not whole frames is an error. */
export function decodePcm(payload: Buffer, format: PcmFormat): Audio {
  const { width, channels, rate } = format;
  if (payload.length % (width * channels) !== 0)
    throw new WyomingError(
      'invalid_audio',
      `audio-chunk: ${payload.length} bytes are not whole frames of ${channels} channel(s) of ${width} byte(s)`,
    );
  const count = payload.length / width;
  const samples = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const at = i * width;
    samples[i] =
      width === 1
        ? (payload[at]! - 128) / 128
        : width === 2
          ? payload.readInt16LE(at) / 32768
          : width === 3
            ? payload.readIntLE(at, 3) / 8388608
            : payload.readInt32LE(at) / 2147483648;
  }
  return { samples, sampleRate: rate, channels };
}
