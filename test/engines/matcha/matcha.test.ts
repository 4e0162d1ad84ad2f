import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { floats } from '../../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { badRequest, post } from '../../helpers/voxd.js';

// Tiny ONNX files in the real Matcha and vocoder shapes (scripts/test-models/matcha.py). The
// acoustic model gives every token ceil(4 / speed) flat mel frames valued 1 + speaker; the vocoders
// turn a frame into 256 samples of a tone whose amplitude follows the mel. So with T tokens:
//   hifigan (and the built-in vocoder): exactly 1024 * T samples at speed 1;
//   vocos (sherpa's inverse STFT, centred): 256 * (frames - 1) samples;
//   speaker 1 is twice as loud as speaker 0.
const MODELS = fileURLToPath(new URL('../../../../test/fixtures/models', import.meta.url));
const EN = join(MODELS, 'fake-matcha');
const ZH = join(MODELS, 'fake-matcha-zh');
const BUILTIN = join(MODELS, 'fake-matcha-builtin-vocoder');
const HIFIGAN = join(ZH, 'hifigan_v2.onnx');

const tts = (model: string, input: string, extra: Record<string, unknown> = {}) => ({
  model,
  input,
  ...extra,
});

function peak(samples: Float32Array): number {
  let max = 0;
  for (const s of samples) max = Math.max(max, Math.abs(s));
  return max;
}

/** A folder under `root` holding copies of `files` ([source, name in the folder]). */
function folder(root: string, name: string, files: [string, string][]): string {
  const dir = join(root, name);
  mkdirSync(dir);
  for (const [source, as] of files) copyFileSync(source, join(dir, as));
  return dir;
}

