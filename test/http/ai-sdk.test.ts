/**
 * The Vercel AI SDK (`ai` 5 with `@ai-sdk/openai` 2), unmodified, against a real voxd serving its
 * embedded models, called with OpenAI's model names as its users write them: `whisper-1` and
 * `tts-1` reach pocketsphinx and flite through the default model aliases, and the transcription
 * comes back with the duration and language the SDK reads out of OpenAI's answers.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { experimental_generateSpeech as generateSpeech, experimental_transcribe as transcribe } from 'ai';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { EMBEDDED_MODELS } from '../../src/config/embedded-models.js';
import { post, startServer, type TestServer } from '../helpers/voxd.js';

const SPOKEN = 'Please bring the blue umbrella when you leave the house.';
const HEARD = ['bring', 'blue', 'umbrella', 'leave', 'house'];
const wordsHeard = (text: string) => HEARD.filter((w) => text.toLowerCase().split(/\W+/).includes(w)).length;

describe('the AI SDK against voxd', () => {
  let s: TestServer;
  let openai: ReturnType<typeof createOpenAI>;
  /** flite's WAV of SPOKEN, and its length in seconds. */
  let wav: Buffer;
  let seconds: number;

  before(async () => {
    s = await startServer({ models: EMBEDDED_MODELS });
    openai = createOpenAI({ baseURL: `${s.url}/v1`, apiKey: 'test' });
    const res = await post(s.url, '/v1/audio/speech', { model: 'flite', input: SPOKEN, voice: 'kal16' });
    assert.equal(res.status, 200);
    wav = res.body;
    const audio = decodeWav(wav);
    seconds = floats(audio).length / audio.sampleRate;
  });
  after(() => s?.close());

  test("experimental_transcribe with transcription('whisper-1'): the text, its language and duration", async () => {
    const result = await transcribe({ model: openai.transcription('whisper-1'), audio: wav });
    assert.ok(wordsHeard(result.text) >= 3, `heard "${result.text}"`);
    assert.equal(result.language, 'en');
    assert.ok(result.durationInSeconds !== undefined, 'durationInSeconds');
    assert.ok(
      Math.abs(result.durationInSeconds - seconds) < 0.001,
      `${result.durationInSeconds} vs ${seconds}`,
    );
  });

  test('experimental_transcribe asking for segments (verbose_json): language, duration and segments', async () => {
    const result = await transcribe({
      model: openai.transcription('whisper-1'),
      audio: wav,
      providerOptions: { openai: { timestampGranularities: ['segment'] } },
    });
    assert.equal(result.language, 'en');
    assert.ok(Math.abs((result.durationInSeconds ?? 0) - seconds) < 0.001, String(result.durationInSeconds));
    assert.ok(result.segments.length >= 1, 'segments');
    assert.ok(wordsHeard(result.segments.map((seg) => seg.text).join(' ')) >= 3);
  });

  test("experimental_generateSpeech with speech('tts-1'): flite's speech, as mp3 (the SDK's default) and wav", async () => {
    const mp3 = await generateSpeech({ model: openai.speech('tts-1'), text: SPOKEN, voice: 'alloy' });
    const bytes = Buffer.from(mp3.audio.uint8Array);
    assert.ok(bytes.subarray(0, 3).toString('latin1') === 'ID3' || bytes[0] === 0xff, 'an mp3');
    const heard = await transcribe({ model: openai.transcription('whisper-1'), audio: bytes });
    assert.ok(wordsHeard(heard.text) >= 3, `heard "${heard.text}"`);
    const spoken = await generateSpeech({
      model: openai.speech('tts-1'),
      text: SPOKEN,
      voice: 'alloy',
      outputFormat: 'wav',
    });
    const flite = await post(s.url, '/v1/audio/speech', { model: 'flite', input: SPOKEN, voice: 'alloy' });
    assert.ok(Buffer.from(spoken.audio.uint8Array).equals(flite.body), 'tts-1 speaks as flite');
  });
});
