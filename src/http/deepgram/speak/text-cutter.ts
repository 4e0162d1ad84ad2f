/**
 * Text as a language model writes it (words, half words, a comma on its own), cut into the pieces
 * a `/v1/speak` session synthesizes: whole sentences (sentence-buffer.ts decides where one ends),
 * and, while a flush segment has had no audio yet, its first clause, so the first audio comes
 * after a few words rather than after a whole sentence. A clause ends at a comma, semicolon,
 * colon or dash once a space follows it (so "3,000" is no break) with at least MIN_CLAUSE_WORDS
 * words before it; a shorter one ("Well, ...") would be choppy for little gain.
 *
 * The text held is bounded: a sentence past `maxChars` without an end is refused (the caller tells
 * the client with a Warning and the text held is dropped), as a model would refuse it.
 */
import { SentenceBuffer } from '../../../api/speech/sentence-buffer.js';

/** Words a first clause needs before its break. */
export const MIN_CLAUSE_WORDS = 3;

/**
 * A first clause is looked for within this many characters of its segment's start; past them the
 * first piece is the sentence, and no fragment rescans a long head.
 */
const CLAUSE_WINDOW = 1000;

/** A clause break: its mark, then white space. Dashes count only as words of their own (" - "). */
const CLAUSE_BREAK = /[,;:](?=\s)|\s[-–—](?=\s)|[–—](?=\s)/g;

export class TextCutter {
  readonly #sentences: SentenceBuffer;
  /** The segment's text so far while it has given no piece yet; undefined once it has. */
  #head: string | undefined = '';
  /** Where the next look for a clause break starts in the head: text before it was looked at. */
  #scanned = 0;

  constructor(maxChars: number) {
    this.#sentences = new SentenceBuffer({ maxChars, field: 'text' });
  }

  /** Adds a fragment; returns the pieces it completed, in order. Throws past maxChars (text dropped). */
  push(fragment: string): string[] {
    let sentences: string[];
    try {
      sentences = this.#sentences.push(fragment);
    } catch (err) {
      this.#head = '';
      this.#scanned = 0;
      throw err;
    }
    if (this.#head === undefined) return sentences;
    if (sentences.length > 0) {
      this.#head = undefined;
      return sentences;
    }
    this.#head += fragment;
    const cut = firstClauseEnd(this.#head, this.#scanned);
    if (cut === undefined) {
      // A mark at the very end waits for the character after it: it is looked at again.
      this.#scanned = Math.max(0, this.#head.length - 2);
      if (this.#head.length > CLAUSE_WINDOW) this.#head = undefined;
      return [];
    }
    const clause = this.#head.slice(0, cut).trim();
    const rest = this.#head.slice(cut);
    this.#head = undefined;
    // The buffer held exactly the head: it starts again from the text after the clause.
    this.#sentences.flush();
    return [clause, ...this.#sentences.push(rest)];
  }

  /** UTF-16 units of text held, not yet a piece (the first clause's head is the same text). */
  get heldLength(): number {
    return this.#sentences.heldLength;
  }

  /** The rest, however it ends (a Flush); the next text starts a new segment. */
  flush(): string | undefined {
    this.#head = '';
    this.#scanned = 0;
    return this.#sentences.flush();
  }

  /** Drops the text held (a Clear). */
  clear(): void {
    this.flush();
  }
}

/** Where the first clause of `text` ends (after its mark), looking from `from`, or undefined. */
function firstClauseEnd(text: string, from: number): number | undefined {
  CLAUSE_BREAK.lastIndex = from;
  for (let match = CLAUSE_BREAK.exec(text); match; match = CLAUSE_BREAK.exec(text)) {
    const end = match.index + match[0].length;
    if (words(text.slice(0, match.index)) >= MIN_CLAUSE_WORDS) return end;
  }
  return undefined;
}

function words(text: string): number {
  const trimmed = text.trim();
  return trimmed === '' ? 0 : trimmed.split(/\s+/).length;
}
