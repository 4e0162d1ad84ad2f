/**
 * API keys through real HTTP: keys from server.json, a keys file and VOXD_API_KEYS; every route
 * without a key, with a wrong key, with an inference key and with an admin key; the open endpoints;
 * the CORS preflight; the status stream's `?api_key=`; the official openai SDK; and no key in any
 * error message or log line.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI, { AuthenticationError } from 'openai';
import { isLoopbackHost } from '../../../src/config/api-keys.js';
import { ROUTES } from '../../../src/http/index.js';
import {
  errorOf,
  fixtureModel,
  get,
  request,
  startServer,
  type TestServer,
  tempDir,
  withDeadline,
  withServer,
} from '../../helpers/voxd.js';

const CONFIG_ADMIN = 'cfg-admin-5f1c9e2a7b';
const CONFIG_INFERENCE = 'cfg-inference-0d4e8a61';
const FILE_ADMIN = 'file-admin-93b2c7d1e0';
const FILE_INFERENCE = 'file-inference-7a6f2e95';
const ENV_ADMIN = 'env-admin-2c8d4f1a63';
const ENV_INFERENCE = 'env-inference-b5e09d72';
const WRONG = 'not-a-key-6e1d0b3f9a';
const EVERY_KEY = [
  CONFIG_ADMIN,
  CONFIG_INFERENCE,
  FILE_ADMIN,
  FILE_INFERENCE,
  ENV_ADMIN,
  ENV_INFERENCE,
  WRONG,
];

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** The status of `method path` with `headers`; a streamed answer is cut once its headers are in. */
async function statusOf(base: string, method: string, path: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const res = await withDeadline(
    fetch(`${base}${path}`, {
      method,
      headers: method === 'POST' ? { 'content-type': 'application/json', ...headers } : headers,
      body: method === 'POST' ? '{}' : undefined,
      signal: controller.signal,
    }),
    `${method} ${path}`,
    10_000,
  );
  const type = res.headers.get('content-type') ?? '';
  const text = type.includes('application/json') ? await res.text() : '';
  controller.abort();
  return { status: res.status, headers: res.headers, text };
}

/** Starts a server with `VOXD_API_KEYS` set for its config load only. */
async function withEnvKeys<T>(value: string, start: () => Promise<T>): Promise<T> {
  const saved = process.env['VOXD_API_KEYS'];
  process.env['VOXD_API_KEYS'] = value;
  try {
    return await start();
  } finally {
    if (saved === undefined) delete process.env['VOXD_API_KEYS'];
    else process.env['VOXD_API_KEYS'] = saved;
  }
}

const OPEN_PATHS = new Set(['/health', '/ready', '/metrics']);
/** A route's path as a request sends it: a parameter (`/v1/models/{id}`) filled with a model id. */
const pathOf = (route: { path: string }) => route.path.replace('{id}', 'm');
/** Always open: the web UI's files and the API's description, which hold no data. */
const isOpen = (path: string) =>
  OPEN_PATHS.has(path) || path === '/' || path === '/openapi.json' || path.startsWith('/ui/');

