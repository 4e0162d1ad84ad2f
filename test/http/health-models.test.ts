/** GET /health, GET /v1/models, GET /v1/audio/voices, routing errors and CORS, over real HTTP. */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { OPENAI_VOICES } from '../../src/engines/voice-aliases.js';
import { suiteServer } from '../helpers/suite-server.js';
import {
  errorOf,
  fixtureModel,
  get,
  post,
  request,
  startServer,
  type TestServer,
  tempDir,
  withServer,
} from '../helpers/voxd.js';
import { smallWav } from './wav-helpers.js';

/** The fixture family maps no alias: every OpenAI name speaks in the model's default voice. */
const DEFAULT_ALIASES = Object.fromEntries(OPENAI_VOICES.map((name) => [name, null]));

/**
 * OpenAI's model object (id, object, created, owned_by), audio.cpp's fields in its order, then
 * voxd's own (how the slots share the engine, the memory estimate, the model's aliases).
 */
const ENTRY_KEYS = [
  'id',
  'object',
  'created',
  'owned_by',
  'family',
  'task',
  'mode',
  'loaded',
  'path',
  'state',
  'isolation',
  'memory_estimate_mb',
  'aliases',
];
const SLOT_KEYS = ['slots', 'active_slots', 'queued_requests', 'max_parallel_slots'];
const ORIGIN = 'http://app.example:3000';

