/**
 * The robustness matrix every engine must pass, shared by the embedded engines' test
 * (edge-cases.test.ts) and the sherpa-onnx adapters' (adapter-edge-cases.test.ts): empty,
 * whitespace-only, very long and non-ASCII text for TTS; silent, 1-sample, 10-minute, corrupt and
 * odd-rate WAVs for the audio engines. Each case gets a correct result or a clear 400, never a 500,
 * a crash or a hang, and after each one the same server still answers a normal request.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { resample } from '../../src/audio/convert.js';
import { floats } from '../../src/audio/pcm16-audio.js';
import { type Audio, durationMs } from '../../src/audio/types.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { encodeWav } from '../../src/audio/wav-encode.js';
import {
  badRequest,
  get,
  type HttpResult,
  post,
  request,
  type TestServer,
  withDeadline,
} from '../helpers/voxd.js';

export const RATE = 16000;
/** Any single request; a hang fails the test with a message naming the case instead of stalling the run. */
const REQUEST_MS = 30_000;
/** A case that sends ten minutes of audio. */
const LONG_CASE_MS = 60_000;

/**
 * A 16-bit PCM WAV with a hand-written 44-byte header. `rate` goes into the header as given (0 and
 * absurd rates included); `samples` is either the samples in [-1, 1] or a count of zero samples.
 */
export function wav(rate: number, samples: ArrayLike<number> | number): Buffer {
  const count = typeof samples === 'number' ? samples : samples.length;
  const dataBytes = count * 2;
  const out = Buffer.alloc(44 + dataBytes); // zero-filled: silence unless samples are given
  out.write('RIFF', 0, 'latin1');
  out.writeUInt32LE(36 + dataBytes, 4);
  out.write('WAVE', 8, 'latin1');
  out.write('fmt ', 12, 'latin1');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE((rate * 2) % 2 ** 32, 28); // byte rate
  out.writeUInt16LE(2, 32); // block align
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'latin1');
  out.writeUInt32LE(dataBytes, 40);
  if (typeof samples !== 'number') {
    for (let i = 0; i < count; i++)
      out.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767), 44 + 2 * i);
  }
  return out;
}

/** Fails unless the answer is a 200 or a 400 invalid_request_error naming every part (never a 500). */
function okOrBadRequest(res: HttpResult, ...parts: string[]): boolean {
  if (res.status === 200) return true;
  badRequest(res, ...parts);
  return false;
}

/** Root mean square of the samples: tells audio with sound in it from a file of zeros. */
function rms(samples: Float32Array): number {
  let sum = 0;
  for (const x of samples) sum += x * x;
  return Math.sqrt(sum / Math.max(1, samples.length));
}

const ok = (res: HttpResult) => assert.equal(res.status, 200, res.body.toString('utf8'));

// ---------------------------------------------------------------------------------------------------
// Text to speech, POST /v1/audio/speech

/** Sentence `n` (from 1) of the long text. */
const englishSentence = (n: number) =>
  `Sentence number ${n} tells a short story about the weather, the town and the sea.`;

export interface TtsSubject {
  /** The describe title's name for it, e.g. `flite` or `piper_tts (fake-piper)`. */
  label: string;
  model: string;
  start(): Promise<TestServer>;
  /**
   * Sentence `n` (1..60) of the very long text; English ones about the weather unless given. When
   * every sentence is the same, the long text must make exactly sixty times the audio of one.
   */
  sentence?: (n: number) => string;
  /** A short text it speaks, for the "still serves" check; `Still here.` unless given. */
  normal?: string;
  /** Text mixing scripts (accents, CJK, emoji) that it must speak; an English mix unless given. */
  mixed?: string;
  /** Texts in scripts it may not read: real audio or a clear 400, never an empty 200. */
  foreign?: string[];
  /** Further checks of every 200 (the model's rate, a whole number of a fake's tokens). */
  check?(audio: Audio, what: string): void;
  /** Least lengths in ms a real voice makes (a fake says far less per word): normal, mixed, long text. */
  minMs?: { normal: number; mixed: number; long: number };
  /**
   * The long-words case's deadline, REQUEST_MS unless given: for an engine that spells its 5,000
   * letters out in full at its real pace (Festival: about 8 minutes of speech, 35-65 s to make).
   */
  longWordsMs?: number;
}

