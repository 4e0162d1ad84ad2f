/**
 * The base64 check of audio_base64 and voice_ref.data (src/audio/input.ts, isBase64Of): counting the
 * decoded bytes instead of encoding them again must answer exactly as the old check did (encode the
 * bytes and compare, else the pattern), on valid payloads and on every kind of damage.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isBase64Of, isPaddedBase64Of } from '../../src/audio/base64.js';
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
