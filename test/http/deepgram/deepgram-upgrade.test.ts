/**
 * The front end of Deepgram's two sockets (src/http/deepgram/upgrade.ts): everything that can refuse
 * a `/v1/listen` or `/v1/speak` session refuses it at the upgrade, as an HTTP answer with the usual
 * error body, before anything is held. Keys as Deepgram's clients send them (`Authorization: Token`
 * and `Bearer`, the browser's subprotocols `token, <key>`, answered with `token` and never the
 * key), a foreign Origin, `max_deepgram_sessions`, a shutdown, the query's model (a Deepgram name
 * maps through `deepgram_listen_model` / `deepgram_speak_model`; an unknown voxd name is a 404
 * naming `model`), and the same paths asked without the upgrade (426). With audio.cpp's bridge on,
 * every other path still goes to the bridge.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deepgramRefusal, openDeepgram } from '../../helpers/deepgram-socket.js';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';
import {
  fixtureModel,
  fliteSpeech,
  get,
  type TestServer,
  waitUntil,
  withServer,
} from '../../helpers/voxd.js';
import { openSocket } from '../../helpers/websocket.js';

const KEY = 'sk-deepgram-test-0123456789';
// `/v1/listen` finds utterances with the server's VAD (chunking_vad_model, silero-vad): registered,
// loaded only when a session hears audio.
const MODELS = [
  fixtureModel('asr', { task: 'asr' }),
  fixtureModel('tts', { task: 'tts' }),
  lazyModel('silero-vad', 'silero_vad', 'vad'),
];
const PATHS = ['/v1/listen', '/v1/speak'] as const;

/** Opens `path` on `s` and closes it again once open: the upgrade was accepted. */
async function opens(s: TestServer, path: string, options: Parameters<typeof openDeepgram>[1] = {}) {
  const client = await openDeepgram(`${s.url}${path}`, options);
  const protocol = client.ws.protocol;
  client.ws.close();
  await client.closed;
  return protocol;
}

describe('Deepgram sockets with API keys', () => {
  const s = suiteServer({ api_keys: [{ key: KEY, scope: 'inference' }], models: MODELS });

  test('no key is a 401 at the upgrade, before the query is read', async () => {
    for (const path of PATHS) {
      const r = await deepgramRefusal(`${s.url}${path}?model=nope`);
      assert.equal(r.status, 401, path);
      assert.equal(r.error.code, 'missing_api_key');
      // Named as a Deepgram client sends it.
      assert.match(r.error.message, /Authorization: Token <key>.*subprotocols "token"/);
    }
  });

  test('`Authorization: Token <key>` and `Bearer <key>` open both sockets', async () => {
    for (const path of PATHS)
      for (const scheme of ['Token', 'Bearer', 'token'])
        assert.equal(await opens(s, path, { headers: { Authorization: `${scheme} ${KEY}` } }), '', path);
  });

  test("a browser's subprotocols `token, <key>` open the socket, answered with `token`, never the key", async () => {
    for (const path of PATHS) assert.equal(await opens(s, path, { protocols: ['token', KEY] }), 'token');
  });

  test('a wrong key, an ephemeral key or a malformed header is a 401', async () => {
    for (const path of PATHS) {
      let r = await deepgramRefusal(`${s.url}${path}`, { headers: { Authorization: 'Token sk-wrong' } });
      assert.equal(r.status, 401);
      assert.equal(r.error.code, 'invalid_api_key');
      assert.doesNotMatch(JSON.stringify(r.error), /sk-wrong/, 'the key is never told back');
      r = await deepgramRefusal(`${s.url}${path}`, { protocols: ['token', 'sk-wrong'] });
      assert.equal(r.status, 401);
      assert.equal(r.error.code, 'invalid_api_key');
      // A realtime client secret opens a realtime session and nothing else.
      r = await deepgramRefusal(`${s.url}${path}`, { headers: { Authorization: 'Bearer ek_0123456789' } });
      assert.equal(r.status, 401);
      assert.match(r.error.message, /ephemeral key/);
      r = await deepgramRefusal(`${s.url}${path}`, { headers: { Authorization: `Basic ${KEY}` } });
      assert.equal(r.status, 401);
      assert.equal(r.error.code, 'invalid_api_key');
      // The key subprotocol with nothing after it is no key.
      r = await deepgramRefusal(`${s.url}${path}`, { protocols: ['token'] });
      assert.equal(r.status, 401);
      assert.equal(r.error.code, 'missing_api_key');
    }
  });

  test('without the upgrade, 401 without a key and 426 with one', async () => {
    for (const path of PATHS) {
      assert.equal((await get(s.url, path)).status, 401);
      const plain = await get(s.url, path, { Authorization: `Token ${KEY}` });
      assert.equal(plain.status, 426, path);
      assert.equal(plain.json.error.code, 'upgrade_required');
      assert.match(plain.json.error.message, /WebSocket/);
    }
  });
});

