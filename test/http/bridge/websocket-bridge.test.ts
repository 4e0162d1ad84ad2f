/**
 * audio.cpp's WebSocket bridge (`frontend_listener: "websocket"`) on a real voxd with the fixture
 * engine, through a raw `ws` client: frames are requests to the socket's path, answered as
 * audio.cpp's frontend answers them; keys and unknown paths are refused at the upgrade; a socket
 * that leaves frees the slot of its request, running or waiting.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MAX_WAITING_FRAMES } from '../../../src/http/bridge/channel.js';
import { bodyBudgetOf } from '../../../src/http/transport/body-budget.js';
import { suiteServer } from '../../helpers/suite-server.js';
import {
  fixtureModel,
  post,
  type TestServer,
  waitUntil,
  whenRuntime,
  withServer,
} from '../../helpers/voxd.js';
import { type Message, openSocket, refusal } from '../../helpers/websocket.js';

type Frame = Message;

const TLS = fileURLToPath(new URL('../../../../test/fixtures/tls/', import.meta.url));
const CA = readFileSync(`${TLS}cert.pem`);

/** A raw client on the bridge route `path`; its frames are `frames`. */
async function connect(base: string, path: string, headers?: Record<string, string>) {
  const socket = await openSocket(base + path, { headers, ca: CA });
  return { ...socket, frames: socket.messages };
}

/** The HTTP refusal of an upgrade: its status and error body. */
const refused = (base: string, path: string, headers?: Record<string, string>) =>
  refusal(base + path, { headers, ca: CA });

/** One request over a fresh socket: its response frame. */
async function ask(base: string, path: string, frame: unknown): Promise<Frame> {
  const c = await connect(base, path);
  try {
    c.send(frame);
    return await c.frames.next((f) => f.type === 'response');
  } finally {
    c.ws.close();
  }
}

const MODELS = [
  fixtureModel('tts', { task: 'tts', mode: 'streaming', default_request_options: { chunks: '3' } }),
  fixtureModel('asr', { task: 'asr' }),
];

