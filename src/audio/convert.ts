import { floats } from './pcm16-audio.js';
import { type Audio, frameCount } from './types.js';

/** Averages all channels into one. Mono input is returned as is (not copied). */
export function toMono(audio: Audio): Audio {
  const { channels } = audio;
  if (channels === 1) return audio;
  const samples = floats(audio);
  const frames = frameCount(audio);
  const out = new Float32Array(frames);
  for (let f = 0, p = 0; f < frames; f++) {
    let sum = 0;
    for (let c = 0; c < channels; c++, p++) sum += samples[p]!;
    out[f] = sum / channels;
  }
  return { samples: out, sampleRate: audio.sampleRate, channels: 1 };
}

/** Copies a mono signal into every one of `channels` channels. */
export function duplicateMono(audio: Audio, channels: number): Audio {
  if (audio.channels !== 1)
    throw new RangeError(`duplicateMono needs mono audio, got ${audio.channels} channels`);
  if (channels === 1) return audio;
  const samples = floats(audio);
  const frames = samples.length;
  const out = new Float32Array(frames * channels);
  for (let f = 0, p = 0; f < frames; f++) {
    const v = samples[f]!;
    for (let c = 0; c < channels; c++, p++) out[p] = v;
  }
  return { samples: out, sampleRate: audio.sampleRate, channels };
}

/**
 * Brings audio to what a model needs: channels first (downmixing before resampling means less to resample),
 * then the rate, then duplication of mono to more channels (after resampling, for the same reason).
 * Same channel count: kept. Need 1: averaged to mono. Otherwise (say 4 -> 2) it goes through mono, since
 * no channel layout is known to map one onto the other.
 */
export function conformAudio(audio: Audio, need: { sampleRate: number; channels: number }): Audio {
  if (!Number.isInteger(need.channels) || need.channels < 1) {
    throw new RangeError(`invalid channel count ${need.channels}`);
  }
  const keep = audio.channels === need.channels;
  const mixed = keep ? audio : toMono(audio);
  const resampled = resample(mixed, need.sampleRate);
  return keep ? resampled : duplicateMono(resampled, need.channels);
}

/**
 * Resamples every channel to `targetRate` with band-limited (Kaiser-windowed sinc) interpolation.
 * The output has round(frames * targetRate / sampleRate) frames; equal rates return the input unchanged.
 * The low-pass sits just under the lower rate's Nyquist frequency, so downsampling does not alias and
 * upsampling does not image. Samples beyond either end are taken as silence.
 */
export function resample(audio: Audio, targetRate: number): Audio {
  const src = audio.sampleRate;
  checkRate(src, 'source');
  checkRate(targetRate, 'target');
  if (src === targetRate) return audio;
  const { channels } = audio;
  const frames = frameCount(audio);
  const outFrames = Math.round((frames * targetRate) / src);
  if (outFrames * channels > MAX_SAMPLES) {
    throw new RangeError(
      `resampled audio would hold ${outFrames * channels} samples, more than ${MAX_SAMPLES}`,
    );
  }
  const filter = getFilter(src, targetRate);
  const samples = floats(audio);
  const out = new Float32Array(outFrames * channels);
  if (channels === 1) {
    runFilter(filter, samples, frames, out);
  } else {
    // De-interleave so the inner loop walks contiguous memory; a few copies cost far less than the filter.
    const input = new Float32Array(frames);
    const output = new Float32Array(outFrames);
    for (let c = 0; c < channels; c++) {
      for (let f = 0; f < frames; f++) input[f] = samples[f * channels + c]!;
      runFilter(filter, input, frames, output);
      for (let f = 0; f < outFrames; f++) out[f * channels + c] = output[f]!;
    }
  }
  return { samples: out, sampleRate: targetRate, channels };
}

// ---- filter design ----

/** Sinc lobes kept on each side of the centre, counted at the lower rate: sets the transition width. */
const ZERO_CROSSINGS = 32;
/** Kaiser window shape: beta 8.5 gives about 85 dB of stopband rejection. */
const KAISER_BETA = 8.5;
/**
 * The -6 dB cutoff as a fraction of the lower Nyquist frequency. With 32 lobes and beta 8.5 the transition
 * band is about 8.5% of the lower rate wide; centring it at 0.915 * Nyquist puts the start of the stopband
 * at Nyquist itself, so nothing above it folds back (passband flat to about 0.83 * Nyquist, 6.6 kHz at 16 kHz).
 */
