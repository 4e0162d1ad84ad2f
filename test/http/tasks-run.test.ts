/** POST /v1/tasks/run over real HTTP: request forms, input audio, pass-through knobs and audio results. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { INLINE_LIMIT } from '../../src/audio/audio-pool.js';
import {
  badRequest,
  errorOf,
  fixtureModel,
  post,
  reportOf,
  startServer,
  type TestServer,
} from '../helpers/voxd.js';
import { buildWav, readWavHeader, sineWav, smallWav } from './wav-helpers.js';

const PATH = '/v1/tasks/run';

describe('POST /v1/tasks/run', () => {
  let server: TestServer;
  const run = (body: unknown, query = '') => post(server.url, `${PATH}${query}`, body);

  before(async () => {
    server = await startServer({
      models: [
        fixtureModel('asr'),
        fixtureModel('tts', { task: 'tts', load_options: { sample_rate: 24000 } }),
        fixtureModel('vad', { task: 'vad', lazy: true, default_request_options: { threshold: 0.5 } }),
      ],
    });
  });
  after(() => server?.close());

  test('{model, request:{text, language, options}} reaches the model', async () => {
    const res = await run({ model: 'asr', request: { text: 'hello', language: 'en', options: { beam: 4 } } });
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.json), ['text', 'language', 'timing']);
    assert.equal(res.json.language, 'en');
    assert.deepEqual(Object.keys(res.json.timing), ['wall_ms'], 'no audio output, so only wall_ms');
    const report = reportOf(res);
    assert.equal(report.task, 'asr');
    assert.equal(report.text, 'hello');
    assert.equal(report.language, 'en');
    assert.equal(report.options.beam, '4');
    assert.equal(report.audio, undefined);
  });

  test('positions without an audio output come with the sample_rate they count in', async () => {
    const silence = buildWav({ sampleRate: 8000, channels: 1, bits: 16, frames: 8000, sample: () => 0 });
    const audio_base64 = silence.toString('base64');
    const res = await run({ model: 'asr', request: { audio_base64, options: { words: 'hi@0.25-0.5' } } });
    assert.equal(res.status, 200, res.body.toString());
    assert.deepEqual(Object.keys(res.json), ['text', 'words', 'sample_rate', 'timing']);
    const [word] = res.json.words;
    assert.equal(word.start_sample / res.json.sample_rate, 0.25);
    assert.equal(word.end_sample / res.json.sample_rate, 0.5);
  });

  test('without `request` the top-level body is the request', async () => {
    const report = reportOf(await run({ model: 'asr', text: 'top', language: 'de', options: { k: 'v' } }));
    assert.equal(report.text, 'top');
    assert.equal(report.language, 'de');
    assert.equal(report.options.k, 'v');
    assert.ok(!('model' in report.options), 'the model id is not an option');
  });

  test('the model task is used whatever the request says', async () => {
    const report = reportOf(await run({ model: 'vad', request: { task: 'tts', text: 'x' } }));
    assert.equal(report.task, 'vad');
    assert.equal(report.options.threshold, '0.5', 'default_request_options apply');
  });

  test('audio_base64 WAV (plain or data: URI) is decoded and converted for the model', async () => {
    const data = sineWav(48000, 2, 16, 4800, 300);
    const b64 = data.toString('base64');
    // Plain, as a data: URI, in MIME lines of 76 characters, and without its padding.
    const variants = [
      b64,
      `data:audio/wav;base64,${b64}`,
      b64.replace(/.{76}/g, '$&\r\n'),
      b64.replace(/=+$/, ''),
    ];
    assert.ok(b64.endsWith('='), 'the unpadded variant differs from the plain one');
    for (const encoded of variants) {
      const report = reportOf(await run({ model: 'asr', request: { audio_base64: encoded } }));
      assert.deepEqual(
        [report.audio.samples, report.audio.sample_rate, report.audio.channels],
        [1600, 16000, 1],
      );
      assert.ok(Math.abs(report.audio.rms - 0.5 / Math.SQRT2) < 0.01, `rms ${report.audio.rms}`);
    }
  });

  test('audio as a server path, relative to the config folder', async () => {
    writeFileSync(join(server.dir, 'in.wav'), smallWav(320));
    const relative = reportOf(await run({ model: 'asr', request: { audio: 'in.wav' } }));
    assert.equal(relative.audio.samples, 320);
    const absolute = reportOf(await run({ model: 'asr', audio: join(server.dir, 'in.wav') }));
    assert.equal(absolute.audio.samples, 320);
    const missing = errorOf(await run({ model: 'asr', request: { audio: 'missing.wav' } }), 403, 'forbidden');
    assert.ok(
      missing.startsWith('audio: a server-local file must be') && !missing.includes('missing'),
      missing,
    );
  });

  test('audio and audio_base64 together are a 400', async () => {
    writeFileSync(join(server.dir, 'both.wav'), smallWav());
    badRequest(
      await run({
        model: 'asr',
        request: { audio: 'both.wav', audio_base64: smallWav().toString('base64') },
      }),
      'provide only one of audio or audio_base64',
    );
  });

  test('bad audio_base64 values are 400s naming the field', async () => {
    badRequest(
      await run({ model: 'asr', request: { audio_base64: '!!not base64!!' } }),
      'audio_base64',
      'base64',
    );
    // One stray character inside a real WAV's base64 (Node's decoder alone would skip it).
    const wav = smallWav().toString('base64');
    badRequest(
      await run({ model: 'asr', request: { audio_base64: `${wav.slice(0, 40)}$${wav.slice(40)}` } }),
      'audio_base64: not valid base64',
    );
    badRequest(await run({ model: 'asr', request: { audio_base64: '' } }), 'audio_base64');
    badRequest(await run({ model: 'asr', request: { audio_base64: 12 } }), 'audio_base64', '12');
    badRequest(
      await run({ model: 'asr', request: { audio_base64: 'data:audio/wav;base64,' } }),
      'audio_base64',
    );
    const notWav = Buffer.from('this is plain text, not audio').toString('base64');
    badRequest(
      await run({ model: 'asr', request: { audio_base64: notWav } }),
      'audio_base64',
      'could not be decoded',
    );
  });

  test('a large audio_base64, taken from the body as bytes, gives what the same audio gives parsed as a string; its errors too', async () => {
    const wav = sineWav(16000, 1, 16, 3 * 16000);
    const b64 = wav.toString('base64');
    assert.ok(b64.length > 64 * 1024, 'large enough to be lifted');
    // "\/" escapes keep a body from being lifted: the same audio, parsed as a string.
    const escaped = (body: unknown) => JSON.stringify(body).replace(/\//g, '\\/');
    const send = (json: string) =>
      fetch(`${server.url}${PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: json,
      });
    for (const body of [
      { model: 'asr', audio_base64: b64 },
      { model: 'asr', request: { audio_base64: `data:audio/wav;base64,${b64}` } },
    ]) {
      const lifted = await run(body);
      const parsed = await send(escaped(body));
      assert.equal(parsed.status, 200);
      assert.deepEqual(reportOf(lifted), JSON.parse(((await parsed.json()) as { text: string }).text));
      assert.equal(reportOf(lifted).audio.samples, 3 * 16000);
    }
    const stray = `${b64.slice(0, 40)}$${b64.slice(40)}`;
    badRequest(await run({ model: 'asr', audio_base64: stray }), 'audio_base64: not valid base64');
    // Past INLINE_LIMIT the characters are decoded on the audio thread: the refusal still names its field.
    const long = sineWav(16000, 1, 16, 40 * 16000).toString('base64');
    assert.ok(long.length > INLINE_LIMIT);
    const refused = await run({ model: 'asr', audio_base64: `${long.slice(0, 40)}$${long.slice(40)}` });
    badRequest(refused, 'audio_base64: not valid base64');
    assert.equal(refused.json.error.param, 'audio_base64');
    const parsed = await send(escaped({ model: 'asr', audio_base64: stray }));
    assert.equal(parsed.status, 400);
    const error = ((await parsed.json()) as { error: { message: string; param: string } }).error;
    assert.match(error.message, /audio_base64: not valid base64/);
    assert.equal(error.param, 'audio_base64');
  });

  test('a tts model returns a base64 WAV with sample_rate, channels and audio timing', async () => {
    const res = await run({ model: 'tts', request: { text: 'speak', seed: 3 } });
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.json), ['audio', 'sample_rate', 'channels', 'timing']);
    assert.equal(res.json.sample_rate, 24000);
    assert.equal(res.json.channels, 1);
    const wav = Buffer.from(res.json.audio, 'base64');
    const header = readWavHeader(wav);
    assert.equal(header.sampleRate, 24000);
    assert.equal(header.channels, 1);
    assert.equal(header.bits, 16);
    const samples = Math.round((24000 * (120 + 40 * 5)) / 1000);
    assert.equal(header.dataBytes, samples * 2);
    assert.deepEqual(Object.keys(res.json.timing), ['wall_ms', 'audio_duration_ms', 'rtf']);
    assert.ok(Math.abs(res.json.timing.audio_duration_ms - (samples / 24000) * 1000) <= 0.001);
    assert.ok(
      Math.abs(res.json.timing.rtf - res.json.timing.wall_ms / res.json.timing.audio_duration_ms) <= 0.002,
    );

    // The whole answer: a plain one is streamed, its header declaring no sizes.
    const speech = await post(server.url, '/v1/audio/speech', {
      model: 'tts',
      input: 'speak',
      seed: 3,
      stream: false,
    });
    assert.equal(speech.status, 200);
    assert.ok(wav.equals(speech.body), 'the same WAV as /v1/audio/speech for the same text and seed');
  });

  test('pass-through knobs become string options, with the documented renames', async () => {
    const report = reportOf(
      await run({
        model: 'asr',
        request: {
          text: 'knobs',
          seed: 42,
          temperature: 0.5,
          top_k: 40,
          do_sample: true,
          return_timestamps: false,
          repaint_start: 1.25,
          repaint_end: 3,
          task_route: 'transcribe',
          speaker: 'S1',
          unknown_field: 'ignored',
        },
      }),
    );
    assert.deepEqual(report.options, {
      seed: '42',
      temperature: '0.5',
      top_k: '40',
      do_sample: 'true',
      return_timestamps: 'false',
      speaker: 'S1',
      repainting_start: '1.25',
      repainting_end: '3',
      route: 'transcribe',
    });
  });

  test('route works as well as task_route; knobs win over the same key in options', async () => {
    const report = reportOf(
      await run({ model: 'asr', request: { route: 'r2', seed: 1, options: { seed: '9', keep: 'yes' } } }),
    );
    assert.equal(report.options.route, 'r2');
    assert.equal(report.options.seed, '1');
    assert.equal(report.options.keep, 'yes');
  });

  test('path options resolve against the config folder, confined to the file roots', async () => {
    writeFileSync(join(server.dir, 'src.wav'), smallWav());
    const report = reportOf(
      await run({
        model: 'asr',
        request: { source_audio: 'src.wav', style_ref: join(server.dir, 'src.wav') },
      }),
    );
    assert.equal(report.options.source_audio, join(server.dir, 'src.wav'));
    assert.equal(report.options.style_ref, join(server.dir, 'src.wav'));
    const outside = errorOf(
      await run({ model: 'asr', request: { style_ref: '/etc/hostname' } }),
      403,
      'forbidden',
    );
    assert.ok(outside.startsWith('style_ref: a server-local file must be'), outside);
  });

  test('a request that is not an object is a 400 naming it', async () => {
    for (const [value, shown] of [
      ['text', '"text"'],
      [[1, 2], '[1,2]'],
      [5, '5'],
    ] as const) {
      badRequest(await run({ model: 'asr', request: value }), 'request', shown);
    }
  });

  test('model errors: missing 400, unknown 404', async () => {
    badRequest(await run({ request: { text: 'x' } }), 'model');
    const message = errorOf(await run({ model: 'ghost', request: {} }), 404, 'not_found');
    assert.ok(message.includes('ghost'), message);
  });

  test('field type errors are 400s naming the field', async () => {
    badRequest(await run({ model: 'asr', request: { text: 5 } }), 'text', '5');
    badRequest(await run({ model: 'asr', request: { language: ['en'] } }), 'language');
    badRequest(await run({ model: 'asr', request: { options: 'beam=4' } }), 'options');
    badRequest(await run({ model: 'asr', request: { voice_ref: 7 } }), 'voice_ref', '7');
  });

  test('busy_timeout_ms top-level, in the request or the query: 0 accepted, invalid 400', async () => {
    assert.equal((await run({ model: 'asr', busy_timeout_ms: 0, request: {} })).status, 200);
    assert.equal((await run({ model: 'asr', request: { busy_timeout_ms: 0 } })).status, 200);
    assert.equal((await run({ model: 'asr', request: {} }, '?busy_timeout_ms=0')).status, 200);
    badRequest(await run({ model: 'asr', busy_timeout_ms: -1, request: {} }), 'busy_timeout_ms', '-1');
    badRequest(
      await run({ model: 'asr', request: { busy_timeout_ms: 'soon' } }),
      'busy_timeout_ms',
      '"soon"',
    );
  });

  test('an engine failure is a 500 and the model keeps serving', async () => {
    errorOf(
      await run({ model: 'tts', request: { text: 'x', options: { run_fail: true } } }),
      500,
      'server_error',
    );
    const ok = await run({ model: 'tts', request: { text: 'x' } });
    assert.equal(ok.status, 200);
    readWavHeader(Buffer.from(ok.json.audio, 'base64'));
  });
});
