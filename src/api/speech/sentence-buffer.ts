/**
 * Text that arrives in pieces cut anywhere (a language model's tokens, Home Assistant's streamed
 * answer), handed on one whole sentence at a time so that speech can start before the text ends.
 * A sentence ends at `.`, `!`, `?`, `…` (or their CJK forms), with any closing quotes and brackets
 * after it, once the next character is known to be a space or a line break; a line break alone ends
 * one too. A period does not end a sentence after a common abbreviation ("Dr.", "e.g."), a single
 * capital (an initial: "J. Smith"), or inside a number ("3.14", which has no space after it).
 *
 * The text comes from a client, a piece at a time (Wyoming's synthesize-chunk), so the work is
 * linear in it (probe 2026-12 F4: a rescan from the start on every push, with a regex over the
 * whole prefix at every period, took 53 s of main thread for one 256 KiB chunk of "Dr. "). Each
 * push scans only its own piece, with a few characters before it for the abbreviation check; the
 * text held is kept as its pieces (appending to one string would copy it whole on every push);
 * and that text is refused past maxChars as it arrives.
 */
import { invalidField } from '../../errors.js';

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

/** What a character is to the scan, by UTF-16 unit: flags of CHAR_KIND. */
const RUN = 1; // a terminator or a closer: a run of them is decided as one
const TERMINATOR = 2;
const CJK = 4; // needs no space after it
const SPACE = 8; // white space, as /\s/ and trim() see it
const CHAR_KIND = new Uint8Array(0x10000);
for (const c of CLOSERS) CHAR_KIND[c.charCodeAt(0)] = RUN;
for (const c of TERMINATORS) CHAR_KIND[c.charCodeAt(0)] = RUN | TERMINATOR;
for (const c of '。！？') CHAR_KIND[c.charCodeAt(0)]! |= CJK;
/** ECMAScript's WhiteSpace and LineTerminator (a test checks the list against /\s/). */
export const WHITE_SPACE =
  '\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff';
for (const c of WHITE_SPACE) CHAR_KIND[c.charCodeAt(0)]! |= SPACE;
const PERIOD = 0x2e;
/** Characters the scan has nothing to do with but count: no terminator, closer, line break or surrogate. */
const PLAIN = new RegExp(`[^\\n${TERMINATORS}${CLOSERS.replace(/[\]\\]/g, '\\$&')}\\ud800-\\udfff]+`, 'y');
const NEWLINE = 0x0a;
/**
 * How far back the abbreviation check looks: longer than the longest abbreviation ("approx"), so a
 * word that fills the window is known to be none of them.
 */
const WORD_WINDOW = 12;
/** The characters of the held text a push scans before its piece: the window and a surrogate's half. */
const CONTEXT = WORD_WINDOW + 2;

export interface SentenceBufferOptions {
  /**
   * The most characters (code points) held without a sentence end; 0 or undefined is no limit.
   * The server's max_input_chars: a longer sentence would be refused by the model anyway.
   */
  maxChars?: number;
  /** What the text is, for the message. */
  field?: string;
}

/** A run of terminators and closers that reached the end of the text held: the next character decides it. */
interface OpenRun {
  /** One of its terminators ends a sentence if a space follows the run: not a period after an abbreviation. */
  candidate: boolean;
  /** It holds a CJK terminator: it ends a sentence wherever it ends. */
  cjk: boolean;
}

export class SentenceBuffer {
  /** The text held (no sentence end decided in it), as the pieces it came in. */
  #held: string[] = [];
  #heldLength = 0;
  /** Code points of the text held, from its first character that is not white space. */
  #chars = 0;
  #run: OpenRun | undefined;
  readonly #maxChars: number;
  readonly #field: string;

  constructor(options: SentenceBufferOptions = {}) {
    this.#maxChars = options.maxChars ?? 0;
    this.#field = options.field ?? 'text';
  }