const CUTOFF = 0.915;
/** Most coefficients held in one filter bank (8 MB); above this, phases are interpolated from a coarser table. */
const MAX_BANK = 1 << 21;
const MAX_TABLE_PHASES = 1024;
/** Largest Float32Array we are willing to produce (2^31 samples = 8 GB). */
const MAX_SAMPLES = 2 ** 31;

interface Filter {
  /** Input frames advanced per output frame, as integer part + fraction step/den. */
  whole: number;
  step: number;
  den: number;
  /** Coefficients per phase (2 * half) and the number of phases in the bank. */
  taps: number;
  half: number;
  phases: number;
  /** True when there is one row per exact phase (den phases); false when rows must be interpolated. */
  exact: boolean;
  /** Rows of `taps` coefficients; row r is for fractional position r / phases (phases + 1 rows if inexact). */
  bank: Float32Array;
}

const cache = new Map<string, Filter>();
const CACHE_LIMIT = 16;

function getFilter(src: number, dst: number): Filter {
  const key = `${src}:${dst}`;
  let filter = cache.get(key);
  if (!filter) {
    filter = designFilter(src, dst);
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(key, filter);
  }
  return filter;
}

function designFilter(src: number, dst: number): Filter {
  const g = gcd(src, dst);
  const num = src / g; // output frame j sits at input position j * num / den
  const den = dst / g;
  const scale = Math.min(src, dst) / src; // lower rate, in input samples
  const halfWidth = ZERO_CROSSINGS / scale; // window half-width in input samples
  const half = Math.floor(halfWidth) + 1;
  const taps = 2 * half;
  // Commonly used rate pairs have few phases (44100 -> 16000: 160), so each gets its own exact row;
  // odd pairs (44101 -> 16000: 16000 phases) use a table interpolated between neighbouring rows.
  const exact = den * taps <= MAX_BANK;
  const phases = exact ? den : Math.max(16, Math.min(MAX_TABLE_PHASES, Math.floor(MAX_BANK / taps) - 1));
  const rows = exact ? phases : phases + 1;
  const bank = new Float32Array(rows * taps);
  const fc = CUTOFF * scale; // cutoff in cycles per input sample, times 2
  const i0Beta = besselI0(KAISER_BETA);
  for (let r = 0; r < rows; r++) {
    const frac = r / phases;
    let sum = 0;
    for (let k = 0; k < taps; k++) {
      // Tap k reads input frame base - (half - 1) + k, at distance x from the output position.
      const x = frac - (k - (half - 1));
      const t = x / halfWidth;
      if (t <= -1 || t >= 1) continue;
      const w = besselI0(KAISER_BETA * Math.sqrt(1 - t * t)) / i0Beta;
      const c = fc * sinc(fc * x) * w;
      bank[r * taps + k] = c;
      sum += c;
    }
    // Unit DC gain per row: removes the small gain ripple between phases that truncation leaves.
    for (let k = 0; k < taps; k++) bank[r * taps + k]! /= sum;
  }
  return { whole: Math.floor(num / den), step: num % den, den, taps, half, phases, exact, bank };
}

function runFilter(filter: Filter, input: Float32Array, frames: number, out: Float32Array): void {
  const position = { base: 0, acc: 0 };
  for (let j = 0; j < out.length; j++) {
    out[j] = outputSample(filter, position.acc, input, frames, position.base - (filter.half - 1));
    advance(filter, position);
  }
}

/**
 * Where the next output frame sits in the input: `base` whole frames plus `acc / den` (exact
 * integer arithmetic: no drift over hours of audio).
 */
interface Position {
  base: number;
  acc: number;
}

function advance({ whole, step, den }: Filter, position: Position): void {
  position.base += whole;
  position.acc += step;
  if (position.acc >= den) {
    position.acc -= den;
    position.base++;
  }
}

/** The output frame at fractional position `acc / den`, from input frames first..first+taps-1. */
function outputSample(
  filter: Filter,
  acc: number,
  input: Float32Array,
  frames: number,
  first: number,
): number {
  const { den, taps, phases, exact, bank } = filter;
  if (exact) return dot(bank, acc * taps, input, frames, first, taps);
  const pos = (acc * phases) / den;
  const row = Math.floor(pos);
  const w = pos - row;
  const a = dot(bank, row * taps, input, frames, first, taps);
  const b = dot(bank, (row + 1) * taps, input, frames, first, taps);
  return a + (b - a) * w;
}

/**
 * Resamples mono audio that arrives piece by piece (a live body) to exactly what `resample` gives
 * for the whole of it: each output frame is computed once every input frame its filter reads has
 * arrived, and `flush` computes the last ones with silence beyond the end, as `resample` does.
 */