const MIXED = 'Café, naïve, Zoë and Ünïcödé — 東京 ✓ 42 😀. Ça va très bien, merci!';
const FOREIGN = ['東京タワー', '你好世界', 'Привет, мир'];
/** How many sentences the very long text has, and which of them stand for all in the reference. */
const LONG_SENTENCES = 60;
const SAMPLE_SENTENCES = [1, 12, 25, 38, 47, 60];

export function ttsEdgeCases(subject: TtsSubject): void {
  const { model, minMs } = subject;
  const sentence = subject.sentence ?? englishSentence;
  const normal = subject.normal ?? 'Still here.';
  describe(`${subject.label}: text edge cases`, () => {
    let s: TestServer;
    before(async () => {
      s = await subject.start();
    });
    after(() => s.close());

    const speak = (input: unknown, what: string, ms = REQUEST_MS) =>
      withDeadline(post(s.url, '/v1/audio/speech', { model, input }), `${model} ${what}`, ms);

    /** A 200 with real audio in it (not an empty or all-zero file). */
    const audioOf = (res: HttpResult, what: string) => {
      assert.equal(res.status, 200, `${what}: ${res.body.toString('utf8')}`);
      const audio = decodeWav(res.body);
      assert.ok(floats(audio).length > 0 && rms(floats(audio)) > 0.001, `${what}: no sound`);
      subject.check?.(audio, what);
      return audio;
    };
    const spoken = async (input: string, what: string) => audioOf(await speak(input, what), what);

    /** The process is alive and the model still serves a normal request. */
    const stillServes = async () => {
      assert.equal((await get(s.url, '/health')).status, 200);
      const audio = await spoken(normal, 'a normal request');
      if (minMs) assert.ok(durationMs(audio) > minMs.normal, `normal request: ${durationMs(audio)} ms`);
    };

    test('empty text is a 400 naming input', async () => {
      badRequest(await speak('', 'empty text'), 'input');
      await stillServes();
    });

    test('whitespace-only text (and text with nothing to speak) is a 400 naming input, not a 500', async () => {
      for (const input of ['   ', '\n\t \r\n', '\u00a0\u2003', '😀🎉', '...!?']) {
        badRequest(await speak(input, JSON.stringify(input)), 'input');
      }
      await stillServes();
    });

    test('very long text (60 sentences) is spoken in full, as long as its sentences spoken alone', {
      timeout: 90_000,
    }, async () => {
      const all = Array.from({ length: LONG_SENTENCES }, (_, i) => sentence(i + 1));
      const audio = await spoken(all.join(' '), 'long text');
      if (minMs) assert.ok(durationMs(audio) > minMs.long, `only ${durationMs(audio)} ms for 60 sentences`);
      // Spoken all the way through: the last tenth has sound in it too.
      const tail = floats(audio).subarray(Math.floor(floats(audio).length * 0.9));
      assert.ok(rms(tail) > 0.001, 'the end of the long text is silent');
      if (sentence(1) === sentence(LONG_SENTENCES)) {
        // Sixty times the same sentence: exactly sixty times its audio.
        const one = await spoken(sentence(1), 'one sentence');
        assert.equal(floats(audio).length, LONG_SENTENCES * floats(one).length);
        return stillServes();
      }
      // Proportionally longer than a sample of its sentences: none dropped, none cut short.
      const sample = SAMPLE_SENTENCES.map((n) => sentence(n)).join(' ');
      const reference = await spoken(sample, 'a sample of the sentences');
      const ratio = floats(audio).length / floats(reference).length;
      const expected = LONG_SENTENCES / SAMPLE_SENTENCES.length;
      assert.ok(
        ratio > 0.85 * expected && ratio < 1.15 * expected,
        `60 sentences: ${durationMs(audio)} ms; ${SAMPLE_SENTENCES.length} of them: ${durationMs(reference)} ms`,
      );
      await stillServes();
    });

    test('non-ASCII text (accents, CJK, emoji) is spoken', async () => {
      const mixed = await spoken(subject.mixed ?? MIXED, 'mixed text');
      const short = await spoken(normal, 'a normal request');
      assert.ok(floats(mixed).length > floats(short).length, 'the mixed text is longer than the normal one');
      if (minMs) assert.ok(durationMs(mixed) > minMs.mixed, `mixed text: ${durationMs(mixed)} ms`);
      for (const input of subject.foreign ?? FOREIGN) {
        const res = await speak(input, input);
        if (okOrBadRequest(res, 'input')) audioOf(res, input);
      }
      await stillServes();
    });

    const longWordsMs = subject.longWordsMs ?? REQUEST_MS;
    test('pathologically long words do not crash the process', {
      timeout: longWordsMs + 30_000,
    }, async () => {
      // Regression: with Node's WASI imports called directly from flite's wasm, this text crashed the
      // whole server with SIGSEGV (a GC inside a V8 fast-API call, nodejs/node#46777).
      const input = `${'a'.repeat(1000)}. `.repeat(5);
      const res = await speak(input, 'long words', longWordsMs);
      if (okOrBadRequest(res, 'input')) audioOf(res, 'long words');
      await stillServes();
    });
  });
}

