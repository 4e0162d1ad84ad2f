/**
 * The in-memory audio representation shared by every engine and endpoint: samples interleaved by
 * channel (frame 0 ch 0, frame 0 ch 1, frame 1 ch 0, ...). Named `Audio` rather than `AudioBuffer`
 * so it cannot be confused with the DOM type. Two kinds, and the type says which: float samples,
 * or 16-bit samples as an engine made them (pcm16-audio.ts), whose floats cost a conversion that
 * `floats(audio)` makes where they are read. Both are plain data: a spread or a structured clone
 * (to a worker thread) keeps the kind.
 */
export type Audio = FloatAudio | Pcm16Audio;

/** Float samples, nominally in [-1, 1]. `kind` may be left out: float is what audio is unless it says otherwise. */
export interface FloatAudio {
  readonly kind?: 'f32';
  /** Interleaved samples; length is frames * channels. */
  samples: Float32Array;
  /** Frames per second, a positive integer. */
  sampleRate: number;
  /** Samples per frame, a positive integer. */
  channels: number;
  pcm16?: undefined;
}

/**
 * 16-bit samples (an engine's output, a 16-bit WAV upload): encoders send these bytes as they are,
 * and the floats are made only where something needs them (`floats`).
 */
export interface Pcm16Audio {
  readonly kind: 'pcm16';
  /** Interleaved samples in this machine's byte order; the value v stands for v / 32768. */
  pcm16: Int16Array;
  sampleRate: number;
  channels: number;
  samples?: undefined;
}

/** The samples as they are held, 16-bit or float, each interleaved (a thread transfer, a length). */
export function heldSamples(audio: Audio): Int16Array | Float32Array {
  return audio.kind === 'pcm16' ? audio.pcm16 : audio.samples;
}

/** Number of whole frames (a trailing partial frame, which a valid Audio never has, is ignored). */
export function frameCount(audio: Audio): number {
  return audio.channels > 0 ? Math.floor(heldSamples(audio).length / audio.channels) : 0;
}

/** Duration in milliseconds (fractional); 0 for a degenerate rate or channel count. */
export function durationMs(audio: Audio): number {
  if (!(audio.sampleRate > 0)) return 0;
  return (frameCount(audio) / audio.sampleRate) * 1000;
}

/** Whether this machine stores numbers little-endian, as WAV does: typed arrays can then read WAV samples directly. */
export const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