  /**
   * Adds a piece of text; returns the sentences it completed, in order (trimmed, never empty).
   * Fails with a 400 as soon as a sentence (as trimmed) passes maxChars, which checkInputChars
   * would refuse later; the text held and the sentences of this piece are then dropped, and the
   * next piece starts afresh.
   */
  push(piece: string): string[] {
    if (piece === '') return [];
    const context = this.#context();
    // The held text's end and the piece; positions below `context.length` were scanned before.
    const work = context + piece;
    const offset = this.#heldLength - context.length;
    const sentences: string[] = [];
    /** Where the next sentence starts in `work`, or -1 while it starts in the text held. */
    let from = -1;
    /** Code points of the sentence so far, from its first character that is not white space. */
    let chars = this.#chars;
    const emit = (end: number) => {
      const raw = from < 0 ? this.#held.join('') + work.slice(context.length, end) : work.slice(from, end);
      const sentence = raw.trim();
      if (sentence) sentences.push(sentence);
      from = end;
      chars = 0;
    };
    // The run of terminators and closers being read (see OpenRun), in locals: one per period of "Dr. Dr. ...".
    let inRun = this.#run !== undefined;
    let candidate = this.#run?.candidate ?? false;
    let cjk = this.#run?.cjk ?? false;
    const max = this.#maxChars > 0 ? this.#maxChars : Number.POSITIVE_INFINITY;
    for (let i = context.length; i < work.length; i++) {
      if (!inRun && chars > 0) {
        // A stretch of characters that only count, skipped natively: a cold loop would go char by char.
        PLAIN.lastIndex = i;
        if (PLAIN.test(work) && PLAIN.lastIndex > i) {
          const start = i;
          chars += PLAIN.lastIndex - i;
          i = PLAIN.lastIndex;
          if (chars > max) {
            // Counted up to its last character that is not white space (see below).
            let end = i;
            while (end > start && CHAR_KIND[work.charCodeAt(end - 1)]! & SPACE) end--;
            if (chars - (i - end) > max) this.#refuse();
          }
          if (i >= work.length) break;
        }
      }
      const c = work.charCodeAt(i);
      const kind = CHAR_KIND[c]!;
      if (inRun && !(kind & RUN)) {
        if (cjk || (candidate && kind & SPACE)) emit(i);
        inRun = candidate = cjk = false;
      }
      // The second half of a surrogate pair is no character of its own. Only a character that is
      // not white space can make a sentence too long: trim() drops the white space at its ends.
      if (kind & SPACE) {
        if (chars > 0) chars++;
      } else if (!(isLowSurrogate(c) && isHighSurrogate(work.charCodeAt(i - 1))) && ++chars > max)
        this.#refuse();
      if (c === NEWLINE) emit(i + 1);
      else if (kind & RUN) {
        inRun = true;
        if (kind & CJK) cjk = true;
        else if (kind & TERMINATOR && !candidate) candidate = c !== PERIOD || endsSentence(work, i, offset);
      }
    }
    // A CJK terminator needs nothing after it, so its run ends a sentence at the text's end.
    if (cjk) {
      emit(work.length);
      inRun = false;
    }
    this.#run = inRun ? { candidate, cjk: false } : undefined;
    this.#chars = chars;
    if (from < 0) {
      this.#held.push(piece);
      this.#heldLength += piece.length;
    } else {
      const rest = work.slice(from);
      this.#held = rest ? [rest] : [];
      this.#heldLength = rest.length;
    }
    return sentences;
  }

  #refuse(): never {
    this.flush();
    throw invalidField(
      this.#field,
      `${this.#field}: more than ${this.#maxChars} characters without a sentence end, over max_input_chars=${this.#maxChars}; end a sentence sooner, or raise the server max_input_chars (--max-input-chars) (0 = no limit)`,
    );
  }

  /** UTF-16 units of the text held (no sentence end decided in it yet): what it keeps in memory. */
  get heldLength(): number {
    return this.#heldLength;
  }

  /** What is left once the text has ended (its last sentence, however it ends), or undefined. */
  flush(): string | undefined {
    const rest = this.#held.join('').trim();
    this.#held = [];
    this.#heldLength = 0;
    this.#chars = 0;
    this.#run = undefined;
    return rest || undefined;
  }

  /** The last CONTEXT characters of the text held (all of it when shorter). */
  #context(): string {
    let context = '';
    for (let p = this.#held.length - 1; p >= 0 && context.length < CONTEXT; p--)
      context = this.#held[p]!.slice(context.length - CONTEXT) + context;
    return context;
  }
}