describe('matcha_tts (sherpa-onnx adapter)', () => {
  const s = engineSuiteServer(
    (root) => {
      const en = (name: string) => join(EN, name);
      const enNoVocoder = folder(root, 'en-no-vocoder', [
        [en('model-steps-3.onnx'), 'model-steps-3.onnx'],
        [en('tokens.txt'), 'tokens.txt'],
      ]);
      const steps = folder(root, 'steps', [
        [en('model-steps-3.onnx'), 'model-steps-2.onnx'],
        [en('model-steps-3.onnx'), 'model-steps-3.onnx'],
        [en('tokens.txt'), 'tokens.txt'],
        [en('vocos-22khz-univ.onnx'), 'vocos-22khz-univ.onnx'],
      ]);
      // A broken int8 copy: loading it proves which precision was chosen.
      const int8 = folder(root, 'int8', [
        [en('model-steps-3.onnx'), 'model-steps-3.onnx'],
        [en('tokens.txt'), 'tokens.txt'],
        [en('vocos-22khz-univ.onnx'), 'vocos-22khz-univ.onnx'],
      ]);
      writeFileSync(join(int8, 'model-steps-3.int8.onnx'), 'not a model\n');
      const notMatcha = folder(root, 'not-matcha', [
        [join(MODELS, 'fake-piper', 'model.onnx'), 'model-steps-3.onnx'],
        [en('tokens.txt'), 'tokens.txt'],
        [en('vocos-22khz-univ.onnx'), 'vocos-22khz-univ.onnx'],
      ]);
      const zhNoLexicon = folder(root, 'zh-no-lexicon', [
        [join(ZH, 'model-steps-3.onnx'), 'model-steps-3.onnx'],
        [join(ZH, 'tokens.txt'), 'tokens.txt'],
        [HIFIGAN, 'hifigan_v2.onnx'],
      ]);
      mkdirSync(join(root, 'empty'));
      const model = (id: string, path?: string, load_options?: Record<string, string>) => ({
        id,
        family: 'matcha_tts',
        task: 'tts',
        lazy: true,
        ...(path ? { path } : {}),
        ...(load_options ? { load_options } : {}),
      });
      return [
        model('en', EN),
        model('zh', ZH),
        model('builtin', BUILTIN),
        model('hifigan-option', enNoVocoder, { vocoder: HIFIGAN }),
        model('no-vocoder', enNoVocoder),
        model('vocoder-missing', enNoVocoder, { vocoder: 'nowhere/vocos.onnx' }),
        model('vocoder-not-vocoder', enNoVocoder, { vocoder: 'model-steps-3.onnx' }),
        model('steps-unset', steps),
        model('steps-3', steps, { steps: '3' }),
        model('steps-5', steps, { steps: '5' }),
        model('steps-bad', steps, { steps: 'three' }),
        model('fp32', int8),
        model('int8', int8, { precision: 'int8' }),
        model('not-matcha', notMatcha),
        model('zh-no-lexicon', zhNoLexicon),
        model('empty', join(root, 'empty')),
        model('gone', join(root, 'gone')),
        model('nopath'),
      ];
    },
    { scratch: 'voxd-matcha-' },
  );

  /** Asserts that speaking `input` with `model` is a 400 whose message holds every one of `parts`. */
  const refused = async (model: string, input: string, ...parts: string[]) =>
    badRequest(await post(s.url, '/v1/audio/speech', tts(model, input)), ...parts);

  async function speak(body: Record<string, unknown>) {
    const res = await post(s.url, '/v1/audio/speech', body);
    assert.equal(res.status, 200, res.body.toString());
    const audio = decodeWav(res.body);
    assert.deepEqual(
      [audio.sampleRate, audio.channels],
      [22050, 1],
      'rate and channels from the model metadata',
    );
    return { ...audio, body: res.body };
  }

  test('English (espeak) with a vocos vocoder: length follows tokens and speed, deterministically', async () => {
    const one = await speak(tts('en', 'Hello world.'));
    // 256 * (4T - 1) samples for T tokens.
    assert.equal(floats(one).length % 256, 0, `${floats(one).length} samples`);
    const frames = floats(one).length / 256 + 1;
    assert.equal(frames % 4, 0, `${frames} frames is not 4 per token`);
    const tokens = frames / 4;
    assert.ok(tokens > 10, `${tokens} tokens for "Hello world."`);
    assert.ok(Math.abs(peak(floats(one)) - 1 / 3) < 0.01, `peak ${peak(floats(one))}`);

    assert.deepEqual((await speak(tts('en', 'Hello world.'))).body, one.body, 'same text, same bytes');
    const fast = await speak(tts('en', 'Hello world.', { speed: 2 }));
    assert.equal(floats(fast).length, 256 * (2 * tokens - 1), 'speed 2: 2 frames per token');
    const slow = await speak(tts('en', 'Hello world.', { speed: 0.5 }));
    assert.equal(floats(slow).length, 256 * (8 * tokens - 1), 'speed 0.5: 8 frames per token');
    const longer = await speak(tts('en', 'Hello world, and good morning to everyone.'));
    assert.ok(floats(longer).length > floats(one).length, 'more phonemes, more audio');
  });

  test('voice is the speaker number; a speaker the model lacks or a name is a 400', async () => {
    const zero = await speak(tts('en', 'Hello world.', { voice: '0' }));
    const one = await speak(tts('en', 'Hello world.', { voice: '1' }));
    assert.equal(floats(one).length, floats(zero).length);
    const ratio = peak(floats(one)) / peak(floats(zero));
    assert.ok(Math.abs(ratio - 2) < 0.01, `speaker 1 / speaker 0 peak ratio ${ratio}`);
    badRequest(
      await post(s.url, '/v1/audio/speech', tts('en', 'hi', { voice: '2' })),
      'speaker 2 does not exist',
    );
    badRequest(await post(s.url, '/v1/audio/speech', tts('en', 'hi', { voice: 'alice' })), 'voice: "alice"');
    badRequest(await post(s.url, '/v1/audio/speech', tts('en', 'hi', { speed: 9 })), 'speed', '"9"');
    await refused('en', ' ?! ', 'no letters or digits');
    await refused('en', '', 'input');
  });

  test('Chinese (lexicon.txt) with a hifigan vocoder in the folder: exact lengths', async () => {
    // 你好 -> n i3 h ao3, with blanks between and around: 9 tokens, 36 frames, 256 samples each.
    assert.equal(floats(await speak(tts('zh', '你好'))).length, 9 * 4 * 256);
    assert.equal(floats(await speak(tts('zh', '你好', { speed: 2 }))).length, 9 * 2 * 256);
    // 你好世界。 -> 8 phones and the full stop: 19 tokens.
    assert.equal(floats(await speak(tts('zh', '你好世界。'))).length, 19 * 4 * 256);
    assert.equal(
      floats(await speak(tts('zh', '你好abc'))).length,
      9 * 4 * 256,
      'words not in the lexicon are skipped',
    );
    const zh = await speak(tts('zh', '你好'));
    assert.ok(Math.abs(peak(floats(zh)) - 0.25) < 0.01, `peak ${peak(floats(zh))}`);
  });

  test('text the model makes no audio from is a 400, and the server keeps serving', async () => {
    // sherpa makes no tokens from words outside the lexicon; its legacy generate call crashed here.
    await refused('zh', '猫', 'produced no audio');
    await refused('zh', 'abc', 'produced no audio');
    assert.equal(floats(await speak(tts('zh', '你好'))).length, 9 * 4 * 256);
  });

  test('the vocoder can come from load_options.vocoder; hifigan and vocos are told apart by metadata', async () => {
    const vocos = await speak(tts('en', 'Hello world.'));
    const hifigan = await speak(tts('hifigan-option', 'Hello world.'));
    // The same frames through hifigan: 256 per frame, no STFT edge.
    assert.equal(floats(hifigan).length, floats(vocos).length + 256);
    assert.ok(Math.abs(peak(floats(hifigan)) - 0.25) < 0.01, `peak ${peak(floats(hifigan))}`);
  });

  test('an acoustic model with its vocoder built in (audio_output) needs none', async () => {
    const vocos = await speak(tts('en', 'Hello world.'));
    const builtin = await speak(tts('builtin', 'Hello world.'));
    assert.equal(floats(builtin).length, floats(vocos).length + 256);
    badRequest(
      await post(s.url, '/v1/audio/speech', tts('builtin', 'hi', { voice: '1' })),
      'speaker 1 does not exist',
    );
  });

  test('a missing or wrong vocoder is a 400 that says how to supply one', async () => {
    // The message names vocoders to get and both ways to supply one.
    const vocoders = ['vocos-22khz-univ.onnx', 'hifigan_v2.onnx'];
    await refused(
      'no-vocoder',
      'hi',
      'is missing: vocoder (',
      ...vocoders,
      'put it in the folder',
      'load_options.vocoder',
    );
    await refused('vocoder-missing', 'hi', 'load_options.vocoder: "nowhere/vocos.onnx" is not a file');
    // sherpa itself crashes on a vocoder without a known model_type: voxd refuses it first.
    await refused('vocoder-not-vocoder', 'hi', 'is not a vocoder sherpa-onnx can run', '"matcha-tts"');
  });

  test('several acoustic models: load_options.steps picks one', async () => {
    await refused(
      'steps-unset',
      'hi',
      'several files for acousticModel (model-steps-2.onnx, model-steps-3.onnx)',
    );
    await speak(tts('steps-3', 'hi'));
    await refused('steps-5', 'hi', 'is missing: acousticModel (model-steps-5.onnx)');
    await refused('steps-bad', 'hi', 'load_options.steps: "three" is invalid');
  });

  test('precision picks the int8 copy of the acoustic model when asked', async () => {
    await speak(tts('fp32', 'hi'));
    await refused('int8', 'hi', 'model-steps-3.int8.onnx cannot be read', 'not an ONNX model');
  });

  test('folders missing files, or holding something else, are 400s naming what is wrong', async () => {
    const everyFile = [
      'is missing: acousticModel (the acoustic model, e.g. model-steps-3.onnx',
      'tokens (tokens.txt)',
      'vocoder (a vocoder such as vocos-22khz-univ.onnx',
    ];
    await refused('empty', 'hi', 'matcha_tts model folder', ...everyFile);
    await refused('zh-no-lexicon', '你好', 'is missing: lexicon (lexicon.txt)');
    await refused('not-matcha', 'hi', 'is not a Matcha acoustic model', 'lacks pad_id, use_eos_bos');
    await refused('gone', 'hi', 'model folder not found');
    await refused('nopath', 'hi', 'matcha_tts needs "path"');
    assert.equal((await post(s.url, '/v1/audio/speech', tts('en', 'still serving'))).status, 200);
  });
});
