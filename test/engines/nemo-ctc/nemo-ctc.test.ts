import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { errorOf, request, startServer, type TestServer } from '../../helpers/voxd.js';

// A tiny ONNX in the real NeMo CTC shape (scripts/gen-test-models.py): one random linear layer, so
// the transcript is noise; the test checks the plumbing (files, features, decoding, conversion).
const FAKE_CTC = fileURLToPath(new URL('../../../../test/fixtures/models/fake-nemo-ctc', import.meta.url));

describe('nemo_ctc_asr (sherpa-onnx adapter)', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({
      busy_timeout_ms: 0,
      models: [
        { id: 'ctc', family: 'nemo_ctc_asr', task: 'asr', path: FAKE_CTC, lazy: true },
        { id: 'missing', family: 'nemo_ctc_asr', task: 'asr', path: '/nonexistent/ctc', lazy: true },
      ],
    });
  });
  after(() => s.close());

  const transcribe = (model: string, wav: Buffer) => {
    const form = new FormData();
    form.set('model', model);
    form.set('file', new Blob([wav]), 'a.wav');
    return request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
  };
  const tone = (rate: number, channels: number) => {
    const frames = rate;
    const samples = new Float32Array(frames * channels);
    for (let i = 0; i < samples.length; i++) samples[i] = 0.3 * Math.sin(i / 7);
    return encodeWav({ samples, sampleRate: rate, channels });
  };

  test('decodes 16 kHz and converted 44.1 kHz stereo audio into a transcript string', async () => {
    for (const wav of [tone(16000, 1), tone(44100, 2)]) {
      const res = await transcribe('ctc', wav);
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(typeof res.json.text, 'string');
      assert.equal(res.json.timing.audio_duration_ms, 1000);
    }
  });

  test('a missing model folder is a 400 naming it; silence and a 1-sample file are fine', async () => {
    assert.match(
      errorOf(await transcribe('missing', tone(16000, 1)), 400, 'invalid_request_error'),
      /model folder not found: \/nonexistent\/ctc/,
    );
    const silent = await transcribe(
      'ctc',
      encodeWav({ samples: new Float32Array(16000), sampleRate: 16000, channels: 1 }),
    );
    assert.equal(silent.status, 200);
    const one = await transcribe(
      'ctc',
      encodeWav({ samples: new Float32Array([0.1]), sampleRate: 16000, channels: 1 }),
    );
    assert.equal(one.status, 200);
  });
});
