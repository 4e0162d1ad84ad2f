import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { floats } from '../../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { errorOf, post } from '../../helpers/voxd.js';

// Tiny ONNX files in Kokoro's real I/O names, shapes and metadata (scripts/test-models/kokoro.py):
// every token (the two 0 pads included) becomes floor(240 / speed) samples of a 300 Hz sine whose
// amplitude is the speaker's voices.bin style value, 0.1 * (speaker number + 1).
const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/models', import.meta.url));
const EN = join(FIXTURES, 'fake-kokoro');
const MULTI = join(FIXTURES, 'fake-kokoro-multi-lang');
const PER_TOKEN = 240;

function copy(from: string, to: string, files: Record<string, string>): void {
  mkdirSync(to, { recursive: true });
  for (const [name, source] of Object.entries(files)) copyFileSync(join(from, source), join(to, name));
}

const peak = (samples: Float32Array) => samples.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

describe('kokoro_tts (sherpa-onnx adapter)', () => {
  const s = engineSuiteServer(
    (dir) => {
      const enFiles = { 'model.onnx': 'model.onnx', 'voices.bin': 'voices.bin', 'tokens.txt': 'tokens.txt' };
      copy(EN, join(dir, 'only-model'), { 'model.onnx': 'model.onnx' });
      mkdirSync(join(dir, 'empty'));
      copy(MULTI, join(dir, 'multi-no-lexicon'), enFiles);
      copy(EN, join(dir, 'short-voices'), enFiles);
      writeFileSync(join(dir, 'short-voices', 'voices.bin'), Buffer.alloc(100));
      copy(EN, join(dir, 'bad-tokens'), enFiles);
      writeFileSync(join(dir, 'bad-tokens', 'tokens.txt'), '$ 0\nab 1\n');
      copy(join(FIXTURES, 'fake-piper'), join(dir, 'not-kokoro'), { 'model.onnx': 'model.onnx' });
      copy(EN, join(dir, 'not-kokoro'), { 'voices.bin': 'voices.bin', 'tokens.txt': 'tokens.txt' });
      // Two precisions that differ visibly: fp32 is the English model, int8 the multi-lingual one.
      copy(EN, join(dir, 'both'), { 'model.onnx': 'model.onnx', 'voices.bin': 'voices.bin' });
      copy(MULTI, join(dir, 'both'), {
        'model.int8.onnx': 'model.onnx',
        'tokens.txt': 'tokens.txt',
        'lexicon-zh.txt': 'lexicon-zh.txt',
      });
      const tts = (id: string, path: string | undefined, load_options?: Record<string, string>) => ({
        id,
        family: 'kokoro_tts',
        task: 'tts',
        lazy: true,
        ...(path === undefined ? {} : { path }),
        ...(load_options ? { load_options } : {}),
      });
      return [
        tts('en', EN),
        tts('multi', MULTI),
        tts('multi-us-only', MULTI, { lexicon: 'lexicon-us-en.txt' }),
        tts('multi-bad-lexicon', MULTI, { lexicon: 'lexicon-us-en.txt,nope.txt' }),
        tts('multi-no-lexicon', join(dir, 'multi-no-lexicon')),
        tts('multi-lang', join(dir, 'multi-no-lexicon'), { lang: 'en-us' }),
        tts('multi-bad-lang', join(dir, 'multi-no-lexicon'), { lang: 'en-gb' }),
        tts('only-model', join(dir, 'only-model')),
        tts('empty', join(dir, 'empty')),
        tts('absent', join(dir, 'absent')),
        tts('nopath', undefined),
        tts('short-voices', join(dir, 'short-voices')),
        tts('bad-tokens', join(dir, 'bad-tokens')),
        tts('not-kokoro', join(dir, 'not-kokoro')),
        tts('fp32', join(dir, 'both')),
        tts('int8', join(dir, 'both'), { precision: 'int8' }),
      ];
    },
    { scratch: 'voxd-kokoro-' },
  );

  const speak = (body: Record<string, unknown>) => post(s.url, '/v1/audio/speech', body);
  const audioOf = async (body: Record<string, unknown>) => {
    const res = await speak(body);
    assert.equal(res.status, 200, res.body.toString());
    return { audio: decodeWav(res.body), bytes: res.body };
  };
  const failure = async (body: Record<string, unknown>) =>
    errorOf(await speak(body), 400, 'invalid_request_error');

  test('speaks at the model rate, a whole number of tokens long, deterministically', async () => {
    const { audio, bytes } = await audioOf({ model: 'en', input: 'Hello world.' });
    assert.deepEqual([audio.sampleRate, audio.channels], [24000, 1]);
    assert.ok(floats(audio).length > 2 * PER_TOKEN, `${floats(audio).length} samples`);
    assert.equal(floats(audio).length % PER_TOKEN, 0);
    assert.ok(Math.abs(peak(floats(audio)) - 0.1) < 0.002, 'speaker 0 by default');
    assert.deepEqual((await speak({ model: 'en', input: 'Hello world.' })).body, bytes);
    const longer = await audioOf({ model: 'en', input: 'Hello world, and good morning to everyone.' });
    assert.ok(floats(longer.audio).length > floats(audio).length, 'more phonemes, more audio');
  });

  test('voices by name or number, and speed, change the audio exactly', async () => {
    const base = floats((await audioOf({ model: 'en', input: 'Hello world.' })).audio).length;
    const bella = await audioOf({ model: 'en', input: 'Hello world.', voice: 'af_bella' });
    assert.equal(floats(bella.audio).length, base);
    assert.ok(Math.abs(peak(floats(bella.audio)) - 0.2) < 0.002, 'af_bella is speaker 1');
    const adam = await audioOf({ model: 'en', input: 'Hello world.', voice: 'am_adam' });
    assert.ok(Math.abs(peak(floats(adam.audio)) - 0.3) < 0.002, 'am_adam is speaker 2');
    assert.deepEqual((await audioOf({ model: 'en', input: 'Hello world.', voice: '2' })).bytes, adam.bytes);
    const fast = await audioOf({ model: 'en', input: 'Hello world.', speed: 2 });
    assert.equal(floats(fast.audio).length * 2, base);
    const slow = await audioOf({ model: 'en', input: 'Hello world.', speed: 0.5 });
    assert.equal(floats(slow.audio).length, base * 2);
  });

  test('unknown voices, bad speeds and unspeakable text are 400s naming the value', async () => {
    assert.match(
      await failure({ model: 'en', input: 'hi', voice: 'nobody' }),
      /voice: "nobody" is not a voice of this model; its voices are af, af_bella, am_adam$/,
    );
    // An OpenAI voice name is no failure: without a voice_aliases entry it is the default voice.
    assert.deepEqual(
      floats((await audioOf({ model: 'en', input: 'hi', voice: 'alloy' })).audio),
      floats((await audioOf({ model: 'en', input: 'hi' })).audio),
    );
    assert.match(
      await failure({ model: 'en', input: 'hi', voice: '3' }),
      /voice: speaker 3 does not exist; this model has 3 speaker\(s\): af, af_bella, am_adam/,
    );
    assert.match(await failure({ model: 'en', input: 'hi', speed: 9 }), /speed: "9" is invalid/);
    assert.match(await failure({ model: 'en', input: '' }), /input: "" is invalid/);
    assert.match(await failure({ model: 'en', input: ' ?! ' }), /no letters or digits/);
  });

  test('a multi-lingual folder reads its lexicons: exact token counts, names from metadata', async () => {
    // 你好 -> 0 n i x a ʊ 0 through lexicon-zh.txt; "hello world" -> 0 h ə l ˈ o ʊ _ w ˈ ɜ ː l d _ 0.
    const zh = await audioOf({ model: 'multi', input: '你好', voice: 'zf_xiaobei' });
    assert.deepEqual([zh.audio.sampleRate, floats(zh.audio).length], [24000, 7 * PER_TOKEN]);
    assert.ok(Math.abs(peak(floats(zh.audio)) - 0.3) < 0.002, 'zf_xiaobei is speaker 2');
    const en = await audioOf({ model: 'multi', input: 'hello world', voice: 'bf_vale' });
    assert.equal(floats(en.audio).length, 15 * PER_TOKEN);
    assert.match(
      await failure({ model: 'multi', input: '你好', voice: 'af_bella' }),
      /"af_bella" is not a voice of this model; its voices are af_maple, bf_vale, zf_xiaobei/,
    );
    // Text whose every word is outside the lexicons gives no tokens: a 400, and the server lives on.
    assert.match(
      await failure({ model: 'multi', input: '们' }),
      /input: the model produced no audio for this text/,
    );
    assert.equal((await speak({ model: 'multi', input: '你好' })).status, 200);
  });

  test('load_options.lexicon picks lexicon files; without any, load_options.lang is required', async () => {
    assert.equal(
      floats((await audioOf({ model: 'multi-us-only', input: 'hello' })).audio).length,
      8 * PER_TOKEN,
    );
    assert.match(await failure({ model: 'multi-us-only', input: '你好' }), /produced no audio/);
    assert.match(
      await failure({ model: 'multi-bad-lexicon', input: 'hi' }),
      /load_options\.lexicon: "lexicon-us-en\.txt,nope\.txt" is invalid; .*\(lexicon-us-en\.txt, lexicon-zh\.txt\)/,
    );
    assert.match(
      await failure({ model: 'multi-no-lexicon', input: 'hi' }),
      /multi-lingual Kokoro model \(metadata version 2\); it needs lexicon\*\.txt files in .* or load_options\.lang/,
    );
    const espeak = await audioOf({ model: 'multi-lang', input: 'Hello world.' });
    assert.equal(floats(espeak.audio).length % PER_TOKEN, 0);
    assert.match(
      await failure({ model: 'multi-bad-lang', input: 'hi' }),
      /load_options\.lang: "en-gb" is invalid/,
    );
  });

  test('the precision load option picks model.onnx or model.int8.onnx', async () => {
    const int8 = await audioOf({ model: 'int8', input: '你好', voice: 'zf_xiaobei' });
    assert.equal(floats(int8.audio).length, 7 * PER_TOKEN);
    assert.match(
      await failure({ model: 'fp32', input: '你好', voice: 'zf_xiaobei' }),
      /its voices are af, af_bella, am_adam/,
    );
  });

  test('missing or mismatched files are 400s that name them, and the server keeps serving', async () => {
    assert.match(
      await failure({ model: 'only-model', input: 'hi' }),
      /kokoro_tts model folder .*only-model is missing: voices \(voices\.bin\), tokens \(tokens\.txt\)$/,
    );
    assert.match(
      await failure({ model: 'empty', input: 'hi' }),
      /is missing: model \(a \.onnx model file\), voices \(voices\.bin\), tokens \(tokens\.txt\)$/,
    );
    assert.match(await failure({ model: 'absent', input: 'hi' }), /model folder not found: .*absent/);
    assert.match(await failure({ model: 'nopath', input: 'hi' }), /kokoro_tts needs "path"/);
    assert.match(
      await failure({ model: 'short-voices', input: 'hi' }),
      /voices\.bin has 100 bytes; the model's metadata \(3 speakers, style_dim\) needs 1536/,
    );
    // sherpa would end the whole process over each of these; voxd refuses the folder instead.
    assert.match(
      await failure({ model: 'bad-tokens', input: 'hi' }),
      /tokens\.txt line 2 \("ab 1"\) is not "<one symbol> <id>"/,
    );
    assert.match(
      await failure({ model: 'not-kokoro', input: 'hi' }),
      /model\.onnx is not a sherpa-onnx Kokoro model: metadata "style_dim" is ""/,
    );
    assert.equal((await speak({ model: 'en', input: 'still serving' })).status, 200);
  });
});
