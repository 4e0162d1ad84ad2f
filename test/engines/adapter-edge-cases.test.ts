/**
 * The robustness matrix (edge-case-inputs.ts) for every sherpa-onnx adapter, each with its generated
 * fake model (scripts/test-models/): the fakes' answers are known, so beyond "a 200 or a clear 400"
 * the tests assert what they say. TTS fakes make a fixed number of samples per token at the rate in
 * their metadata; ASR fakes decode loud audio to a known sentence and silence to nothing.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { floats } from '../../src/audio/pcm16-audio.js';
import type { Audio } from '../../src/audio/types.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { post, startServer, type TestServer } from '../helpers/voxd.js';
import {
  type AudioEngine,
  audioEdgeCases,
  diarization,
  type TtsSubject,
  taskRun,
  transcript,
  transcription,
  ttsEdgeCases,
} from './edge-case-inputs.js';

const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/models', import.meta.url));
const fake = (name: string) => `${FIXTURES}/${name}`;

const model = (id: string, family: string, task: string, folder: string) => ({
  id,
  family,
  task,
  path: fake(folder),
  lazy: true,
});

/** Every adapter with its fake, as `voxd serve` would load them (lazily), and flite for real speech. */
const MODELS = [
  { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
  model('piper', 'piper_tts', 'tts', 'fake-piper'),
  model('kokoro', 'kokoro_tts', 'tts', 'fake-kokoro'),
  model('kokoro-multi', 'kokoro_tts', 'tts', 'fake-kokoro-multi-lang'),
  model('matcha', 'matcha_tts', 'tts', 'fake-matcha'),
  model('matcha-zh', 'matcha_tts', 'tts', 'fake-matcha-zh'),
  model('whisper', 'whisper_asr', 'asr', 'fake-whisper'),
  model('canary', 'canary_asr', 'asr', 'fake-canary'),
  model('parakeet', 'parakeet_tdt', 'asr', 'fake-parakeet-tdt'),
  model('nemo-ctc', 'nemo_ctc_asr', 'asr', 'fake-nemo-ctc'),
  model('sense-voice', 'sense_voice_asr', 'asr', 'fake-sense-voice'),
  model('pyannote', 'pyannote_diar', 'diar', 'fake-pyannote'),
];

const startAll = () => startServer({ busy_timeout_ms: 0, models: MODELS });

// ---------------------------------------------------------------------------------------------------
// TTS: every fake token is a fixed number of samples (scripts/test-models/<module>.py)

/** Audio at the fake's rate, mono, a whole number of its per-token blocks long. */
const fakeTokens =
  (sampleRate: number, perToken: number) =>
  (audio: Audio, what: string): void => {
    assert.deepEqual([audio.sampleRate, audio.channels], [sampleRate, 1], `${what}: rate and channels`);
    assert.equal(floats(audio).length % perToken, 0, `${what}: ${floats(audio).length} samples`);
  };

/**
 * The edge cases of a fake TTS model: every 200 is mono at `sampleRate`, a whole number of tokens of
 * `perToken` samples; `texts` replaces the English texts for a model that reads only its lexicon.
 */
const fakeTts = (
  label: string,
  model: string,
  sampleRate: number,
  perToken: number,
  texts: Pick<TtsSubject, 'normal' | 'sentence' | 'mixed' | 'foreign'> = {},
) => ttsEdgeCases({ label, model, start: startAll, check: fakeTokens(sampleRate, perToken), ...texts });

// piper.py: 256 samples a token at 22050 Hz (espeak-ng phonemes).
fakeTts('piper_tts (fake-piper)', 'piper', 22050, 256);
// kokoro.py: 240 samples a token, the two pads included, at 24 kHz (espeak-ng phonemes).
fakeTts('kokoro_tts (fake-kokoro)', 'kokoro', 24000, 240);
// matcha.py with vocos: 256 * (4 frames a token - 1) samples a sentence at 22050 Hz.
fakeTts('matcha_tts (fake-matcha, vocos)', 'matcha', 22050, 256);

// The fakes with a lexicon read only its words, in the texts given here.
// The multi-lingual Kokoro reads its two-word lexicons: every sentence of the long text is the same.
fakeTts('kokoro_tts (fake-kokoro-multi-lang, lexicons)', 'kokoro-multi', 24000, 240, {
  normal: 'hello',
  sentence: () => 'hello world.',
  mixed: '你好, hello world! 😀',
  foreign: ['東京タワー', 'Привет, мир', 'Café'],
});
// matcha.py with hifigan: 1024 samples a token; the Chinese front end reads lexicon.txt.
fakeTts('matcha_tts (fake-matcha-zh, lexicon, hifigan)', 'matcha-zh', 22050, 1024, {
  normal: '你好',
  sentence: () => '你好世界。',
  mixed: '你好，世界！😀 Café',
  foreign: ['東京タワー', 'Привет, мир', 'hello'],
});

// ---------------------------------------------------------------------------------------------------
// Audio in: each ASR fake's known sentence for loud audio, "" for silence

/** An ASR fake that hears `text` in loud audio and nothing in silence; the WAV travels in `field`. */
const asr = (label: string, send: AudioEngine['send'], text: string, field = 'file'): AudioEngine => ({
  label,
  field,
  send,
  ...transcript(text),
});

const ENGINES: AudioEngine[] = [
  // whisper.py: auto-detection hears German in loud audio.
  asr('whisper_asr (fake-whisper)', transcription('whisper'), 'hallo welt'),
  asr('canary_asr (fake-canary)', transcription('canary'), 'hello world.'),
  asr('parakeet_tdt (fake-parakeet-tdt)', transcription('parakeet'), 'parakeet says hello'),
  asr('nemo_ctc_asr (fake-nemo-ctc)', taskRun('nemo-ctc'), 'hello world', 'audio_base64'),
  asr('sense_voice_asr (fake-sense-voice)', transcription('sense-voice'), 'hello world'),
  // pyannote.py: energy decides speech, so the sentence is turns of speaker 0, silence none.
  {
    label: 'pyannote_diar (fake-pyannote)',
    field: 'file',
    send: transcription('pyannote'),
    ...diarization((turns) => {
      const speakers = [...new Set(turns.map((t) => t.speaker_id))];
      assert.deepEqual(speakers, [0], JSON.stringify(turns));
      return speakers;
    }),
  },
];

for (const engine of ENGINES) audioEdgeCases(engine, startAll);

// Regression: sherpa's multi-lingual Kokoro front end merges short runs (here a Chinese word and a
// full stop, alternating) onto one chunk without limit, and the model then ended the whole server
// ("Bad things happened! 60 vs 32" for twenty of them with the fake's 32-token limit; a real
// model's 511 takes about 170). voxd speaks such text in pieces under the limit (text-pieces.ts).
describe('kokoro_tts: text whose tokens sherpa would chunk past the model limit', () => {
  let s: TestServer;
  before(async () => {
    s = await startAll();
  });
  after(() => s.close());

  test('"你。" 200 times is spoken in full: 5 tokens of 240 samples each, and the server lives on', async () => {
    const res = await post(s.url, '/v1/audio/speech', { model: 'kokoro-multi', input: '你。'.repeat(200) });
    assert.equal(res.status, 200, res.body.toString());
    // Each "你。" is 0 n i . 0 (lexicon-zh.txt, the full stop, the two pads).
    assert.equal(floats(decodeWav(res.body)).length, 200 * 5 * 240);
    const again = await post(s.url, '/v1/audio/speech', { model: 'kokoro-multi', input: '你。' });
    assert.equal(floats(decodeWav(again.body)).length, 5 * 240);
  });
});
