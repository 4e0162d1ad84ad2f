/**
 * The robustness matrix (edge-case-inputs.ts) for every embedded engine: empty, whitespace-only, very
 * long and non-ASCII text for flite_tts, espeak_tts and festival_tts; silent, 1-sample, 10-minute, corrupt and
 * odd-rate WAVs for pocketsphinx_asr, classic_diar and silero_vad.
 */
import assert from 'node:assert/strict';
import type { HttpResult } from '../helpers/voxd.js';
import { startServer } from '../helpers/voxd.js';
import {
  type AudioEngine,
  audioEdgeCases,
  RATE,
  taskRun,
  transcription,
  ttsEdgeCases,
} from './edge-case-inputs.js';

/** Every embedded family, as `voxd serve` would load them: lazily. */
const MODELS = [
  { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
  { id: 'espeak', family: 'espeak_tts', task: 'tts', lazy: true },
  { id: 'festival', family: 'festival_tts', task: 'tts', lazy: true },
  { id: 'asr', family: 'pocketsphinx_asr', task: 'asr', lazy: true },
  { id: 'vad', family: 'silero_vad', task: 'vad', lazy: true },
  { id: 'diar', family: 'classic_diar', task: 'diar', lazy: true },
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
    nothing(res) {
      ok(res);
      assert.equal(res.json.text, '');
      assert.deepEqual(res.json.speaker_turns, []);
      assert.equal(res.json.sample_rate, RATE);
    },
    found(res) {
      ok(res);
      const turns = res.json.speaker_turns as { speaker_id: number }[];
      assert.ok(turns.length >= 1, JSON.stringify(res.json));
      return new Set(turns.map((t) => t.speaker_id)).size;
    },
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
