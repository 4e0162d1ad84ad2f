/** Small helpers for audio samples that tests build from synthesised speech. */

/** First and last sample above a small amplitude: where the synthesised speech really is. */
export function speechBounds(samples: Float32Array): [number, number] {
  let first = 0;
  let last = samples.length - 1;
  while (first < samples.length && Math.abs(samples[first]!) < 0.01) first++;
  while (last > first && Math.abs(samples[last]!) < 0.01) last--;
  return [first, last + 1];
}

/** The parts one after another, in one new array. */
export function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
