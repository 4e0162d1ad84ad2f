import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refineSegment } from '../../../src/engines/silero-vad/refine-segments.js';

test('a segment shrinks to where its energy is, and never grows', () => {
  const samples = new Float32Array(16000);
  for (let i = 4000; i < 12000; i++) samples[i] = 0.3 * Math.sin(i / 5);
  assert.deepEqual(refineSegment(samples, 3200, 14400), { start: 4000, end: 12000 });
  assert.deepEqual(refineSegment(samples, 6000, 8000), { start: 6000, end: 8000 }, 'all loud: unchanged');
  assert.deepEqual(
    refineSegment(new Float32Array(1000), 0, 1000),
    { start: 0, end: 1000 },
    'all silent: unchanged',
  );
});
