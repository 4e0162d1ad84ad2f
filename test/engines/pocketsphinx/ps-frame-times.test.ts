/**
 * The word-time map (ps-frame-times.ts) is the decoder's twin: over real recordings with pauses
 * (which the decoder's voice detector leaves out), decoded whole and in quarter-second steps, it
 * keeps exactly as many frames as the decoder searched, and the frames it keeps lie in the input,
 * in order, with the pause's frames missing. A twin that drifted would time every word wrongly.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_POCKETSPHINX_MODEL } from '../../../src/engines/pocketsphinx/pocketsphinx-family.js';
import { FRAME_SAMPLES, PsDecoder } from '../../../src/engines/pocketsphinx/ps-decoder.js';
import { joinedWav } from '../../helpers/librivox.js';

const MODEL = {
  hmm: join(DEFAULT_POCKETSPHINX_MODEL, 'en-us'),
  lm: join(DEFAULT_POCKETSPHINX_MODEL, 'en-us.lm.bin'),
  dict: join(DEFAULT_POCKETSPHINX_MODEL, 'cmudict-en-us.dict'),
};
const STEP = 4000;
const PAUSE = 2;

const { wav, starts } = joinedWav(['0870', '0930', '0880'], PAUSE);
const pcm = new Int16Array(wav.buffer.slice(wav.byteOffset + 44));

test('the word-time map keeps the frames the decoder searched, offline and in steps, after either', () => {
  const d = new PsDecoder(MODEL);
  try {
    for (const inSteps of [false, true, false, true]) {
      d.startFresh();
      if (inSteps) for (let at = 0; at < pcm.length; at += STEP) d.feedPart(pcm.subarray(at, at + STEP));
      else d.decodeWhole(pcm);
      d.endUtt();
      const { searched, mapped } = d.frameCounts();
      assert.ok(searched > 0);
      assert.equal(mapped, searched, `${inSteps ? 'in steps' : 'whole'}: frames mapped = frames searched`);
      const inputFrames = pcm.length / FRAME_SAMPLES;
      assert.ok(
        searched < inputFrames - PAUSE * 100,
        `the pauses' frames are left out: ${searched} of ${inputFrames}`,
      );
      // The words are timed in the input: a word of the second clip starts after the first pause.
      const secondClip = starts[1]! / FRAME_SAMPLES;
      const words = d.segments().filter((s) => !/^</.test(s.word));
      assert.ok(
        words.some((w) => w.startFrame >= secondClip),
        JSON.stringify(words),
      );
      assert.ok(
        words.every(
          (w, i) => w.startFrame <= w.endFrame && (i === 0 || words[i - 1]!.endFrame < w.startFrame),
        ),
        JSON.stringify(words),
      );
      assert.ok(words.every((w) => w.endFrame < inputFrames));
    }
  } finally {
    d.dispose();
  }
});
