/**
 * Cuts a TTS text into pieces a sherpa-onnx Kokoro model can take one at a time. Kokoro's model
 * ends the whole process when one chunk of tokens reaches its `max_token_len` (style_dim[0] of its
 * metadata: "Bad things happened! N vs M"), and sherpa's own chunking can get there: the espeak
 * path adds a space after a '.' without checking the length, and the multi-lingual front end
 * merges short runs onto the previous chunk with no limit at all, so text such as "你。" repeated
 * 200 times is one chunk of 600 tokens. A piece whose tokens stay under the limit never reaches it,
 * however sherpa chunks it, and voxd cannot count the tokens exactly (espeak makes them), so it
 * uses an upper estimate per character and cuts at sentences, then clauses, then words.
 */

/** Tokens of a piece's budget kept free (the '.' + space overshoot and rounding). */
const MARGIN = 4;

/**
 * An upper estimate of the tokens one character becomes, measured through espeak-ng (en-us) and
 * Kokoro's lexicons: a lowercase letter of a word about 1.2 (1.5 kept), a capital may be spelled
 * out (USA: 3.3 a letter), a digit is read as words (1234567: 11.4 a digit), a CJK character is
 * read by name when espeak has no such language (東: 14), an emoji or symbol by name (😀: 13).
 */
function weight(ch: string): number {
  if (/\s/u.test(ch)) return 1;
  if (/[a-z]/.test(ch)) return 1.5;
  if (/[A-Z]/.test(ch)) return 3.5;
  if (/\p{M}/u.test(ch)) return 1;
  if (/\p{Nd}/u.test(ch)) return 12;
  if (/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(ch)) return 14;
  if (/\p{L}/u.test(ch)) return 5;
  if (/\p{P}/u.test(ch)) return 2; // a '.' becomes '.' and a space
  return 14;
}

function cost(text: string): number {
  let sum = 0;
  for (const ch of text) sum += weight(ch);
  return sum;
}

/** Where a text may be cut, coarsest first: after sentences, after clauses, between words. */
const CUTS = [/(?<=[.!?;…]\s+|[。！？；])(?=\S)/u, /(?<=[,:—]\s+|[，、：])(?=\S)/u, /(?<=\s)(?=\S)/u];

/**
 * `items` in order, joined into runs: each run takes the next item while its cost stays within
 * `budget`; an item over the budget alone is a run of its own.
 */
function pack(items: Iterable<string>, costOf: (item: string) => number, budget: number): string[] {
  const runs: string[] = [];
  let run = '';
  let used = 0;
  for (const item of items) {
    const c = costOf(item);
    if (run && used + c > budget) {
      runs.push(run);
      run = '';
      used = 0;
    }
    run += item;
    used += c;
  }
  if (run) runs.push(run);
  return runs;
}

/** Parts of `text`, each within `budget` where a cut allows, else single characters' runs. */
function parts(text: string, budget: number, level = 0): string[] {
  if (cost(text) <= budget) return [text];
  const cut = CUTS[level];
  if (cut) return text.split(cut).flatMap((part) => parts(part, budget, level + 1));
  // One "word" over the budget: cut it between characters.
  return pack(text, weight, budget);
}

/**
 * `text` in order, as pieces whose estimated tokens stay under `maxTokens` (a Kokoro model's
 * style_dim[0]); consecutive parts are packed into one piece while they fit, so ordinary text is
 * one piece and only long text is cut.
 */
export function textPieces(text: string, maxTokens: number): string[] {
  const budget = Math.max(1, maxTokens - MARGIN);
  return pack(parts(text, budget), cost, budget);
}
