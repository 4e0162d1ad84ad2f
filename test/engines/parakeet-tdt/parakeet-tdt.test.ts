import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { badRequest, post, transcribe as transcribeAt } from '../../helpers/voxd.js';

// Tiny ONNX files in the real NeMo TDT shapes and metadata (scripts/test-models/parakeet_tdt.py):
// every loud 80 ms encoder frame emits the next token of "parakeet says hello" (BPE pieces ▁par ake
// et ▁says ▁hello) with duration 1, quiet frames emit blank. The int8 copies say "goodbye world".
const FAKE = fileURLToPath(new URL('../../../../test/fixtures/models/fake-parakeet-tdt', import.meta.url));
const FAKE_CTC = fileURLToPath(new URL('../../../../test/fixtures/models/fake-nemo-ctc', import.meta.url));

const RATE = 16000;
const FRAME = 0.08 * RATE; // one encoder frame: 10 ms hop x subsampling 8

/** `quiet` samples of silence, then `loud` samples of a loud tone, at `rate` with `channels`. */
function wav(quiet: number, loud: number, rate = RATE, channels = 1): Buffer {
  const samples = new Float32Array((quiet + loud) * channels);
  for (let i = quiet * channels; i < samples.length; i++) samples[i] = 0.3 * Math.sin(i / 7);
  return encodeWav({ samples, sampleRate: rate, channels });
}

