/** The words of a pocketsphinx segmentation, timed in samples, as engine results carry them. */
import type { Word } from '../types.js';
import { FRAME_SAMPLES, type PsSegment } from './ps-decoder.js';

/**
 * What pocketsphinx marks as not a word: utterance ends (`<s>`, `</s>`), silence (`<sil>`) and the
 * noise dictionary's fillers (`[NOISE]`, `[SPEECH]`, `++BREATH++`, ...).
 */
const FILLER = /^(<.*>|\[.*\]|\+\+.*\+\+)$/;
/** An alternative pronunciation's dictionary entry: `read(2)` is the word `read`. */
const VARIANT = /\(\d+\)$/;

/**
 * The spoken words of `segments`, in order: a word runs from its first frame's start to its last
 * frame's end, capped at `samples` (the audio decoded); its confidence is its lattice posterior.
 */
export function segmentWords(segments: readonly PsSegment[], samples: number): Word[] {
  return segments
    .filter((s) => !FILLER.test(s.word))
    .map((s) => {
      const start = Math.min(s.startFrame * FRAME_SAMPLES, samples);
      return {
        word: s.word.replace(VARIANT, ''),
        start_sample: start,
        end_sample: Math.max(start, Math.min((s.endFrame + 1) * FRAME_SAMPLES, samples)),
        confidence: Math.round(s.posterior * 1e4) / 1e4,
      };
    });
}
