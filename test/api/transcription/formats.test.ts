/** OpenAI's transcription and translation response formats and fields, over real HTTP. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { badRequest, fixtureModel, post, reportOf, request } from '../../helpers/voxd.js';
import { sineWav } from '../../http/wav-helpers.js';

const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/models', import.meta.url));

/** Six seconds of tone: the fixture's timings are what its `words` option says, not what it hears. */
const SIX_SECONDS = sineWav(16000, 1, 16, 96000);
/** A pause of 0.8 s after "world", a sentence end after "you?", a pause before "fine". */
const WORDS = 'Hello@0.1-0.5 world@0.6-1.0 how@1.8-2.0 are@2.05-2.2 you?@2.2-2.5 fine@4.6-5.0';
const TEXT = 'Hello world how are you? fine';

/** A multipart upload; an array value is sent as repeated fields, as the OpenAI SDKs send lists. */
function form(
  url: string,
  path: string,
  fields: Record<string, string | string[]>,
  wav: Buffer = SIX_SECONDS,
) {
  const body = new FormData();
  body.set('file', new Blob([wav]), 'a.wav');
  for (const [key, value] of Object.entries(fields))
    for (const one of Array.isArray(value) ? value : [value]) body.append(key, one);
  return request(url, 'POST', path, { body });
}