describe('parakeet_tdt (sherpa-onnx NeMo transducer adapter)', () => {
  const s = engineSuiteServer(
    (dirs) => {
      const folder = (name: string, files: string[], from = FAKE) => {
        mkdirSync(join(dirs, name));
        for (const file of files) copyFileSync(join(from, file), join(dirs, name, file));
        return join(dirs, name);
      };
      // As sherpa-onnx-nemo-parakeet-tdt-0.6b-v2-int8 ships: only the int8 files.
      const int8Only = folder('int8-only', [
        'encoder.int8.onnx',
        'decoder.int8.onnx',
        'joiner.int8.onnx',
        'tokens.txt',
      ]);
      const encoderOnly = folder('encoder-only', ['encoder.onnx']);
      const noBlank = folder('no-blank', ['encoder.onnx', 'decoder.onnx', 'joiner.onnx']);
      writeFileSync(join(noBlank, 'tokens.txt'), '<unk> 0\n\u2581par 1\nake 2\n');
      const ctcEncoder = folder('ctc-encoder', ['decoder.onnx', 'joiner.onnx', 'tokens.txt']);
      copyFileSync(join(FAKE_CTC, 'model.onnx'), join(ctcEncoder, 'encoder.onnx'));
      const notOnnx = folder('not-onnx', ['encoder.onnx', 'decoder.onnx', 'tokens.txt']);
      writeFileSync(join(notOnnx, 'joiner.onnx'), 'this is not a model\n');
      const emptyDecoder = folder('empty-decoder', ['encoder.onnx', 'joiner.onnx', 'tokens.txt']);
      writeFileSync(join(emptyDecoder, 'decoder.onnx'), '');
      const model = (id: string, path: string | undefined, load_options: Record<string, string> = {}) => ({
        id,
        family: 'parakeet_tdt',
        task: 'asr',
        lazy: true,
        ...(path === undefined ? {} : { path }),
        load_options,
      });
      return [
        model('tdt', FAKE),
        model('tdt-int8', FAKE, { precision: 'int8' }),
        model('tdt-fp32', FAKE, { precision: 'fp32' }),
        model('tdt-fp16', FAKE, { precision: 'fp16' }),
        model('int8-only', int8Only),
        model('beam', FAKE, { decoding_method: 'modified_beam_search', max_active_paths: '8' }),
        model('bad-method', FAKE, { decoding_method: 'beam' }),
        model('bad-paths', FAKE, { decoding_method: 'modified_beam_search', max_active_paths: '0' }),
        model('missing', '/nonexistent/parakeet'),
        model('nopath', undefined),
        model('encoder-only', encoderOnly),
        model('no-blank', noBlank),
        model('ctc-encoder', ctcEncoder),
        model('not-onnx', notOnnx),
        model('empty-decoder', emptyDecoder),
      ];
    },
    { scratch: 'voxd-parakeet-' },
  );

  const transcribe = (model: string, wav: Buffer, fields: Record<string, string> = {}) =>
    transcribeAt(s.url, model, wav, fields);
  const textOf = async (model: string, audio: Buffer) => {
    const res = await transcribe(model, audio);
    assert.equal(res.status, 200, res.body.toString());
    return res.json.text as string;
  };

  test('loud audio decodes to the exact sentence, silence to nothing, at 16 kHz and converted rates', async () => {
    assert.equal(await textOf('tdt', wav(0, RATE)), 'parakeet says hello');
    assert.equal(await textOf('tdt', wav(0, 44100, 44100, 2)), 'parakeet says hello');
    assert.equal(await textOf('tdt', wav(RATE, 0)), '');
    // Three loud encoder frames emit only the first three pieces: the text follows the input.
    assert.equal(await textOf('tdt', wav(0, 3 * FRAME)), 'parakeet');
    const res = await transcribe('tdt', wav(0, RATE));
    assert.equal(res.json.timing.audio_duration_ms, 1000);
  });

  test('/v1/tasks/run gives word timings from the TDT token timestamps and durations', async () => {
    // 0.5 s of silence, then 1 s loud: the first loud encoder frame is frame 6 (0.48 s).
    const res = await post(s.url, '/v1/tasks/run', {
      model: 'tdt',
      audio_base64: wav(RATE / 2, RATE).toString('base64'),
    });
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.json.text, 'parakeet says hello');
    const words = res.json.words as {
      word: string;
      start_sample: number;
      end_sample: number;
      confidence: number;
    }[];
    assert.deepEqual(
      words.map((w) => [w.word, w.start_sample, w.end_sample]),
      [
        ['parakeet', 6 * FRAME, 9 * FRAME],
        ['says', 9 * FRAME, 10 * FRAME],
        ['hello', 10 * FRAME, 11 * FRAME],
      ],
    );
    for (const w of words) assert.ok(w.confidence > 0.99 && w.confidence <= 1, `confidence ${w.confidence}`);
    const silent = await post(s.url, '/v1/tasks/run', {
      model: 'tdt',
      audio_base64: wav(RATE, 0).toString('base64'),
    });
    assert.equal(silent.status, 200, silent.body.toString());
    assert.deepEqual([silent.json.text, silent.json.words], ['', []]);
  });

  test('load option precision picks the int8 or fp32 files; a folder of int8 files alone loads', async () => {
    assert.equal(await textOf('tdt-int8', wav(0, RATE)), 'goodbye world');
    assert.equal(await textOf('tdt-fp32', wav(0, RATE)), 'parakeet says hello');
    assert.equal(await textOf('int8-only', wav(0, RATE)), 'goodbye world');
    badRequest(
      await transcribe('tdt-fp16', wav(0, RATE)),
      'load_options.precision',
      '"fp16"',
      'fp32 or int8',
    );
  });

  test('load options decoding_method and max_active_paths: beam search decodes, bad values are 400s', async () => {
    assert.equal(await textOf('beam', wav(0, RATE)), 'parakeet says hello');
    badRequest(
      await transcribe('bad-method', wav(0, RATE)),
      'load_options.decoding_method',
      '"beam"',
      'greedy_search or modified_beam_search',
    );
    badRequest(await transcribe('bad-paths', wav(0, RATE)), 'load_options.max_active_paths', '"0"');
  });

  test('a missing folder, a missing path and missing files are 400s naming what is missing', async () => {
    badRequest(await transcribe('missing', wav(0, RATE)), 'model folder not found: /nonexistent/parakeet');
    badRequest(await transcribe('nopath', wav(0, RATE)), 'parakeet_tdt needs "path"', 'encoder.onnx');
    badRequest(
      await transcribe('encoder-only', wav(0, RATE)),
      'decoder (decoder.onnx or decoder.int8.onnx)',
      'joiner (joiner.onnx or joiner.int8.onnx)',
      'tokens (tokens.txt)',
    );
  });

  test('folders sherpa would end the process over are 400s, and the server keeps serving', async () => {
    badRequest(
      await transcribe('no-blank', wav(0, RATE)),
      'tokens.txt does not match',
      'expected 10 tokens',
      'no <blk>',
    );
    badRequest(
      await transcribe('ctc-encoder', wav(0, RATE)),
      'is not a NeMo transducer encoder',
      'pred_rnn_layers, pred_hidden',
    );
    badRequest(await transcribe('not-onnx', wav(0, RATE)), 'joiner.onnx could not be read as an ONNX model');
    badRequest(await transcribe('empty-decoder', wav(0, RATE)), 'decoder.onnx could not be read', 'no graph');
    assert.equal(await textOf('tdt', wav(0, RATE)), 'parakeet says hello');
  });

  test('a 1-sample file and a file shorter than one feature frame give an empty transcript', async () => {
    const one = encodeWav({ samples: new Float32Array([0.3]), sampleRate: RATE, channels: 1 });
    assert.equal(await textOf('tdt', one), '');
    assert.equal(await textOf('tdt', wav(0, 100)), '');
    // Still serving after them (an empty input would otherwise abort the process in onnxruntime).
    assert.equal(await textOf('tdt', wav(0, RATE)), 'parakeet says hello');
  });
});
