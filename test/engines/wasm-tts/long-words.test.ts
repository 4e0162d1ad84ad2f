import assert from 'node:assert/strict';
import { test } from 'node:test';
import { breakLongWords } from '../../../src/engines/wasm-tts/long-words.js';

test('words over 64 letters are cut into pieces of 64; everything else is left as it is', () => {
  const normal = 'Supercalifragilisticexpialidocious, naïve café — 東京 and https://example.com/a/b?c=d.';
  assert.equal(breakLongWords(normal), normal);
  const word = 'a'.repeat(150);
  assert.equal(breakLongWords(`x ${word} y`), `x ${'a'.repeat(64)} ${'a'.repeat(64)} ${'a'.repeat(22)} y`);
  const emoji = '😀'.repeat(65);
  assert.deepEqual(
    breakLongWords(emoji)
      .split(' ')
      .map((piece) => [...piece].length),
    [64, 1],
  );
});
