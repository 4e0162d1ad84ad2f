/**
 * Audio that an engine made as PCM16 (flite and espeak-ng write 16-bit WAV), or a 16-bit upload:
 * it crosses from the runner to the server as 2 bytes a sample rather than 4, and a WAV or PCM
 * answer sends those bytes untouched, so the main thread neither converts it to floats nor back
 * (issue 27). The floats are made by `floats`, once, where something needs them (a resampler, an
 * encoder through ffmpeg), with the same values the WAV decoder would give (v / 32768); a caller
 * that reads them more than once, or hands them on, keeps them (`asFloat`).
 */
import { joinSamples } from './join-samples.js';
import { pcm16ToFloats } from './pcm.js';
import type { Audio, FloatAudio, Pcm16Audio } from './types.js';

export function pcm16Audio(pcm16: Int16Array, sampleRate: number, channels: number): Pcm16Audio {
  return { kind: 'pcm16', pcm16, sampleRate, channels };
}

/** The float samples of `audio`: its own for float audio, a new conversion (a cost) for PCM16. */
export function floats(audio: Audio): Float32Array {
  return audio.kind === 'pcm16' ? pcm16ToFloats(audio.pcm16) : audio.samples;
}

/** `audio` as float audio: itself when it is, else its samples converted once. */
export function asFloat(audio: Audio): FloatAudio {
  if (audio.kind !== 'pcm16') return audio;
  return { samples: pcm16ToFloats(audio.pcm16), sampleRate: audio.sampleRate, channels: audio.channels };
}

/** Frames `from` to `to` (counted in samples, whole frames) of `audio`, without a copy; PCM16 stays PCM16. */
export function sliceAudio(audio: Audio, from: number, to: number): Audio {
  const { sampleRate, channels } = audio;
  if (audio.kind === 'pcm16') return pcm16Audio(audio.pcm16.subarray(from, to), sampleRate, channels);
  return { samples: audio.samples.subarray(from, to), sampleRate, channels };
}

/** Several PCM16 pieces of one format as one, still PCM16 (a sentence-by-sentence answer, whole). */
export function joinPcm16(parts: readonly Audio[]): Pcm16Audio | undefined {
  const pieces: Int16Array[] = [];
  for (const part of parts) {
    if (part.kind !== 'pcm16') return undefined;
    pieces.push(part.pcm16);
  }
  const pcm16 = new Int16Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const piece of pieces) {
    pcm16.set(piece, at);
    at += piece.length;
  }
  return pcm16Audio(pcm16, parts[0]!.sampleRate, parts[0]!.channels);
}

/**
 * Pieces of one format as one: PCM16 stays PCM16 when every piece is; otherwise floats, each piece
 * converted once. One piece is returned as it is.
 */
export function joinAudio(parts: readonly Audio[]): Audio | undefined {
  const first = parts[0];
  if (!first || parts.length === 1) return first;
  return (
    joinPcm16(parts) ?? {
      samples: joinSamples(parts.map(floats)),
      sampleRate: first.sampleRate,
      channels: first.channels,
    }
  );
}