// ---------------------------------------------------------------------------------------------------
// Audio in: POST /v1/audio/transcriptions (multipart) or /v1/tasks/run (audio_base64)

export interface AudioEngine {
  /** The describe title's name for it, e.g. `pocketsphinx_asr`. */
  label: string;
  /** The field the WAV travels in, which every 400 about it must name. */
  field: string;
  send(s: TestServer, bytes: Buffer): Promise<HttpResult>;
  /** Asserts a 200 that found nothing (no words, no segments, no turns). */
  nothing(res: HttpResult): void;
  /** Asserts a 200 that found the speech; returns a summary to compare conversions by. */
  found(res: HttpResult): unknown;
}

/** Sends the WAV as an OpenAI-style transcription request to `model`. */
export const transcription = (model: string) => (s: TestServer, bytes: Buffer) => {
  const form = new FormData();
  form.set('model', model);
  form.set('file', new Blob([bytes], { type: 'audio/wav' }), 'input.wav');
  return request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
};

/** Sends the WAV to `model` on /v1/tasks/run. */
export const taskRun = (model: string) => (s: TestServer, bytes: Buffer) =>
  post(s.url, '/v1/tasks/run', { model, audio_base64: bytes.toString('base64') });

/** A transcript that must be exactly `text` (a fake's known answer), or empty. */
export const transcript = (text: string): Pick<AudioEngine, 'nothing' | 'found'> => ({
  nothing(res) {
    ok(res);
    assert.equal(res.json.text, '');
  },
  found(res) {
    ok(res);
    assert.equal(res.json.text, text);
    return text;
  },
});

/**
 * A diarizer's answers: no text and no turns, at the input's rate, for silence; at least one turn
 * for speech, whose speakers `speakers` checks and summarises.
 */
export const diarization = (
  speakers: (turns: { speaker_id: number }[]) => unknown,
): Pick<AudioEngine, 'nothing' | 'found'> => ({
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
    return speakers(turns);
  },
});

/** A sentence spoken by flite kal16 (16 kHz): the server must have flite loaded as `flite`. */
export async function fliteSpeech(s: TestServer): Promise<Float32Array> {
  const res = await post(s.url, '/v1/audio/speech', {
    model: 'flite',
    input: 'Please bring the blue umbrella when you leave the house.',
    voice: 'kal16',
  });
  assert.equal(res.status, 200, res.body.toString('utf8'));
  return floats(decodeWav(res.body));
}

