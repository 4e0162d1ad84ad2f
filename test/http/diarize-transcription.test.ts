/**
 * `gpt-4o-transcribe-diarize` against the embedded models: the alias names the classic diarizer,
 * whose transcriptions carry the text pocketsphinx (diarization_text_model) hears in the same
 * audio. Driven by the unmodified AI SDK 5 (which fails a transcription with no text) and the
 * openai SDK (diarized_json), with flite speaking.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { experimental_transcribe as transcribe } from 'ai';
import OpenAI, { toFile } from 'openai';
import { EMBEDDED_MODELS } from '../../src/config/embedded-models.js';
import {
  post,
  startServer,
  type TestServer,
  transcribe as transcribeForm,
  withServer,
} from '../helpers/voxd.js';

const SPOKEN = 'Please bring the blue umbrella when you leave the house.';
const HEARD = ['bring', 'blue', 'umbrella', 'leave', 'house'];
const wordsHeard = (text: string) => HEARD.filter((w) => text.toLowerCase().split(/\W+/).includes(w)).length;

async function speak(base: string): Promise<Buffer> {
  const res = await post(base, '/v1/audio/speech', { model: 'flite', input: SPOKEN, voice: 'kal16' });
  assert.equal(res.status, 200, res.body.toString());
  return res.body;
}

describe('gpt-4o-transcribe-diarize: the diarizer with the text of diarization_text_model', () => {
  let s: TestServer;
  let wav: Buffer;

  before(async () => {
    s = await startServer({ models: EMBEDDED_MODELS });
    wav = await speak(s.url);
  });
  after(() => s?.close());

  test('AI SDK 5 transcribe returns the words heard, where the diarizer alone gave no text', async () => {
    const openai = createOpenAI({ baseURL: `${s.url}/v1`, apiKey: 'test' });
    const result = await transcribe({ model: openai.transcription('gpt-4o-transcribe-diarize'), audio: wav });
    assert.ok(wordsHeard(result.text) >= 3, `heard "${result.text}"`);
    // Asking for segments sends verbose_json: the recogniser's segments and words.
    const timed = await transcribe({
      model: openai.transcription('gpt-4o-transcribe-diarize'),
      audio: wav,
      providerOptions: { openai: { timestampGranularities: ['word'] } },
    });
    assert.ok(
      wordsHeard(timed.segments.map((seg) => seg.text).join(' ')) >= 3,
      JSON.stringify(timed.segments),
    );
  });

  test("the openai SDK's diarized_json: speaker segments, each with the words spoken in it, and the whole text", async () => {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'test' });
    // The SDK's overloads type diarized_json's answer as a plain Transcription; it is this.
    const result = (await client.audio.transcriptions.create({
      model: 'gpt-4o-transcribe-diarize',
      file: await toFile(wav, 'speech.wav'),
      response_format: 'diarized_json',
    })) as unknown as OpenAI.Audio.TranscriptionDiarized;
    assert.ok(wordsHeard(result.text) >= 3, `heard "${result.text}"`);
    assert.ok(result.segments.length >= 1, 'segments');
    for (const segment of result.segments) {
      assert.equal(segment.type, 'transcript.text.segment');
      assert.match(segment.speaker, /^[A-Z]$/);
      assert.ok(segment.end > segment.start, JSON.stringify(segment));
    }
    // Every word falls in some turn, in order, so the segments' words are the text's.
    const joined = result.segments.map((segment) => segment.text).join(' ');
    assert.ok(wordsHeard(joined) >= 3, `segments "${joined}"`);
    const json = await client.audio.transcriptions.create({
      model: 'gpt-4o-transcribe-diarize',
      file: await toFile(wav, 'speech.wav'),
    });
    assert.equal(json.text, result.text, 'json gives the same text');
  });
});

test('diarization_text_model "" turns the pairing off: the diarizer answers turns with an empty text, as before', async () => {
  await withServer({ models: EMBEDDED_MODELS, diarization_text_model: '' }, async (s) => {
    const res = await transcribeForm(s.url, 'gpt-4o-transcribe-diarize', await speak(s.url));
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.json.text, '');
    assert.ok(res.json.speaker_turns.length >= 1, 'the speaker turns are still there');
  });
});
