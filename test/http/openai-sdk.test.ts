/**
 * The official `openai` npm SDK, unmodified, drives a real voxd over loopback: the model list,
 * speech (wav, pcm, streamed as SSE and as raw audio), transcriptions (json, text, streamed) and the
 * SDK's error classes, which read voxd's `{"error":{"message","type","param","code"}}` bodies.
 * Engines: flite speaks, pocketsphinx listens (both embedded); a fixture model forces a 503.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIError, BadRequestError, NotFoundError, toFile } from 'openai';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { DEFAULT_ALIAS_IDS } from '../helpers/models.js';
import { type SseEvent, sseEvents } from '../helpers/sse.js';
import { fixtureModel, post, startServer, type TestServer, waitUntil } from '../helpers/voxd.js';

const SPOKEN = 'Please bring the blue umbrella when you leave the house.';
const HEARD = ['bring', 'blue', 'umbrella', 'leave', 'house'];
/**
 * For the voices test: pocketsphinx hears SPOKEN in flite's nova voice as "please bring the ball
 * your umbrella nearly the hounds" on a fresh decoder (it passed before issue 23 only because the
 * earlier requests' feature mean carried over), and this sentence whole in every voice.
 */
const SPOKEN_BY_VOICES = 'Please call me tomorrow morning. The weather is nice today.';
const HEARD_BY_VOICES = ['call', 'tomorrow', 'morning', 'weather', 'today'];

/** How many of the words in `heard` (HEARD by default) the transcript holds. */
const wordsHeard = (text: string, heard = HEARD) => {
  const words = text.toLowerCase().split(/\W+/);
  return heard.filter((w) => words.includes(w)).length;
};

