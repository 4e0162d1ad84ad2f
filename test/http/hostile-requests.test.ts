/**
 * Requests built to crash, stall or exhaust the server, over real HTTP on loopback: numbers beyond
 * a double, JSON nested thousands deep, megabyte values echoed in errors, speech text over
 * max_input_chars, and bodies that stop half-way (body_timeout_ms). Each bad request gets its
 * error, and a normal request is served after it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_JSON_DEPTH } from '../../src/util/json-text.js';
import { FLITE } from '../helpers/models.js';
import { RawClient } from '../helpers/raw-http.js';
import { sseEvents, typeOf } from '../helpers/sse.js';
import { suiteServer } from '../helpers/suite-server.js';
import {
  badRequest,
  errorOf,
  fixtureModel,
  type HttpResult,
  post,
  request,
  type TestServer,
  transcribe,
} from '../helpers/voxd.js';
import { smallWav } from './wav-helpers.js';

/** POST raw JSON text (what JSON.stringify cannot write: 1e400, deep nesting built as text). */
function postText(s: TestServer, path: string, text: string): Promise<HttpResult> {
  return request(s.url, 'POST', path, { body: text, headers: { 'content-type': 'application/json' } });
}

/** An array nested `depth` deep, as JSON text: `[[[]]]` is 3. */
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

const FIVE_MB = 'a'.repeat(5 * 1024 * 1024);
/** The longest string a JSON text field may be (util/json-reader.ts MAX_TEXT_BYTES). */
const ONE_MIB = 'a'.repeat(1024 * 1024);

/** One chunk of a chunked body. */
const chunk = (bytes: Buffer) =>
  Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);

/** Opens a live route on its own connection: the head and a first chunk of silence. */
async function openLive(s: TestServer, path: string): Promise<RawClient> {
  const client = new RawClient(s.url);
  await client.write(
    `POST ${path} HTTP/1.1\r\nHost: voxd\r\nTransfer-Encoding: chunked\r\n\r\n`,
    chunk(Buffer.alloc(1600)),
  );
  return client;
}

