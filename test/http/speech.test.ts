/** POST /v1/audio/speech over real HTTP: WAV/PCM/JSON output, determinism, option merging and errors. */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { describe, test } from 'node:test';
import { suiteServer } from '../helpers/suite-server.js';
import {
  badRequest,
  errorOf,
  fixtureModel,
  type HttpResult,
  post,
  reportOf,
  request,
} from '../helpers/voxd.js';
import { readWavHeader } from './wav-helpers.js';

const RATE = 22050;
const SIX_DECIMALS = /^\d+\.\d{6}$/;

/** Fixture tone length for a text: 120 ms plus 40 ms per character. */
const toneSamples = (text: string, rate = RATE) => Math.round((rate * (120 + 40 * [...text].length)) / 1000);

describe('POST /v1/audio/speech', () => {
  const server = suiteServer({
    models: [
      fixtureModel('tts', { task: 'tts', load_options: { sample_rate: RATE } }),
      fixtureModel('tts-def', {
        task: 'tts',
        load_options: { sample_rate: RATE },
        default_request_options: { seed: 7 },
      }),
      fixtureModel('asr', { default_request_options: { alpha: '1', beta: '2' } }),
    ],
  });
  const speech = (body: unknown, query = '') => post(server.url, `/v1/audio/speech${query}`, body);

  test('"stream": false answers a whole PCM16 WAV at the model sample rate with its length and timing headers', async () => {
    const res = await speech({ model: 'tts', input: 'hello', stream: false });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'audio/wav');
    assert.equal(Number(res.headers.get('content-length')), res.body.length);
    const header = readWavHeader(res.body);
    assert.deepEqual(header, {
      format: 1,
      channels: 1,
      sampleRate: RATE,
      byteRate: RATE * 2,
      blockAlign: 2,
      bits: 16,
      dataBytes: toneSamples('hello') * 2,
    });
    assert.ok(
      res.body.subarray(44).some((b) => b !== 0),
      'the tone is not silence',
    );

    const wall = res.headers.get('x-audiocpp-wall-ms') ?? '';
    const duration = res.headers.get('x-audiocpp-audio-duration-ms') ?? '';
    const rtf = res.headers.get('x-audiocpp-rtf') ?? '';
    for (const value of [wall, duration, rtf]) assert.match(value, SIX_DECIMALS);
    const expectedMs = (header.dataBytes / 2 / RATE) * 1000;
    assert.ok(Math.abs(Number(duration) - expectedMs) <= 0.001, `${duration} vs ${expectedMs}`);
    assert.ok(Math.abs(Number(duration) - 320) <= 0.001);
    assert.ok(Math.abs(Number(rtf) - Number(wall) / Number(duration)) <= 0.002, `rtf ${rtf} wall ${wall}`);
  });

  test('the same text and seed give identical bytes; another seed or text gives other audio', async () => {
    const a = await speech({ model: 'tts', input: 'hello', seed: 1 });
    const b = await speech({ model: 'tts', input: 'hello', seed: 1 });
    const otherSeed = await speech({ model: 'tts', input: 'hello', seed: 2 });
    const otherText = await speech({ model: 'tts', input: 'world', seed: 1 });
    for (const res of [a, b, otherSeed, otherText]) assert.equal(res.status, 200);
    assert.ok(a.body.equals(b.body), 'same request, same bytes');
    assert.equal(otherSeed.body.length, a.body.length);
    assert.ok(!otherSeed.body.equals(a.body), 'another seed changes the audio');
    assert.equal(otherText.body.length, a.body.length, 'same length text, same duration');
    assert.ok(!otherText.body.equals(a.body), 'another text changes the audio');
    const longer = await speech({ model: 'tts', input: 'hello there', seed: 1 });
    assert.equal(readWavHeader(longer.body, 'streamed').dataBytes, toneSamples('hello there') * 2);
  });

  test('a seed given top-level (number or string) or in options is the same option', async () => {
    const reference = await speech({ model: 'tts', input: 'seeded', seed: 5 });
    assert.equal(reference.status, 200);
    for (const body of [
      { model: 'tts', input: 'seeded', seed: '5' },
      { model: 'tts', input: 'seeded', options: { seed: 5 } },
      { model: 'tts', input: 'seeded', options: { seed: '5' } },
      // The top-level knob is copied over the options map.
      { model: 'tts', input: 'seeded', seed: 5, options: { seed: '9' } },
    ]) {
      const res = await speech(body);
      assert.equal(res.status, 200);
      assert.ok(res.body.equals(reference.body), JSON.stringify(body));
    }
    const nullSeed = await speech({ model: 'tts', input: 'seeded', seed: null });
    const noSeed = await speech({ model: 'tts', input: 'seeded' });
    assert.ok(nullSeed.body.equals(noSeed.body), 'a null knob counts as absent');
  });

  test('default_request_options are merged under the request options', async () => {
    const explicit7 = await speech({ model: 'tts', input: 'defaults', seed: 7 });
    const explicit3 = await speech({ model: 'tts', input: 'defaults', seed: 3 });
    const fromDefault = await speech({ model: 'tts-def', input: 'defaults' });
    const overridden = await speech({ model: 'tts-def', input: 'defaults', seed: 3 });
    const overriddenInOptions = await speech({ model: 'tts-def', input: 'defaults', options: { seed: '3' } });
    assert.ok(!explicit7.body.equals(explicit3.body), 'seeds 7 and 3 differ');
    assert.ok(fromDefault.body.equals(explicit7.body), 'the default seed 7 applies');
    assert.ok(overridden.body.equals(explicit3.body), 'a top-level seed wins over the default');
    assert.ok(overriddenInOptions.body.equals(explicit3.body), 'an options seed wins over the default');
  });

  test('default_request_options of a non-speech model, seen in the fixture report', async () => {
    const res = await post(server.url, '/v1/tasks/run', {
      model: 'asr',
      request: { text: 'x', options: { beta: 'request', gamma: 3 } },
    });
    assert.deepEqual(reportOf(res).options, { alpha: '1', beta: 'request', gamma: '3' });
  });

  test('response_format json and b64_json give {audio, format, timing} with the whole WAV', async () => {
    const wav = await speech({ model: 'tts', input: 'json', seed: 4, stream: false });
    const streamed = await speech({ model: 'tts', input: 'json', seed: 4 });
    assert.ok(
      streamed.body.subarray(44).equals(wav.body.subarray(44)),
      'a plain request streams the same samples',
    );
    for (const format of ['json', 'b64_json']) {
      const res = await speech({ model: 'tts', input: 'json', seed: 4, response_format: format });
      assert.equal(res.status, 200, format);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(Object.keys(res.json), ['audio', 'format', 'timing']);
      assert.equal(res.json.format, 'wav');
      assert.match(res.json.audio, /^[A-Za-z0-9+/]+={0,2}$/);
      assert.ok(Buffer.from(res.json.audio, 'base64').equals(wav.body), `${format} audio is the WAV`);
      assert.deepEqual(Object.keys(res.json.timing), ['wall_ms', 'audio_duration_ms', 'rtf']);
      const { wall_ms, audio_duration_ms, rtf } = res.json.timing;
      assert.ok(Math.abs(audio_duration_ms - (toneSamples('json') / RATE) * 1000) <= 0.001);
      assert.ok(wall_ms >= 0 && rtf >= 0);
      assert.ok(Math.abs(rtf - wall_ms / audio_duration_ms) <= 0.002);
    }
  });

  test("response_format pcm is OpenAI's 24 kHz mono, the WAV resampled to 24 kHz without its header; at sample_rate it is that rate's WAV data", async () => {
    const wav24 = await speech({
      model: 'tts',
      input: 'raw pcm',
      seed: 4,
      response_format: 'wav',
      sample_rate: 24000,
    });
    const openai = await speech({ model: 'tts', input: 'raw pcm', seed: 4, response_format: 'pcm' });
    assert.equal(openai.status, 200);
    assert.ok(openai.body.equals(wav24.body.subarray(44)), 'pcm is 24 kHz by default');
    const modelRate = readWavHeader(
      (await speech({ model: 'tts', input: 'raw pcm', seed: 4 })).body,
      'streamed',
    ).sampleRate;
    assert.notEqual(modelRate, 24000, 'the fixture speaks at another rate, so the default is seen');
    const wav = await speech({ model: 'tts', input: 'raw pcm', seed: 4, response_format: 'wav' });
    const pcm = await speech({
      model: 'tts',
      input: 'raw pcm',
      seed: 4,
      response_format: 'pcm',
      sample_rate: modelRate,
    });
    assert.equal(pcm.status, 200);
    assert.equal(pcm.headers.get('content-type'), 'application/octet-stream');
    assert.equal(pcm.body.length, wav.body.length - 44);
    assert.ok(pcm.body.equals(wav.body.subarray(44)));
    const whole = await speech({
      model: 'tts',
      input: 'raw pcm',
      seed: 4,
      response_format: 'pcm',
      sample_rate: modelRate,
      stream: false,
    });
    assert.ok(whole.body.equals(pcm.body), 'the whole answer holds the same samples');
    assert.match(whole.headers.get('x-audiocpp-audio-duration-ms') ?? '', SIX_DECIMALS);
  });

  test('a whole answer made in pieces is the same WAV: in one write when it fits the stream buffer, streamed when longer', async () => {
    const whole = await speech({ model: 'tts', input: 'hello', seed: 4, stream: false });
    const pcm = whole.body.subarray(44);
    // 30 repeats of 0.32 s at 22,050 Hz: 423 KB, over the 256 KiB a response holds before waiting.
    for (const repeat of [1, 30]) {
      const res = await speech({
        model: 'tts',
        input: 'hello',
        seed: 4,
        options: { chunks: 4, repeat },
        stream: false,
      });
      assert.equal(res.status, 200, `repeat ${repeat}`);
      assert.equal(res.headers.get('content-type'), 'audio/wav');
      assert.equal(Number(res.headers.get('content-length')), res.body.length, `repeat ${repeat}`);
      assert.equal(readWavHeader(res.body).dataBytes, pcm.length * repeat);
      assert.ok(res.body.subarray(0, 4).equals(Buffer.from('RIFF')));
      for (let i = 0; i < repeat; i++)
        assert.ok(
          res.body.subarray(44 + i * pcm.length, 44 + (i + 1) * pcm.length).equals(pcm),
          `piece ${i}`,
        );
    }
  });

  test('speed and speaking_rate accept positive numbers', async () => {
    for (const body of [{ speed: 1.5 }, { speed: 1 }, { speaking_rate: 0.8 }, { speed: null }]) {
      const res = await speech({ model: 'tts', input: 'fast', ...body });
      assert.equal(res.status, 200, JSON.stringify(body));
    }
  });

  test('a non-positive or non-numeric speed is a 400 naming the field and value', async () => {
    for (const [value, shown] of [
      [-1, '-1'],
      [0, '0'],
      ['fast', '"fast"'],
      [true, 'true'],
    ] as const) {
      badRequest(await speech({ model: 'tts', input: 'x', speed: value }), 'speed', shown);
    }
    badRequest(await speech({ model: 'tts', input: 'x', speaking_rate: -2 }), 'speaking_rate', '-2');
  });

  test('missing, empty or non-string model and input are 400s naming the field', async () => {
    badRequest(await speech({ input: 'x' }), 'model');
    badRequest(await speech({ model: 'tts' }), 'input');
    badRequest(await speech({ model: 'tts', input: '' }), 'input');
    badRequest(await speech({ model: 'tts', input: 42 }), 'input', '42');
    badRequest(await speech({ model: 'tts', input: ['a'] }), 'input', '["a"]');
    badRequest(await speech({ model: 7, input: 'x' }), 'model', '7');
  });

  test('an unknown model is 404 not_found naming it', async () => {
    const message = errorOf(await speech({ model: 'ghost', input: 'x' }), 404, 'not_found');
    assert.ok(message.includes('ghost'), message);
  });

  test('a body that is not a JSON object is a 400 saying what was wrong', async () => {
    const send = (body: string) =>
      request(server.url, 'POST', '/v1/audio/speech', {
        body,
        headers: { 'content-type': 'application/json' },
      });
    badRequest(await send('{"model":"tts",'), 'JSON');
    badRequest(await send('[{"model":"tts","input":"x"}]'), 'array');
    badRequest(await send('"just a string"'), 'string');
    badRequest(await send('null'), 'JSON object', 'null');
    badRequest(await send('12'), 'JSON object', 'number');
    badRequest(await send(''), 'empty');
  });

  test('a model of another task is a 400 naming the model and its task', async () => {
    badRequest(await speech({ model: 'asr', input: 'x' }), 'asr', "task 'asr'", '/v1/audio/speech');
  });

  test('an unsupported response_format is a 400 listing the allowed ones', async () => {
    badRequest(
      await speech({ model: 'tts', input: 'x', response_format: 'ogg' }),
      'response_format',
      '"ogg"',
      'wav',
      'pcm',
      'mp3',
      'opus',
      'aac',
      'flac',
      'json',
      'b64_json',
    );
    badRequest(await speech({ model: 'tts', input: 'x', response_format: 3 }), 'response_format', '3');
  });

  test('busy_timeout_ms must be an integer >= 0, in the body or the query', async () => {
    assert.equal((await speech({ model: 'tts', input: 'x', busy_timeout_ms: 0 })).status, 200);
    assert.equal((await speech({ model: 'tts', input: 'x', busy_timeout_ms: 5000 })).status, 200);
    assert.equal((await speech({ model: 'tts', input: 'x' }, '?busy_timeout_ms=0')).status, 200);
    for (const [value, shown] of [
      [-1, '-1'],
      [1.5, '1.5'],
      ['x', '"x"'],
      [true, 'true'],
    ] as const) {
      badRequest(
        await speech({ model: 'tts', input: 'x', busy_timeout_ms: value }),
        'busy_timeout_ms',
        shown,
      );
    }
    badRequest(await speech({ model: 'tts', input: 'x' }, '?busy_timeout_ms=-1'), 'busy_timeout_ms', '"-1"');
  });

  test('stream on an offline model is a 400 naming stream and the mode it needs', async () => {
    badRequest(await speech({ model: 'tts', input: 'x', stream: true }), 'stream', '"mode": "streaming"');
    badRequest(await speech({ model: 'tts', input: 'x', stream: 'true' }), 'stream', '"mode": "streaming"');
    badRequest(
      await speech({ model: 'tts', input: 'x', stream_format: 'sse' }),
      'stream',
      '"mode": "streaming"',
    );
    badRequest(await speech({ model: 'tts', input: 'x', stream: 'maybe' }), 'stream', '"maybe"');
    assert.equal((await speech({ model: 'tts', input: 'x', stream: false })).status, 200);
  });

  test('bad option values are 400s naming the key', async () => {
    badRequest(await speech({ model: 'tts', input: 'x', options: 5 }), 'options');
    badRequest(await speech({ model: 'tts', input: 'x', options: ['a'] }), 'options');
    badRequest(await speech({ model: 'tts', input: 'x', options: { run_ms: 'soon' } }), 'run_ms', 'soon');
    badRequest(await speech({ model: 'tts', input: 'x', language: 5 }), 'language', '5');
    badRequest(await speech({ model: 'tts', input: 'x', instructions: {} }), 'instructions');
    badRequest(await speech({ model: 'tts', input: 'x', voice: 5 }), 'voice', '5');
  });

  test('engine failures are 500 server_error naming the model, and the model keeps serving', async () => {
    const runFail = await speech({ model: 'tts', input: 'x', options: { run_fail: 'true' } });
    assert.ok(errorOf(runFail, 500, 'server_error').includes("'tts'"));
    const prepareFail = await speech({ model: 'tts', input: 'x', options: { prepare_fail: true } });
    assert.ok(errorOf(prepareFail, 500, 'server_error').includes("'tts'"));
    const taskFail = await post(server.url, '/v1/tasks/run', { model: 'asr', options: { run_fail: 1 } });
    errorOf(taskFail, 500, 'server_error');
    assert.ok(
      server.logs.some((line) => line.includes('run_fail')),
      'an engine failure is logged',
    );

    const ok = await speech({ model: 'tts', input: 'still here' });
    assert.equal(ok.status, 200);
    assert.equal(readWavHeader(ok.body, 'streamed').dataBytes, toneSamples('still here') * 2);
    assert.equal(reportOf(await post(server.url, '/v1/tasks/run', { model: 'asr', text: 'y' })).text, 'y');
  });
});