describe('WebSocket bridge: frames as audio.cpp frontend answers them', () => {
  const s = suiteServer({ frontend_listener: 'websocket', models: MODELS });

  test('a raw JSON frame is the POST body of the socket path: speech answers 200 audio/wav, its body a base64 RIFF WAV', async () => {
    const r = await ask(s.url, '/v1/audio/speech', { model: 'tts', input: 'over the bridge' });
    assert.equal(r.type, 'response');
    assert.equal(r.id, null);
    assert.equal(r.status, 200);
    assert.equal(r.content_type, 'audio/wav');
    assert.equal(r.body_encoding, 'base64');
    const wav = Buffer.from(r.body, 'base64');
    assert.equal(wav.subarray(0, 4).toString('latin1'), 'RIFF');
    assert.equal(wav.subarray(8, 12).toString('latin1'), 'WAVE');
    assert.ok(wav.length > 44);
    // The same answer as HTTP's whole one, byte for byte, with its headers (a plain HTTP request is
    // streamed as it is made; the bridge answers it whole, as audio.cpp's does).
    const http = await post(s.url, '/v1/audio/speech', {
      model: 'tts',
      input: 'over the bridge',
      stream: false,
    });
    assert.deepEqual(wav, http.body);
    assert.ok(r.headers['X-AudioCPP-Audio-Duration-Ms'], JSON.stringify(r.headers));
    assert.match(r.headers['X-Request-Id'], /\S/);
    assert.equal(r.headers['Content-Length'], undefined);
  });

  test('an envelope: its id echoed, body_json, GET by method, JSON bodies as text', async () => {
    const c = await connect(s.url, '/v1/audio/speech');
    try {
      c.send({ id: 'speak-1', body_json: { model: 'tts', input: 'enveloped', response_format: 'json' } });
      const r = await c.frames.next((f) => f.id === 'speak-1');
      assert.equal(r.status, 200);
      assert.equal(r.body_encoding, 'utf8');
      assert.equal(JSON.parse(r.body).format, 'wav');
      c.send({ id: 7, method: 'get' });
      const wrong = await c.frames.next((f) => f.id === 7);
      assert.equal(wrong.status, 405, 'GET is not a method of the speech route');
    } finally {
      c.ws.close();
    }
    const health = await ask(s.url, '/health', { id: 'h', method: 'GET' });
    assert.equal(health.id, 'h');
    assert.equal(health.status, 200);
    assert.equal(health.content_type, 'application/json');
    assert.equal(JSON.parse(health.body).status, 'ok');
  });

  test('a streaming route answers response.start, response.body pieces, then response.done', async () => {
    const c = await connect(s.url, '/v1/audio/speech');
    try {
      // At the model's rate: one delta per engine chunk (at OpenAI's 24 kHz, the default, the
      // resampler's tail is one more).
      c.send({ id: 's', body_json: { model: 'tts', input: 'streamed', stream: true, sample_rate: 16000 } });
      await c.frames.next((f) => f.type === 'response.done');
      const mine = c.frames.all.filter((f) => f.id === 's');
      assert.equal(mine[0].type, 'response.start');
      assert.equal(mine[0].status, 200);
      assert.match(mine[0].content_type, /^text\/event-stream/);
      assert.equal(mine.at(-1).type, 'response.done');
      const pieces = mine.slice(1, -1);
      assert.ok(pieces.length >= 1);
      assert.ok(pieces.every((f: Frame) => f.type === 'response.body' && f.body_encoding === 'utf8'));
      const sse = pieces.map((f: Frame) => f.body).join('');
      const events = sse
        .split('\n\n')
        .filter((e: string) => e.startsWith('data: '))
        .map((e: string) => e.slice(6));
      assert.equal(events.filter((e: string) => e.includes('speech.audio.delta')).length, 3);
      assert.equal(events.at(-1), '[DONE]');
      // A raw audio stream: its bytes as base64 pieces.
      c.send({ id: 'raw', body_json: { model: 'tts', input: 'raw', stream: true, stream_format: 'audio' } });
      await c.frames.next((f) => f.type === 'response.done' && f.id === 'raw');
      const raw = c.frames.all.filter((f) => f.id === 'raw');
      assert.equal(raw[0].content_type, 'application/octet-stream');
      const pcm = Buffer.concat(
        raw.filter((f: Frame) => f.type === 'response.body').map((f: Frame) => Buffer.from(f.body, 'base64')),
      );
      // OpenAI's 24 kHz, the raw stream's default: the offline WAV at that rate holds the same PCM.
      const offline = await post(s.url, '/v1/audio/speech', {
        model: 'tts',
        input: 'raw',
        sample_rate: 24000,
      });
      assert.deepEqual(pcm, offline.body.subarray(44));
    } finally {
      c.ws.close();
    }
  });

  test('bad frames are 400 response frames naming the problem, and the socket stays open', async () => {
    const c = await connect(s.url, '/v1/audio/speech');
    try {
      const answer = async (frame: unknown) => {
        const seen = c.frames.all.length;
        c.send(frame);
        return c.frames.next((f) => f.type === 'response', seen);
      };
      let r = await answer('{"model": "tts", ');
      assert.equal(r.status, 400);
      assert.equal(r.id, null);
      assert.equal(r.content_type, 'application/json');
      assert.match(JSON.parse(r.body).error.message, /not JSON/);
      // A body the route cannot parse is the route's own 400, as over HTTP.
      r = await answer({ id: 'b', body: '{not json', headers: { 'Content-Type': 'application/json' } });
      assert.equal(r.id, 'b');
      assert.equal(r.status, 400);
      assert.equal(JSON.parse(r.body).error.type, 'invalid_request_error');
      r = await answer({ id: 'm', method: 'TRACE' });
      assert.equal(JSON.parse(r.body).error.param, 'method');
      assert.match(JSON.parse(r.body).error.message, /"TRACE"/);
      r = await answer({ id: 'p', path: '/health' });
      assert.equal(JSON.parse(r.body).error.param, 'path');
      r = await answer({ id: 'h', headers: { 'Content-Length': '5' }, body: 'x' });
      assert.equal(JSON.parse(r.body).error.param, 'headers.Content-Length');
      r = await answer({ id: 'e', body: '!!', body_encoding: 'base64' });
      assert.equal(JSON.parse(r.body).error.param, 'body');
      r = await answer('[1]');
      assert.match(JSON.parse(r.body).error.message, /an array/);
      const seen = c.frames.all.length;
      c.ws.send(Buffer.from([1, 2, 3]));
      r = await c.frames.next((f) => f.type === 'response', seen);
      assert.match(JSON.parse(r.body).error.message, /binary frames/);
      // Still open: a good request is answered.
      r = await answer({ id: 'ok', body_json: { model: 'tts', input: 'still here' } });
      assert.equal(r.status, 200);
    } finally {
      c.ws.close();
    }
  });

  test('refusals at the upgrade: a path with no route is a 404; /v1/realtime stays the realtime API', async () => {
    const r = await refused(s.url, '/v1/nowhere');
    assert.equal(r.status, 404);
    assert.match(r.error.message, /\/v1\/nowhere/);
    const rt = await connect(s.url, '/v1/realtime?model=asr');
    try {
      const created = await rt.frames.next((f) => f.type === 'session.created');
      assert.equal(created.session.audio.input.transcription.model, 'asr');
    } finally {
      rt.ws.close();
    }
  });
});

