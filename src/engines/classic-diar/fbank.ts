/**
 * Log-mel filterbank features and the classical speaker embedding built on them, in plain
 * TypeScript: 16 kHz input, 25 ms Hann window, 10 ms hop, 512-point FFT, 80 triangular bands
 * evenly spaced on the mel scale from 20 Hz to 8 kHz (Kaldi's layout). The embedding is the
 * statistics vector of engines.md §4: [mean − mean(mean), std − mean(std)] of the log-mel frames
 * over time, 160 dims, L2-normalised. Centring each half makes it independent of overall gain.
 */
export const SAMPLE_RATE = 16000;
export const NUM_BANDS = 80;
export const FRAME_LENGTH = 400; // 25 ms
export const FRAME_SHIFT = 160; // 10 ms
export const FFT_SIZE = 512;
export const EMBEDDING_DIM = 2 * NUM_BANDS;
const LOW_HZ = 20;
const PREEMPHASIS = 0.97;
/** Kaldi's floor under the mel energies (float epsilon), so digital silence stays finite. */
const LOG_FLOOR = 1.1920929e-7;
/** Frames this far below the span's loud level are left out of the statistics (20-40 measured alike). */
const DROP_DB = 30;

/** In-place iterative radix-2 complex FFT; `re.length` must be a power of two. */
export function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j]!, re[i]!];
      [im[i], im[j]] = [im[j]!, im[i]!];
    }
  }
  for (let size = 2; size <= n; size <<= 1) {
    const half = size >> 1;
    const step = (-2 * Math.PI) / size;
    for (let k = 0; k < half; k++) {
      const wr = Math.cos(step * k);
      const wi = Math.sin(step * k);
      for (let start = 0; start < n; start += size) {
        const a = start + k;
        const b = a + half;
        const tr = re[b]! * wr - im[b]! * wi;
        const ti = re[b]! * wi + im[b]! * wr;
        re[b] = re[a]! - tr;
        im[b] = im[a]! - ti;
        re[a] = re[a]! + tr;
        im[a] = im[a]! + ti;
      }
    }
  }
}

const mel = (hz: number) => 1127 * Math.log(1 + hz / 700);

/** One triangular filter: its first FFT bin and its weights from there on. */
export interface MelFilter {
  first: number;
  weights: Float64Array;
}

/** The mel filters over the FFT bins 0..FFT_SIZE/2. */
export function melFilters(
  bands = NUM_BANDS,
  rate = SAMPLE_RATE,
  fftSize = FFT_SIZE,
  lowHz = LOW_HZ,
  highHz = rate / 2,
): MelFilter[] {
  const low = mel(lowHz);
  const delta = (mel(highHz) - low) / (bands + 1);
  const filters: MelFilter[] = [];
  for (let b = 0; b < bands; b++) {
    const left = low + b * delta;
    const center = left + delta;
    const right = center + delta;
    let first = -1;
    const weights: number[] = [];
    for (let k = 0; k <= fftSize / 2; k++) {
      const m = mel((k * rate) / fftSize);
      const w = m > left && m < right ? (m <= center ? (m - left) / delta : (right - m) / delta) : 0;
      if (w > 0) {
        if (first < 0) first = k;
        weights[k - first] = w;
      } else if (first >= 0) break;
    }
    filters.push({ first: Math.max(first, 0), weights: Float64Array.from(weights) });
  }
  return filters;
}

const FILTERS = melFilters();
const WINDOW = Float64Array.from(
  { length: FRAME_LENGTH },
  (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (FRAME_LENGTH - 1)),
);

/** Number of whole frames in `length` samples (frames never run past the end). */
export function frameCount(length: number): number {
  return length < FRAME_LENGTH ? 0 : Math.floor((length - FRAME_LENGTH) / FRAME_SHIFT) + 1;
}

/**
 * Log-mel features of `samples[start, end)`: `frames` rows of NUM_BANDS values, row-major.
 * Each frame has its DC offset removed, is pre-emphasised (0.97), windowed and transformed.
 */
