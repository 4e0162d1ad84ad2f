/**
 * Input audio as it goes to a runner: the upload's own PCM16 when it came so (half the bytes of
 * floats through the pipe, and the floats made on the runner's CPU rather than on the server's main
 * thread, issue 27), floats otherwise. Mono at the model's rate either way; the runner reads it
 * with `floatSamples`, which gives the values the WAV decoder gives (v / 32768).
 */
export type RunnerSamples = Float32Array | Int16Array;

export function floatSamples(samples: RunnerSamples): Float32Array {
  if (samples instanceof Float32Array) return samples;
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = samples[i]! / 32768;
  return out;
}
