import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SentenceBuffer } from '../../../src/api/speech/sentence-buffer.js';

/** Feeds `text` cut into pieces of `size` characters; every sentence in order, the rest last. */
function split(text: string, size: number): string[] {
  const buffer = new SentenceBuffer();
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(...buffer.push(text.slice(at, at + size)));
  const rest = buffer.flush();
  if (rest) out.push(rest);
  return out;
}

test('sentences come out whole however the text is cut, mid-word and mid-punctuation included', () => {
  const text = 'Hello there! How are you today? I am fine. Thanks for asking';
  const expected = ['Hello there!', 'How are you today?', 'I am fine.', 'Thanks for asking'];
  for (const size of [1, 2, 3, 5, 7, 100]) assert.deepEqual(split(text, size), expected, `pieces of ${size}`);
});

test('a sentence is handed on only once the character after its end is known', () => {
  const buffer = new SentenceBuffer();
  assert.deepEqual(buffer.push('It is done.'), []);
  assert.deepEqual(buffer.push(' Next'), ['It is done.']);
  assert.equal(buffer.flush(), 'Next');
});

test('abbreviations, initials, numbers and quotes do not end sentences where they should not', () => {
  assert.deepEqual(split('Dr. Smith met Mr. J. Jones at 3.30 p.m. today. Then they left.', 4), [
    'Dr. Smith met Mr. J. Jones at 3.30 p.m. today.',
    'Then they left.',
  ]);
  assert.deepEqual(split('She said "Stop!" He stopped. e.g. this is fine. Version 2.5 is out.', 3), [
    'She said "Stop!"',
    'He stopped.',
    'e.g. this is fine.',
    'Version 2.5 is out.',
  ]);
  assert.deepEqual(split('Wait... what?! Really?', 2), ['Wait...', 'what?!', 'Really?']);
});

test('line breaks end sentences; CJK terminators need no space; blank pieces give nothing', () => {
  assert.deepEqual(split('First line\nSecond line\n\nThird', 3), ['First line', 'Second line', 'Third']);
  assert.deepEqual(split('你好。今天天气很好！', 2), ['你好。', '今天天气很好！']);
  const buffer = new SentenceBuffer();
  assert.deepEqual(buffer.push('   '), []);
  assert.equal(buffer.flush(), undefined);
});
