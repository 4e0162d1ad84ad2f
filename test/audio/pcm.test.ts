/** The one PCM decoder (src/audio/pcm.ts) that WAV, the live body, realtime and Wyoming share. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toMono } from '../../src/audio/convert.js';
import { decodePcm, decodePcmMono } from '../../src/audio/pcm.js';
import { floats } from '../../src/audio/pcm16-audio.js';

test('PCM16 samples decode the same from an aligned and an unaligned byte offset', () => {
  const values = [0, 1, -1, 32767, -32768, 12345, -2, 256];
  const aligned = new Uint8Array(values.length * 2 + 2);
  const unaligned = new Uint8Array(values.length * 2 + 1);
  const a = new DataView(aligned.buffer);
  const u = new DataView(unaligned.buffer);
  values.forEach((v, i) => {
    a.setInt16(2 + i * 2, v, true);
    u.setInt16(1 + i * 2, v, true);
  });
  const format = { float: false, channels: 1, bits: 16 };
  const fromAligned = decodePcm(aligned.subarray(2), format);
  const fromUnaligned = decodePcm(unaligned.subarray(1), format);
  const expected = values.map((v) => v / 32768);
  assert.deepEqual([...fromAligned], expected);
  assert.deepEqual([...fromUnaligned], expected);
  // Into a larger buffer at an offset, as the audio worker fills a file's samples piece by piece.
  const into = new Float32Array(values.length + 3);
  decodePcm(aligned.subarray(2), format, into, 3);
  assert.deepEqual([...into.subarray(3)], expected);
});

test('every encoding: 8-bit unsigned, 24 and 32-bit signed, float clamped (NaN is 0); a partial frame is left out', () => {
  assert.deepEqual(
    [...decodePcm(Uint8Array.of(0, 128, 255), { bits: 8, float: false, channels: 1 })],
    [-1, 0, 127 / 128],
  );
  const b24 = Uint8Array.of(0x00, 0x00, 0x80, 0xff, 0xff, 0x7f, 0x01, 0x00, 0x00, 0xaa);
  assert.deepEqual(
    [...decodePcm(b24, { bits: 24, float: false, channels: 1 })],
    [-1, 8388607 / 8388608, 1 / 8388608],
  );
  const b32 = new DataView(new ArrayBuffer(8));
  b32.setInt32(0, -2147483648, true);
  b32.setInt32(4, 1 << 30, true);
  assert.deepEqual(
    [...decodePcm(new Uint8Array(b32.buffer), { bits: 32, float: false, channels: 1 })],
    [-1, 0.5],
  );
  const f32 = new DataView(new ArrayBuffer(16));
  for (const [i, v] of [2, -3, Number.NaN, 0.25].entries()) f32.setFloat32(i * 4, v, true);
  assert.deepEqual(
    [...decodePcm(new Uint8Array(f32.buffer), { bits: 32, float: true, channels: 1 })],
    [1, -1, 0, 0.25],
  );
  // Two channels of 16-bit: 6 bytes are one whole frame and half of one.
  assert.equal(decodePcm(new Uint8Array(6), { bits: 16, float: false, channels: 2 }).length, 2);
});

test('decodePcmMono is exactly toMono of decodePcm, across its block edge, for every width', () => {
  const frames = 4096 * 2 + 7;
  for (const bits of [8, 16, 24, 32]) {
    for (const channels of [1, 2, 3]) {
      const bytes = Uint8Array.from({ length: frames * channels * (bits / 8) }, (_, i) => (i * 7919) & 0xff);
      const encoding = { bits, float: false, channels };
      const whole = { samples: decodePcm(bytes, encoding), sampleRate: 16000, channels };
      assert.deepEqual(
        decodePcmMono(bytes, encoding),
        floats(toMono(whole)),
        `${bits} bits, ${channels} channel(s)`,
      );
    }
  }
});
