/**
 * The classical diarization pipeline after VAD. A speech segment longer than `maxWindow` is cut,
 * at its quietest moment, into windows no longer than that (so a turn change inside one segment
 * can be caught); each window gets a statistics embedding; windows of at least `minWindow` are
 * clustered, shorter ones (whose statistics are noisy) join the nearest cluster afterwards; and
 * neighbouring windows of one segment in the same cluster are joined back into one turn. Pure and
 * synchronous: it runs inside the session's runner process.
 */
import { type ClusterOptions, centroidsOf, clampSimilarity, cluster, dot, nearest } from './cluster.js';
import { embed, SAMPLE_RATE } from './fbank.js';

export interface Span {
  start: number;
  end: number;
}

export interface Turn extends Span {
  /** 0-based, numbered in order of first appearance. */
  speaker: number;
  confidence: number;
}

export interface DiarizeOptions extends ClusterOptions {
  /** Longest window embedded as one piece, in samples; Infinity embeds whole segments. */
  maxWindow: number;
  /** Shorter windows are not clustered but join the nearest cluster, in samples. */
  minWindow?: number;
}

const FRAME = 160;
const QUIET_RUN = 5; // frames (50 ms) averaged when looking for the quietest moment
/** Measured: 1.5 s kept every single-voice file at one speaker; 1 s and below did not always. */
export const DEFAULT_MIN_WINDOW = 1.5 * SAMPLE_RATE;

/** The middle of the quietest run of QUIET_RUN frames starting in [from, to), on the 10 ms grid from `origin`. */
function quietest(samples: Float32Array, origin: number, from: number, to: number): number {
  const first = Math.ceil((from - origin) / FRAME);
  const last = Math.floor((to - origin) / FRAME);
  let best = Infinity;
  let at = origin + first * FRAME;
  for (let f = first; f < last; f++) {
    let sum = 0;
    const a = origin + f * FRAME;
    for (let i = a; i < a + QUIET_RUN * FRAME && i < samples.length; i++) sum += samples[i]! * samples[i]!;
    if (sum < best) {
      best = sum;
      at = a + (QUIET_RUN * FRAME) / 2;
    }
  }
  return at;
}

/**
 * `span` cut into windows no longer than `maxWindow`: split in two at the quietest moment of its
 * middle half (where a turn change most likely is), recursively.
 */
export function windowsOf(samples: Float32Array, span: Span, maxWindow: number): Span[] {
  const length = span.end - span.start;
  if (length <= maxWindow) return [span];
  const cut = quietest(samples, span.start, span.start + length / 4, span.start + (3 * length) / 4);
  return [
    ...windowsOf(samples, { start: span.start, end: cut }, maxWindow),
    ...windowsOf(samples, { start: cut, end: span.end }, maxWindow),
  ];
}

export function diarize(samples: Float32Array, segments: readonly Span[], options: DiarizeOptions): Turn[] {
  const minWindow = options.minWindow ?? DEFAULT_MIN_WINDOW;
  const windows: (Span & { segment: number; embedding: Float32Array })[] = [];
  segments.forEach((segment, index) => {
    for (const window of windowsOf(samples, segment, options.maxWindow)) {
      const embedding = embed(samples, window.start, window.end);
      if (embedding) windows.push({ ...window, segment: index, embedding });
    }
  });
  if (windows.length === 0) return [];

  // Cluster the long windows (all of them when none is long), then place the short ones.
  const long = windows.filter((w) => w.end - w.start >= minWindow);
  const core = long.length > 0 ? long : windows;
  const clustered = cluster(
    core.map((w) => w.embedding),
    options,
  );
  const centroids = centroidsOf(
    core.map((w) => w.embedding),
    clustered.labels,
    clustered.clusters,
  );
  const coreIndex = new Map(core.map((w, i) => [w, i]));
  const placed = windows.map((w) => {
    const i = coreIndex.get(w);
    if (i !== undefined) return { label: clustered.labels[i]!, confidence: clustered.confidence[i]! };
    const { label, similarity } = nearest(w.embedding, centroids);
    return { label, confidence: clampSimilarity(similarity) };
  });

  return joinTurns(windows.map((window, i) => ({ ...window, ...placed[i]! })));
}

/**
 * Labelled windows (in time order) as turns: speakers numbered in order of first appearance,
 * neighbouring windows of one segment with the same speaker joined into one turn.
 */
function joinTurns(
  windows: readonly (Span & { segment: number; label: number; confidence: number })[],
  /** Label to speaker id, kept across calls when turns are made piece by piece. */
  number = new Map<number, number>(),
): Turn[] {
  const turns: (Turn & { segment: number; pieces: number })[] = [];
  for (const window of windows) {
    const { label, confidence } = window;
    let speaker = number.get(label);
    if (speaker === undefined) {
      speaker = number.size;
      number.set(label, speaker);
    }
    const last = turns.at(-1);
    if (last && last.segment === window.segment && last.speaker === speaker && last.end === window.start) {
      last.end = window.end;
      last.confidence += confidence;
      last.pieces++;
    } else {
      turns.push({
        start: window.start,
        end: window.end,
        segment: window.segment,
        speaker,
        confidence,
        pieces: 1,
      });
    }
  }
  return turns.map(({ start, end, speaker, confidence: sum, pieces }) => ({
    start,
    end,
    speaker,
    confidence: Math.round((sum / pieces) * 1000) / 1000,
  }));
}

/**
 * The streaming variant: each speech segment is decided as soon as it has been heard, so its turns
 * can be sent on while later audio is still processed. Each window joins the most similar speaker
 * so far (a running mean direction) when the similarity reaches the threshold, or when
 * `numSpeakers` speakers already exist; otherwise it starts a new speaker. Cheaper than the
 * offline clustering, and less accurate: a decision is never revisited.
 */
export function diarizeOnline(
  samples: Float32Array,
  segments: readonly Span[],
  options: DiarizeOptions,
  emit: (turns: Turn[]) => void,
): Turn[] {
  const sums: Float32Array[] = [];
  const all: Turn[] = [];
  const numbering = new Map<number, number>();
  let labelled: (Span & { segment: number; label: number; confidence: number })[] = [];
  segments.forEach((segment, index) => {
    for (const window of windowsOf(samples, segment, options.maxWindow)) {
      const embedding = embed(samples, window.start, window.end);
      if (!embedding) continue;
      const centroids = sums.map((sum) => {
        const norm = Math.sqrt(dot(sum, sum)) || 1;
        return sum.map((x) => x / norm);
      });
      const best = centroids.length > 0 ? nearest(embedding, centroids) : undefined;
      const full = options.numSpeakers !== undefined && sums.length >= options.numSpeakers;
      let label: number;
      if (best && (best.similarity >= options.threshold || full)) label = best.label;
      else {
        label = sums.length;
        sums.push(new Float32Array(embedding.length));
      }
      const sum = sums[label]!;
      for (let d = 0; d < sum.length; d++) sum[d] = sum[d]! + embedding[d]!;
      const confidence = best && label === best.label ? clampSimilarity(best.similarity) : 1;
      labelled.push({ ...window, segment: index, label, confidence });
    }
    const turns = joinTurns(labelled, numbering);
    labelled = [];
    if (turns.length > 0) {
      all.push(...turns);
      emit(turns);
    }
  });
  return all;
}
