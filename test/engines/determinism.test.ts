/**
 * Issue 4: every deterministic engine gives the same bytes for the same input whether its model runs
 * in the serial runtime, in the parallel runtime with `slots` omitted, or with 1, 2 or 4 slots, and
 * whichever of its sessions serves the request. The sherpa adapters run their generated test models.
 * Issue 12: the sherpa ASR and TTS families run their slots concurrently on one shared engine by
 * default (isolation "model"); the last round gives every model a runner per slot ("session").
 * Issue 23: pocketsphinx answers a clip the same whatever it decoded before, in every order of
 * requests, offline and streamed, in a worker thread and in a runner process.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EngineWorker } from '../../src/engines/engine-worker.js';
import { DEFAULT_POCKETSPHINX_MODEL } from '../../src/engines/pocketsphinx/pocketsphinx-family.js';
import type { PsCall, PsReply } from '../../src/engines/pocketsphinx/ps-worker.js';
import { type ClipId, librivoxSamples } from '../helpers/librivox.js';
import { post, withServer } from '../helpers/voxd.js';

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
  // Festival gives the same bytes run after run, in one process or in fresh ones (checked by hand
  // against text2wave too): its HTS synthesis has no random part.
  tts('festival', 'festival_tts'),
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

interface Round {
  name: string;
  parallel: boolean;
  slots?: number;
  isolation?: 'session';
}

const ROUNDS: Round[] = [
  { name: 'serial', parallel: false },
  { name: 'slots omitted', parallel: true },
  { name: 'slots=1', parallel: true, slots: 1 },
  { name: 'slots=2', parallel: true, slots: 2 },
  { name: 'slots=4', parallel: true, slots: 4 },
  { name: 'slots=4, isolation "session"', parallel: true, slots: 4, isolation: 'session' },
];

test('every deterministic engine answers the same bytes serially, at 1, 2 and 4 slots, shared or not', {
  timeout: 300_000,
}, async () => {
  const spoken = await withServer({ models: [CASES[0]!.model] }, (speaker) =>
    post(speaker.url, '/v1/audio/speech', { model: 'flite', input: SENTENCE }),
  );
  assert.equal(spoken.status, 200);
  const wav = spoken.body.toString('base64');

  const reference = new Map<string, string>();
  for (const round of ROUNDS) {
    const { slots, isolation } = round;
    const models = CASES.map((c) => ({
      ...c.model,
      ...(slots ? { slots } : {}),
      ...(isolation ? { isolation } : {}),
    }));
    await withServer({ busy_timeout_ms: 0, models }, { parallel: round.parallel }, async (s) => {
      for (const c of CASES) {
        const id = c.model.id as string;
        // Twice as many requests as slots at once, so every session serves some of them.
        const n = 2 * (slots ?? 1);
        const results = await Promise.all(Array.from({ length: n }, () => post(s.url, c.route, c.body(wav))));
        for (const res of results) {
          const got = answer(res, `${id} (${round.name})`);
          const want = reference.get(id);
          if (want === undefined) reference.set(id, got);
          else assert.equal(got, want, `${id} (${round.name}): another answer than before`);
        }
      }
    });
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

const PS_WORKER = new URL('../../src/engines/pocketsphinx/ps-worker.js', import.meta.url);
const PS_MODEL = {
  hmm: join(DEFAULT_POCKETSPHINX_MODEL, 'en-us'),
  lm: join(DEFAULT_POCKETSPHINX_MODEL, 'en-us.lm.bin'),
  dict: join(DEFAULT_POCKETSPHINX_MODEL, 'cmudict-en-us.dict'),
};

/** Every order of `items`. */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

test('pocketsphinx answers a clip the same first and after other requests, in every order, on a thread and in a process', {
  timeout: 600_000,
}, async () => {
  // Two LibriVox clips, one decoded offline and live (in steps, as live audio is): the old decoder
  // answered each of these differently after the others.
  const requests: { name: string; clip: ClipId; live: boolean }[] = [
    { name: '0880 offline', clip: '0880', live: false },
    { name: '0880 live', clip: '0880', live: true },
    { name: '0920 live', clip: '0920', live: true },
  ];
  const answers = new Map<string, string>();
  for (const kind of ['thread', 'process'] as const) {
    for (const order of permutations(requests)) {
      // A fresh session for each order: its first request is the one no other came before.
      const worker = new EngineWorker<PsCall, PsReply>(PS_WORKER, PS_MODEL, kind);
      try {
        for (const r of order) {
          const call = (job: PsCall) => worker.call(job, new AbortController().signal, [], () => undefined);
          const samples = librivoxSamples(r.clip);
          let reply: PsReply;
          if (r.live) {
            await call({ kind: 'begin' });
            await call({ kind: 'feed', samples });
            reply = await call({ kind: 'end' });
          } else reply = await call({ kind: 'decode', samples });
          assert.ok(reply.ok, JSON.stringify(reply));
          assert.ok(reply.text.split(' ').length >= 5 && reply.words!.length >= 5, reply.text);
          const got = JSON.stringify({ text: reply.text, words: reply.words });
          const want = answers.get(r.name);
          const where = `${r.name} (${kind}, order ${order.map((o) => o.name).join(', ')})`;
          if (want === undefined) answers.set(r.name, got);
          else assert.equal(got, want, `${where}: another answer than before`);
        }
      } finally {
        await worker.dispose();
      }
    }
  }
});