export function logMel(
  samples: Float32Array,
  start = 0,
  end = samples.length,
): { frames: number; data: Float32Array } {
  const frames = frameCount(end - start);
  const data = new Float32Array(frames * NUM_BANDS);
  const re = new Float64Array(FFT_SIZE);
  const im = new Float64Array(FFT_SIZE);
  const power = new Float64Array(FFT_SIZE / 2 + 1);
  for (let f = 0; f < frames; f++) {
    const offset = start + f * FRAME_SHIFT;
    let dc = 0;
    for (let i = 0; i < FRAME_LENGTH; i++) dc += samples[offset + i]!;
    dc /= FRAME_LENGTH;
    re.fill(0);
    im.fill(0);
    let previous = samples[offset]! - dc;
    for (let i = 0; i < FRAME_LENGTH; i++) {
      const x = samples[offset + i]! - dc;
      re[i] = (x - PREEMPHASIS * previous) * WINDOW[i]!;
      previous = x;
    }
    fft(re, im);
    for (let k = 0; k < power.length; k++) power[k] = re[k]! * re[k]! + im[k]! * im[k]!;
    for (let b = 0; b < NUM_BANDS; b++) {
      const { first, weights } = FILTERS[b]!;
      let energy = 0;
      for (let i = 0; i < weights.length; i++) energy += weights[i]! * power[first + i]!;
      data[f * NUM_BANDS + b] = Math.log(Math.max(energy, LOG_FLOOR));
    }
  }
  return { frames, data };
}

/**
 * The frames within DROP_DB of the span's loud level (its 90th-percentile frame energy): pauses
 * between words carry no voice, and counting them made within-speaker similarity worse.
 */
export function loudFrames(data: Float32Array, frames: number, dropDb = DROP_DB): number[] {
  const energy = new Float64Array(frames);
  for (let f = 0; f < frames; f++) {
    let sum = 0;
    for (let b = 0; b < NUM_BANDS; b++) sum += Math.exp(data[f * NUM_BANDS + b]!);
    energy[f] = Math.log(sum);
  }
  const loud = Float64Array.from(energy).sort()[Math.floor(frames * 0.9)]!;
  const floor = loud - (dropDb / 10) * Math.LN10;
  const kept: number[] = [];
  for (let f = 0; f < frames; f++) if (energy[f]! >= floor) kept.push(f);
  return kept;
}

/**
 * The statistics embedding of `samples[start, end)`, L2-normalised; null when the span is shorter
 * than one frame or carries no variation at all (digital silence).
 */
export function embed(samples: Float32Array, start = 0, end = samples.length): Float32Array | null {
  const { frames, data } = logMel(samples, start, end);
  if (frames === 0) return null;
  const kept = loudFrames(data, frames);
  const mean = new Float64Array(NUM_BANDS);
  const std = new Float64Array(NUM_BANDS);
  for (const f of kept) for (let b = 0; b < NUM_BANDS; b++) mean[b] = mean[b]! + data[f * NUM_BANDS + b]!;
  for (let b = 0; b < NUM_BANDS; b++) mean[b] = mean[b]! / kept.length;
  for (const f of kept)
    for (let b = 0; b < NUM_BANDS; b++) {
      const d = data[f * NUM_BANDS + b]! - mean[b]!;
      std[b] = std[b]! + d * d;
    }
  for (let b = 0; b < NUM_BANDS; b++) std[b] = Math.sqrt(std[b]! / kept.length);
  const meanOfMean = mean.reduce((s, x) => s + x, 0) / NUM_BANDS;
  const meanOfStd = std.reduce((s, x) => s + x, 0) / NUM_BANDS;
  const out = new Float32Array(EMBEDDING_DIM);
  let norm = 0;
  for (let b = 0; b < NUM_BANDS; b++) {
    const m = mean[b]! - meanOfMean;
    const s = std[b]! - meanOfStd;
    out[b] = m;
    out[NUM_BANDS + b] = s;
    norm += m * m + s * s;
  }
  if (!(norm > 1e-12)) return null;
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < EMBEDDING_DIM; i++) out[i] = out[i]! * scale;
  return out;
}
