/**
 * Text that arrives in pieces cut anywhere (a language model's tokens, Home Assistant's streamed
 * answer), handed on one whole sentence at a time so that speech can start before the text ends.
 * A sentence ends at `.`, `!`, `?`, `…` (or their CJK forms), with any closing quotes and brackets
 * after it, once the next character is known to be a space or a line break; a line break alone ends
 * one too. A period does not end a sentence after a common abbreviation ("Dr.", "e.g."), a single
 * capital (an initial: "J. Smith"), or inside a number ("3.14", which has no space after it).
 */
const TERMINATORS = '.!?…。！？';
const CLOSERS = `"'”’»)]}`;
/** Abbreviations that end in a period but rarely end a sentence (compared in lower case). */
const ABBREVIATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'sr',
  'jr',
  'st',
  'vs',
  'etc',
  'e.g',
  'i.e',
  'no',
  'inc',
  'ltd',
  'co',
  'corp',
  'mt',
  'ft',
  'approx',
  'dept',
  'est',
  'fig',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
  'a.m',
  'p.m',
  'u.s',
  'u.k',
]);

export class SentenceBuffer {
  #text = '';

  /** Adds a piece of text; returns the sentences it completed, in order (trimmed, never empty). */
  push(piece: string): string[] {
    this.#text += piece;
    const sentences: string[] = [];
    let from = 0;
    for (let i = 0; i < this.#text.length; i++) {
      const end = this.#boundary(i);
      if (end === undefined) continue;
      const sentence = this.#text.slice(from, end).trim();
      if (sentence) sentences.push(sentence);
      from = end;
      i = end - 1;
    }
    this.#text = this.#text.slice(from);
    return sentences;
  }

  /** What is left once the text has ended (its last sentence, however it ends), or undefined. */
  flush(): string | undefined {
    const rest = this.#text.trim();
    this.#text = '';
    return rest || undefined;
  }

  /** Where the sentence that position `i` may end finishes (exclusive), or undefined if it does not end there. */
  #boundary(i: number): number | undefined {
    const text = this.#text;
    const c = text[i]!;
    if (c === '\n') return i + 1;
    if (!TERMINATORS.includes(c)) return undefined;
    let end = i + 1;
    while (end < text.length && (TERMINATORS.includes(text[end]!) || CLOSERS.includes(text[end]!))) end++;
    // CJK terminators need no space after them; the others do, and the next piece may bring it.
    const cjk = '。！？'.includes(c);
    if (!cjk) {
      if (end >= text.length) return undefined;
      if (!/\s/.test(text[end]!)) return undefined;
    }
    if (c === '.' && !this.#endsSentence(i)) return undefined;
    return end;
  }

  /** Whether the period at `i` ends a sentence: not after an abbreviation or an initial. */
  #endsSentence(i: number): boolean {
    const before = this.#text.slice(0, i);
    const word = /([\p{L}.]+)$/u.exec(before)?.[1] ?? '';
    if (word.length === 1 && /\p{Lu}/u.test(word)) return false;
    return !ABBREVIATIONS.has(word.toLowerCase());
  }
}
