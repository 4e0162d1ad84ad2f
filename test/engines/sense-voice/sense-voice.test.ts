import assert from 'node:assert/strict';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { silenceWav as silence, toneWav as tone, wavOf as wav } from '../../helpers/samples.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { badRequest, get, post, transcribe as transcribeAt } from '../../helpers/voxd.js';
import { expectHelloWorld } from '../asr-checks.js';

// A tiny ONNX in SenseVoice's real inputs and metadata (scripts/test-models/sense_voice.py): loud
// audio decodes to "<|en|><|NEUTRAL|><|Speech|><|woitn|> hello world" (the language tag follows a
// language forced at load, the words follow ITN: "Hello, world."), silence to <|nospeech|> and no
// words; model.int8.onnx says "hello quantized world", so precision selection shows in the text.
const FAKE = fileURLToPath(new URL('../../../../test/fixtures/models/fake-sense-voice', import.meta.url));

describe('sense_voice_asr (sherpa-onnx adapter)', () => {
  const s = engineSuiteServer(
    (dirs) => {
      for (const [name, files] of [
        ['no-tokens', ['model.onnx']],
        ['empty', []],
        ['int8-only', ['model.int8.onnx', 'tokens.txt']],
      ] as const) {
        mkdirSync(join(dirs, name));
        for (const file of files) cpSync(join(FAKE, file), join(dirs, name, file));
      }
      const model = (id: string, extra: Record<string, unknown> = {}) => ({
        id,
        family: 'sense_voice_asr',
        task: 'asr',
        path: FAKE,
        lazy: true,
        ...extra,
      });
      return [
        model('sv'),
        model('sv-itn', { load_options: { use_itn: true } }),
        model('sv-zh', { load_options: { language: 'zh' } }),
        model('sv-int8', { load_options: { precision: 'int8' } }),
        model('int8-only', { path: join(dirs, 'int8-only') }),
        model('bad-language', { load_options: { language: 'fr' } }),
        model('bad-itn', { load_options: { use_itn: 'sometimes' } }),
        model('missing', { path: '/nonexistent/sense-voice' }),
        model('no-tokens', { path: join(dirs, 'no-tokens') }),
        model('empty', { path: join(dirs, 'empty') }),
        model('nopath', { path: undefined }),
      ];
    },
    { scratch: 'voxd-sense-voice-' },
  );

  const transcribe = (model: string, wav: Buffer, fields: Record<string, string> = {}) =>
    transcribeAt(s.url, model, wav, fields);
  /** /v1/tasks/run, which also returns the detected `language`. */
  const run = (model: string, audio: Buffer, extra: Record<string, unknown> = {}) =>
    post(s.url, '/v1/tasks/run', { model, audio_base64: audio.toString('base64'), ...extra });
  const ok = async (res: Promise<{ status: number; body: Buffer; json: unknown }>) => {
    const r = await res;
    assert.equal(r.status, 200, r.body.toString());
    // biome-ignore lint/suspicious/noExplicitAny: response JSON
    return r.json as any;
  };

  test('loud audio decodes to the known words, 16 kHz mono or converted 44.1 kHz stereo', async () => {
    await expectHelloWorld(s.url, 'sv');
  });

  test('the detected language comes back as a plain code; silence has no words and no language', async () => {
    const loud = await ok(run('sv', tone()));
    assert.equal(loud.text, 'hello world');
    assert.equal(loud.language, 'en');
    const quiet = await ok(run('sv', silence()));
    assert.equal(quiet.text, '');
    assert.equal('language' in quiet, false, JSON.stringify(quiet));
    assert.equal((await ok(transcribe('sv', silence()))).text, '');
    // One sample is shorter than one feature frame: an empty transcript, not a failure.
    assert.equal((await ok(transcribe('sv', wav(new Float32Array([0.1]))))).text, '');
  });

  test('load_options.language forces the language; a request may restate it, or hint any with auto', async () => {
    const zh = await ok(run('sv-zh', tone()));
    assert.deepEqual([zh.text, zh.language], ['hello world', 'zh']);
    assert.equal((await ok(run('sv-zh', tone(), { language: 'zh' }))).language, 'zh');
    assert.equal((await ok(transcribe('sv-zh', tone(), { language: 'zh' }))).text, 'hello world');
    assert.equal((await ok(run('sv', tone(), { language: 'auto' }))).language, 'en');
    // With auto, a request's language is a hint (as in the OpenAI API): detection still decides.
    assert.equal((await ok(run('sv', tone(), { language: 'ja' }))).language, 'en');
    badRequest(await run('sv-zh', tone(), { language: 'en' }), '"en"', 'load_options.language "zh"');
    badRequest(await transcribe('sv', tone(), { language: 'fr' }), 'language: "fr" is invalid', 'yue');
    badRequest(await run('sv', tone(), { options: { language: 'xx' } }), '"xx"');
  });

  test('use_itn: a load option, overridable per request', async () => {
    assert.equal((await ok(transcribe('sv-itn', tone()))).text, 'Hello, world.');
    const options = (use_itn: string) => ({ options: JSON.stringify({ use_itn }) });
    assert.equal((await ok(transcribe('sv', tone(), options('true')))).text, 'Hello, world.');
    assert.equal((await ok(transcribe('sv-itn', tone(), options('false')))).text, 'hello world');
    assert.equal((await ok(run('sv', tone(), { options: { use_itn: true } }))).text, 'Hello, world.');
    badRequest(await transcribe('sv', tone(), options('maybe')), 'options.use_itn: "maybe"');
    badRequest(await transcribe('bad-itn', tone()), "model 'bad-itn'", 'load_options.use_itn: "sometimes"');
    badRequest(await transcribe('bad-language', tone()), 'load_options.language: "fr"');
  });

  test('precision picks model.int8.onnx; a folder with only the int8 file uses it', async () => {
    assert.equal((await ok(transcribe('sv-int8', tone()))).text, 'hello quantized world');
    assert.equal((await ok(transcribe('int8-only', tone()))).text, 'hello quantized world');
    assert.equal((await ok(transcribe('sv', tone()))).text, 'hello world');
  });

  test('missing folders and files are 400s naming them; the server keeps serving', async () => {
    badRequest(await transcribe('missing', tone()), 'model folder not found: /nonexistent/sense-voice');
    assert.match(
      badRequest(await transcribe('no-tokens', tone())),
      /sense_voice_asr model folder .*no-tokens is missing: tokens \(tokens\.txt\)$/,
    );
    assert.match(
      badRequest(await transcribe('empty', tone())),
      /is missing: model \(model\.onnx or model\.int8\.onnx\), tokens \(tokens\.txt\)$/,
    );
    badRequest(await transcribe('nopath', tone()), 'needs "path"');
    assert.equal((await ok(transcribe('sv', tone()))).text, 'hello world');
  });

  test('include_params lists the request options', async () => {
    const res = await get(s.url, '/v1/models?include_params=true');
    // biome-ignore lint/suspicious/noExplicitAny: response JSON
    const entry = res.json.data.find((m: any) => m.id === 'sv');
    // biome-ignore lint/suspicious/noExplicitAny: response JSON
    assert.deepEqual(entry.params.map((p: any) => p.name).sort(), ['language', 'use_itn']);
  });
});