const LETTER = /^\p{L}$/u;
const UPPER = /^\p{Lu}$/u;
/** Whether a UTF-16 unit is a letter, as the scan meets them: 0 not yet known, 1 a letter, 2 not. */
const LETTER_UNIT = new Uint8Array(0x10000);

/**
 * ABBREVIATIONS as numbers, read backwards as endsSentence reads them: so a period after "Dr" costs
 * no string. Only ASCII letters and periods make one: no other character lower-cases into them
 * but the Kelvin sign (to "k", which no abbreviation has). A key is compared only for a word no
 * longer than the longest abbreviation, whose number is exact.
 */
const LONGEST_ABBREVIATION = Math.max(...[...ABBREVIATIONS].map((word) => word.length));
const ABBREVIATION_KEYS = new Set([...ABBREVIATIONS].map((word) => abbreviationKey(word, 0, word.length)));

/** The number of text[start, end) in lower case, read from the end; -1 when no abbreviation can be it. */
function abbreviationKey(text: string, start: number, end: number): number {
  if (end - start > LONGEST_ABBREVIATION) return -1;
  let key = 0;
  for (let k = end - 1; k >= start; k--) {
    let unit = text.charCodeAt(k);
    if (unit >= 0x41 && unit <= 0x5a) unit += 0x20;
    if (unit >= 0x61 && unit <= 0x7a) key = key * 32 + (unit - 0x60);
    else if (unit === PERIOD) key = key * 32 + 27;
    else return -1;
  }
  return key;
}

/**
 * Whether the period at `i` of `work` ends a sentence: not after an abbreviation or an initial.
 * The word before it is the letters and periods that end there, as the regex `[\p{L}.]+$` would find
 * over the whole text, but looked for only WORD_WINDOW back. `offset`: where `work` starts in the text.
 * An ASCII word is read without a call per character: "Dr. " repeated is the hostile case.
 */
function endsSentence(work: string, i: number, offset: number): boolean {
  const stop = i > WORD_WINDOW ? i - WORD_WINDOW : 0;
  let start = i;
  // The word as abbreviationKey reads it, while it can be an abbreviation (ASCII); else -1.
  let key = 0;
  while (start > stop) {
    const unit = work.charCodeAt(start - 1);
    const lower = unit >= 0x41 && unit <= 0x5a ? unit + 0x20 : unit;
    if (lower >= 0x61 && lower <= 0x7a) key = key < 0 ? key : key * 32 + (lower - 0x60);
    else if (unit === PERIOD) key = key < 0 ? key : key * 32 + 27;
    else if (unit < 0x80) break;
    else if (isLetterUnit(unit)) key = -1;
    else if (
      isLowSurrogate(unit) &&
      start >= 2 &&
      isHighSurrogate(work.charCodeAt(start - 2)) &&
      LETTER.test(work.slice(start - 2, start))
    ) {
      key = -1;
      start--;
    } else break;
    start--;
  }
  // A word that fills the window is longer than any abbreviation.
  if (start <= stop && offset + stop > 0) return true;
  if (i - start === 1) {
    const unit = work.charCodeAt(start);
    if (unit < 0x80 ? unit >= 0x41 && unit <= 0x5a : UPPER.test(work[start]!)) return false;
  }
  return key < 0 || i - start > LONGEST_ABBREVIATION || !ABBREVIATION_KEYS.has(key);
}

function isLetterUnit(unit: number): boolean {
  if (unit < 0x80) return (unit >= 0x41 && unit <= 0x5a) || (unit >= 0x61 && unit <= 0x7a);
  if (isHighSurrogate(unit) || isLowSurrogate(unit)) return false;
  if (LETTER_UNIT[unit] === 0) LETTER_UNIT[unit] = LETTER.test(String.fromCharCode(unit)) ? 1 : 2;
  return LETTER_UNIT[unit] === 1;
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;
