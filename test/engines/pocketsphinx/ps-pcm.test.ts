import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decoderPcm } from '../../../src/engines/pocketsphinx/ps-pcm.js';
import { floatSamples } from '../../../src/engines/runner-samples.js';

test('pocketsphinx hears an upload the same whether the server sends its PCM16 or its floats', () => {
  // Every 16-bit value: the floats are what the WAV decoder makes of it (v / 32768).
  const pcm16 = new Int16Array(65536);
  for (let i = 0; i < pcm16.length; i++) pcm16[i] = i - 32768;
  const floats = floatSamples(pcm16);
  assert.equal(floats[0], -1);
  assert.equal(floats[65535], 32767 / 32768);
  assert.deepEqual(decoderPcm(pcm16), decoderPcm(floats));
  // Floats are clamped to full scale before they are scaled.
  assert.deepEqual([...decoderPcm(new Float32Array([2, -2, 0.5]))], [32767, -32767, 16384]);
});
