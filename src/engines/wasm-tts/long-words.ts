/**
 * flite's time grows with the square of a word's length (one word of 4,800 letters: 13 s; of 9,600:
 * 57 s), and such a "word" is only ever spelled out. Pieces of at most 64 letters keep it linear
 * (2 s and 6 s) and leave every real word as it is.
 */
export function breakLongWords(text: string): string {
  return text.replace(/\S{65,}/gu, (word) => word.match(/\S{1,64}/gu)!.join(' '));
}
