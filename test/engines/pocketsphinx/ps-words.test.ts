import assert from 'node:assert/strict';
import { test } from 'node:test';
import { segmentWords } from '../../../src/engines/pocketsphinx/ps-words.js';

const seg = (word: string, startFrame: number, endFrame: number, posterior = 1) => ({
  word,
  startFrame,
  endFrame,
  posterior,
});

test('segmentWords: fillers left out, pronunciation variants named by their word, frames as samples', () => {
  const words = segmentWords(
    [
      seg('<s>', 0, 6),
      seg('<sil>', 7, 20),
      seg('he', 21, 32, 0.8123456),
      seg('[NOISE]', 33, 40),
      seg('was(2)', 41, 54, 0.5),
      seg('++BREATH++', 55, 60),
      seg('</s>', 61, 70),
    ],
    16000,
  );
  assert.deepEqual(words, [
    { word: 'he', start_sample: 21 * 160, end_sample: 33 * 160, confidence: 0.8123 },
    { word: 'was', start_sample: 41 * 160, end_sample: 55 * 160, confidence: 0.5 },
  ]);
});

test('segmentWords: a word is cut at the end of the audio decoded', () => {
  assert.deepEqual(segmentWords([seg('end', 90, 110)], 16000), [
    { word: 'end', start_sample: 14400, end_sample: 16000, confidence: 1 },
  ]);
  assert.deepEqual(segmentWords([seg('past', 120, 130)], 16000), [
    { word: 'past', start_sample: 16000, end_sample: 16000, confidence: 1 },
  ]);
});