describe('Deepgram sockets without API keys', () => {
  const s = suiteServer({
    // flite makes the speech the listen socket's VAD hears (it is a tts model too, never the first).
    models: [...MODELS, fixtureModel('asr2', { task: 'asr' }), fixtureModel('tts2', { task: 'tts' }), FLITE],
    deepgram_listen_model: 'asr2',
    deepgram_speak_model: 'tts2',
  });

  test('a keyless server opens both sockets with no key, and refuses an ephemeral key', async () => {
    for (const path of PATHS) {
      await opens(s, path);
      const r = await deepgramRefusal(`${s.url}${path}`, { headers: { Authorization: 'Token ek_x' } });
      assert.equal(r.status, 401);
      assert.match(r.error.message, /ephemeral key/);
    }
  });

  test('a page of another origin is a 403; a page of voxd own origin opens', async () => {
    const host = new URL(s.url).host;
    for (const path of PATHS) {
      const r = await deepgramRefusal(`${s.url}${path}`, {
        headers: { Origin: 'https://elsewhere.example' },
      });
      assert.equal(r.status, 403);
      assert.equal(r.error.code, 'origin_not_allowed');
      assert.match(r.error.message, /--cors-origins/);
      await opens(s, path, { headers: { Origin: `http://${host}` } });
    }
  });

  test('an unknown model is a 404 naming `model`; a model of the other task a 400', async () => {
    for (const path of PATHS) {
      const r = await deepgramRefusal(`${s.url}${path}?model=nope`);
      assert.equal(r.status, 404, path);
      assert.equal(r.error.code, 'model_not_found');
      assert.equal(r.error.param, 'model');
      assert.match(r.error.message, /nope/);
    }
    assert.equal((await deepgramRefusal(`${s.url}/v1/listen?model=tts`)).status, 400);
    assert.equal((await deepgramRefusal(`${s.url}/v1/speak?model=asr`)).status, 400);
  });

  test('a Deepgram model name is the model deepgram_listen_model / deepgram_speak_model names', async () => {
    const speech = await fliteSpeech(s.url, 'Please call me tomorrow morning.', 16000);
    const listen = await openDeepgram(`${s.url}/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000`);
    listen.sendAudio(Buffer.concat([Buffer.alloc(16000), speech]));
    // The stream's end transcribes the speech going on.
    listen.send({ type: 'CloseStream' });
    assert.equal((await listen.closed).code, 1000);
    const speak = await openDeepgram(`${s.url}/v1/speak?model=aura-2-thalia-en&encoding=linear16`);
    speak.send({ type: 'Speak', text: 'Hello there.' });
    speak.send({ type: 'Flush' });
    await speak.messages.next('Flushed');
    speak.send({ type: 'Close' });
    await speak.closed;
    assert.equal(s.fixture.record.of('asr2', 'run-start').length, 1);
    assert.ok(s.fixture.record.of('tts2', 'run-start').length >= 1);
    // The first model of each task, which an unmapped name would have picked, never ran.
    assert.equal(s.fixture.record.of('asr', 'run-start').length, 0);
    assert.equal(s.fixture.record.of('tts', 'run-start').length, 0);
  });

  test('GET without the upgrade is a 426 naming what to do', async () => {
    for (const path of PATHS) {
      const plain = await get(s.url, path);
      assert.equal(plain.status, 426);
      assert.equal(plain.json.error.code, 'upgrade_required');
    }
  });
});

