/** What pocketsphinx decodes: 16-bit samples, made on the runner from what the server sent it. */
import type { RunnerSamples } from '../runner-samples.js';

/**
 * The decoder's 16-bit input. Floats in [-1, 1] are scaled by 32767; an upload's PCM16 (v) is
 * scaled as its floats (v / 32768) would be, so that the words do not depend on which of the two
 * the server sent.
 */
export function decoderPcm(samples: RunnerSamples): Int16Array {
  const pcm = new Int16Array(samples.length);
  if (samples instanceof Int16Array) {
    // Exact in doubles either way: v * 32767 / 32768 needs 30 bits.
    for (let i = 0; i < samples.length; i++) pcm[i] = Math.round(samples[i]! * (32767 / 32768));
  } else {
    for (let i = 0; i < samples.length; i++)
      pcm[i] = Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767);
  }
  return pcm;
}
