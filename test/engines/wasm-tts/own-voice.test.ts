/**
 * Voices as their authors tuned them: at speed 1 voxd's flite and espeak-ng speak exactly as the
 * engines do on their own (same samples), and speed scales each voice's own rate.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { floats } from '../../../src/audio/pcm16-audio.js';
import { durationMs } from '../../../src/audio/types.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { FLITE_DURATION_STRETCH } from '../../../src/engines/wasm-tts/synth-args.js';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { post } from '../../helpers/voxd.js';
import { espeakDirect, fliteDirect } from './engine-direct.js';

const TEXT = 'The quick brown fox jumps over the lazy dog.';

describe('flite and espeak-ng voices as their authors tuned them', () => {
  const s = engineSuiteServer([FLITE, lazyModel('espeak', 'espeak_tts', 'tts')]);

  async function voxd(model: string, voice: string, speed?: number) {
    const res = await post(s.url, '/v1/audio/speech', { model, input: TEXT, voice, speed });
    assert.equal(res.status, 200, res.body.toString('utf8'));
    return decodeWav(res.body);
  }

  for (const [model, voice, direct] of [
    ['flite', 'kal16', fliteDirect],
    ['flite', 'slt', fliteDirect],
    ['espeak', 'en-us', espeakDirect],
    // Not a +f variant: those differ between runs a second apart in espeak-ng itself (measured).
    ['espeak', 'en-us+m3', espeakDirect],
  ] as const) {
    test(`${model} ${voice} at speed 1 is the engine's own output, sample for sample`, async () => {
      const own = decodeWav(await direct(voice, TEXT));
      const ours = await voxd(model, voice, 1);
      assert.equal(ours.sampleRate, own.sampleRate);
      assert.equal(floats(ours).length, floats(own).length, 'length');
      assert.deepEqual(floats(ours), floats(own));
    });
  }

  test("the duration_stretch table holds each flite voice's own value", async () => {
    for (const [voice, stretch] of Object.entries(FLITE_DURATION_STRETCH)) {
      const own = await fliteDirect(voice, TEXT);
      const set = await fliteDirect(voice, TEXT, ['--setf', `duration_stretch=${stretch}`]);
      assert.ok(set.equals(own), `${voice}: duration_stretch=${stretch} is not the voice's own value`);
    }
  });

  test("speed scales the voice's own rate: twice as fast is about half as long", async () => {
    for (const [model, voice] of [
      ['flite', 'kal16'],
      ['flite', 'slt'],
      ['espeak', 'en-us'],
    ]) {
      const normal = durationMs(await voxd(model!, voice!));
      const fast = durationMs(await voxd(model!, voice!, 2));
      const ratio = fast / normal;
      assert.ok(ratio > 0.4 && ratio < 0.65, `${model} ${voice}: speed 2 is ${ratio.toFixed(2)} of speed 1`);
    }
  });
});