/** The audio matrix for `engine`, on a server from `start` that also has flite (for the speech). */
export function audioEdgeCases(engine: AudioEngine, start: () => Promise<TestServer>): void {
  describe(`${engine.label}: audio edge cases`, () => {
    let s: TestServer;
    /** The speech, and what the engine makes of it. */
    let speech: Float32Array;
    let speechResult: unknown;
    const send = (bytes: Buffer, what: string, ms = REQUEST_MS) =>
      withDeadline(engine.send(s, bytes), `${engine.label}: ${what}`, ms);

    before(async () => {
      s = await start();
      speech = await fliteSpeech(s);
    });
    after(() => s.close());

    /** The process is alive and the model still serves a normal request (real speech, found). */
    const stillServes = async () => {
      assert.equal((await get(s.url, '/health')).status, 200);
      const found = engine.found(await send(wav(RATE, speech), 'a normal request'));
      if (speechResult !== undefined) assert.deepEqual(found, speechResult, 'the same file, another answer');
      speechResult = found;
    };

    test('a normal request works (the baseline for the rest)', async () => {
      await stillServes();
    });

    test('3 s of silence: 200, nothing found', async () => {
      engine.nothing(await send(wav(RATE, 3 * RATE), 'silence'));
      await stillServes();
    });

    test('a 1-sample WAV (and a header-only one): 200, nothing found', async () => {
      engine.nothing(await send(wav(RATE, [0.5]), '1 sample'));
      engine.nothing(await send(wav(RATE, 0), '0 samples'));
      await stillServes();
    });

    test('a 10-minute file: 200 within the deadline', { timeout: LONG_CASE_MS }, async () => {
      const res = await send(wav(RATE, 600 * RATE), '10 minutes of silence', LONG_CASE_MS - 10_000);
      engine.nothing(res);
      if (res.json.timing?.audio_duration_ms !== undefined)
        assert.equal(res.json.timing.audio_duration_ms, 600_000);
      await stillServes();
    });

    test('corrupt and truncated WAVs, and bytes that are no audio: 400 invalid_request_error naming the field', async () => {
      const valid = wav(RATE, speech.subarray(0, RATE));
      const garbage = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz'.repeat(4));
      const cases: [string, Buffer, string][] = [
        ['RIFF and then garbage', Buffer.concat([Buffer.from('RIFF'), garbage]), 'not a WAV file'],
        ['RIFF/WAVE with garbage chunks', Buffer.concat([valid.subarray(0, 12), garbage]), 'no fmt chunk'],
        // Not WAV: ffmpeg is asked, and cannot read it either.
        ['no RIFF header at all', Buffer.concat([Buffer.from('ID3\x03'), garbage]), 'could not be decoded'],
        ['cut inside the RIFF header', valid.subarray(0, 10), 'truncated WAV header'],
        ['cut inside the fmt chunk', valid.subarray(0, 30), 'truncated WAV fmt chunk'],
        ['cut before the data chunk', valid.subarray(0, 40), 'no data chunk'],
      ];
      for (const [what, bytes, why] of cases) badRequest(await send(bytes, what), `${engine.field}:`, why);
      // A file cut inside its data (a streamed or interrupted upload) keeps the samples that arrived.
      const res = await send(valid.subarray(0, 44 + 1001), 'cut inside the data');
      assert.equal(res.status, 200, res.body.toString('utf8'));
      await stillServes();
    });

    test('sample rate 0 (and an absurd one) in the header: 400 naming the field', async () => {
      badRequest(await send(wav(0, 1600), 'rate 0'), `${engine.field}:`, 'sample rate 0');
      badRequest(await send(wav(0xffffffff, 1600), 'rate 2^32-1'), `${engine.field}:`, 'sample rate');
      await stillServes();
    });

    test('very low (100 Hz) and high (384 kHz) sample rates: converted, or a clear 400', async () => {
      // 100 Hz: one second of silence can only be converted to silence.
      const low = await send(wav(100, 100), 'rate 100');
      if (okOrBadRequest(low, `${engine.field}:`, 'sample rate')) engine.nothing(low);
      // 384 kHz: the same speech, upsampled; converted back it must give the same answer.
      const high = resample({ samples: speech, sampleRate: RATE, channels: 1 }, 384_000);
      const res = await send(encodeWav(high), 'rate 384000');
      if (okOrBadRequest(res, `${engine.field}:`, 'sample rate'))
        assert.deepEqual(engine.found(res), speechResult, 'speech at 384 kHz, another answer than at 16 kHz');
      await stillServes();
    });
  });
}
