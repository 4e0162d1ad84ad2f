/**
 * The base64 check of audio_base64 and voice_ref.data (src/audio/input.ts, isBase64Of): counting the
 * decoded bytes instead of encoding them again must answer exactly as the old check did (encode the
 * bytes and compare, else the pattern), on valid payloads and on every kind of damage.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { base64Bytes, base64BytesOf, isBase64Of, isPaddedBase64Of } from '../../src/audio/base64.js';
import type { VoxdError } from '../../src/errors.js';
import { mulberry32 } from '../helpers/prng.js';

/** The check before: exact by construction. */
function reencoded(payload: string, bytes: Buffer): boolean {
  const encoded = bytes.toString('base64');
  if (encoded === payload || encoded.replace(/=+$/, '') === payload) return true;
  return /^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(payload);
}

test('isBase64Of answers as encoding again and comparing did, on valid, wrapped, unpadded and damaged payloads', () => {
  const random = mulberry32(27);
  const odd = ['-', '_', '=', ' ', '\n', '\r', '!', '.', '*', 'é', '\u0000', '==', '%'];
  let accepted = 0;
  let refused = 0;
  for (let i = 0; i < 20_000; i++) {
    const bytes = Buffer.from(
      Array.from({ length: Math.floor(random() * 40) }, () => Math.floor(random() * 256)),
    );
    let payload = bytes.toString('base64');
    const damage = Math.floor(random() * 6);
    if (damage === 1) payload = payload.replace(/=+$/, '');
    for (let d = 0; d < (damage >= 2 ? damage - 1 : 0); d++) {
      const at = Math.floor(random() * (payload.length + 1));
      const what = random() < 0.2 ? '' : odd[Math.floor(random() * odd.length)]!;
      // insert, replace or cut one character
      const cut = random() < 0.3 ? 1 : 0;
      payload = payload.slice(0, at) + what + payload.slice(at + cut);
    }
    const decoded = Buffer.from(payload, 'base64');
    const want = reencoded(payload, decoded);
    assert.equal(isBase64Of(payload, decoded), want, JSON.stringify(payload));
    // The realtime events' strict form: the pattern it used before, padding required, no whitespace.
    assert.equal(
      isPaddedBase64Of(payload, decoded),
      /^[A-Za-z0-9+/]*={0,2}$/.test(payload) && payload.length % 4 === 0,
      JSON.stringify(payload),
    );
    if (want) accepted++;
    else refused++;
  }
  assert.ok(accepted > 5000 && refused > 5000, `${accepted} accepted, ${refused} refused: both kinds tried`);
});

/** base64Bytes's answer, bytes or the refusal's message. */
function answer(decode: () => Buffer): string {
  try {
    return decode().toString('hex');
  } catch (err) {
    return `refused: ${(err as VoxdError).message}`;
  }
}

test('base64BytesOf (the bytes of a JSON body, decoded a piece at a time) answers as base64Bytes of their string', () => {
  const random = mulberry32(42);
  // Pieces are 32 KiB of characters: payloads around and across them, padding and damage anywhere.
  const sizes = [0, 1, 2, 3, 4, 100, 24_575, 24_576, 24_577, 49_151, 49_152, 49_153, 100_000];
  const odd = ['-', '_', '=', '\n', '!', 'é', '=='];
  let tried = 0;
  for (const size of sizes) {
    for (let i = 0; i < 12; i++) {
      const bytes = Buffer.from(Array.from({ length: size }, () => Math.floor(random() * 256)));
      let payload = bytes.toString('base64');
      const damage = i % 6;
      if (damage === 1) payload = payload.replace(/=+$/, '');
      if (damage === 2) payload = `data:audio/wav;base64,${payload}`;
      if (damage >= 3 && payload.length > 0) {
        const at = Math.floor(random() * payload.length);
        const what = odd[Math.floor(random() * odd.length)]!;
        payload = payload.slice(0, at) + what + payload.slice(at + (damage === 4 ? 1 : 0));
      }
      for (const maxBytes of [size, Math.max(0, size - 1), size + 10]) {
        const ascii = Buffer.from(payload, 'latin1');
        assert.equal(
          answer(() => base64BytesOf(ascii, 'audio_base64', maxBytes)),
          answer(() => base64Bytes(payload, 'audio_base64', maxBytes)),
          `${size} bytes, damage ${damage}, limit ${maxBytes}`,
        );
        tried++;
      }
    }
  }
  assert.ok(tried > 400);
});
