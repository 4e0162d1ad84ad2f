import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SentenceBuffer, WHITE_SPACE } from '../../../src/api/speech/sentence-buffer.js';
import type { VoxdError } from '../../../src/errors.js';

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

test('a word is looked at only a few characters back, with the same verdicts as over the whole text', () => {
  // Ending in an abbreviation is not being one: "Sandr." and "𝐀dr." end their sentences.
  for (const size of [1, 2, 3, 5, 100])
    assert.deepEqual(
      split('Meet Alexandersondr. Next to 𝐀dr. Then x.dr. Now mr.dr. Go', size),
      ['Meet Alexandersondr.', 'Next to 𝐀dr.', 'Then x.dr.', 'Now mr.dr.', 'Go'],
      `pieces of ${size}`,
    );
});

test('the white space list is what /\\s/ and trim() see as white space', () => {
  const expected: string[] = [];
  for (let unit = 0; unit < 0x10000; unit++)
    if (/\s/.test(String.fromCharCode(unit))) expected.push(String.fromCharCode(unit));
  assert.deepEqual([...WHITE_SPACE], expected);
});

/** The time one call takes, in ms. */
function timed(run: () => void): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

// Linear work, checked against bounds the old scan (from the start on every push, a regex over the
// whole prefix at every period) missed by seconds: 128 KiB of "Dr. " in one piece took it 8-10 s,
// 20,000 pieces of it over 3 s. Here each takes milliseconds; the bounds leave room for a loaded machine.
test('a long text without a sentence end costs time linear in its length, in one piece or in many', () => {
  const buffer = new SentenceBuffer();
  const one = timed(() => assert.deepEqual(buffer.push('Dr. '.repeat(32 * 1024)), []));
  assert.ok(one < 1000, `128 KiB of "Dr. " in one piece took ${one.toFixed(0)} ms`);
  const many = new SentenceBuffer();
  const pieces = timed(() => {
    for (let i = 0; i < 20_000; i++) assert.deepEqual(many.push('Dr. '), []);
  });
  assert.ok(pieces < 1000, `20,000 pieces of "Dr. " took ${pieces.toFixed(0)} ms`);
  assert.equal(many.push('x. Y')[0]?.length, 20_000 * 4 + 2);
});

test('text past maxChars without a sentence end is refused as it arrives, naming the field and the limit', () => {
  const buffer = new SentenceBuffer({ maxChars: 10 });
  assert.deepEqual(buffer.push('abcde'), []);
  assert.throws(
    () => buffer.push('fghijk'),
    (err: VoxdError) => {
      assert.equal(err.code, 'E_INVALID_REQUEST');
      assert.match(
        err.message,
        /^text: more than 10 characters without a sentence end, over max_input_chars=10;/,
      );
      return true;
    },
  );
  // What was held is dropped: the next piece starts afresh.
  assert.deepEqual(buffer.push('Short. '), ['Short.']);
  assert.equal(buffer.flush(), undefined);

  // One piece of 1 MiB is refused without being held.
  assert.throws(() => new SentenceBuffer({ maxChars: 100 }).push('a'.repeat(1 << 20)), /max_input_chars=100/);
  assert.throws(() => new SentenceBuffer({ maxChars: 100, field: 'input' }).push('Dr. '.repeat(26)), {
    message: /^input: /,
  });
});

test('maxChars counts a sentence as the model would: trimmed, in code points, each sentence on its own', () => {
  const buffer = new SentenceBuffer({ maxChars: 10 });
  // Ten characters, white space around them, an astral letter counted once.
  assert.deepEqual(buffer.push('   𝐀bcdefghi.   '), ['𝐀bcdefghi.']);
  assert.deepEqual(buffer.push('\n  𝐀bcdefghi\n'), ['𝐀bcdefghi']);
  assert.deepEqual(buffer.push('Sentences. Of. Any. Number. '), ['Sentences.', 'Of.', 'Any.', 'Number.']);
  assert.equal(buffer.push(' 0123456789  ').length, 0);
  assert.equal(buffer.flush(), '0123456789');
  assert.throws(() => new SentenceBuffer({ maxChars: 10 }).push('0123456789a'), /max_input_chars=10/);
  assert.throws(() => new SentenceBuffer({ maxChars: 10 }).push('01234 56789'), /max_input_chars=10/);
  // 0 is no limit, as max_input_chars=0 is.
  assert.equal(new SentenceBuffer({ maxChars: 0 }).push('a'.repeat(100_000)).length, 0);
});