/** POST with a chunked body (no Content-Length), written in the given pieces. */
function postChunked(base: string, path: string, pieces: string[]): Promise<HttpResult> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
          const json = (res.headers['content-type'] ?? '').includes('json')
            ? JSON.parse(body.toString('utf8'))
            : undefined;
          resolve({ status: res.statusCode ?? 0, headers, body, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    for (const piece of pieces) req.write(piece);
    req.end();
  });
}

describe('max_request_body_bytes on /v1/audio/speech', () => {
  const LIMIT = 200;
  const server = suiteServer({
    max_request_body_bytes: LIMIT,
    models: [fixtureModel('tts', { task: 'tts' })],
  });

  /** A speech body of exactly `size` bytes. */
  function bodyOf(size: number): string {
    const empty = JSON.stringify({ model: 'tts', input: '' });
    return JSON.stringify({ model: 'tts', input: 'a'.repeat(size - empty.length) });
  }

  test('a body at the limit is served', async () => {
    const body = bodyOf(LIMIT);
    assert.equal(Buffer.byteLength(body), LIMIT);
    const res = await request(server.url, 'POST', '/v1/audio/speech', {
      body,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 200);
  });

  test('a declared body over the limit is 413 naming the limit', async () => {
    const res = await request(server.url, 'POST', '/v1/audio/speech', {
      body: bodyOf(LIMIT + 1),
      headers: { 'content-type': 'application/json' },
    });
    const message = errorOf(res, 413, 'invalid_request_error');
    assert.ok(message.includes('max_request_body_bytes') && message.includes(String(LIMIT)), message);
  });

  test('a chunked body that grows over the limit is 413 too, and the server keeps serving', async () => {
    const body = bodyOf(300);
    const res = await postChunked(server.url, '/v1/audio/speech', [body.slice(0, 150), body.slice(150)]);
    const message = errorOf(res, 413, 'invalid_request_error');
    assert.ok(message.includes(String(LIMIT)), message);
    const ok = await postChunked(server.url, '/v1/audio/speech', [bodyOf(LIMIT)]);
    assert.equal(ok.status, 200);
    readWavHeader(ok.body, 'streamed');
  });
});
