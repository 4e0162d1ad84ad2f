/** The realtime input formats: G.711 expansions against the ITU-T tables' known points, PCM16 samples. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeSamples, gaFormat } from '../../../src/http/realtime/audio-format.js';

const scaled = (samples: Float32Array) => [...samples].map((s) => Math.round(s * 32768));

test('µ-law: 0x00 and 0x80 are the extremes, 0xff and 0x7f are zero, each step is monotonic', () => {
  assert.deepEqual(
    scaled(decodeSamples(Uint8Array.of(0x00, 0x80, 0xff, 0x7f, 0xf0, 0x70), 'g711_ulaw')),
    [-32124, 32124, 0, 0, 120, -120],
  );
  const positive = scaled(
    decodeSamples(
      Uint8Array.from({ length: 128 }, (_, i) => 0xff - i),
      'g711_ulaw',
    ),
  );
  for (let i = 1; i < positive.length; i++) assert.ok(positive[i]! > positive[i - 1]!, `step ${i}`);
});

test('A-law: 0xd5 and 0x55 are the smallest values, 0xaa and 0x2a the extremes', () => {
  assert.deepEqual(
    scaled(decodeSamples(Uint8Array.of(0xd5, 0x55, 0xaa, 0x2a), 'g711_alaw')),
    [8, -8, 32256, -32256],
  );
});

test('pcm16 is little-endian, signed, and an odd trailing byte is left out', () => {
  const bytes = Uint8Array.of(0x00, 0x80, 0xff, 0x7f, 0x01, 0x00, 0x42);
  assert.deepEqual(scaled(decodeSamples(bytes, 'pcm16')), [-32768, 32767, 1]);
});

test('the GA format object', () => {
  assert.deepEqual(gaFormat({ encoding: 'pcm16', rate: 16000 }), { type: 'audio/pcm', rate: 16000 });
  assert.deepEqual(gaFormat({ encoding: 'g711_alaw', rate: 8000 }), { type: 'audio/pcma' });
});