describe('WebSocket bridge over TLS (wss)', () => {
  const s = suiteServer({
    frontend_listener: 'websocket',
    tls_cert_file: `${TLS}cert.pem`,
    tls_key_file: `${TLS}key.pem`,
    models: MODELS,
  });

  test('requests reach the HTTPS server in process: a speech WAV and a stream', async () => {
    assert.match(s.url, /^https:/);
    const r = await ask(s.url, '/v1/audio/speech', {
      id: 'tls',
      body_json: { model: 'tts', input: 'secure' },
    });
    assert.equal(r.status, 200);
    assert.equal(Buffer.from(r.body, 'base64').subarray(0, 4).toString('latin1'), 'RIFF');
    const c = await connect(s.url, '/v1/audio/speech');
    try {
      c.send({ model: 'tts', input: 'streamed', stream: true });
      await c.frames.next((f) => f.type === 'response.done');
      assert.equal(c.frames.all[0].type, 'response.start');
    } finally {
      c.ws.close();
    }
  });
});

describe('WebSocket bridge: keys', () => {
  const KEY = 'sk-bridge-test-0123456789';
  const ADMIN = 'sk-bridge-admin-0123456789';
  const s = suiteServer({
    frontend_listener: 'websocket',
    api_keys: [
      { key: KEY, scope: 'inference' },
      { key: ADMIN, scope: 'admin' },
    ],
    models: MODELS,
  });

  test('no key or a wrong one is a 401 at the upgrade, the scope a 403; a Bearer header, X-Api-Key or ?api_key= opens it', async () => {
    assert.equal((await refused(s.url, '/v1/audio/speech')).status, 401);
    assert.equal((await refused(s.url, '/v1/audio/speech?api_key=wrong')).status, 401);
    assert.equal(
      (await refused(s.url, '/v1/nowhere')).status,
      401,
      'which paths exist is told only with a key',
    );
    const scope = await refused(s.url, '/v1/models/unload', { Authorization: `Bearer ${KEY}` });
    assert.equal(scope.status, 403);
    for (const [path, headers] of [
      ['/v1/audio/speech', { Authorization: `Bearer ${KEY}` }],
      ['/v1/audio/speech', { 'X-Api-Key': KEY }],
      [`/v1/audio/speech?api_key=${KEY}`, undefined],
    ] as const) {
      const c = await connect(s.url, path, headers);
      try {
        c.send({ model: 'tts', input: 'keyed' });
        const r = await c.frames.next((f) => f.type === 'response');
        assert.equal(r.status, 200, `${path} ${JSON.stringify(headers)}: ${r.body.slice(0, 200)}`);
      } finally {
        c.ws.close();
      }
    }
  });
});