describe('hostile request bodies and values', () => {
  const s = suiteServer({
    ui_management: true,
    models: [
      fixtureModel('asr'),
      fixtureModel('tts', { task: 'tts' }),
      fixtureModel('tts-stream', { task: 'tts', mode: 'streaming' }),
      FLITE,
    ],
  });

  /** The server still answers a plain request, and logged no fault. */
  async function served(): Promise<void> {
    const res = await post(s.url, '/v1/audio/speech', { model: 'tts', input: 'hi' });
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.headers.get('content-type'), 'audio/wav');
    const faults = s.logs.filter((line) => / failed: |unhandled error/.test(line));
    assert.deepEqual(faults, [], 'no request was a fault inside voxd');
  }

  test('a number beyond a double is a 400 naming its field, on every JSON route', async () => {
    const cases: [string, string, string][] = [
      ['/v1/audio/speech', '{"model":"tts","input":"hi","seed":1e400}', 'seed'],
      ['/v1/audio/speech', '{"model":"tts","input":"hi","options":{"x":1e400}}', 'options.x'],
      ['/v1/tasks/run', '{"model":"asr","request":{"text":"x","top_k":-1e400}}', 'request.top_k'],
      ['/v1/tasks/stream', '{"model":"tts-stream","text":"x","temperature":1e999}', 'temperature'],
      [
        '/v1/tasks/batch',
        '{"model":"asr","requests":[{"text":"a"},{"text":"b","options":{"y":[1,2e400]}}]}',
        'requests[1].options.y[1]',
      ],
      ['/v1/models/load', '{"id":"x","family":"fixture","load_options":{"a":1e400}}', 'load_options.a'],
      ['/v1/tasks/run', '{"model":"asr","busy_timeout_ms":1e400}', 'busy_timeout_ms'],
    ];
    for (const [path, body, field] of cases) {
      const message = badRequest(await postText(s, path, body), `${field}: `, 'finite');
      assert.ok(message.startsWith(`${field}: `), `${path}: ${message}`);
    }
    const res = await transcribe(s.url, 'asr', smallWav(), { options: '{"beam":1e400}' });
    badRequest(res, 'options.beam: ', 'finite');
    await served();
  });

  test('JSON nested deeper than the limit is a 400, in a body and in a multipart options field', async () => {
    const deep = nested(5000);
    badRequest(
      await postText(s, '/v1/audio/speech', `{"model":"tts","input":"hi","options":{"x":${deep}}}`),
      'options.x',
      `deeper than ${MAX_JSON_DEPTH}`,
    );
    badRequest(await postText(s, '/v1/tasks/batch', `{"model":"asr","requests":[${deep}]}`), 'requests[0]');
    badRequest(await postText(s, '/v1/models/load', `{"id":"x","family":"fixture","x":${deep}}`), 'nesting');
    badRequest(await postText(s, '/v1/tasks/run', deep), '[0][0]', 'nesting');
    const upload = await transcribe(s.url, 'asr', smallWav(), { options: `{"x":${deep}}` });
    badRequest(upload, 'options.x', 'nesting');
    await served();
  });

  test('the depth limit is exact: the body at level 1, so options.x may hold the rest', async () => {
    // body (1) > options (2) > x: an array nested MAX_JSON_DEPTH - 2 deep.
    const fits = `{"model":"asr","text":"t","options":{"x":${nested(MAX_JSON_DEPTH - 2)}}}`;
    const res = await postText(s, '/v1/tasks/run', fits);
    assert.equal(res.status, 200, res.body.toString());
    const over = `{"model":"asr","text":"t","options":{"x":${nested(MAX_JSON_DEPTH - 1)}}}`;
    badRequest(await postText(s, '/v1/tasks/run', over), 'options.x', 'nesting');
  });

  test('a 1 MiB model id, voice or option value comes back cut to a short prefix', async () => {
    const small = (res: HttpResult) =>
      assert.ok(res.body.length < 1000, `a ${res.body.length}-byte error body: ${res.body.subarray(0, 200)}`);
    const unknown = await post(s.url, '/v1/audio/speech', { model: ONE_MIB, input: 'hi' });
    assert.match(errorOf(unknown, 404, 'not_found'), /^unknown model id: "aaaa.*\.\.\.$/);
    small(unknown);
    for (const [path, body] of [
      ['/v1/tasks/run', { model: ONE_MIB, text: 'x' }],
      ['/v1/models/unload', { id: ONE_MIB }],
    ] as const) {
      const res = await post(s.url, path, body);
      errorOf(res, 404, 'not_found');
      small(res);
    }
    // The voice reaches the flite engine, whose check names it.
    const voice = await post(s.url, '/v1/audio/speech', { model: 'flite', input: 'hi', voice: ONE_MIB });
    badRequest(voice, 'voice: "aaaa', 'not a flite voice');
    small(voice);
    // An option value the fixture engine parses as a number.
    const option = await post(s.url, '/v1/tasks/run', {
      model: 'asr',
      text: 'x',
      options: { chunks: ONE_MIB },
    });
    badRequest(option, 'chunks');
    small(option);
    const field = await post(s.url, '/v1/audio/speech', {
      model: 'tts',
      input: 'hi',
      response_format: ONE_MIB,
    });
    badRequest(field, 'response_format');
    small(field);
    const key = await postText(
      s,
      '/v1/tasks/run',
      `{"model":"asr","options":{"${ONE_MIB.slice(0, 10_000)}":1e400}}`,
    );
    badRequest(key, 'options.aaaa', 'finite');
    small(key);
    await served();
  });

  test('a 5 MB model id, voice, option value or key is refused before any use: a short 400 naming the field', async () => {
    for (const [path, body, field] of [
      ['/v1/audio/speech', { model: FIVE_MB, input: 'hi' }, 'model'],
      ['/v1/models/unload', { id: FIVE_MB }, 'id'],
      ['/v1/audio/speech', { model: 'flite', input: 'hi', voice: FIVE_MB }, 'voice'],
      ['/v1/tasks/run', { model: 'asr', text: 'x', options: { chunks: FIVE_MB } }, 'options.chunks'],
    ] as const) {
      const res = await post(s.url, path, body);
      badRequest(
        res,
        `${field}: a string of 5242880 bytes; voxd takes at most 1048576 bytes in a text field`,
      );
      assert.ok(res.body.length < 1000, `a ${res.body.length}-byte error body`);
    }
    const key = await postText(s, '/v1/tasks/run', `{"model":"asr","options":{"${FIVE_MB}":1}}`);
    badRequest(key, 'request body: a key of 5242880 bytes ("aaaa');
    await served();
  });

  test('a 10,000-character file name is cut in the message', async () => {
    const form = new FormData();
    form.set('model', 'asr');
    form.set('file', new Blob([]), `${'n'.repeat(10_000)}.wav`);
    const res = await request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
    const message = badRequest(res, 'file: ');
    assert.ok(message.length <= 1000, `a ${message.length}-character message`);
    await served();
  });

  test('speech text over the default max_input_chars (100000) is a 400 naming the field and limit', async () => {
    const res = await post(s.url, '/v1/audio/speech', { model: 'tts', input: 'a'.repeat(100_001) });
    badRequest(res, 'input: 100001 characters', 'max_input_chars=100000', '--max-input-chars');
    await served();
  });
});

