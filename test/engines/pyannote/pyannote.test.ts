import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { errorOf, request } from '../../helpers/voxd.js';

// Tiny ONNX files in the real pyannote-segmentation and speaker-embedding shapes and metadata
// (scripts/gen-test-models.py): energy decides speech, fbank statistics stand in for the embedding.
const FAKE_PYANNOTE = fileURLToPath(
  new URL('../../../../test/fixtures/models/fake-pyannote', import.meta.url),
);
const RATE = 16000;

describe('pyannote_diar (sherpa-onnx adapter)', () => {
  const s = engineSuiteServer([
    { id: 'diar', family: 'pyannote_diar', task: 'diar', path: FAKE_PYANNOTE, lazy: true },
    {
      id: 'missing',
      family: 'pyannote_diar',
      task: 'diar',
      path: FAKE_PYANNOTE,
      lazy: true,
      load_options: { embedding: 'nope.onnx' },
    },
  ]);

  const diarize = (model: string, samples: Float32Array, extra: Record<string, string> = {}) => {
    const form = new FormData();
    form.set('model', model);
    for (const [k, v] of Object.entries(extra)) form.set(k, v);
    form.set('file', new Blob([encodeWav({ samples, sampleRate: RATE, channels: 1 })]), 'a.wav');
    return request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
  };

  test('finds the sounding regions as speaker turns, in samples at 16 kHz', async () => {
    const samples = new Float32Array(6 * RATE);
    for (let i = 1 * RATE; i < 3 * RATE; i++) samples[i] = 0.3 * Math.sin(i / 5);
    for (let i = 4 * RATE; i < 5.5 * RATE; i++) samples[i] = 0.3 * Math.sin(i / 9);
    const res = await diarize('diar', samples);
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.json.text, '');
    assert.equal(res.json.sample_rate, RATE);
    const turns = res.json.speaker_turns as {
      start_sample: number;
      end_sample: number;
      speaker_id: number;
    }[];
    assert.equal(turns.length, 2, JSON.stringify(turns));
    const expected = [
      [1 * RATE, 3 * RATE],
      [4 * RATE, 5.5 * RATE],
    ];
    for (const [i, [start, end]] of expected.entries()) {
      assert.ok(
        Math.abs(turns[i]!.start_sample - start!) <= 0.1 * RATE,
        `turn ${i} start ${turns[i]!.start_sample}`,
      );
      assert.ok(Math.abs(turns[i]!.end_sample - end!) <= 0.1 * RATE, `turn ${i} end ${turns[i]!.end_sample}`);
    }
  });

  test('silence gives no turns; a missing model file and a bad num_speakers are clear 400s', async () => {
    const silent = await diarize('diar', new Float32Array(3 * RATE));
    assert.equal(silent.status, 200);
    assert.deepEqual(silent.json.speaker_turns, []);
    assert.match(
      errorOf(await diarize('missing', new Float32Array(RATE)), 400, 'invalid_request_error'),
      /missing file: .*nope\.onnx/,
    );
    const bad = await diarize('diar', new Float32Array(RATE), {
      options: JSON.stringify({ num_speakers: 'many' }),
    });
    assert.match(errorOf(bad, 400, 'invalid_request_error'), /num_speakers/);
  });
});