/** A server whose tts runs wait on `gate`, one at a time. */
async function gatedTts(s: TestServer, gate: string): Promise<void> {
  const res = await post(
    s.url,
    '/v1/models/load',
    fixtureModel('slow', { task: 'tts', default_request_options: { run_gate: gate } }),
  );
  assert.equal(res.status, 200, res.body.toString());
}

describe('WebSocket bridge: a socket that leaves frees its slot', () => {
  test('[time.disconnect-executing] bridge: closing the socket cancels the running request and frees its slot; the one queued behind it never runs', async () => {
    await withServer({ frontend_listener: 'websocket', ui_management: true }, async (s) => {
      const gate = s.gate('bridge-run');
      await gatedTts(s, gate.path);
      const scheduler = () => s.voxd.runtime.get('slow').scheduler.snapshot();
      const c = await connect(s.url, '/v1/audio/speech');
      c.send({ id: 1, model: 'slow', input: 'held' });
      c.send({ id: 2, model: 'slow', input: 'behind' });
      await waitUntil('the first request runs', () => s.fixture.record.of('slow', 'run-start').length === 1);
      assert.equal(scheduler().activeRequests, 1);
      c.ws.terminate();
      await whenRuntime(s.voxd.runtime, 'the slot is free', () => scheduler().activeRequests === 0);
      const ends = s.fixture.record.of('slow', 'run-end');
      assert.equal((ends.at(-1) as { outcome?: string } | undefined)?.outcome, 'aborted');
      // The gate opens: nothing else ran, and a new request gets the slot at once.
      await gate.open();
      const after = await post(s.url, '/v1/audio/speech', { model: 'slow', input: 'next' });
      assert.equal(after.status, 200);
      assert.equal(s.fixture.record.of('slow', 'run-start').length, 2, 'the frame queued behind never ran');
    });
  });

  test('[time.disconnect-queued] bridge: a request waiting for the model slot (held by HTTP) is dropped from the queue when its socket closes', async () => {
    await withServer({ frontend_listener: 'websocket', ui_management: true }, async (s) => {
      const gate = s.gate('bridge-queue');
      await gatedTts(s, gate.path);
      const scheduler = () => s.voxd.runtime.get('slow').scheduler.snapshot();
      const holder = post(s.url, '/v1/audio/speech', { model: 'slow', input: 'holder' });
      await waitUntil('the HTTP request runs', () => s.fixture.record.of('slow', 'run-start').length === 1);
      const c = await connect(s.url, '/v1/audio/speech');
      c.send({ id: 'q', model: 'slow', input: 'queued' });
      await whenRuntime(s.voxd.runtime, 'the bridged request waits', () => scheduler().queuedRequests === 1);
      c.ws.terminate();
      await whenRuntime(s.voxd.runtime, 'it left the queue', () => scheduler().queuedRequests === 0);
      await gate.open();
      assert.equal((await holder).status, 200);
      assert.equal(s.fixture.record.of('slow', 'run-start').length, 1, 'the bridged request never ran');
    });
  });
});

