/**
 * silero marks speech with a lag of about 100-150 ms at the end (its probabilities fall behind the
 * signal), so each segment is tightened to where its energy really is: the first and last 10 ms
 * frame louder than 5 % of the segment's loud (90th percentile) level. Segments only shrink.
 */
const FRAME = 160;
const RELATIVE = 0.05;
const FLOOR = 0.001;

function rms(samples: Float32Array, from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += samples[i]! * samples[i]!;
  return to > from ? Math.sqrt(sum / (to - from)) : 0;
}

export function refineSegment(
  samples: Float32Array,
  start: number,
  end: number,
): { start: number; end: number } {
  const levels: number[] = [];
  for (let i = start; i < end; i += FRAME) levels.push(rms(samples, i, Math.min(end, i + FRAME)));
  if (levels.length === 0) return { start, end };
  const loud = [...levels].sort((a, b) => a - b)[Math.floor(levels.length * 0.9)]!;
  const threshold = Math.max(FLOOR, loud * RELATIVE);
  const first = levels.findIndex((level) => level >= threshold);
  if (first < 0) return { start, end };
  let last = levels.length - 1;
  while (last > first && levels[last]! < threshold) last--;
  return { start: start + first * FRAME, end: Math.min(end, start + (last + 1) * FRAME) };
}