test('a Deepgram name whose setting names no registered model is a 404 naming `model` and the setting', async () => {
  await withServer(
    { models: MODELS, deepgram_listen_model: 'gone-asr', deepgram_speak_model: 'gone-tts' },
    async (s) => {
      for (const [path, name, setting] of [
        ['/v1/listen', 'nova-3', 'deepgram_listen_model'],
        ['/v1/speak', 'aura-2-thalia-en', 'deepgram_speak_model'],
      ] as const) {
        const r = await deepgramRefusal(`${s.url}${path}?model=${name}`);
        assert.equal(r.status, 404, path);
        assert.equal(r.error.param, 'model');
        assert.match(r.error.message, new RegExp(setting));
        // A voxd id is used as it is, whatever the setting says.
        await opens(s, `${path}?model=${path === '/v1/listen' ? 'asr' : 'tts'}`);
      }
    },
  );
});

test("a voxd model whose name looks like Deepgram's (whisper-base.en, aura-local) is that model, not the setting's", async () => {
  await withServer(
    {
      models: [
        ...MODELS,
        fixtureModel('whisper-base.en', { task: 'asr' }),
        fixtureModel('aura-local', { task: 'tts' }),
      ],
      deepgram_listen_model: 'asr',
      deepgram_speak_model: 'tts',
    },
    async (s) => {
      const speak = await openDeepgram(`${s.url}/v1/speak?model=aura-local&encoding=linear16`);
      speak.send({ type: 'Speak', text: 'Hello there.' });
      speak.send({ type: 'Flush' });
      await speak.messages.next('Flushed');
      speak.send({ type: 'Close' });
      await speak.closed;
      assert.ok(s.fixture.record.of('aura-local', 'run-start').length >= 1);
      assert.equal(s.fixture.record.of('tts', 'run-start').length, 0);
      // A listen socket on the Deepgram-looking id is that model's: the model of the other task is a 400.
      const wrongTask = await deepgramRefusal(`${s.url}/v1/speak?model=whisper-base.en`);
      assert.equal(wrongTask.status, 400);
      await opens(s, '/v1/listen?model=whisper-base.en');
    },
  );
});

test('max_deepgram_sessions counts both sockets: one more is a 503 with Retry-After, a closed one makes room', async () => {
  await withServer({ max_deepgram_sessions: 1, models: MODELS }, async (s) => {
    const first = await openDeepgram(`${s.url}/v1/listen`);
    for (const path of PATHS) {
      const r = await deepgramRefusal(`${s.url}${path}`);
      assert.equal(r.status, 503);
      assert.equal(r.error.code, 'too_many_sessions');
      assert.equal(r.headers['retry-after'], '1');
      assert.match(r.error.message, /max_deepgram_sessions/);
    }
    // The realtime API has a limit of its own.
    const realtime = await openSocket(`${s.url}/v1/realtime?model=asr`);
    realtime.ws.close();
    first.ws.close();
    await first.closed;
    await waitUntil('the closed session makes room', async () => {
      const next = await openDeepgram(`${s.url}/v1/speak`).catch(() => undefined);
      next?.ws.close();
      return next !== undefined;
    });
  });
});

test('once the shutdown began, an upgrade is a 503 shutting_down', async () => {
  await withServer({ models: MODELS }, async (s) => {
    // The runtime's close is the shutdown's first step; the listener closes after it.
    const closing = s.voxd.runtime.close();
    for (const path of PATHS) {
      const r = await deepgramRefusal(`${s.url}${path}`);
      assert.equal(r.status, 503);
      assert.equal(r.error.code, 'shutting_down');
    }
    await closing;
  });
});

test("with audio.cpp's bridge on, Deepgram's paths are Deepgram's and every other path is the bridge's", async () => {
  await withServer({ frontend_listener: 'websocket', models: MODELS }, async (s) => {
    await opens(s, '/v1/speak');
    const r = await deepgramRefusal(`${s.url}/v1/listen?model=nope`);
    assert.equal(r.status, 404);
    assert.equal(r.error.param, 'model');
    // The bridge still answers its paths, and its own 404 for a path with no route.
    const bridge = await openSocket(`${s.url}/v1/tasks/run`);
    bridge.send({ id: 'b', body_json: { model: 'asr', text: 'x' } });
    const answer = await bridge.messages.next('response');
    assert.equal(answer.status, 200);
    bridge.ws.close();
    const elsewhere = await deepgramRefusal(`${s.url}/v1/elsewhere`);
    assert.equal(elsewhere.status, 404);
    assert.match(elsewhere.error.message, /bridge/);
  });
});
