/**
 * Text deltas that are never taken back, from a decoder whose guesses change as it hears more.
 *
 * A live decode sends the words on which its last three guesses agree. The search that ends the
 * utterance can still disagree with them ("then love the" settled, "then lock the front yard"
 * final): a client that joins the deltas (`process.stdout.write(delta)`, Wyoming's
 * transcript-chunks) must read the same text as the final one, so the final text keeps the settled
 * words and takes from the final search only what comes after them (`alignSettled`).
 */

import type { Word } from '../types.js';

/** How far (in words) the alignment of the settled words against the final ones may wander. */
const BAND = 32;

export class SettledWords {
  #sent: string[] = [];
  #recent: string[][] = [];

  /** `send`'s promise, when it gives one, is returned by the call that sent (for backpressure). */
  constructor(private readonly send: (delta: string) => unknown) {}

  /** The words sent so far, joined as the client joins them. */
  get text(): string {
    return this.#sent.join(' ');
  }

  /** One guess; words on which the last three guesses agree are sent. */
  guess(hypothesis: string): unknown {
    this.#recent = [...this.#recent.slice(-2), splitWords(hypothesis)];
    if (this.#recent.length < 3) return;
    const [a, b, c] = this.#recent as [string[], string[], string[]];
    let agreed = 0;
    while (agreed < a.length && a[agreed] === b[agreed] && a[agreed] === c[agreed]) agreed++;
    if (agreed <= this.#sent.length || this.#sent.some((w, i) => a[i] !== w)) return;
    return this.#add(a.slice(this.#sent.length, agreed));
  }

  /**
   * The final search's text and timed words: the words sent stay, what it heard after them is sent
   * as the last delta. Resolves to the whole text, which starts with exactly the words sent, and
   * its words: a settled word keeps the times of the final word it stands for (none, at the word
   * before's end, when the final search dropped it), the rest are the final search's own.
   */
  async final(text: string, timed: readonly Word[] = []): Promise<{ text: string; words: Word[] }> {
    const final = splitWords(text);
    const sent = this.#sent;
    const { pairs, rest } = alignSettled(sent, final);
    if (rest < final.length) await this.#add(final.slice(rest));
    // An engine whose timed words are not its text's words keeps them as they are.
    if (timed.length !== final.length) return { text: this.text, words: [...timed] };
    const words: Word[] = [];
    let end = 0;
    for (const [i, word] of sent.entries()) {
      const pair = pairs[i]!;
      const own =
        pair >= 0 ? { ...timed[pair]!, word } : { word, start_sample: end, end_sample: end, confidence: 0 };
      words.push(own);
      end = own.end_sample;
    }
    return { text: this.text, words: [...words, ...timed.slice(rest)] };
  }

  #add(words: string[]): unknown {
    const sent = this.send(`${this.#sent.length > 0 ? ' ' : ''}${words.join(' ')}`);
    this.#sent = [...this.#sent, ...words];
    return sent;
  }
}

export function splitWords(text: string): string[] {
  return text.split(' ').filter(Boolean);
}

/** How the settled words line up with the final search's words (`alignSettled`). */
export interface Alignment {
  /** For each settled word, the index of the final word it stands for, or -1 (the final search dropped it). */
  pairs: number[];
  /** The index in `final` from which its words come after the settled ones. */
  rest: number;
}

/**
 * `settled` aligned (word edit distance) with the prefix of `final` it matches best. On a tie the
 * longer prefix wins, so a final word that matches the last settled one is not heard twice. The
 * alignment stays within BAND words of the diagonal: the work grows with the words, not their square.
 */
export function alignSettled(settled: readonly string[], final: readonly string[]): Alignment {
  const n = settled.length;
  const m = final.length;
  if (n === 0) return { pairs: [], rest: 0 };
  const width = 2 * BAND + 1;
  // The step into each cell of the band (i, j = i - BAND + k): 0 diagonal, 1 a settled word alone, 2 a final word alone.
  const steps = new Uint8Array((n + 1) * width);
  const at = (i: number, j: number) => i * width + (j - i + BAND);
  // Two rows of the edit-distance table, reused; a row holds its band and an infinite cell on each
  // side for the next row to read.
  const INF = Number.POSITIVE_INFINITY;
  let previous = new Float64Array(m + 2).fill(INF);
  let row = new Float64Array(m + 2).fill(INF);
  for (let j = 0; j <= Math.min(m, BAND); j++) {
    previous[j] = j;
    steps[at(0, j)] = 2;
  }
  for (let i = 1; i <= n; i++) {
    const from = Math.max(0, i - BAND);
    const to = Math.min(m, i + BAND);
    if (from > 0) row[from - 1] = INF;
    row[to + 1] = INF;
    if (from === 0) {
      row[0] = i;
      steps[at(i, 0)] = 1;
    }
    for (let j = Math.max(1, from); j <= to; j++) {
      const diagonal = previous[j - 1]! + (settled[i - 1] === final[j - 1] ? 0 : 1);
      const up = previous[j]! + 1;
      const left = row[j - 1]! + 1;
      const best = Math.min(diagonal, up, left);
      row[j] = best;
      steps[at(i, j)] = best === diagonal ? 0 : best === up ? 1 : 2;
    }
    [previous, row] = [row, previous];
  }
  const from = Math.max(0, n - BAND);
  // The final search heard far fewer words than were settled: none of its words comes after them.
  if (from > m) return { pairs: new Array<number>(n).fill(-1), rest: m };
  let rest = from;
  for (let j = from + 1; j <= Math.min(m, n + BAND); j++) if (previous[j]! <= previous[rest]!) rest = j;
  const pairs = new Array<number>(n).fill(-1);
  for (let i = n, j = rest; i > 0; ) {
    const step = steps[at(i, j)];
    if (step === 0) pairs[--i] = --j;
    else if (step === 1) i--;
    else j--;
  }
  return { pairs, rest };
}
