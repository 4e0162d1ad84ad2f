import assert from 'node:assert/strict';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { badRequest, get, transcribe as transcribeAt } from '../../helpers/voxd.js';

// Tiny ONNX files in the real Canary shapes (scripts/test-models/canary.py). The fake decoder reads
// sherpa's prompt back: for sound it says "<greeting in the source language> <world in the target
// language>" plus "." with <|pnc|>; for digital silence nothing. So each text below proves which
// languages and punctuation flag reached the model.
const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/models', import.meta.url));
const FAKE_CANARY = join(FIXTURES, 'fake-canary');

const tone = (rate = 16000, channels = 1, seconds = 1) => {
  const samples = new Float32Array(Math.round(rate * seconds) * channels);
  for (let i = 0; i < samples.length; i++) samples[i] = 0.3 * Math.sin(i / 7);
  return encodeWav({ samples, sampleRate: rate, channels });
};
const silence = () => encodeWav({ samples: new Float32Array(16000), sampleRate: 16000, channels: 1 });

describe('canary_asr (sherpa-onnx adapter)', () => {
  const s = engineSuiteServer(
    (dirs) => {
      // Both precisions in one folder, as a user may unpack them; the fp32 decoder greets in the target language.
      const both = join(dirs, 'both');
      mkdirSync(both);
      cpSync(FAKE_CANARY, both, { recursive: true });
      cpSync(join(FIXTURES, 'fake-canary-fp32'), both, { recursive: true });
      const partial = join(dirs, 'partial');
      mkdirSync(partial);
      cpSync(join(FAKE_CANARY, 'decoder.int8.onnx'), join(partial, 'decoder.int8.onnx'));
      const badTokens = join(dirs, 'bad-tokens');
      mkdirSync(badTokens);
      cpSync(FAKE_CANARY, badTokens, { recursive: true });
      writeFileSync(join(badTokens, 'tokens.txt'), '<unk> 0\n<|endoftext|> 1\n<|en|> 2\n');
      const canary = (id: string, extra: Record<string, unknown> = {}) => ({
        id,
        family: 'canary_asr',
        task: 'asr',
        path: FAKE_CANARY,
        lazy: true,
        ...extra,
      });
      return [
        canary('canary'),
        canary('de-to-en', { load_options: { src_lang: 'de', tgt_lang: 'EN', use_pnc: false } }),
        canary('both', { path: both, load_options: { src_lang: 'de', tgt_lang: 'en' } }),
        canary('both-int8', {
          path: both,
          load_options: { src_lang: 'de', tgt_lang: 'en', precision: 'int8' },
        }),
        canary('fp16', { load_options: { precision: 'fp16' } }),
        canary('bad-src', { load_options: { src_lang: 'it' } }),
        canary('bad-pnc', { load_options: { use_pnc: 'maybe' } }),
        canary('missing', { path: '/nonexistent/canary' }),
        canary('partial', { path: partial }),
        canary('bad-tokens', { path: badTokens }),
        { id: 'nopath', family: 'canary_asr', task: 'asr', lazy: true },
      ];
    },
    { scratch: 'voxd-canary-' },
  );

  const transcribe = (model: string, wav: Buffer, fields: Record<string, string> = {}) =>
    transcribeAt(s.url, model, wav, fields);
  const textOf = async (model: string, wav: Buffer, fields: Record<string, string> = {}) => {
    const res = await transcribe(model, wav, fields);
    assert.equal(res.status, 200, res.body.toString());
    return res.json.text as string;
  };

  test('transcribes 16 kHz and converted 44.1 kHz stereo audio into the known words', async () => {
    const res = await transcribe('canary', tone());
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.json.text, 'hello world.');
    assert.equal(res.json.timing.audio_duration_ms, 1000);
    assert.equal(await textOf('canary', tone(44100, 2)), 'hello world.');
    const plain = await transcribe('canary', tone(), { response_format: 'text' });
    assert.equal(plain.body.toString(), 'hello world.');
  });

  test('silence, a 1-sample file and a very short file give clean results', async () => {
    assert.equal(await textOf('canary', silence()), '');
    const one = encodeWav({ samples: new Float32Array([0.1]), sampleRate: 16000, channels: 1 });
    assert.equal(await textOf('canary', one), '');
    // 0.1 s still has room for the whole answer (sherpa caps the tokens at 30 per second).
    assert.equal(await textOf('canary', tone(16000, 1, 0.1)), 'hello world.');
  });

  test('the request language picks the source; tgt_lang translates; use_pnc drops punctuation', async () => {
    assert.equal(await textOf('canary', tone(), { language: 'de' }), 'hallo welt.');
    assert.equal(await textOf('canary', tone(), { language: 'FR' }), 'bonjour monde.');
    assert.equal(
      await textOf('canary', tone(), { language: 'es', options: JSON.stringify({ tgt_lang: 'en' }) }),
      'hola world.',
    );
    assert.equal(
      await textOf('canary', tone(), { options: JSON.stringify({ use_pnc: false }) }),
      'hello world',
    );
    // A request's settings do not outlive it: the next plain request is back to the loaded ones.
    assert.equal(await textOf('canary', tone()), 'hello world.');
    assert.equal(await textOf('canary', silence(), { language: 'de' }), '');
  });

  test('load options set the defaults; a request language overrides only the source', async () => {
    assert.equal(await textOf('de-to-en', tone()), 'hallo world');
    assert.equal(await textOf('de-to-en', tone(), { language: 'fr' }), 'bonjour world');
    assert.equal(
      await textOf('de-to-en', tone(), { options: JSON.stringify({ tgt_lang: 'de', use_pnc: true }) }),
      'hallo welt.',
    );
  });

  test('unsupported languages and flags are 400s naming the value', async () => {
    badRequest(await transcribe('canary', tone(), { language: 'it' }), 'language', '"it"', 'en, de, es, fr');
    badRequest(await transcribe('canary', tone(), { language: 'en-US' }), 'language', '"en-US"');
    badRequest(
      await transcribe('canary', tone(), { options: JSON.stringify({ tgt_lang: 'zh' }) }),
      'options.tgt_lang',
      '"zh"',
    );
    badRequest(
      await transcribe('canary', tone(), { options: JSON.stringify({ use_pnc: 'sometimes' }) }),
      'options.use_pnc',
      '"sometimes"',
    );
    badRequest(await transcribe('bad-src', tone()), 'load_options.src_lang', '"it"');
    badRequest(await transcribe('bad-pnc', tone()), 'load_options.use_pnc', '"maybe"');
    // The server still answers after the rejected requests.
    assert.equal(await textOf('canary', tone()), 'hello world.');
  });

  test('precision picks the fp32 or the int8 pair of a folder that has both', async () => {
    assert.equal(await textOf('both', tone()), 'hello world.', 'fp32 by default');
    assert.equal(await textOf('both-int8', tone()), 'hallo world.');
    badRequest(await transcribe('fp16', tone()), 'load_options.precision', '"fp16"');
  });

  test('folder errors name the folder, each missing file, or the missing special tokens', async () => {
    badRequest(await transcribe('missing', tone()), 'model folder not found: /nonexistent/canary');
    const partial = badRequest(await transcribe('partial', tone()), 'is missing');
    assert.match(partial, /encoder \(encoder\.onnx or encoder\.int8\.onnx\)/);
    assert.match(partial, /tokens \(tokens\.txt\)/);
    assert.doesNotMatch(partial, /decoder \(/);
    badRequest(await transcribe('nopath', tone()), 'canary_asr needs "path"');
    badRequest(
      await transcribe('bad-tokens', tone()),
      'is not a Canary tokens.txt',
      '<|startoftranscript|>',
      '<|de|>',
      '<|nodiarize|>',
    );
  });

  test('include_params lists the request options', async () => {
    const res = await get(s.url, '/v1/models?include_params=true');
    assert.equal(res.status, 200);
    const entry = res.json.data.find((m: { id: string }) => m.id === 'canary');
    const names = entry.params.map((p: { name: string }) => p.name);
    assert.deepEqual(names, ['language', 'tgt_lang', 'use_pnc']);
  });
});