describe('max_input_chars', () => {
  const s = suiteServer({
    max_input_chars: 8,
    models: [
      fixtureModel('tts', { task: 'tts', mode: 'streaming' }),
      fixtureModel('tts5', { task: 'tts', mode: 'streaming', max_input_chars: 5 }),
      fixtureModel('tts-free', { task: 'tts', max_input_chars: 0 }),
      fixtureModel('clone5', { task: 'clon', max_input_chars: 5 }),
      fixtureModel('asr5', { task: 'asr', max_input_chars: 5 }),
    ],
  });

  const speak = (model: string, input: string) => post(s.url, '/v1/audio/speech', { model, input });

  test("the model's limit wins over the server's; text at the limit is served", async () => {
    assert.equal((await speak('tts5', '12345')).status, 200);
    badRequest(await speak('tts5', '123456'), 'input: 6 characters', 'max_input_chars=5', "model's entry");
    assert.equal((await speak('tts', '12345678')).status, 200);
    badRequest(
      await speak('tts', '123456789'),
      'input: 9 characters',
      'max_input_chars=8',
      '--max-input-chars',
    );
  });

  test('0 is no limit; a non-speech task is not limited', async () => {
    assert.equal((await speak('tts-free', 'x'.repeat(1000))).status, 200);
    const res = await post(s.url, '/v1/tasks/run', { model: 'asr5', text: 'a prompt of 26 characters' });
    assert.equal(res.status, 200, res.body.toString());
  });

  test('characters are code points: an emoji counts once', async () => {
    assert.equal((await speak('tts5', '😀😀😀😀😀')).status, 200, 'UTF-16 length 10, 5 characters');
    badRequest(await speak('tts5', '😀😀😀😀😀😀'), 'input: 6 characters');
  });

  test('the text of /v1/tasks/run, /v1/tasks/stream and each /v1/tasks/batch item', async () => {
    const long = '123456';
    badRequest(
      await post(s.url, '/v1/tasks/run', { model: 'tts5', request: { text: long } }),
      'request.text: 6',
    );
    badRequest(await post(s.url, '/v1/tasks/run', { model: 'clone5', text: long }), 'text: 6');
    badRequest(await post(s.url, '/v1/tasks/stream', { model: 'tts5', text: long }), 'text: 6');
    const batch = await post(s.url, '/v1/tasks/batch', {
      model: 'tts5',
      requests: [{ text: 'ok' }, { text: long }],
    });
    badRequest(batch, 'requests[1].text: 6', 'max_input_chars=5');
    const fine = await post(s.url, '/v1/tasks/run', { model: 'tts5', text: '12345' });
    assert.equal(fine.status, 200, fine.body.toString());
  });

  test('the input query of /v1/audio/speech/live', async () => {
    const path = (input: string) => `/v1/audio/speech/live?model=tts5&input=${encodeURIComponent(input)}`;
    badRequest(
      await request(s.url, 'POST', path('123456'), { body: Buffer.alloc(0) }),
      'input: 6 characters',
    );
    const client = await openLive(s, path('12345'));
    await client.write('0\r\n\r\n');
    const res = await client.finished();
    assert.equal(res.status, 200, res.body.toString());
    assert.deepEqual(sseEvents(res.body).slice(-2).map(typeOf), ['speech.audio.done', '[DONE]']);
  });
});