export class StreamResampler {
  readonly #filter: Filter;
  readonly #position: Position = { base: 0, acc: 0 };
  /** Input frames kept for the filter, starting at input frame `#start`. */
  #buffer = new Float32Array(0);
  #start = 0;
  #received = 0;
  #emitted = 0;

  constructor(
    private readonly sourceRate: number,
    private readonly targetRate: number,
  ) {
    checkRate(sourceRate, 'source');
    checkRate(targetRate, 'target');
    this.#filter = getFilter(sourceRate, targetRate);
  }

  /** The output frames that `samples` (the next mono input) completes. */
  push(samples: Float32Array): Float32Array {
    const kept = this.#received - this.#start;
    const buffer = new Float32Array(kept + samples.length);
    buffer.set(this.#buffer.subarray(0, kept));
    buffer.set(samples, kept);
    this.#buffer = buffer;
    this.#received += samples.length;
    // Frame j needs input up to base + half; later frames need later input.
    return this.#emit((position) => position.base + this.#filter.half < this.#received, Infinity);
  }

  /** The last output frames, once the input has ended. */
  flush(): Float32Array {
    const total = Math.round((this.#received * this.targetRate) / this.sourceRate);
    return this.#emit(() => true, total - this.#emitted);
  }

  #emit(ready: (position: Position) => boolean, limit: number): Float32Array {
    const out: number[] = [];
    const frames = this.#received - this.#start;
    while (out.length < limit && ready(this.#position)) {
      const first = this.#position.base - (this.#filter.half - 1) - this.#start;
      out.push(outputSample(this.#filter, this.#position.acc, this.#buffer, frames, first));
      advance(this.#filter, this.#position);
    }
    this.#emitted += out.length;
    // Input before the next frame's first tap is never read again.
    const drop = Math.max(0, this.#position.base - (this.#filter.half - 1) - this.#start);
    if (drop > 0) {
      this.#buffer = this.#buffer.slice(Math.min(drop, frames));
      this.#start += Math.min(drop, frames);
    }
    return Float32Array.from(out);
  }
}

/** One output sample: a row of coefficients against input frames first..first+taps-1 (outside = 0). */
function dot(
  bank: Float32Array,
  row: number,
  input: Float32Array,
  frames: number,
  first: number,
  taps: number,
): number {
  let sum = 0;
  if (first >= 0 && first + taps <= frames) {
    for (let k = 0; k < taps; k++) sum += bank[row + k]! * input[first + k]!;
    return sum;
  }
  const from = Math.max(0, -first);
  const to = Math.min(taps, frames - first);
  for (let k = from; k < to; k++) sum += bank[row + k]! * input[first + k]!;
  return sum;
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = Math.PI * x;
  return Math.sin(px) / px;
}

/** Modified Bessel function of the first kind, order 0, by its power series (converges fast for x <= 20). */
function besselI0(x: number): number {
  const q = (x * x) / 4;
  let term = 1;
  let sum = 1;
  for (let k = 1; k < 64 && term > sum * 1e-12; k++) {
    term *= q / (k * k);
    sum += term;
  }
  return sum;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

function checkRate(rate: number, which: string): void {
  if (!Number.isInteger(rate) || rate < 1) throw new RangeError(`invalid ${which} sample rate ${rate}`);
}

/**
 * Live input converted as it arrives, to exactly what `conformAudio` gives for the whole of it
 * when the model takes mono (every engine here): each piece is downmixed, then resampled by one
 * StreamResampler that carries the filter's history across pieces. A model taking several
 * channels gets each piece converted on its own.
 */
export async function* conformPieces(
  pieces: AsyncIterable<Audio>,
  need: { sampleRate: number; channels: number },
): AsyncIterable<Audio> {
  let resampler: StreamResampler | undefined;
  let rate: number | undefined;
  for await (const piece of pieces) {
    if (need.channels !== 1) {
      yield conformAudio(piece, need);
      continue;
    }
    rate ??= piece.sampleRate;
    if (piece.sampleRate !== rate) throw new RangeError('the sample rate changed within one input');
    const mono = floats(toMono(piece));
    if (rate === need.sampleRate) {
      yield { samples: mono, sampleRate: rate, channels: 1 };
      continue;
    }
    resampler ??= new StreamResampler(rate, need.sampleRate);
    const out = resampler.push(mono);
    if (out.length > 0) yield { samples: out, sampleRate: need.sampleRate, channels: 1 };
  }
  const tail = resampler?.flush();
  if (tail && tail.length > 0) yield { samples: tail, sampleRate: need.sampleRate, channels: 1 };
}
