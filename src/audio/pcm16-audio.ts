/**
 * Audio that an engine made as PCM16 (flite and espeak-ng write 16-bit WAV): it crosses from the
 * runner to the server as 2 bytes a sample rather than 4, and a WAV or PCM answer sends those
 * bytes untouched, so the main thread neither converts it to floats nor back (issue 27). The float
 * `samples` are made the first time something reads them (a resampler, an encoder through ffmpeg),
 * with the same values the WAV decoder would give (v / 32768); from then on `pcm16` is gone, since
 * whoever read the floats may change them, and encoders must then use the floats.
 */
import type { Audio } from './types.js';

export function pcm16Audio(pcm16: Int16Array, sampleRate: number, channels: number): Audio {
  const audio = { sampleRate, channels } as Audio;
  Object.defineProperty(audio, 'pcm16', { value: pcm16, configurable: true, enumerable: false });
  Object.defineProperty(audio, 'samples', {
    enumerable: true,
    configurable: true,
    get(): Float32Array {
      const samples = new Float32Array(pcm16.length);
      for (let i = 0; i < pcm16.length; i++) samples[i] = pcm16[i]! / 32768;
      settle(samples);
      return samples;
    },
    set(samples: Float32Array) {
      settle(samples);
    },
  });
  const settle = (samples: Float32Array) => {
    Object.defineProperty(audio, 'samples', {
      value: samples,
      enumerable: true,
      writable: true,
      configurable: true,
    });
    delete (audio as { pcm16?: Int16Array }).pcm16;
  };
  return audio;
}

/** Several PCM16 pieces of one format as one, still PCM16 (a sentence-by-sentence answer, whole). */
export function joinPcm16(parts: Audio[]): Audio | undefined {
  if (!parts.every((p) => p.pcm16)) return undefined;
  const pcm16 = new Int16Array(parts.reduce((n, p) => n + p.pcm16!.length, 0));
  let at = 0;
  for (const part of parts) {
    pcm16.set(part.pcm16!, at);
    at += part.pcm16!.length;
  }
  return pcm16Audio(pcm16, parts[0]!.sampleRate, parts[0]!.channels);
}
