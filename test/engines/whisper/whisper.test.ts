import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { badRequest, get, post, tempDir, transcribe as transcribeAt } from '../../helpers/voxd.js';

// Tiny ONNX pairs in the real Whisper shapes (scripts/test-models/whisper.py). Through sherpa's
// greedy search they say, for speech-level audio: en "hello world", de "hallo welt", fr "bonjour le
// monde", translate "hello world"; auto-detection picks de for loud audio and en for quiet audio;
// quiet audio decodes to "". The int8 decoder adds " again"; fake-whisper-en is English-only.
const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/models', import.meta.url));
const MULTI = join(FIXTURES, 'fake-whisper');
const ENGLISH = join(FIXTURES, 'fake-whisper-en');

const signal = (seconds: number, amplitude: number, rate = 16000, channels = 1) => {
  const samples = new Float32Array(Math.round(seconds * rate) * channels);
  for (let i = 0; i < samples.length; i++) samples[i] = amplitude * Math.sin(i / channels / 7);
  return encodeWav({ samples, sampleRate: rate, channels });
};
const loud = (seconds = 1) => signal(seconds, 0.3);
const silence = (seconds = 1) => signal(seconds, 0);

const scratch: string[] = [];

/** A folder holding the fixture's files, some left out; a null source writes a file that is not ONNX. */
function folderWith(name: string, files: Record<string, string | null>): string {
  const root = tempDir('voxd-whisper-');
  scratch.push(root);
  const dir = join(root, name);
  mkdirSync(dir);
  for (const [file, from] of Object.entries(files)) {
    if (from === null) writeFileSync(join(dir, file), 'not an onnx file');
    else copyFileSync(from, join(dir, file));
  }
  return dir;
}

