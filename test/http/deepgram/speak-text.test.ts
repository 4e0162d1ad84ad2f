/**
 * The parts of `/v1/speak` that need no server: how text written word by word is cut into the
 * pieces a session speaks (a first clause, then sentences), and the G.711 encoders against voxd's
 * own decoder.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeG711 } from '../../../src/audio/pcm.js';
import { aLaw, encode, muLaw } from '../../../src/http/deepgram/speak/audio-out.js';
import { TextCutter } from '../../../src/http/deepgram/speak/text-cutter.js';

/** Pushes the fragments in order; returns every piece each completed, flattened, then the flush. */
function cut(fragments: string[], maxChars = 0): { pieces: string[]; rest: string | undefined } {
  const cutter = new TextCutter(maxChars);
  const pieces = fragments.flatMap((f) => cutter.push(f));
  return { pieces, rest: cutter.flush() };
}

describe('TextCutter', () => {
  test('a first clause of three words or more is a piece as soon as the word after its comma arrives', () => {
    const cutter = new TextCutter(0);
    assert.deepEqual(cutter.push('The quick brown fox'), []);
    assert.deepEqual(cutter.push(' jumps,'), [], 'the comma is not a break until a space follows');
    assert.deepEqual(cutter.push(' over'), ['The quick brown fox jumps,']);
    assert.deepEqual(cutter.push(' the dog. And'), ['over the dog.']);
    assert.deepEqual(cutter.push(' then, more'), [], 'only the first piece of a segment is a clause');
    assert.equal(cutter.flush(), 'And then, more');
  });

  test('short openings, numbers and hyphens are no clause; a dash between words is', () => {
    assert.deepEqual(cut(['Well, ', 'I think so. ']).pieces, ['Well, I think so.']);
    assert.deepEqual(cut(['It costs 3,000 dollars ', 'today']).pieces, []);
    assert.deepEqual(cut(['A well-known fact ', 'here']).pieces, []);
    assert.deepEqual(cut(['Here it comes - ', 'the end']).pieces, ['Here it comes -']);
    assert.deepEqual(cut(['One two three; four']).pieces, ['One two three;']);
  });

  test('after a Flush the next text starts a new segment with its own first clause', () => {
    const cutter = new TextCutter(0);
    assert.deepEqual(cutter.push('Once upon a time, there'), ['Once upon a time,']);
    assert.equal(cutter.flush(), 'there');
    assert.deepEqual(cutter.push('And then they left, sadly'), ['And then they left,']);
  });

  test('a sentence past maxChars is refused and dropped; the next text starts afresh', () => {
    const cutter = new TextCutter(20);
    assert.throws(() => cutter.push('a'.repeat(21)), /max_input_chars=20/);
    assert.equal(cutter.flush(), undefined);
    assert.deepEqual(cutter.push('Fine. '), ['Fine.']);
  });

  test('text fed one character at a time is cut as the same text whole', () => {
    const text = 'Hello there my friend, how are you today? I am fine. Thanks';
    const whole = cut([text]);
    const byChar = cut([...text]);
    assert.deepEqual(byChar, {
      pieces: ['Hello there my friend,', 'how are you today?', 'I am fine.'],
      rest: 'Thanks',
    });
    assert.deepEqual(
      whole.pieces.join(' ') + (whole.rest ?? ''),
      byChar.pieces.join(' ') + (byChar.rest ?? ''),
    );
  });
});

describe('G.711 encoding', () => {
  test('mu-law and A-law round-trip through the decoder within their quantization step', () => {
    for (const [name, law, decode] of [
      ['mulaw', muLaw, 'ulaw'],
      ['alaw', aLaw, 'alaw'],
    ] as const) {
      for (let sample = -32768; sample <= 32767; sample += 7) {
        const back = decodeG711(Uint8Array.of(law(sample)), decode)[0]! * 32768;
        // G.711 keeps about 4 bits of mantissa: the error grows with the magnitude.
        const step = Math.max(16, Math.abs(sample) / 16);
        assert.ok(Math.abs(back - sample) <= step, `${name} ${sample} -> ${back}`);
      }
    }
  });

  test('silence is the codes telephony expects', () => {
    assert.equal(muLaw(0), 0xff);
    assert.equal(aLaw(0), 0xd5);
    assert.deepEqual([...encode(Float32Array.of(0, 1, -1), 'linear16')], [0, 0, 0xff, 0x7f, 0x00, 0x80]);
  });
});
