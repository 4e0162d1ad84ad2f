/** Word error rate: the word-level edit distance from `reference` to `heard`, per reference word. */
const wordsOf = (text: string) => text.toLowerCase().match(/[a-z0-9']+/g) ?? [];

export function wordErrorRate(reference: string, heard: string): number {
  const ref = wordsOf(reference);
  const hyp = wordsOf(heard);
  // One row of the edit-distance table at a time.
  let row = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const next = [i];
    for (let j = 1; j <= hyp.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1));
    row = next;
  }
  return ref.length === 0 ? 0 : row[hyp.length]! / ref.length;
}