describe('API keys', () => {
  let s: TestServer;
  let keysDir: string;

  before(async () => {
    keysDir = tempDir('voxd-keys-');
    const keysFile = join(keysDir, 'keys.txt');
    writeFileSync(
      keysFile,
      `# operators\n${FILE_ADMIN} admin\n\n   # the app\n${FILE_INFERENCE}\tinference\n`,
    );
    s = await withEnvKeys(`${ENV_ADMIN}:admin, ${ENV_INFERENCE}:inference`, () =>
      startServer(
        {
          ui: true,
          ui_management: true,
          cors_origins: '*',
          api_keys: [
            { key: CONFIG_ADMIN, scope: 'admin' },
            { key: CONFIG_INFERENCE, scope: 'inference' },
          ],
          models: [fixtureModel('m'), fixtureModel('speaker', { task: 'tts' })],
        },
        { overrides: { api_keys_file: keysFile, log: true } },
      ),
    );
  });
  after(async () => {
    await s.close();
    rmSync(keysDir, { recursive: true, force: true });
    // Every request of this file was logged (--log): not one line holds a key.
    const logs = s.logs.join('\n');
    for (const key of EVERY_KEY) assert.ok(!logs.includes(key), `a log line holds ${key}`);
  });

  test('each source gives keys of its scope: server.json, the keys file, VOXD_API_KEYS', async () => {
    for (const key of [CONFIG_ADMIN, FILE_ADMIN, ENV_ADMIN]) {
      assert.equal((await get(s.url, '/v1/models', bearer(key))).status, 200, key);
      assert.equal((await statusOf(s.url, 'GET', '/v1/ui/models/installed', bearer(key))).status, 200, key);
    }
    for (const key of [CONFIG_INFERENCE, FILE_INFERENCE, ENV_INFERENCE]) {
      assert.equal((await get(s.url, '/v1/models', bearer(key))).status, 200, key);
      assert.equal((await statusOf(s.url, 'GET', '/v1/ui/models/installed', bearer(key))).status, 403, key);
    }
  });

  test('every route but the open ones answers 401 missing_api_key without a key, with the Bearer challenge', async () => {
    for (const route of ROUTES) {
      const res = await statusOf(s.url, route.method, pathOf(route));
      if (isOpen(route.path)) {
        assert.equal(res.status, 200, `${route.method} ${route.path} is open`);
        continue;
      }
      assert.equal(res.status, 401, `${route.method} ${route.path}`);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer', route.path);
      const error = JSON.parse(res.text).error;
      assert.equal(error.type, 'authentication_error');
      assert.equal(error.code, 'missing_api_key');
      assert.match(error.message, new RegExp(`^${pathOf(route).replace(/\//g, '\\/')} needs an API key`));
    }
  });

  test('a wrong key is 401 invalid_api_key on every keyed route, and the key is not in the message', async () => {
    for (const route of ROUTES.filter((r) => !isOpen(r.path))) {
      const res = await statusOf(s.url, route.method, pathOf(route), bearer(WRONG));
      assert.equal(res.status, 401, `${route.method} ${route.path}`);
      assert.equal(JSON.parse(res.text).error.code, 'invalid_api_key');
      assert.ok(!res.text.includes(WRONG), res.text);
    }
    // A key that is a real one's prefix or extension is just as wrong.
    for (const near of [CONFIG_ADMIN.slice(0, -1), `${CONFIG_ADMIN}x`]) {
      assert.equal((await get(s.url, '/v1/models', bearer(near))).status, 401);
    }
    // Not "Bearer <key>": refused, and the header's text is not echoed either.
    const basic = await get(s.url, '/v1/models', { authorization: `Basic ${CONFIG_ADMIN}` });
    assert.equal(basic.json.error.code, 'invalid_api_key');
    assert.ok(!basic.body.toString().includes(CONFIG_ADMIN));
  });

  test('an inference key is refused (403 insufficient_scope) on every admin route and accepted on the rest', async () => {
    for (const route of ROUTES.filter((r) => !isOpen(r.path))) {
      const res = await statusOf(s.url, route.method, pathOf(route), bearer(CONFIG_INFERENCE));
      if (route.scope === 'admin') {
        assert.equal(res.status, 403, `${route.method} ${route.path}`);
        const error = JSON.parse(res.text).error;
        assert.equal(error.type, 'permission_error');
        assert.equal(error.code, 'insufficient_scope');
        assert.equal(
          error.message,
          `${route.method} ${route.path} needs an API key with the admin scope; this key's scope is inference`,
        );
      } else {
        assert.ok(
          ![401, 403].includes(res.status),
          `${route.method} ${route.path}: ${res.status} ${res.text}`,
        );
      }
    }
  });

  test('an admin key reaches every route', async () => {
    for (const route of ROUTES) {
      const res = await statusOf(s.url, route.method, pathOf(route), bearer(FILE_ADMIN));
      assert.ok(![401, 403].includes(res.status), `${route.method} ${route.path}: ${res.status} ${res.text}`);
    }
  });

  test('the scopes the issue names: bulk unload, load and the installer are admin; inference routes are not', () => {
    const scope = (path: string) => ROUTES.find((r) => r.path === path)?.scope;
    for (const path of [
      '/v1/models/load',
      '/v1/models/unload',
      '/v1/tasks/unload_models',
      '/v1/tasks/unload_all_models',
      '/v1/ui/models/install',
      '/v1/ui/models/config',
      '/v1/ui/models-root',
      '/v1/ui/browse-directories',
      '/v1/ui/path-status',
    ])
      assert.equal(scope(path), 'admin', path);
    for (const path of [
      '/v1/models',
      '/v1/audio/speech',
      '/v1/tasks/run',
      '/v1/audio/voices',
      '/v1/ui/status/stream',
    ])
      assert.equal(scope(path), 'inference', path);
  });

  test('an unknown path is 401 without a key and 404 with one; a wrong method is 405 with one', async () => {
    errorOf(await get(s.url, '/v1/nothing-here'), 401, 'authentication_error');
    errorOf(await get(s.url, '/v1/nothing-here', bearer(ENV_INFERENCE)), 404, 'not_found');
    errorOf(await request(s.url, 'DELETE', '/v1/models'), 401, 'authentication_error');
    errorOf(
      await request(s.url, 'GET', '/v1/audio/speech', { headers: bearer(ENV_INFERENCE) }),
      405,
      'invalid_request_error',
    );
  });

  test('X-Api-Key is taken as well as Authorization', async () => {
    assert.equal((await get(s.url, '/v1/models', { 'x-api-key': FILE_INFERENCE })).status, 200);
    assert.equal((await get(s.url, '/v1/models', { 'x-api-key': WRONG })).status, 401);
  });

  test('a CORS preflight needs no key and allows the Authorization header', async () => {
    const res = await request(s.url, 'OPTIONS', '/v1/audio/speech', {
      headers: { origin: 'http://app.example', 'access-control-request-headers': 'authorization' },
    });
    assert.equal(res.status, 204);
    assert.match(res.headers.get('access-control-allow-headers') ?? '', /Authorization/);
  });

  test('the status stream takes the key as ?api_key= (an EventSource sends no headers); other routes do not', async () => {
    const controller = new AbortController();
    const res = await fetch(`${s.url}/v1/ui/status/stream?api_key=${encodeURIComponent(CONFIG_INFERENCE)}`, {
      signal: controller.signal,
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const first = Buffer.from((await withDeadline(reader.read(), 'the first status event', 5000)).value!);
    assert.match(first.toString(), /"object":"list"/);
    controller.abort();
    const wrong = await statusOf(s.url, 'GET', `/v1/ui/status/stream?api_key=${WRONG}`);
    assert.equal(wrong.status, 401);
    assert.equal((await statusOf(s.url, 'GET', `/v1/models?api_key=${CONFIG_INFERENCE}`)).status, 401);
  });

  test('the official openai SDK sends its apiKey as Bearer; a wrong key is an AuthenticationError', async () => {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: ENV_INFERENCE, maxRetries: 0 });
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    assert.deepEqual(ids.sort(), ['m', 'speaker']);
    const speech = await client.audio.speech.create({
      model: 'speaker',
      input: 'hello',
      voice: 'alloy',
      response_format: 'wav',
    });
    assert.equal(speech.status, 200);
    const wrong = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: WRONG, maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (err: unknown) => {
      assert.ok(err instanceof AuthenticationError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.code, 'invalid_api_key');
      assert.ok(!err.message.includes(WRONG));
      return true;
    });
  });

  test('ui_management still gates management for an admin key', async () => {
    await withServer(
      {
        ui_management: false,
        api_keys: [{ key: CONFIG_ADMIN, scope: 'admin' }],
        models: [fixtureModel('m')],
      },
      async (off) => {
        const res = await request(off.url, 'POST', '/v1/models/unload', {
          body: '{"id":"m"}',
          headers: bearer(CONFIG_ADMIN),
        });
        assert.match(errorOf(res, 403, 'forbidden'), /--ui-management/);
      },
    );
  });
});

