import assert from 'node:assert/strict';
import { test } from 'node:test';
import { floats } from '../../src/audio/pcm16-audio.js';
import type { Audio } from '../../src/audio/types.js';
import { sentences } from '../../src/engines/engine-options.js';
import { speakSentences } from '../../src/engines/speak-sentences.js';
import type { EngineEvent } from '../../src/engines/types.js';

test('sentences: cut after sentence marks and line breaks; pieces with nothing to say join the last', () => {
  assert.deepEqual(sentences('Hello there. How are you?  Fine!\nNext line… 東京です。次の文'), [
    'Hello there.',
    'How are you?',
    'Fine!',
    'Next line…',
    '東京です。',
    '次の文',
  ]);
  assert.deepEqual(sentences('Version 2.5 is out. ...'), ['Version 2.5 is out. ...']);
  assert.deepEqual(sentences('  '), []);
});

test('speakSentences: emits each sentence (text, then audio) as made, skips silent ones, returns their concatenation', async () => {
  const events: EngineEvent[] = [];
  const tone = (n: number): Audio => ({
    samples: new Float32Array(n).fill(n),
    sampleRate: 8000,
    channels: 1,
  });
  const audio = await speakSentences(
    'One. Skip me! Three?',
    async (s) => (s === 'Skip me!' ? null : tone(s.length)),
    (e) => events.push(e),
    () => 'nothing',
  );
  // Each sentence's text, then its audio; the skipped sentence sends neither.
  assert.deepEqual(
    events.map((e) => (e.type === 'audio' ? floats(e.audio).length : e.type === 'text' ? e.delta : e.type)),
    ['One.', 4, ' Three?', 6],
  );
  assert.equal(floats(audio).length, 10);
  assert.equal(floats(audio)[0], 4);
  assert.equal(floats(audio)[9], 6);
  await assert.rejects(
    speakSentences(
      'A. B.',
      async () => null,
      undefined,
      () => 'input: nothing to say',
    ),
    /input: nothing to say/,
  );
});