describe('whisper_asr (sherpa-onnx adapter)', () => {
  const noTokens = folderWith('no-tokens', { 'tiny-decoder.onnx': join(MULTI, 'tiny-decoder.onnx') });
  const notWhisper = folderWith('not-whisper', {
    'x-encoder.onnx': join(FIXTURES, 'fake-nemo-ctc', 'model.onnx'),
    'x-decoder.onnx': join(MULTI, 'tiny-decoder.onnx'),
    'x-tokens.txt': join(MULTI, 'tiny-tokens.txt'),
  });
  const notOnnx = folderWith('not-onnx', {
    'x-encoder.onnx': null,
    'x-decoder.onnx': join(MULTI, 'tiny-decoder.onnx'),
    'x-tokens.txt': join(MULTI, 'tiny-tokens.txt'),
  });

  const whisper = (id: string, path: string | undefined, load_options: Record<string, string> = {}) => ({
    id,
    family: 'whisper_asr',
    task: 'asr',
    lazy: true,
    load_options,
    ...(path === undefined ? {} : { path }),
  });
  const s = engineSuiteServer([
    whisper('multi', MULTI),
    whisper('multi-int8', MULTI, { precision: 'int8' }),
    whisper('multi-fr', MULTI, { language: 'fr' }),
    whisper('multi-translate', MULTI, { language: 'de', task: 'translate' }),
    whisper('english', ENGLISH),
    whisper('bad-language', MULTI, { language: 'klingon' }),
    whisper('bad-task', MULTI, { task: 'summarize' }),
    whisper('english-translate', ENGLISH, { task: 'translate' }),
    whisper('missing', '/nonexistent/whisper'),
    whisper('no-tokens', noTokens),
    whisper('not-whisper', notWhisper),
    whisper('not-onnx', notOnnx),
    whisper('no-path', undefined),
  ]);
  after(() => {
    for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
  });

  const transcribe = (model: string, wav: Buffer, fields: Record<string, string> = {}) =>
    transcribeAt(s.url, model, wav, fields);
  /** /v1/tasks/run, whose answer carries the language the model used. */
  const run = (model: string, wav: Buffer, fields: Record<string, unknown> = {}) =>
    post(s.url, '/v1/tasks/run', { model, audio_base64: wav.toString('base64'), ...fields });
  const heard = async (res: Awaited<ReturnType<typeof run>>) => {
    assert.equal(res.status, 200, res.body.toString());
    return { text: res.json.text, language: res.json.language };
  };

  test('auto-detects the language and decodes speech; 44.1 kHz stereo is converted', async () => {
    assert.deepEqual(await heard(await run('multi', loud())), { text: 'hallo welt', language: 'de' });
    for (const wav of [loud(), signal(1, 0.3, 44100, 2)]) {
      const res = await transcribe('multi', wav);
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(res.json.text, 'hallo welt');
      assert.equal(res.json.timing.audio_duration_ms, 1000);
    }
  });

  test('the request language selects the language, per request, on the same session', async () => {
    const fr = await transcribe('multi', loud(), { language: 'fr' });
    assert.equal(fr.status, 200, fr.body.toString());
    assert.equal(fr.json.text, 'bonjour le monde');
    assert.deepEqual(await heard(await run('multi', loud(), { language: 'en' })), {
      text: 'hello world',
      language: 'en',
    });
    // A BCP 47 tag names its language; "auto" and no language go back to detection.
    assert.deepEqual(await heard(await run('multi', loud(), { language: 'FR-ca' })), {
      text: 'bonjour le monde',
      language: 'fr',
    });
    assert.deepEqual(await heard(await run('multi', loud(), { language: 'auto' })), {
      text: 'hallo welt',
      language: 'de',
    });
    assert.deepEqual(await heard(await run('multi', loud())), { text: 'hallo welt', language: 'de' });
  });

  test('options.task translate decodes into English and reports the spoken language', async () => {
    assert.deepEqual(
      await heard(await run('multi', loud(), { language: 'de', options: { task: 'translate' } })),
      { text: 'hello world', language: 'de' },
    );
    assert.deepEqual(await heard(await run('multi', loud(), { options: { task: 'transcribe' } })), {
      text: 'hallo welt',
      language: 'de',
    });
  });

  test('an invalid language or task is a 400 naming it, and the server keeps serving', async () => {
    badRequest(await transcribe('multi', loud(), { language: 'xx' }), 'language', '"xx"', 'en, de, fr');
    badRequest(await run('multi', loud(), { language: 'klingon' }), '"klingon"', 'auto or one of en, de, fr');
    badRequest(await run('multi', loud(), { options: { task: 'summarize' } }), 'options.task', '"summarize"');
    assert.equal((await heard(await run('multi', loud()))).text, 'hallo welt');
  });

  test('load options set the default language and task; bad ones are a 400 naming them', async () => {
    assert.deepEqual(await heard(await run('multi-fr', loud())), {
      text: 'bonjour le monde',
      language: 'fr',
    });
    assert.deepEqual(await heard(await run('multi-fr', loud(), { language: 'de' })), {
      text: 'hallo welt',
      language: 'de',
    });
    assert.deepEqual(await heard(await run('multi-translate', loud())), {
      text: 'hello world',
      language: 'de',
    });
    badRequest(await run('bad-language', loud()), 'load_options.language', '"klingon"', 'en, de, fr');
    badRequest(await run('bad-task', loud()), 'load_options.task', '"summarize"', 'transcribe or translate');
  });

  test('an English-only model answers in English and refuses other languages and translation', async () => {
    assert.deepEqual(await heard(await run('english', loud())), { text: 'hello world', language: 'en' });
    assert.deepEqual(await heard(await run('english', loud(), { language: 'en' })), {
      text: 'hello world',
      language: 'en',
    });
    badRequest(await run('english', loud(), { language: 'de' }), 'language', '"de"', 'English-only');
    badRequest(
      await run('english', loud(), { options: { task: 'translate' } }),
      'options.task',
      'English-only',
    );
    badRequest(await run('english-translate', loud()), 'load_options.task', 'English-only');
  });

  test('precision int8 loads the int8 encoder and decoder', async () => {
    assert.equal(
      (await heard(await run('multi-int8', loud(), { language: 'en' }))).text,
      'hello world again',
    );
    assert.equal((await heard(await run('multi', loud(), { language: 'en' }))).text, 'hello world');
  });

  test('silence, a 1-sample file and a 79-sample file decode to empty text, not a crash', async () => {
    // Quiet audio: no words, and the fake model's detector hears "en".
    assert.deepEqual(await heard(await run('multi', silence())), { text: '', language: 'en' });
    const one = encodeWav({ samples: new Float32Array([0.3]), sampleRate: 16000, channels: 1 });
    assert.deepEqual(await heard(await run('multi', one, { language: 'fr' })), { text: '', language: 'fr' });
    const short = await transcribe('english', signal(79 / 16000, 0.3));
    assert.equal(short.status, 200, short.body.toString());
    assert.equal(short.json.text, '');
  });

  test('audio longer than 28 s is decoded in windows, none dropped', async () => {
    // 28 s + 3 s: each window says its words (sherpa alone would keep only the first 30 s).
    const res = await run('multi', loud(31), { language: 'en' });
    assert.deepEqual(await heard(res), { text: 'hello world hello world', language: 'en' });
  });

  test('folder errors are 400s naming what is wrong', async () => {
    badRequest(await transcribe('missing', loud()), 'model folder not found: /nonexistent/whisper');
    badRequest(
      await transcribe('no-tokens', loud()),
      'is missing: encoder (*encoder.onnx), tokens (tokens.txt)',
    );
    badRequest(
      await transcribe('no-path', loud()),
      'whisper_asr needs "path"',
      '*encoder.onnx',
      '*decoder.onnx',
    );
    badRequest(
      await transcribe('not-whisper', loud()),
      'x-encoder.onnx is not a sherpa-onnx Whisper encoder',
      'n_mels',
      'all_language_codes',
    );
    badRequest(await transcribe('not-onnx', loud()), 'x-encoder.onnx is not a readable ONNX file');
    assert.equal((await heard(await run('multi', loud()))).text, 'hallo welt');
  });

  test('include_params lists the language and task request options', async () => {
    const res = await get(s.url, '/v1/models?include_params=true');
    assert.equal(res.status, 200);
    const entry = res.json.data.find((m: { id: string }) => m.id === 'multi');
    assert.deepEqual(
      entry.params.map((p: { name: string }) => p.name),
      ['language', 'task'],
    );
  });
});