describe('WebSocket bridge: bounds and shutdown', () => {
  test(`a socket holds ${MAX_WAITING_FRAMES} requests waiting behind the running one; one more is a 503 bridge_backlog frame with its id, at once`, async () => {
    await withServer({ frontend_listener: 'websocket', ui_management: true }, async (s) => {
      const gate = s.gate('bridge-backlog');
      await gatedTts(s, gate.path);
      const c = await connect(s.url, '/v1/audio/speech');
      try {
        c.send({ id: 0, model: 'slow', input: 'running' });
        await waitUntil(
          'the first request runs',
          () => s.fixture.record.of('slow', 'run-start').length === 1,
        );
        for (let i = 1; i <= MAX_WAITING_FRAMES; i++) c.send({ id: i, model: 'slow', input: `waiting ${i}` });
        c.send({ id: 'over', model: 'slow', input: 'one too many' });
        const over = await c.frames.next((f) => f.id === 'over');
        assert.equal(over.status, 503);
        assert.equal(JSON.parse(over.body).error.code, 'bridge_backlog');
        assert.equal(over.headers['Retry-After'], '1');
        assert.equal(c.frames.all.length, 1, 'nothing else was answered yet');
        await gate.open();
        // The others are answered in the order they were sent.
        await c.frames.next((f) => f.id === MAX_WAITING_FRAMES);
        assert.deepEqual(
          c.frames.all.slice(1).map((f) => [f.id, f.status]),
          Array.from({ length: MAX_WAITING_FRAMES + 1 }, (_, i) => [i, 200]),
        );
      } finally {
        c.ws.close();
      }
    });
  });

  test('[time.custom-listener] bridge: a shutdown answers the request running, then closes the socket with 1001; an idle socket closes at once, frames waiting never run', async () => {
    await withServer({ frontend_listener: 'websocket', ui_management: true }, async (s) => {
      const gate = s.gate('bridge-shutdown');
      await gatedTts(s, gate.path);
      const idle = await connect(s.url, '/health');
      const c = await connect(s.url, '/v1/audio/speech');
      c.send({ id: 'last', model: 'slow', input: 'finishing' });
      await waitUntil('the request runs', () => s.fixture.record.of('slow', 'run-start').length === 1);
      const budget = bodyBudgetOf(s.voxd.server)!;
      const running = budget.inUse;
      c.send({ id: 'waiting', model: 'slow', input: 'dropped' });
      await waitUntil('the frame waits on the budget', () => budget.inUse > running);
      const closing = s.voxd.close();
      // The idle socket does not wait for the other's request.
      assert.equal(await idle.closed, 1001);
      await gate.open();
      const r = await c.frames.next((f) => f.id === 'last');
      assert.equal(r.status, 200);
      assert.equal(await c.closed, 1001);
      await closing;
      assert.deepEqual(
        c.frames.all.map((f) => f.id),
        ['last'],
        'the frames waiting were dropped unanswered',
      );
      assert.equal(s.fixture.record.of('slow', 'run-start').length, 1, 'and never ran');
      assert.equal(budget.inUse, 0);
    });
  });
});

describe('WebSocket bridge: a raw stream cut after its start', () => {
  test('ends with an error frame instead of response.done, and the socket goes on', async () => {
    await withServer(
      {
        frontend_listener: 'websocket',
        // The run is cancelled once it has sent its first chunk and waits on a gate that stays shut.
        max_inference_ms: 300,
        models: [fixtureModel('tts', { task: 'tts', mode: 'streaming' })],
      },
      async (s) => {
        const gate = s.gate('bridge-chunk');
        const c = await connect(s.url, '/v1/audio/speech');
        try {
          c.send({
            id: 'cut',
            body_json: {
              model: 'tts',
              input: 'cut short',
              stream: true,
              stream_format: 'audio',
              options: { chunks: '3', chunk_gate: gate.path },
            },
          });
          const end = await c.frames.next(
            (f) => f.id === 'cut' && (f.type === 'error' || f.type === 'response.done'),
          );
          const mine = c.frames.all.filter((f) => f.id === 'cut').map((f) => f.type);
          assert.equal(mine[0], 'response.start');
          assert.ok(mine.includes('response.body'), mine.join(' '));
          assert.equal(end.type, 'error', mine.join(' '));
          assert.equal(end.error.type, 'server_error');
          assert.equal(
            mine.filter((t) => t === 'response').length,
            0,
            'no second answer for the same request',
          );
          await gate.open();
          c.send({ id: 'next', method: 'GET', query: '' });
          const next = await c.frames.next((f) => f.id === 'next');
          assert.equal(next.status, 405);
        } finally {
          c.ws.close();
        }
      },
    );
  });
});