describe('open_endpoints', () => {
  test('/health, /ready and /metrics are open by default and need a key with open_endpoints: []', async () => {
    const keys = [{ key: CONFIG_INFERENCE, scope: 'inference' }];
    await withServer({ api_keys: keys, open_endpoints: [], models: [fixtureModel('m')] }, async (closed) => {
      for (const path of ['/health', '/ready', '/metrics']) {
        errorOf(await get(closed.url, path), 401, 'authentication_error');
        assert.equal((await get(closed.url, path, bearer(CONFIG_INFERENCE))).status, 200);
      }
    });
    await withServer(
      {
        api_keys: keys,
        open_endpoints: ['/health'],
        models: [fixtureModel('m')],
      },
      async (healthOnly) => {
        assert.equal((await get(healthOnly.url, '/health')).status, 200);
        assert.equal((await get(healthOnly.url, '/ready')).status, 401);
        assert.equal((await get(healthOnly.url, '/metrics')).status, 401);
      },
    );
  });

  test('a path that is not /health, /ready or /metrics cannot be opened', async () => {
    await assert.rejects(
      startServer({ api_keys: [], open_endpoints: ['/v1/models/load'], models: [fixtureModel('m')] }),
      /open_endpoints: \["\/v1\/models\/load"\] is invalid; expected an array of paths among \/health, \/ready, \/metrics/,
    );
  });
});