describe('main server (cors "*", voice_dir, three models)', () => {
  let server: TestServer;
  let voiceDir: string;

  let startedAt: number;

  before(async () => {
    startedAt = Math.floor(Date.now() / 1000);
    voiceDir = tempDir('voxd-voices-');
    for (const name of ['zed.wav', 'alpha.wav', 'Bravo.wav', 'shared.wav']) {
      writeFileSync(join(voiceDir, name), smallWav(16));
    }
    writeFileSync(join(voiceDir, 'notes.txt'), 'not a voice');
    writeFileSync(join(voiceDir, 'prompt_text'), 'alpha|hello\n');
    server = await startServer({
      cors_origins: '*',
      voice_dir: voiceDir,
      models: [
        fixtureModel('tts-a', {
          task: 'tts',
          voice_presets: { shared: { voice_id: 'v-shared' }, carol: { voice_id: 'v-carol' } },
          default_voice_preset: { voice_id: 'v-inline-default' },
        }),
        fixtureModel('asr-b', { lazy: true, session_options: { threads: 2, beam: '4', flag: true } }),
        fixtureModel('asr-c', { lazy: true }),
      ],
    });
  });
  after(async () => {
    await server?.close();
    rmSync(voiceDir, { recursive: true, force: true });
  });

  test('GET /health has exactly status, backend, models, ui, ui_management in order', async () => {
    const res = await get(server.url, '/health');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(Object.keys(res.json), ['status', 'backend', 'models', 'ui', 'ui_management']);
    // `models` counts registered entries, lazy (unloaded) ones included.
    assert.deepEqual(res.json, { status: 'ok', backend: 'cpu', models: 3, ui: false, ui_management: false });
  });

  test('GET /v1/models lists every entry with the audio.cpp fields in order', async () => {
    const res = await get(server.url, '/v1/models');
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.json), ['object', 'data']);
    assert.equal(res.json.object, 'list');
    assert.deepEqual(
      res.json.data.map((m: { id: string }) => m.id),
      ['tts-a', 'asr-b', 'asr-c'],
    );
    for (const entry of res.json.data) assert.deepEqual(Object.keys(entry), ENTRY_KEYS, entry.id);
    const [tts, asr] = res.json.data;
    // `created` is when the model was registered: at this server's start.
    assert.ok(Number.isInteger(tts.created) && tts.created >= startedAt && tts.created <= Date.now() / 1000);
    assert.deepEqual(tts, {
      id: 'tts-a',
      object: 'model',
      created: tts.created,
      owned_by: 'engine',
      family: 'fixture',
      task: 'tts',
      mode: 'offline',
      loaded: true,
      path: server.dir,
      state: 'ready',
      isolation: 'session',
      memory_estimate_mb: 0,
      aliases: [],
    });
    assert.equal(asr.task, 'asr');
    assert.equal(asr.loaded, false, 'a lazy model is not loaded before its first request');
    assert.equal(asr.state, 'unloaded');
  });

  test('a lazy model shows loaded:true after its first request', async () => {
    const initial = (await get(server.url, '/v1/models')).json.data.find(
      (m: { id: string }) => m.id === 'asr-c',
    );
    assert.equal(initial.loaded, false);
    const run = await post(server.url, '/v1/tasks/run', { model: 'asr-c', request: { text: 'x' } });
    assert.equal(run.status, 200);
    const afterRun = (await get(server.url, '/v1/models')).json.data.find(
      (m: { id: string }) => m.id === 'asr-c',
    );
    assert.equal(afterRun.loaded, true);
    assert.equal(afterRun.state, 'ready');
    assert.deepEqual(Object.keys(afterRun), ENTRY_KEYS);
  });

  test('the serial runtime never shows slot fields, whatever the query', async () => {
    for (const query of ['', '?include_session_options=1&include_params=1', '?include_params=true']) {
      const res = await get(server.url, `/v1/models${query}`);
      assert.equal(res.status, 200);
      for (const entry of res.json.data) {
        for (const key of SLOT_KEYS) assert.ok(!(key in entry), `${entry.id} has ${key} (query "${query}")`);
      }
    }
  });

  test('include_session_options=true|1 adds session_options as a string map', async () => {
    for (const value of ['true', '1']) {
      const res = await get(server.url, `/v1/models?include_session_options=${value}`);
      assert.equal(res.status, 200);
      const [tts, asr] = res.json.data;
      assert.deepEqual(Object.keys(asr), [...ENTRY_KEYS, 'session_options']);
      assert.deepEqual(asr.session_options, { threads: '2', beam: '4', flag: 'true' });
      assert.deepEqual(tts.session_options, {});
      assert.ok(!('params' in asr), 'params only with include_params');
    }
  });

  test('include_params=true|1 adds the family parameter rows', async () => {
    const expected = JSON.parse(JSON.stringify(server.fixture.params));
    assert.ok(expected.length > 0);
    for (const value of ['true', '1']) {
      const res = await get(server.url, `/v1/models?include_params=${value}`);
      assert.equal(res.status, 200);
      for (const entry of res.json.data) {
        assert.deepEqual(Object.keys(entry), [...ENTRY_KEYS, 'params']);
        assert.deepEqual(entry.params, expected);
        assert.ok(!('session_options' in entry));
      }
    }
  });

  test('other values of the include flags add nothing', async () => {
    for (const value of ['false', '0', 'yes', 'TRUE', '']) {
      const res = await get(
        server.url,
        `/v1/models?include_session_options=${value}&include_params=${value}`,
      );
      assert.equal(res.status, 200);
      for (const entry of res.json.data) assert.deepEqual(Object.keys(entry), ENTRY_KEYS, `value "${value}"`);
    }
  });

  test('both include flags together add session_options then params', async () => {
    const res = await get(server.url, '/v1/models?include_params=1&include_session_options=true');
    assert.deepEqual(Object.keys(res.json.data[1]), [...ENTRY_KEYS, 'session_options', 'params']);
  });

  test('voices of a model: presets, voice_dir *.wav stems and aliases, sorted and deduplicated', async () => {
    const res = await get(server.url, '/v1/audio/voices?model=tts-a');
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.json), ['voices', 'aliases']);
    // "shared" is both a preset and a file; the inline default preset has no name and is not listed.
    const expected = ['Bravo', 'alpha', 'carol', 'shared', 'zed', ...OPENAI_VOICES];
    assert.deepEqual(res.json.voices, expected.sort());
    assert.deepEqual(res.json.aliases, DEFAULT_ALIASES);
  });

  test('voices of a model without presets is the voice_dir list', async () => {
    const res = await get(server.url, '/v1/audio/voices?model=asr-b');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.voices, ['Bravo', 'alpha', 'shared', 'zed']);
  });

  test('voices with no model and several models registered is only the voice_dir list', async () => {
    const res = await get(server.url, '/v1/audio/voices');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.voices, ['Bravo', 'alpha', 'shared', 'zed']);
  });

  test('voices of an unknown model is the voice_dir list, never an error', async () => {
    const res = await get(server.url, '/v1/audio/voices?model=no-such-model');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.voices, ['Bravo', 'alpha', 'shared', 'zed']);
  });

  test('an unknown endpoint is 404 not_found naming the path (without the query)', async () => {
    for (const [method, path, shown] of [
      ['GET', '/nope', '/nope'],
      ['GET', '/nope?x=1', '/nope'],
      ['POST', '/v1/audio/speeches', '/v1/audio/speeches'],
      ['GET', '/v1/models/', '/v1/models/'],
      ['GET', '/V1/MODELS', '/V1/MODELS'],
    ] as const) {
      const res = await request(server.url, method, path);
      const message = errorOf(res, 404, 'not_found');
      assert.ok(message.includes(`unknown endpoint: ${shown}`), `${method} ${path}: ${message}`);
    }
  });

  test('a known path with the wrong method is 405 naming the method, the path and the allowed one', async () => {
    const speech = await get(server.url, '/v1/audio/speech');
    let message = errorOf(speech, 405, 'invalid_request_error');
    for (const part of ['GET', '/v1/audio/speech', 'POST']) assert.ok(message.includes(part), message);
    const health = await post(server.url, '/health', {});
    message = errorOf(health, 405, 'invalid_request_error');
    for (const part of ['POST', '/health', 'GET']) assert.ok(message.includes(part), message);
  });

  test('CORS "*": every response echoes Origin with Vary: Origin (success and errors)', async () => {
    const headers = { origin: ORIGIN };
    const responses = [
      await get(server.url, '/health', headers),
      await get(server.url, '/v1/models', headers),
      await get(server.url, '/nope', headers),
      await request(server.url, 'GET', '/v1/audio/speech', { headers }),
      await request(server.url, 'POST', '/v1/audio/speech', {
        body: '{"input":"x"}',
        headers: { ...headers, 'content-type': 'application/json' },
      }),
    ];
    assert.deepEqual(
      responses.map((r) => r.status),
      [200, 200, 404, 405, 400],
    );
    for (const res of responses) {
      assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN);
      assert.match(res.headers.get('vary') ?? '', /\bOrigin\b/);
      assert.match(res.headers.get('access-control-expose-headers') ?? '', /X-AudioCPP-Wall-Ms/);
    }
  });

  test('CORS "*": a request without Origin gets no Allow-Origin header', async () => {
    const res = await get(server.url, '/health');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  test('CORS "*": OPTIONS on any path is a 204 preflight', async () => {
    for (const path of ['/v1/audio/speech', '/health', '/no/such/path']) {
      const res = await request(server.url, 'OPTIONS', path, {
        headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
      });
      assert.equal(res.status, 204, path);
      assert.equal(res.body.length, 0);
      assert.equal(res.headers.get('access-control-allow-methods'), 'GET, POST');
      assert.equal(res.headers.get('access-control-allow-headers'), '*, Authorization');
      assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN);
      assert.match(res.headers.get('vary') ?? '', /\bOrigin\b/);
    }
  });
});

