/**
 * The robustness matrix (edge-case-inputs.ts) for every embedded engine: empty, whitespace-only, very
 * long and non-ASCII text for flite_tts, espeak_tts and festival_tts; silent, 1-sample, 10-minute, corrupt and
 * odd-rate WAVs for pocketsphinx_asr, classic_diar and silero_vad.
 */
import assert from 'node:assert/strict';
import { FLITE, lazyModel } from '../helpers/models.js';
import type { HttpResult } from '../helpers/voxd.js';
import { startServer } from '../helpers/voxd.js';
import {
  type AudioEngine,
  audioEdgeCases,
  diarization,
  taskRun,
  transcription,
  ttsEdgeCases,
} from './edge-case-inputs.js';

/** Every embedded family, as `voxd serve` would load them: lazily. */
const MODELS = [
  FLITE,
  lazyModel('espeak', 'espeak_tts', 'tts'),
  lazyModel('festival', 'festival_tts', 'tts'),
  lazyModel('asr', 'pocketsphinx_asr', 'asr'),
  lazyModel('vad', 'silero_vad', 'vad'),
  lazyModel('diar', 'classic_diar', 'diar'),
];

const startAll = () => startServer({ busy_timeout_ms: 0, models: MODELS });

// Real voices: a short sentence is over 0.3 s, the mixed text over 1 s, 60 sentences over a minute.
for (const model of ['flite', 'espeak', 'festival'])
  ttsEdgeCases({
    label: model,
    model,
    start: startAll,
    minMs: { normal: 300, mixed: 1000, long: 60_000 },
    // Festival spells each 1,000-letter word out at its real pace (12.5 s a word, measured).
    ...(model === 'festival' ? { longWordsMs: 120_000 } : {}),
  });

const ok = (res: HttpResult) => assert.equal(res.status, 200, res.body.toString('utf8'));

const ENGINES: AudioEngine[] = [
  {
    label: 'pocketsphinx_asr',
    field: 'file',
    send: transcription('asr'),
    nothing(res) {
      ok(res);
      assert.equal(res.json.text, '');
    },
    found(res) {
      ok(res);
      const words = (res.json.text as string).split(/\s+/).filter(Boolean);
      assert.ok(words.length >= 3, `transcript: "${res.json.text}"`);
      return words.length;
    },
  },
  {
    label: 'classic_diar',
    field: 'file',
    send: transcription('diar'),
    ...diarization((turns) => new Set(turns.map((t) => t.speaker_id)).size),
  },
  {
    label: 'silero_vad',
    field: 'audio_base64',
    send: taskRun('vad'),
    nothing(res) {
      ok(res);
      assert.deepEqual(res.json.segments, []);
    },
    found(res) {
      ok(res);
      const segments = res.json.segments as unknown[];
      assert.ok(segments.length >= 1, JSON.stringify(res.json));
      return segments.length;
    },
  },
];

for (const engine of ENGINES) audioEdgeCases(engine, startAll);
