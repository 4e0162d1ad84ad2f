import assert from 'node:assert/strict';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { silenceWav as silence, toneWav as tone, wavOf as wav } from '../../helpers/samples.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { badRequest, post, transcribe as transcribeAt } from '../../helpers/voxd.js';
import { expectHelloWorld } from '../asr-checks.js';

// A tiny ONNX in the real NeMo CTC shape and metadata (scripts/test-models/nemo_ctc.py): loud audio
// makes it emit a fixed character-level CTC path, with repeats and a blank between the two l's, that
// sherpa's greedy decoder turns into "hello world"; silence is all blank. model.int8.onnx says
// "hello quantized world", so precision selection shows in the text.
const FAKE = fileURLToPath(new URL('../../../../test/fixtures/models/fake-nemo-ctc', import.meta.url));
const SENSE_VOICE = fileURLToPath(
  new URL('../../../../test/fixtures/models/fake-sense-voice', import.meta.url),
);

describe('nemo_ctc_asr (sherpa-onnx adapter)', () => {
  const s = engineSuiteServer(
    (dirs) => {
      const folder = (name: string, files: [string, string][]) => {
        mkdirSync(join(dirs, name));
        for (const [from, to] of files) cpSync(from, join(dirs, name, to));
      };
      const tokens: [string, string] = [join(FAKE, 'tokens.txt'), 'tokens.txt'];
      folder('int8-only', [[join(FAKE, 'model.int8.onnx'), 'model.int8.onnx'], tokens]);
      folder('no-tokens', [[join(FAKE, 'model.onnx'), 'model.onnx']]);
      folder('empty', []);
      // A CTC model without NeMo's metadata (subsampling_factor): sherpa would end the process.
      folder('not-nemo', [[join(SENSE_VOICE, 'model.onnx'), 'model.onnx'], tokens]);
      folder('garbage', [tokens]);
      writeFileSync(join(dirs, 'garbage', 'model.onnx'), 'not a model');
      // A tokens.txt without <blk>: sherpa's CTC decoder would end the process.
      folder('no-blank', [[join(FAKE, 'model.onnx'), 'model.onnx']]);
      writeFileSync(join(dirs, 'no-blank', 'tokens.txt'), 'a 0\nb 1\n');
      const model = (id: string, extra: Record<string, unknown> = {}) => ({
        id,
        family: 'nemo_ctc_asr',
        task: 'asr',
        path: FAKE,
        lazy: true,
        ...extra,
      });
      const at = (name: string) => ({ path: join(dirs, name) });
      return [
        model('ctc'),
        model('ctc-fp32', { load_options: { precision: 'fp32' } }),
        model('ctc-int8', { load_options: { precision: 'int8' } }),
        model('ctc-fp16', { load_options: { precision: 'fp16' } }),
        model('int8-only', at('int8-only')),
        model('missing', { path: '/nonexistent/ctc' }),
        model('nopath', { path: undefined }),
        model('no-tokens', at('no-tokens')),
        model('empty', at('empty')),
        model('not-nemo', at('not-nemo')),
        model('garbage', at('garbage')),
        model('no-blank', at('no-blank')),
      ];
    },
    { scratch: 'voxd-nemo-ctc-' },
  );

  const transcribe = (model: string, wav: Buffer, fields: Record<string, string> = {}) =>
    transcribeAt(s.url, model, wav, fields);
  // biome-ignore lint/suspicious/noExplicitAny: response JSON
  const ok = async (res: Promise<{ status: number; body: Buffer; json: any }>) => {
    const r = await res;
    assert.equal(r.status, 200, r.body.toString());
    return r.json;
  };
  const textOf = async (model: string, audio: Buffer) => (await ok(transcribe(model, audio))).text;

  test('loud audio decodes to the known words, 16 kHz mono or converted 44.1 kHz stereo', async () => {
    await expectHelloWorld(s.url, 'ctc');
    const run = await ok(
      post(s.url, '/v1/tasks/run', { model: 'ctc', audio_base64: tone().toString('base64') }),
    );
    assert.equal(run.text, 'hello world');
  });

  test('silence, a faint tone and a 1-sample file decode to an empty transcript', async () => {
    assert.equal(await textOf('ctc', silence()), '');
    assert.equal(await textOf('ctc', tone(16000, 1, 0.0005)), '');
    assert.equal(await textOf('ctc', wav(new Float32Array([0.1]))), '');
    assert.equal(await textOf('ctc-int8', silence()), '');
    // The server keeps serving after them.
    assert.equal(await textOf('ctc', tone()), 'hello world');
  });

  test('precision picks model.int8.onnx; a folder with only the int8 file uses it', async () => {
    assert.equal(await textOf('ctc-int8', tone()), 'hello quantized world');
    assert.equal(await textOf('ctc-fp32', tone()), 'hello world');
    assert.equal(await textOf('int8-only', tone()), 'hello quantized world');
    badRequest(await transcribe('ctc-fp16', tone()), "model 'ctc-fp16'", 'load_options.precision', '"fp16"');
  });

  test('missing folders and files are 400s naming them', async () => {
    badRequest(await transcribe('missing', tone()), 'model folder not found: /nonexistent/ctc');
    badRequest(await transcribe('nopath', tone()), 'nemo_ctc_asr needs "path"', 'tokens.txt');
    assert.match(
      badRequest(await transcribe('no-tokens', tone())),
      /nemo_ctc_asr model folder .*no-tokens is missing: tokens \(tokens\.txt\)$/,
    );
    assert.match(
      badRequest(await transcribe('empty', tone())),
      /is missing: model \(a \.onnx model file\), tokens \(tokens\.txt\)$/,
    );
  });

  test('folders sherpa would end the process over are 400s, and the server keeps serving', async () => {
    badRequest(await transcribe('not-nemo', tone()), 'not a NeMo CTC model', 'subsampling_factor');
    badRequest(await transcribe('garbage', tone()), 'could not be read as an ONNX model');
    badRequest(await transcribe('no-blank', tone()), 'has no blank token', '<blk>');
    assert.equal(await textOf('ctc', tone()), 'hello world');
  });
});
