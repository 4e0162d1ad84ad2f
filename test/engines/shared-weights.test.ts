/**
 * Issue 12: under isolation "model" a loaded model is one runner process (its weights once) whose
 * slots' calls run on one sherpa-onnx object; under "session" every slot has its own runner. Calls
 * with their own recognizer settings (Whisper's language) on a shared object get their own answers
 * while other calls run (src/engines/settings-gate.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { runnerProcessIds } from '../../src/engines/engine-worker.js';
import { modelStatus, post, withServer } from '../helpers/voxd.js';

const fixture = (name: string) =>
  fileURLToPath(new URL(`../../../test/fixtures/models/${name}`, import.meta.url));

/** 1 s of a loud tone: the fake recognisers hear speech in it ("hello world", "hallo welt", ...). */
const LOUD = encodeWav({
  samples: Float32Array.from({ length: 16000 }, (_, i) => 0.3 * Math.sin(i / 7)),
  sampleRate: 16000,
  channels: 1,
}).toString('base64');

const MODELS = [
  { id: 'ctc', family: 'nemo_ctc_asr', task: 'asr', path: fixture('fake-nemo-ctc') },
  { id: 'piper', family: 'piper_tts', task: 'tts', path: fixture('fake-piper') },
];
const ask = (url: string, id: string) =>
  id === 'piper'
    ? post(url, '/v1/audio/speech', { model: id, input: 'Hello there. How are you today?' })
    : post(url, '/v1/tasks/run', { model: id, audio_base64: LOUD });

for (const isolation of ['model', 'session'] as const) {
  describe(`isolation "${isolation}" at 4 slots`, () => {
    for (const model of MODELS) {
      test(`${model.family}: 8 requests at once are served by ${isolation === 'model' ? 'one runner process' : 'a runner per slot'}, with one answer`, async () => {
        await withServer(
          { busy_timeout_ms: 0, models: [{ ...model, slots: 4, isolation, lazy: true }] },
          { parallel: true },
          async (s) => {
            assert.deepEqual(runnerProcessIds(), [], 'no runner before the first request');
            const answers = await Promise.all(Array.from({ length: 8 }, () => ask(s.url, model.id)));
            for (const res of answers) assert.equal(res.status, 200, res.body.toString());
            // The text (a JSON answer also carries its timing), or the audio bytes.
            const heard = answers.map((res) => (res.json ? res.json.text : res.body.toString('base64')));
            assert.equal(new Set(heard).size, 1);
            assert.ok(heard[0].length > 0);
            assert.equal(runnerProcessIds().length, isolation === 'model' ? 1 : 4);
            const status = await modelStatus(s.url, model.id);
            assert.equal(status.isolation, isolation);
            assert.equal(status.max_parallel_slots, 4);
            // The model's few KB of files, once shared or once per slot, plus 50 MiB a runner and
            // 10 MiB a slot (src/runtime/memory.ts): 1 x 50 + 40 = 91 MiB, or 4 x 50 + 40 = 241.
            assert.equal(status.memory_estimate_mb, isolation === 'model' ? 91 : 241);
          },
        );
        assert.deepEqual(runnerProcessIds(), [], 'the runners end with the server');
      });
    }
  });
}

test('whisper_asr shared by 4 slots: requests in different languages at once each get their own language', async () => {
  await withServer(
    {
      busy_timeout_ms: 0,
      models: [{ id: 'w', family: 'whisper_asr', task: 'asr', path: fixture('fake-whisper'), slots: 4 }],
    },
    { parallel: true },
    async (s) => {
      const said: Record<string, string> = { en: 'hello world', de: 'hallo welt', fr: 'bonjour le monde' };
      const languages = ['en', 'de', 'fr', 'en', 'fr', 'de', 'de', 'en', 'fr', 'fr', 'en', 'de'];
      const answers = await Promise.all(
        languages.map((language) =>
          post(s.url, '/v1/tasks/run', { model: 'w', audio_base64: LOUD, language }),
        ),
      );
      answers.forEach((res, i) => {
        assert.equal(res.status, 200, res.body.toString());
        assert.deepEqual(
          { text: res.json.text, language: res.json.language },
          {
            text: said[languages[i]!],
            language: languages[i],
          },
        );
      });
      assert.equal((await modelStatus(s.url, 'w')).isolation, 'model');
      assert.equal(runnerProcessIds().length, 1);
    },
  );
});