describe('the official openai SDK against voxd', () => {
  let s: TestServer;
  let client: OpenAI;
  /** flite's WAV of SPOKEN, made once through the SDK. */
  let spokenWav: Buffer;
  /** The same at 24 kHz, the rate of OpenAI's `pcm`. */
  let spokenWav24: Buffer;
  /** flite's kal16 voice speaking `input` through the SDK, in the format `as` asks for. */
  const speak = (input: string, as: Omit<OpenAI.Audio.SpeechCreateParams, 'model' | 'voice' | 'input'>) =>
    client.audio.speech.create({ model: 'flite', voice: 'kal16', input, ...as });

  before(async () => {
    s = await startServer(
      {
        // A request that waits 100 ms for a slot gets 503: only the held fixture model waits.
        busy_timeout_ms: 100,
        models: [
          { id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming' },
          { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming' },
          fixtureModel('held', { task: 'tts' }),
          // An ASR model whose words come with known times (pocketsphinx gives no word times).
          fixtureModel('timed', {
            default_request_options: {
              words: 'please@0.3-0.7 bring@0.7-0.95 the@0.95-1.05 blue@1.05-1.35 umbrella@1.35-1.8',
            },
          }),
        ],
      },
      { parallel: true },
    );
    // No retries: a 503 must reach the test as it was answered, not be tried again.
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'test', maxRetries: 0 });
    const res = await speak(SPOKEN, { response_format: 'wav' });
    spokenWav = Buffer.from(await res.arrayBuffer());
    // sample_rate is voxd's, not in the SDK's type: the SDK sends what it is given.
    const res24 = await speak(SPOKEN, { response_format: 'wav', sample_rate: 24000 } as never);
    spokenWav24 = Buffer.from(await res24.arrayBuffer());
    assert.equal(decodeWav(spokenWav24).sampleRate, 24000);
  });
  after(() => s?.close());

  test('models.list() lists every configured model, then the default aliases of flite and pocketsphinx', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['flite', 'pocketsphinx', 'held', 'timed', ...DEFAULT_ALIAS_IDS]);
  });

  test("models.retrieve('flite'): OpenAI's model object with voxd's fields; an alias names its model", async () => {
    const model = await client.models.retrieve('flite');
    assert.equal(model.id, 'flite');
    assert.equal(model.object, 'model');
    assert.ok(Number.isInteger(model.created) && model.created > 1_700_000_000, String(model.created));
    assert.equal(model.owned_by, 'engine');
    const extra = model as unknown as Record<string, unknown>;
    assert.deepEqual([extra['family'], extra['task'], extra['mode']], ['flite_tts', 'tts', 'streaming']);
    assert.deepEqual(extra['aliases'], ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']);
    const alias = (await client.models.retrieve('whisper-1')) as unknown as Record<string, unknown>;
    assert.deepEqual(
      [alias['id'], alias['object'], alias['alias_of'], alias['family'], alias['task']],
      ['whisper-1', 'model', 'pocketsphinx', 'pocketsphinx_asr', 'asr'],
    );
  });

  test('models.retrieve of an unknown id is the SDK NotFoundError naming the id', async () => {
    const err = await client.models.retrieve('no-such-model').then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof NotFoundError, String(err));
    assert.deepEqual([err.status, err.type, err.code], [404, 'not_found', 'model_not_found']);
    assert.match(err.message, /unknown model id: "no-such-model"/);
  });

  test("OpenAI's model names work unconfigured: whisper-1 transcribes with pocketsphinx, tts-1 speaks with flite", async () => {
    const heard = await client.audio.transcriptions.create({
      model: 'whisper-1',
      file: await toFile(spokenWav, 'speech.wav'),
    });
    assert.ok(wordsHeard(heard.text) >= 3, `heard "${heard.text}"`);
    for (const model of ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']) {
      const res = await client.audio.speech.create({
        model,
        voice: 'alloy',
        input: SPOKEN,
        response_format: 'wav',
      });
      const wav = Buffer.from(await res.arrayBuffer());
      const flite = await client.audio.speech.create({
        model: 'flite',
        voice: 'alloy',
        input: SPOKEN,
        response_format: 'wav',
      });
      assert.ok(wav.equals(Buffer.from(await flite.arrayBuffer())), `${model} speaks as flite does`);
    }
  });

  test('audio.speech.create wav: a WAV that decodes to speech', async () => {
    const res = await speak('Hello', { response_format: 'wav' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'audio/wav');
    const wav = decodeWav(Buffer.from(await res.arrayBuffer()));
    assert.equal(wav.sampleRate, 16000);
    assert.ok(floats(wav).length > 1600, `${floats(wav).length} samples`);
    assert.ok(
      floats(wav).some((x) => Math.abs(x) > 0.05),
      'not silence',
    );
  });

  test("audio.speech.create pcm: OpenAI's 24 kHz mono, the 24 kHz WAV's data", async () => {
    const wav = decodeWav(spokenWav24);
    const res = await speak(SPOKEN, { response_format: 'pcm' });
    const pcm = Buffer.from(await res.arrayBuffer());
    assert.equal(pcm.length, floats(wav).length * wav.channels * 2);
    assert.ok(pcm.equals(spokenWav24.subarray(spokenWav24.length - pcm.length)), 'the same PCM16 as the WAV');
  });

  test('audio.speech.create stream_format sse: base64 PCM16 deltas at 24 kHz that add up to the speech', async () => {
    const res = await speak(SPOKEN, { stream_format: 'sse' });
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = sseEvents(Buffer.from(await res.arrayBuffer()));
    assert.equal(events.at(-1), '[DONE]');
    const typed = events.filter((e): e is Exclude<SseEvent, '[DONE]'> => e !== '[DONE]');
    assert.equal(typed.at(-1)?.type, 'speech.audio.done');
    // OpenAI's usage (the input's characters: voxd's engines have no tokens), then voxd's timing.
    const done = typed.at(-1) as { usage?: unknown; timing?: unknown };
    assert.deepEqual(done.usage, {
      input_tokens: SPOKEN.length,
      output_tokens: 0,
      total_tokens: SPOKEN.length,
    });
    assert.ok(done.timing, 'timing stays');
    const deltas = typed.filter((e) => e.type === 'speech.audio.delta') as unknown as { audio: string }[];
    assert.ok(deltas.length >= 1);
    const pcm = Buffer.concat(deltas.map((d) => Buffer.from(d.audio, 'base64')));
    assert.ok(pcm.equals(spokenWav24.subarray(spokenWav24.length - pcm.length)), 'the same PCM16 as the WAV');
    assert.equal(pcm.length, floats(decodeWav(spokenWav24)).length * 2);
  });

  test('audio.speech.create stream_format audio: the raw PCM16 of the speech at 24 kHz', async () => {
    const res = await speak(SPOKEN, { stream_format: 'audio' });
    const pcm = Buffer.from(await res.arrayBuffer());
    assert.equal(pcm.length, floats(decodeWav(spokenWav24)).length * 2);
    assert.ok(pcm.equals(spokenWav24.subarray(spokenWav24.length - pcm.length)));
  });

  test('audio.transcriptions.create json and text: pocketsphinx hears flite', async () => {
    const json = await client.audio.transcriptions.create({
      model: 'pocketsphinx',
      file: await toFile(spokenWav, 'a.wav'),
      response_format: 'json',
    });
    assert.equal(typeof json.text, 'string');
    assert.ok(wordsHeard(json.text) >= 3, `heard "${json.text}"`);
    // The SDK's Transcription type: usage in whole seconds of input, rounded up.
    const wav = decodeWav(spokenWav);
    assert.deepEqual(json.usage, {
      type: 'duration',
      seconds: Math.ceil(floats(wav).length / wav.sampleRate),
    });
    const verbose = await client.audio.transcriptions.create({
      model: 'whisper-1',
      file: await toFile(spokenWav, 'a.wav'),
      response_format: 'verbose_json',
    });
    assert.equal(verbose.language, 'english');
    assert.deepEqual(verbose.usage, json.usage);
    const text = await client.audio.transcriptions.create({
      model: 'pocketsphinx',
      file: await toFile(spokenWav, 'a.wav'),
      response_format: 'text',
    });
    assert.equal(typeof text, 'string');
    assert.equal(text, json.text);
  });

  test('audio.transcriptions.create stream: the SDK reads the deltas and the done event', async () => {
    const stream = await client.audio.transcriptions.create({
      model: 'pocketsphinx',
      file: await toFile(spokenWav, 'a.wav'),
      stream: true,
    });
    const events: OpenAI.Audio.TranscriptionStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const done = events.at(-1);
    assert.ok(done?.type === 'transcript.text.done', JSON.stringify(events));
    // The SDK types this usage as tokens (gpt-4o-transcribe's); voxd, billing by audio, gives its duration.
    const usage = done.usage as unknown as { type: string; seconds: number };
    assert.equal(usage.type, 'duration');
    assert.ok(Number.isInteger(usage.seconds) && usage.seconds >= 3, JSON.stringify(usage));
    const deltas = events.filter((e) => e.type === 'transcript.text.delta');
    assert.ok(deltas.length >= 1);
    assert.ok(wordsHeard(done.text) >= 3, `heard "${done.text}"`);
  });

  test('an unknown model is the SDK NotFoundError, with param model and code model_not_found', async () => {
    const err = await client.audio.speech.create({ model: 'nope', voice: 'kal16', input: 'Hello' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof NotFoundError, String(err));
    assert.equal(err.status, 404);
    assert.deepEqual([err.type, err.param, err.code], ['not_found', 'model', 'model_not_found']);
    assert.match(err.message, /unknown model id: "nope"/);
  });

  test('an invalid field is the SDK BadRequestError, with the field as param', async () => {
    const err = await client.audio.speech
      .create({ model: 'flite', voice: 'kal16', input: 'Hello', speed: 10 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err instanceof BadRequestError, String(err));
    assert.equal(err.status, 400);
    assert.deepEqual([err.type, err.param, err.code], ['invalid_request_error', 'speed', 'invalid_request']);
    const upload = await client.audio.transcriptions
      .create({ model: 'pocketsphinx', file: await toFile(Buffer.from('not audio'), 'a.txt') })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(upload instanceof BadRequestError, String(upload));
    assert.deepEqual([upload.param, upload.code], ['file', 'invalid_request']);
  });

  test('a busy model is an SDK APIError with status 503 and code server_busy, not retried', async () => {
    const gate = s.gate('hold');
    const runs = () => s.fixture.record.of('held', 'run-start').length;
    const before = runs();
    const holder = post(s.url, '/v1/audio/speech', {
      model: 'held',
      input: 'x',
      options: { run_gate: gate.path },
    });
    await waitUntil('the holder runs', () => runs() === before + 1);
    const err = await client.audio.speech.create({ model: 'held', voice: 'kal16', input: 'x' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof APIError, String(err));
    assert.equal(err.status, 503);
    assert.deepEqual([err.type, err.param, err.code], ['server_busy', null, 'server_busy']);
    assert.match(err.message, /model 'held' is busy/);
    await gate.open();
    assert.equal((await holder).status, 200);
    assert.equal(runs(), before + 1, 'the SDK did not retry');
  });

  test('audio.speech.create with OpenAI voice names (alloy, nova) in mp3: pocketsphinx hears it again', async () => {
    for (const voice of ['alloy', 'nova'] as const) {
      const res = await client.audio.speech.create({
        model: 'flite',
        voice,
        input: SPOKEN_BY_VOICES,
        response_format: 'mp3',
      });
      assert.equal(res.headers.get('content-type'), 'audio/mpeg');
      const mp3 = Buffer.from(await res.arrayBuffer());
      assert.ok(mp3.subarray(0, 3).toString('latin1') === 'ID3' || mp3[0] === 0xff, 'an mp3');
      const heard = await client.audio.transcriptions.create({
        model: 'pocketsphinx',
        file: await toFile(mp3, 'speech.mp3'),
      });
      assert.ok(wordsHeard(heard.text, HEARD_BY_VOICES) >= 3, `${voice}: heard "${heard.text}"`);
    }
  });

  test('audio.speech.create opus, aac and flac: Ogg, ADTS and FLAC bytes with their types', async () => {
    const expected = {
      opus: ['audio/ogg', 'OggS'],
      aac: ['audio/aac', '\xff'],
      flac: ['audio/flac', 'fLaC'],
    };
    for (const [format, [type, magic]] of Object.entries(expected)) {
      const res = await client.audio.speech.create({
        model: 'flite',
        voice: 'alloy',
        input: 'Hello',
        response_format: format as 'opus' | 'aac' | 'flac',
      });
      assert.equal(res.headers.get('content-type'), type);
      const bytes = Buffer.from(await res.arrayBuffer());
      if (magic === '\xff') assert.equal(bytes[0], 0xff, format);
      else assert.equal(bytes.subarray(0, 4).toString('latin1'), magic, format);
    }
  });

  test('audio.transcriptions.create verbose_json with word timestamps, and srt', async () => {
    const verbose = await client.audio.transcriptions.create({
      model: 'timed',
      file: await toFile(spokenWav, 'speech.wav'),
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'],
    });
    assert.equal((verbose as unknown as { task: string }).task, 'transcribe');
    assert.ok(verbose.duration > 2, `duration ${verbose.duration}`);
    assert.equal(verbose.text, 'please bring the blue umbrella');
    assert.deepEqual(
      verbose.words?.map((w) => [w.word, w.start, w.end]),
      [
        ['please', 0.3, 0.7],
        ['bring', 0.7, 0.95],
        ['the', 0.95, 1.05],
        ['blue', 1.05, 1.35],
        ['umbrella', 1.35, 1.8],
      ],
    );
    for (const word of verbose.words ?? [])
      assert.ok(word.end >= word.start && word.start >= 0, JSON.stringify(word));
    assert.ok((verbose.segments?.length ?? 0) >= 1, 'segments');
    const srt = await client.audio.transcriptions.create({
      model: 'pocketsphinx',
      file: await toFile(spokenWav, 'speech.wav'),
      response_format: 'srt',
    });
    assert.match(String(srt), /^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n/);
  });
});