describe('keys in the config are checked without echoing them', () => {
  test('a bad scope, an unknown field and a key with a space are refused by their place, never their key', async () => {
    const secret = 'sk-secret-0a9b8c7d6e';
    const cases: [unknown, RegExp][] = [
      [
        [{ key: secret, scope: 'root' }],
        /^api_keys\[0\]: "root" is not a scope; expected inference or admin$/,
      ],
      [[{ key: secret, scope: 'admin', note: 1 }], /^api_keys\[0\]: unknown key "note"/],
      [[{ key: `${secret} x`, scope: 'admin' }], /^api_keys\[0\]: the key is invalid/],
      [{ key: secret }, /^api_keys: expected an array/],
    ];
    for (const [api_keys, pattern] of cases) {
      await assert.rejects(startServer({ api_keys, models: [fixtureModel('m')] }), (err: Error) => {
        assert.match(err.message, pattern);
        assert.ok(!err.message.includes(secret), err.message);
        return true;
      });
    }
    await assert.rejects(
      withEnvKeys(`${secret}:owner`, () => startServer({ models: [fixtureModel('m')] })),
      (err: Error) =>
        /^VOXD_API_KEYS entry 1: "owner" is not a scope/.test(err.message) && !err.message.includes(secret),
    );
  });
});

describe('the loopback rule and the fixture engine, in process', () => {
  test('without keys a non-loopback host is refused unless insecure; with keys it starts', async () => {
    await assert.rejects(
      startServer({ models: [fixtureModel('m')] }, { overrides: { host: '0.0.0.0' } }),
      /host: 0\.0\.0\.0 is reachable from other machines and no API key is set; set api_keys, --api-keys-file or VOXD_API_KEYS, or pass --insecure/,
    );
    for (const [raw, overrides] of [
      [{}, { host: '0.0.0.0', insecure: true }],
      [{ insecure: true }, { host: '0.0.0.0' }],
      [{ api_keys: [{ key: CONFIG_ADMIN, scope: 'admin' }] }, { host: '0.0.0.0' }],
    ] as const) {
      const s = await startServer({ ...raw, models: [fixtureModel('m')] }, { overrides });
      await s.close();
    }
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1', 'localhost'])
      assert.equal(isLoopbackHost(host), true, host);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', '::ffff:10.0.0.1', '128.0.0.1'])
      assert.equal(isLoopbackHost(host), false, host);
  });

  test('the fixture family is refused without --enable-fixture: at startup and on the load route', async () => {
    await assert.rejects(
      startServer({ models: [fixtureModel('m')] }, { overrides: { enable_fixture: false } }),
      /models\[0\]\.family: "fixture" is the test engine and is off; start voxd with --enable-fixture \(or VOXD_ENABLE_FIXTURE=1\)/,
    );
    const registration = { id: 'late', family: 'fixture', path: '.', task: 'asr' };
    await withServer(
      { ui_management: true, models: [] },
      { overrides: { enable_fixture: false } },
      async (off) => {
        const res = await request(off.url, 'POST', '/v1/models/load', {
          body: JSON.stringify(registration),
          headers: { 'content-type': 'application/json' },
        });
        assert.match(errorOf(res, 400, 'invalid_request_error'), /--enable-fixture/);
        assert.equal(res.json.error.param, 'family');
      },
    );
    await withServer({ ui_management: true, models: [] }, async (on) => {
      const res = await request(on.url, 'POST', '/v1/models/load', {
        body: JSON.stringify(registration),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 200, res.body.toString());
    });
  });
});
