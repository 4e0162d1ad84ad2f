/**
 * The in-memory audio representation shared by every engine and endpoint: float samples,
 * interleaved by channel (frame 0 ch 0, frame 0 ch 1, frame 1 ch 0, ...), nominally in [-1, 1].
 * Named `Audio` rather than `AudioBuffer` so it cannot be confused with the DOM type.
 */
export interface Audio {
  /** Interleaved samples; length is frames * channels. */
  samples: Float32Array;
  /** Frames per second, a positive integer. */
  sampleRate: number;
  /** Samples per frame, a positive integer. */
  channels: number;
  /**
   * The same samples as PCM16, when an engine made them so (pcm16-audio.ts): encoders send these
   * bytes as they are, and `samples` are made only if something reads them. Never enumerable, so a
   * spread or a structured clone of the audio does not carry it.
   */
  readonly pcm16?: Int16Array;
}

/** Number of whole frames (a trailing partial frame, which a valid Audio never has, is ignored). */
export function frameCount(audio: Audio): number {
  return audio.channels > 0 ? Math.floor((audio.pcm16 ?? audio.samples).length / audio.channels) : 0;
}

/** Duration in milliseconds (fractional); 0 for a degenerate rate or channel count. */
export function durationMs(audio: Audio): number {
  if (!(audio.sampleRate > 0)) return 0;
  return (frameCount(audio) / audio.sampleRate) * 1000;
}

/** Whether this machine stores numbers little-endian, as WAV does: typed arrays can then read WAV samples directly. */
export const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