describe('single-model server without voice_dir', () => {
  const server = suiteServer({
    models: [
      fixtureModel('only', {
        task: 'tts',
        lazy: true,
        voice_presets: { zoe: { voice_id: 'z' }, adam: { voice_id: 'a' } },
        default_voice_preset: 'zoe',
      }),
    ],
  });

  test('voices without ?model uses the only registered model', async () => {
    const res = await get(server.url, '/v1/audio/voices');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, {
      voices: ['adam', 'zoe', ...OPENAI_VOICES].sort(),
      aliases: DEFAULT_ALIASES,
    });
  });

  test('voices of an unknown model is an empty list', async () => {
    const res = await get(server.url, '/v1/audio/voices?model=ghost');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { voices: [] });
  });

  test('CORS off: no Allow-Origin or Vary, even when the request has an Origin', async () => {
    const res = await get(server.url, '/health', { origin: ORIGIN });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.equal(res.headers.get('vary'), null);
  });

  test('CORS off and ui false: OPTIONS is not a preflight (404 unknown path, 405 known path)', async () => {
    const unknown = await request(server.url, 'OPTIONS', '/no/such/path', { headers: { origin: ORIGIN } });
    assert.ok(errorOf(unknown, 404, 'not_found').includes('/no/such/path'));
    assert.equal(unknown.headers.get('access-control-allow-origin'), null);
    assert.equal(unknown.headers.get('access-control-allow-methods'), null);
    // A known path with a method it does not serve follows the wrong-method rule.
    const known = await request(server.url, 'OPTIONS', '/v1/audio/speech', { headers: { origin: ORIGIN } });
    assert.ok(errorOf(known, 405, 'invalid_request_error').includes('OPTIONS'));
    assert.equal(known.headers.get('access-control-allow-origin'), null);
    assert.equal(known.headers.get('access-control-allow-methods'), null);
  });
});

describe('ui + ui_management server with no models', () => {
  const server = suiteServer({ ui: true, ui_management: true, models: [] });

  test('GET /health reports the ui flags and zero models', async () => {
    const res = await get(server.url, '/health');
    assert.deepEqual(res.json, { status: 'ok', backend: 'cpu', models: 0, ui: true, ui_management: true });
  });

  test('GET /v1/models is an empty list and voices is empty', async () => {
    assert.deepEqual((await get(server.url, '/v1/models')).json, { object: 'list', data: [] });
    assert.deepEqual((await get(server.url, '/v1/audio/voices')).json, { voices: [] });
  });

  test('with the UI on, OPTIONS is a 204 preflight but CORS off still sends no Allow-Origin', async () => {
    const res = await request(server.url, 'OPTIONS', '/v1/models', { headers: { origin: ORIGIN } });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-methods'), 'GET, POST');
    assert.equal(res.headers.get('access-control-allow-headers'), '*, Authorization');
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });
});

test('voice_dir lists selectable voice files (and links to files) only, never folders named *.wav', async (t) => {
  const voiceDir = tempDir('voxd-voices-');
  t.after(() => rmSync(voiceDir, { recursive: true, force: true }));
  mkdirSync(join(voiceDir, 'folder.wav'));
  writeFileSync(join(voiceDir, 'real.wav'), smallWav(16));
  symlinkSync(join(voiceDir, 'real.wav'), join(voiceDir, 'linked.wav'));
  symlinkSync(join(voiceDir, 'folder.wav'), join(voiceDir, 'linkdir.wav'));
  symlinkSync(join(voiceDir, 'missing-target.wav'), join(voiceDir, 'dangling.wav'));
  // Names that `voice` can not select are not offered either.
  for (const name of ['Upper.WAV', 'a.b.wav', 'my voice.wav'])
    writeFileSync(join(voiceDir, name), smallWav(16));
  await withServer({ voice_dir: voiceDir, models: [fixtureModel('m', { lazy: true })] }, async (server) => {
    const res = await get(server.url, '/v1/audio/voices');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.voices, ['linked', 'real']);
  });
});
