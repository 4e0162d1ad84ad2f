/**
 * Issue 4: every deterministic engine gives the same bytes for the same input whether its model runs
 * in the serial runtime, in the parallel runtime with `slots` omitted, or with 1, 2 or 4 slots, and
 * whichever of its sessions serves the request. The sherpa adapters run their generated test models.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { post, startServer, type TestServer } from '../helpers/voxd.js';

const fixture = (name: string) =>
  fileURLToPath(new URL(`../../../test/fixtures/models/${name}`, import.meta.url));

const SENTENCE = 'Please bring the blue umbrella when you leave the house.';

interface Case {
  model: Record<string, unknown>;
  /** The request body; `wav` is flite's rendering of SENTENCE, base64. */
  body(wav: string): Record<string, unknown>;
  route: string;
}

const tts = (id: string, family: string, extra: Record<string, unknown> = {}, input = SENTENCE): Case => ({
  model: { id, family, task: 'tts', lazy: true, ...extra },
  route: '/v1/audio/speech',
  body: () => ({ model: id, input }),
});
const audio = (id: string, family: string, task: string, extra: Record<string, unknown> = {}): Case => ({
  model: { id, family, task, lazy: true, ...extra },
  route: '/v1/tasks/run',
  body: (wav) => ({ model: id, audio_base64: wav }),
});

const CASES: Case[] = [
  tts('flite', 'flite_tts'),
  tts('espeak', 'espeak_tts'),
  tts('piper', 'piper_tts', { path: fixture('fake-piper') }),
  tts('kokoro', 'kokoro_tts', { path: fixture('fake-kokoro') }),
  tts('matcha', 'matcha_tts', { path: fixture('fake-matcha') }),
  audio('pocketsphinx', 'pocketsphinx_asr', 'asr'),
  audio('silero-vad', 'silero_vad', 'vad'),
  audio('diarizer', 'classic_diar', 'diar'),
  audio('whisper', 'whisper_asr', 'asr', { path: fixture('fake-whisper') }),
  audio('canary', 'canary_asr', 'asr', { path: fixture('fake-canary') }),
  audio('parakeet', 'parakeet_tdt', 'asr', { path: fixture('fake-parakeet-tdt') }),
  audio('nemo-ctc', 'nemo_ctc_asr', 'asr', { path: fixture('fake-nemo-ctc') }),
  audio('sense-voice', 'sense_voice_asr', 'asr', { path: fixture('fake-sense-voice') }),
  audio('pyannote', 'pyannote_diar', 'diar', { path: fixture('fake-pyannote') }),
];

/** The answer without its timing, which differs from run to run by nature. */
function answer(res: { status: number; body: Buffer; json?: unknown }, what: string): string {
  assert.equal(res.status, 200, `${what}: ${res.body.toString('utf8')}`);
  if (!res.body.subarray(0, 4).equals(Buffer.from('RIFF'))) {
    const { timing: _timing, ...rest } = res.json as Record<string, unknown>;
    return JSON.stringify(rest);
  }
  return res.body.toString('base64');
}

test('every deterministic engine answers the same bytes serially and at 1, 2 and 4 slots', {
  timeout: 300_000,
}, async () => {
  const speaker = await startServer({ models: [CASES[0]!.model] });
  const spoken = await post(speaker.url, '/v1/audio/speech', { model: 'flite', input: SENTENCE });
  await speaker.close();
  assert.equal(spoken.status, 200);
  const wav = spoken.body.toString('base64');

  const reference = new Map<string, string>();
  for (const slots of ['serial', 'omitted', 1, 2, 4] as const) {
    const models = CASES.map((c) => (typeof slots === 'number' ? { ...c.model, slots } : c.model));
    const s: TestServer = await startServer({ busy_timeout_ms: 0, models }, { parallel: slots !== 'serial' });
    try {
      for (const c of CASES) {
        const id = c.model.id as string;
        // Twice as many requests as slots at once, so every session serves some of them.
        const n = typeof slots === 'number' ? 2 * slots : 2;
        const results = await Promise.all(Array.from({ length: n }, () => post(s.url, c.route, c.body(wav))));
        for (const res of results) {
          const got = answer(res, `${id} at slots=${slots}`);
          const want = reference.get(id);
          if (want === undefined) reference.set(id, got);
          else assert.equal(got, want, `${id} at slots=${slots}: another answer than before`);
        }
      }
    } finally {
      await s.close();
    }
  }
  // The answers are real ones, not empty ones that would trivially match.
  for (const [id, got] of reference) {
    if (got.startsWith('{')) {
      const json = JSON.parse(got) as { text?: string; segments?: []; speaker_turns?: [] };
      const found =
        Boolean(json.text) || Boolean(json.segments?.length) || Boolean(json.speaker_turns?.length);
      assert.ok(found, `${id} found nothing in speech: ${got}`);
    } else assert.ok(got.length > 1000, `${id}: no audio`);
  }
});