describe('transcript formats', () => {
  const whisper = (id: string, folder: string) => ({
    id,
    family: 'whisper_asr',
    task: 'asr',
    lazy: true,
    path: join(FIXTURES, folder),
  });
  const s = suiteServer({
    busy_timeout_ms: 0,
    models: [
      fixtureModel('asr'),
      fixtureModel('diar', { task: 'diar', default_request_options: { chunks: 3 } }),
      whisper('whisper', 'fake-whisper'),
      whisper('whisper-en', 'fake-whisper-en'),
      // The VAD that chunking_strategy needs registered (the audio here is within one chunk).
      lazyModel('silero-vad', 'silero_vad', 'vad'),
    ],
  });
  const transcribe = (fields: Record<string, string | string[]>, wav?: Buffer) =>
    form(s.url, '/v1/audio/transcriptions', { model: 'asr', ...fields }, wav);
  const withWords = (fields: Record<string, string | string[]> = {}) =>
    transcribe({ options: JSON.stringify({ words: WORDS }), ...fields });

  test('verbose_json: segments split at pauses and sentence ends, in seconds, in the OpenAI shape', async () => {
    const res = await withWords({ response_format: 'verbose_json', language: 'en', temperature: '0.2' });
    assert.equal(res.status, 200, res.body.toString());
    const segment = (id: number, start: number, end: number, text: string) => ({
      id,
      seek: Math.floor(start * 100),
      start,
      end,
      text,
      tokens: [],
      temperature: 0.2,
      avg_logprob: 0,
      compression_ratio: res.json.segments[id].compression_ratio,
      no_speech_prob: 0,
    });
    // Whisper's name of the language, as OpenAI answers it; usage in whole seconds.
    assert.deepEqual(res.json, {
      task: 'transcribe',
      language: 'english',
      duration: 6,
      text: TEXT,
      segments: [
        segment(0, 0.1, 1, 'Hello world'),
        segment(1, 1.8, 2.5, 'how are you?'),
        segment(2, 4.6, 5, 'fine'),
      ],
      usage: { type: 'duration', seconds: 6 },
    });
    for (const s of res.json.segments) assert.ok(s.compression_ratio > 0, JSON.stringify(s));
  });

  test('json and verbose_json: the language as Whisper names it, the duration, and usage in whole seconds rounded up', async () => {
    // 2.5 s of audio: OpenAI's usage counts 3 s.
    const short = sineWav(16000, 1, 16, 40000);
    const json = await transcribe({ language: 'fr' }, short);
    assert.equal(json.status, 200, json.body.toString());
    assert.deepEqual(Object.keys(json.json), ['text', 'language', 'duration', 'usage', 'timing']);
    assert.deepEqual([json.json.language, json.json.duration], ['french', 2.5]);
    assert.deepEqual(json.json.usage, { type: 'duration', seconds: 3 });
    const verbose = await transcribe({ language: 'pt-BR', response_format: 'verbose_json' }, short);
    assert.deepEqual([verbose.json.language, verbose.json.duration], ['portuguese', 2.5]);
    assert.deepEqual(verbose.json.usage, { type: 'duration', seconds: 3 });
    // No language heard or asked for: json leaves it out, verbose_json says unknown, as before.
    const none = await transcribe({}, short);
    assert.equal('language' in none.json, false);
    assert.equal((await transcribe({ response_format: 'verbose_json' }, short)).json.language, 'unknown');
  });

  test('timestamp_granularities: repeated form fields or a JSON array; word adds words, segment keeps segments', async () => {
    const words = [
      { word: 'Hello', start: 0.1, end: 0.5 },
      { word: 'world', start: 0.6, end: 1 },
      { word: 'how', start: 1.8, end: 2 },
      { word: 'are', start: 2.05, end: 2.2 },
      { word: 'you?', start: 2.2, end: 2.5 },
      { word: 'fine', start: 4.6, end: 5 },
    ];
    const both = await withWords({
      response_format: 'verbose_json',
      'timestamp_granularities[]': ['word', 'segment'],
    });
    assert.equal(both.status, 200, both.body.toString());
    assert.deepEqual(both.json.words, words);
    assert.equal(both.json.segments.length, 3);
    assert.equal(both.json.language, 'unknown');
    const onlyWords = await withWords({
      response_format: 'verbose_json',
      'timestamp_granularities[]': 'word',
    });
    assert.deepEqual(onlyWords.json.words, words);
    assert.equal('segments' in onlyWords.json, false);
    const path = join(s.dir, 'six.wav');
    writeFileSync(path, SIX_SECONDS);
    const json = await post(s.url, '/v1/audio/transcriptions', {
      model: 'asr',
      audio: path,
      response_format: 'verbose_json',
      timestamp_granularities: ['word'],
      options: { words: WORDS },
    });
    assert.equal(json.status, 200, json.body.toString());
    assert.deepEqual(json.json.words, words);
    assert.equal('segments' in json.json, false);
    badRequest(
      await withWords({ response_format: 'verbose_json', 'timestamp_granularities[]': ['word', 'char'] }),
      'timestamp_granularities[]',
      '"char"',
    );
  });

  test('srt and vtt: one cue per segment, exact text and content types', async () => {
    const srt = await withWords({ response_format: 'srt' });
    assert.equal(srt.status, 200, srt.body.toString());
    assert.match(srt.headers.get('content-type') ?? '', /^application\/x-subrip/);
    assert.equal(
      srt.body.toString('utf8'),
      '1\n00:00:00,100 --> 00:00:01,000\nHello world\n\n' +
        '2\n00:00:01,800 --> 00:00:02,500\nhow are you?\n\n' +
        '3\n00:00:04,600 --> 00:00:05,000\nfine\n\n',
    );
    const vtt = await withWords({ response_format: 'vtt' });
    assert.match(vtt.headers.get('content-type') ?? '', /^text\/vtt/);
    assert.equal(
      vtt.body.toString('utf8'),
      'WEBVTT\n\n00:00:00.100 --> 00:00:01.000\nHello world\n\n' +
        '00:00:01.800 --> 00:00:02.500\nhow are you?\n\n' +
        '00:00:04.600 --> 00:00:05.000\nfine\n\n',
    );
  });

  test('an engine without timings: one segment spans the whole audio', async () => {
    const res = await transcribe({ response_format: 'verbose_json' });
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.json.segments.length, 1);
    assert.deepEqual(
      [res.json.segments[0].start, res.json.segments[0].end, res.json.segments[0].text],
      [0, 6, res.json.text],
    );
    const srt = await transcribe({ response_format: 'srt' });
    assert.equal(srt.body.toString('utf8'), `1\n00:00:00,000 --> 00:00:06,000\n${res.json.text}\n\n`);
  });

  test('srt and vtt: a segment longer than a cue may be (84 characters, 7 s) is cut at its words', async () => {
    // 30 words over 10.5 s with no pause or sentence end: one segment, as pocketsphinx gives one.
    const words = Array.from({ length: 30 }, (_, i) => `word${String(i).padStart(2, '0')}`);
    const timed = words
      .map((w, i) => `${w}@${(i * 0.35).toFixed(2)}-${(i * 0.35 + 0.3).toFixed(2)}`)
      .join(' ');
    const verbose = await transcribe({
      options: JSON.stringify({ words: timed }),
      response_format: 'verbose_json',
    });
    assert.equal(verbose.json.segments.length, 1, 'one segment');
    const srt = await transcribe({ options: JSON.stringify({ words: timed }), response_format: 'srt' });
    const cues = srt.body
      .toString('utf8')
      .trim()
      .split('\n\n')
      .map((block) => {
        const [, times, text] = block.split('\n') as [string, string, string];
        const [start, end] = times.split(' --> ').map((t) => {
          const [h, m, rest] = t.split(':') as [string, string, string];
          return Number(h) * 3600 + Number(m) * 60 + Number(rest.replace(',', '.'));
        }) as [number, number];
        return { start, end, text };
      });
    assert.ok(cues.length > 1, `${cues.length} cues`);
    for (const cue of cues) {
      assert.ok(cue.text.length <= 84, `${cue.text.length} characters`);
      assert.ok(cue.end - cue.start <= 7, `${cue.end - cue.start} s`);
    }
    assert.equal(cues.map((c) => c.text).join(' '), words.join(' '), 'every word, once, in order');
    assert.equal(cues[0]!.start, 0);
    assert.ok(Math.abs(cues.at(-1)!.end - (29 * 0.35 + 0.3)) < 0.002);
  });

  test('diarized_json: speaker turns as lettered segments holding their words', async () => {
    const res = await form(s.url, '/v1/audio/transcriptions', {
      model: 'diar',
      response_format: 'diarized_json',
      options: JSON.stringify({ words: WORDS }),
    });
    assert.equal(res.status, 200, res.body.toString());
    const segment = (i: number, start: number, end: number, text: string, speaker: string) => ({
      type: 'transcript.text.segment',
      id: `seg_${i}`,
      start,
      end,
      text,
      speaker,
    });
    assert.deepEqual(res.json, {
      task: 'transcribe',
      duration: 6,
      text: TEXT,
      segments: [
        segment(0, 0, 2, 'Hello world how', 'A'),
        segment(1, 2, 4, 'are you?', 'B'),
        segment(2, 4, 6, 'fine', 'A'),
      ],
      usage: { type: 'duration', seconds: 6 },
    });
    badRequest(
      await transcribe({ response_format: 'diarized_json' }),
      'response_format',
      'diarized_json',
      "'asr'",
    );
  });

  test('stream=true answers only json or text; other formats are a 400 naming stream', async () => {
    for (const format of ['verbose_json', 'srt', 'vtt'])
      badRequest(await transcribe({ response_format: format, stream: 'true' }), 'stream', format);
  });

  test('OpenAI fields are accepted when well-formed and a 400 naming the field otherwise', async () => {
    const ok = await transcribe({
      prompt: 'context',
      temperature: '0.3',
      'include[]': 'logprobs',
      'known_speaker_names[]': ['agent', 'customer'],
      'known_speaker_references[]': ['data:audio/wav;base64,AAAA', 'data:audio/wav;base64,BBBB'],
      chunking_strategy: JSON.stringify({ type: 'server_vad', silence_duration_ms: 500 }),
    });
    // The fixture lists temperature among its params, so it reaches the engine; the prompt is the text.
    const report = reportOf(ok);
    assert.equal(report.options.temperature, '0.3');
    assert.equal(report.text, 'context');
    assert.equal((await transcribe({ chunking_strategy: 'auto' })).status, 200);
    badRequest(await transcribe({ temperature: 'hot' }), 'temperature', '"hot"');
    badRequest(await transcribe({ temperature: '1.5' }), 'temperature', '"1.5"');
    badRequest(await transcribe({ 'include[]': 'everything' }), 'include[]', '"everything"', 'logprobs');
    badRequest(await transcribe({ chunking_strategy: 'manual' }), 'chunking_strategy');
    badRequest(await transcribe({ chunking_strategy: '{"type":"fixed"}' }), 'chunking_strategy');
    badRequest(
      await transcribe({ chunking_strategy: '{"type":"server_vad","threshold":"high"}' }),
      'chunking_strategy.threshold',
    );
    const path = join(s.dir, 'six-b.wav');
    writeFileSync(path, SIX_SECONDS);
    badRequest(
      await post(s.url, '/v1/audio/transcriptions', { model: 'asr', audio: path, known_speaker_names: 5 }),
      'known_speaker_names',
      '5',
    );
    badRequest(
      await post(s.url, '/v1/audio/transcriptions', { model: 'asr', audio: path, prompt: 7 }),
      'prompt',
    );
  });

  describe('POST /v1/audio/translations', () => {
    const loud = encodeWav({
      samples: Float32Array.from({ length: 16000 }, (_, i) => 0.3 * Math.sin(i / 7)),
      sampleRate: 16000,
      channels: 1,
    });
    const translate = (fields: Record<string, string>) => form(s.url, '/v1/audio/translations', fields, loud);

    test('a Whisper model translates into English, in json, text and verbose_json', async () => {
      const json = await translate({ model: 'whisper' });
      assert.equal(json.status, 200, json.body.toString());
      assert.equal(json.json.text, 'hello world');
      const text = await translate({ model: 'whisper', response_format: 'text' });
      assert.equal(text.body.toString('utf8'), 'hello world');
      const verbose = await translate({ model: 'whisper', response_format: 'verbose_json' });
      assert.equal(verbose.json.task, 'translate');
      assert.equal(verbose.json.duration, 1);
      assert.deepEqual(
        verbose.json.segments.map((seg: { start: number; end: number; text: string }) => [
          seg.start,
          seg.end,
          seg.text,
        ]),
        [[0, 1, 'hello world']],
      );
      // The same model transcribes on the transcription route (the request's task only).
      const heard = await form(s.url, '/v1/audio/transcriptions', { model: 'whisper' }, loud);
      assert.equal(heard.json.text, 'hallo welt');
    });

    test('a model that cannot translate, a streamed or diarized request, are 400s naming them', async () => {
      badRequest(await translate({ model: 'asr' }), "'asr'", 'cannot translate', 'whisper_asr');
      badRequest(await translate({ model: 'whisper-en' }), 'translate', 'English-only');
      badRequest(await translate({ model: 'whisper', stream: 'true' }), 'stream');
      badRequest(await translate({ model: 'whisper', response_format: 'diarized_json' }), 'response_format');
    });
  });
});