describe('body_timeout_ms', () => {
  const LIMIT_MS = 400;
  const s = suiteServer({
    body_timeout_ms: LIMIT_MS,
    models: [fixtureModel('asr'), fixtureModel('asr-live', { mode: 'streaming' })],
  });

  const BODY = '{"model":"asr","text":"stalled"}';

  async function served(): Promise<void> {
    const res = await post(s.url, '/v1/tasks/run', { model: 'asr', text: 'x' });
    assert.equal(res.status, 200, res.body.toString());
  }

  /** Sends a head and half a body, then nothing: the answer is a 408 and a closed connection. */
  async function stall(head: string[], half: string, path = '/v1/tasks/run'): Promise<void> {
    const client = new RawClient(s.url);
    await client.write(`${[`POST ${path} HTTP/1.1`, 'Host: voxd', ...head].join('\r\n')}\r\n\r\n`, half);
    const res = await client.finished();
    assert.equal(res.status, 408, res.body.toString());
    assert.equal(res.headers['connection'], 'close');
    const { error } = JSON.parse(res.body.toString('utf8'));
    assert.equal(error.type, 'timeout_error');
    assert.match(error.message, new RegExp(`body_timeout_ms=${LIMIT_MS}`));
    assert.equal(client.closed, true);
  }

  test('a Content-Length body that stops half-way is answered 408 and its connection closed', async () => {
    await stall(
      ['Content-Type: application/json', `Content-Length: ${BODY.length}`],
      BODY.slice(0, BODY.length / 2),
    );
    await served();
  });

  test('a chunked body that stops before its last chunk is answered 408 too', async () => {
    const half = BODY.slice(0, 10);
    await stall(
      ['Content-Type: application/json', 'Transfer-Encoding: chunked'],
      `${half.length.toString(16)}\r\n${half}\r\n`,
    );
    await served();
  });

  test('a multipart upload that stops inside its file part is answered 408 too, on every multipart route', async () => {
    const part = '--XB\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF';
    for (const path of [
      '/v1/audio/transcriptions',
      '/v1/audio/transcriptions/details',
      '/v1/batches/transcriptions',
    ])
      await stall(
        ['Content-Type: multipart/form-data; boundary=XB', `Content-Length: ${part.length + 100}`],
        part,
        path,
      );
    await served();
  });

  test('the timer waits for the next byte, not for the whole body: a slow steady body is served', async () => {
    const client = new RawClient(s.url);
    await client.write(
      `POST /v1/tasks/run HTTP/1.1\r\nHost: voxd\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\nConnection: close\r\n\r\n`,
    );
    // Pauses of half the limit, the whole body taking about twice the limit: each pause is the
    // condition under test (a total-time limit would cut this body), not a way to order events.
    const pieces = [0, 8, 16, 24].map((start, i, all) => BODY.slice(start, all[i + 1] ?? BODY.length));
    for (const piece of pieces) {
      await new Promise((resolve) => setTimeout(resolve, LIMIT_MS / 2));
      await client.write(piece);
    }
    const res = await client.finished();
    assert.equal(res.status, 200, res.body.toString());
  });

  test('the live routes keep their own limits: a pause longer than body_timeout_ms is no error there', async () => {
    const client = await openLive(s, '/v1/audio/transcriptions/live?model=asr-live');
    // The pause is what is tested: twice body_timeout_ms, well inside live_ingest.idle_timeout_ms.
    await new Promise((resolve) => setTimeout(resolve, LIMIT_MS * 2));
    await client.write(chunk(Buffer.alloc(1600)), '0\r\n\r\n');
    const res = await client.finished();
    assert.equal(res.status, 200, res.body.toString());
    assert.deepEqual(sseEvents(res.body).slice(-2).map(typeOf), ['transcript.text.done', '[DONE]']);
  });
});
