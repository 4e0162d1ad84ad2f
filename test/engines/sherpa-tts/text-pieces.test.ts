import assert from 'node:assert/strict';
import { test } from 'node:test';
import { textPieces } from '../../../src/engines/sherpa-tts/text-pieces.js';

const REAL = 511; // style_dim[0] of the real Kokoro models

test('ordinary text is one piece; pieces always join back to the text', () => {
  const text = 'Hello world. This is a short paragraph, with two sentences.';
  assert.deepEqual(textPieces(text, REAL), [text]);
  const long = Array.from({ length: 60 }, (_, i) => `Sentence ${i + 1} is about the sea.`).join(' ');
  const pieces = textPieces(long, REAL);
  assert.ok(pieces.length > 1, 'sixty sentences are more than one piece');
  assert.equal(pieces.join(''), long);
  // Cut between sentences only: every piece but the last ends with a full stop and a space.
  for (const piece of pieces.slice(0, -1)) assert.match(piece, /\. $/);
});

test('CJK text alternating with punctuation is cut after its sentences', () => {
  const text = '你。'.repeat(200);
  const pieces = textPieces(text, REAL);
  assert.equal(pieces.join(''), text);
  assert.ok(pieces.length >= 7, `${pieces.length} pieces`);
  for (const piece of pieces) assert.ok(piece.length <= 70, piece);
});

test('a sentence over the limit is cut at clauses, then words, then characters', () => {
  const clauses = textPieces('one two three, four five six, seven eight nine', 30);
  assert.deepEqual(clauses, ['one two three, ', 'four five six, ', 'seven eight nine']);
  const words = textPieces('alpha beta gamma delta epsilon zeta', 22);
  assert.deepEqual(words, ['alpha beta ', 'gamma delta ', 'epsilon zeta']);
  const word = 'a'.repeat(100);
  const cut = textPieces(word, 20);
  assert.equal(cut.join(''), word);
  assert.deepEqual(
    cut.map((p) => p.length),
    [10, 10, 10, 10, 10, 10, 10, 10, 10, 10],
  );
});
