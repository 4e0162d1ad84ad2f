/**
 * How a diarizer's outcome takes a recogniser's text (diarized-text.ts): the words and segments
 * move to the diarizer's sample rate, the turns stay, and a diarizer that gave text of its own
 * keeps it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withText } from '../../../src/api/transcription/diarized-text.js';
import { diarizedSegments } from '../../../src/api/transcription/formats.js';
import type { InferenceOutcome } from '../../../src/runtime/runtime.js';

const outcome = (rate: number, result: InferenceOutcome['result'], wallMs = 10): InferenceOutcome => ({
  result,
  wallMs,
  slot: 0,
  generation: 0,
  inputSampleRate: rate,
});

const turns = [
  { start_sample: 0, end_sample: 16000, speaker_id: 0, confidence: 1 },
  { start_sample: 16000, end_sample: 32000, speaker_id: 1, confidence: 1 },
];

test("the recogniser's words at another rate land in the diarizer's turns", () => {
  const diarized = outcome(16000, { text: '', speakerTurns: turns }, 40);
  const heard = outcome(
    8000,
    {
      text: 'hello there friend',
      language: 'en',
      words: [
        { word: 'hello', start_sample: 800, end_sample: 3200, confidence: 0.9 },
        { word: 'there', start_sample: 4000, end_sample: 7200, confidence: 0.9 },
        { word: 'friend', start_sample: 8800, end_sample: 12000, confidence: 0.9 },
      ],
      segments: [{ start_sample: 800, end_sample: 12000, confidence: 1, text: 'hello there friend' }],
    },
    90,
  );
  const joined = withText(diarized, heard);
  assert.equal(joined.result.text, 'hello there friend');
  assert.equal(joined.result.language, 'en');
  assert.deepEqual(joined.result.speakerTurns, turns);
  assert.deepEqual(
    joined.result.words?.map((w) => [w.start_sample, w.end_sample]),
    [
      [1600, 6400],
      [8000, 14400],
      [17600, 24000],
    ],
  );
  assert.deepEqual(joined.result.segments?.[0], {
    start_sample: 1600,
    end_sample: 24000,
    confidence: 1,
    text: 'hello there friend',
  });
  assert.equal(joined.inputSampleRate, 16000);
  assert.equal(joined.wallMs, 90, 'the runs were at once: the longer one');
  assert.deepEqual(
    diarizedSegments(joined).map((s) => [s.speaker, s.text]),
    [
      ['A', 'hello there'],
      ['B', 'friend'],
    ],
  );
});

test("a diarizer's own text and words win over the recogniser's", () => {
  const own = { word: 'mine', start_sample: 0, end_sample: 100, confidence: 1 };
  const joined = withText(
    outcome(16000, { text: 'mine', words: [own], speakerTurns: turns }),
    outcome(16000, { text: 'theirs', words: [{ ...own, word: 'theirs' }] }),
  );
  assert.equal(joined.result.text, 'mine');
  assert.deepEqual(joined.result.words, [own]);
});
