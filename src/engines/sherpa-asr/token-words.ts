/** Word timings from the per-token results of sherpa's BPE models (NeMo transducers). */
import type { Word } from '../types.js';
import type { RecognizerTokens } from './recognizer-worker.js';

const RATE = 16000;
const WORD_MARK = /^[\s\u2581]+/; // sherpa prints BPE's `▁` as a space

/**
 * Joins BPE pieces into words: a piece that starts with the word mark starts a word. A word runs
 * from its first piece's timestamp to its last piece's end (timestamp plus duration, which TDT
 * models give), capped at the input's length; its confidence is the geometric mean of its pieces'
 * probabilities (0 when the model gives none).
 */
export function pieceWords(result: RecognizerTokens, samples: number): Word[] {
  const words: { text: string; start: number; end: number; logProbs: number[] }[] = [];
  result.tokens.forEach((piece, i) => {
    const start = result.timestamps[i];
    if (start === undefined) return;
    const end = start + (result.durations[i] ?? 0);
    const logProb = result.logProbs[i];
    const last = words.at(-1);
    if (!last || WORD_MARK.test(piece)) {
      words.push({ text: piece.replace(WORD_MARK, ''), start, end, logProbs: [] });
    } else {
      last.text += piece;
      last.end = Math.max(last.end, end);
    }
    if (logProb !== undefined) words.at(-1)!.logProbs.push(logProb);
  });
  return words
    .filter((w) => w.text.length > 0)
    .map((w) => {
      const start = Math.min(Math.round(w.start * RATE), samples);
      const mean = w.logProbs.reduce((sum, p) => sum + p, 0) / w.logProbs.length;
      return {
        word: w.text,
        start_sample: start,
        end_sample: Math.max(start, Math.min(Math.round(w.end * RATE), samples)),
        confidence: w.logProbs.length ? Math.round(Math.exp(mean) * 1e4) / 1e4 : 0,
      };
    });
}
