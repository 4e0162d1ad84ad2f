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

/**
 * Audio as it crosses to a thread: a structured clone reads `samples` (an enumerable getter) and
 * would make the floats here, on the sending side; the plain form carries the PCM16 instead, and
 * `fromPlain` on the other side gives the same lazy audio back.
 */
export type PlainAudio = { pcm16?: Int16Array; samples?: Float32Array; sampleRate: number; channels: number };

export function toPlain(audio: Audio): PlainAudio {
  const { sampleRate, channels } = audio;
  return audio.pcm16
    ? { pcm16: audio.pcm16, sampleRate, channels }
    : { samples: audio.samples, sampleRate, channels };
}

export function fromPlain({ pcm16, samples, sampleRate, channels }: PlainAudio): Audio {
  return pcm16 ? pcm16Audio(pcm16, sampleRate, channels) : { samples: samples!, sampleRate, channels };
}

/** The buffer a plain audio's samples live in, to transfer it. */
export function plainBuffer(audio: PlainAudio): ArrayBuffer {
  return (audio.pcm16 ?? audio.samples)!.buffer as ArrayBuffer;
}

/** Frames `from` to `to` (counted in samples, whole frames) of `audio`, without a copy; PCM16 stays PCM16. */
export function sliceAudio(audio: Audio, from: number, to: number): Audio {
  const { sampleRate, channels } = audio;
  if (audio.pcm16) return pcm16Audio(audio.pcm16.subarray(from, to), sampleRate, channels);
  return { samples: audio.samples.subarray(from, to), sampleRate, channels };
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
