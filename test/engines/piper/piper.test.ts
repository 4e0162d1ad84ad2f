import assert from 'node:assert/strict';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { floats } from '../../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { errorOf, post, startServer, type TestServer, tempDir } from '../../helpers/voxd.js';

// A tiny ONNX in the real Piper shape and metadata (scripts/gen-test-models.py): each token becomes
// 256 samples of a sine, so the plumbing (files, phonemes, tokens, sample rate) is what is tested.
const FAKE_PIPER = fileURLToPath(new URL('../../../../test/fixtures/models/fake-piper', import.meta.url));

describe('piper_tts (sherpa-onnx adapter)', () => {
  let s: TestServer;
  let broken: string;
  before(async () => {
    broken = tempDir('voxd-piper-');
    mkdirSync(join(broken, 'no-tokens'));
    cpSync(join(FAKE_PIPER, 'model.onnx'), join(broken, 'no-tokens', 'model.onnx'));
    mkdirSync(join(broken, 'empty'));
    s = await startServer({
      busy_timeout_ms: 0,
      models: [
        { id: 'piper', family: 'piper_tts', task: 'tts', path: FAKE_PIPER, lazy: true },
        { id: 'no-tokens', family: 'piper_tts', task: 'tts', path: join(broken, 'no-tokens'), lazy: true },
        { id: 'empty', family: 'piper_tts', task: 'tts', path: join(broken, 'empty'), lazy: true },
        { id: 'nopath', family: 'piper_tts', task: 'tts', lazy: true },
      ],
    });
  });
  after(async () => {
    await s.close();
    rmSync(broken, { recursive: true, force: true });
  });

  test('loads a Piper folder and speaks at the model sample rate, deterministically', async () => {
    const res = await post(s.url, '/v1/audio/speech', { model: 'piper', input: 'Hello world.' });
    assert.equal(res.status, 200, res.body.toString());
    const audio = decodeWav(res.body);
    assert.deepEqual([audio.sampleRate, audio.channels], [22050, 1]);
    assert.ok(
      floats(audio).length > 0 && floats(audio).length % 256 === 0,
      `${floats(audio).length} samples`,
    );
    const again = await post(s.url, '/v1/audio/speech', { model: 'piper', input: 'Hello world.' });
    assert.deepEqual(again.body, res.body);
    const longer = decodeWav(
      (
        await post(s.url, '/v1/audio/speech', {
          model: 'piper',
          input: 'Hello world, and good morning to everyone.',
        })
      ).body,
    );
    assert.ok(floats(longer).length > floats(audio).length, 'more phonemes, more audio');
  });

  test('speaker numbers, speed and text are validated with clear 400s', async () => {
    assert.match(
      errorOf(
        await post(s.url, '/v1/audio/speech', { model: 'piper', input: 'hi', voice: 'alice' }),
        400,
        'invalid_request_error',
      ),
      /voice: "alice"/,
    );
    assert.match(
      errorOf(
        await post(s.url, '/v1/audio/speech', { model: 'piper', input: 'hi', voice: '3' }),
        400,
        'invalid_request_error',
      ),
      /speaker 3 does not exist/,
    );
    assert.match(
      errorOf(
        await post(s.url, '/v1/audio/speech', { model: 'piper', input: 'hi', speed: 9 }),
        400,
        'invalid_request_error',
      ),
      /speed/,
    );
    assert.match(
      errorOf(
        await post(s.url, '/v1/audio/speech', { model: 'piper', input: ' ?! ' }),
        400,
        'invalid_request_error',
      ),
      /nothing|no letters/,
    );
  });

  test('a folder with a missing file names it', async () => {
    assert.match(
      errorOf(
        await post(s.url, '/v1/audio/speech', { model: 'no-tokens', input: 'hi' }),
        400,
        'invalid_request_error',
      ),
      /piper_tts model folder .*no-tokens is missing: tokens \(tokens\.txt\)$/,
    );
    assert.match(
      errorOf(
        await post(s.url, '/v1/audio/speech', { model: 'empty', input: 'hi' }),
        400,
        'invalid_request_error',
      ),
      /is missing: model \(a \.onnx model file\), tokens \(tokens\.txt\)$/,
    );
    assert.match(
      errorOf(
        await post(s.url, '/v1/audio/speech', { model: 'nopath', input: 'hi' }),
        400,
        'invalid_request_error',
      ),
      /needs "path"/,
    );
    assert.equal(
      (await post(s.url, '/v1/audio/speech', { model: 'piper', input: 'still serving' })).status,
      200,
    );
  });
});
