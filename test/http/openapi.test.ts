/**
 * GET /openapi.json: the document is well formed OpenAPI 3.1, describes exactly the routes the
 * server registers, and real responses of a real voxd (every route, happy paths and errors) match
 * what it documents for their path, method and status.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ROUTES } from '../../src/http/index.js';
import { buildOpenApi } from '../../src/http/openapi.js';
import { assertMatchesOpenApi, OPENAPI } from '../helpers/openapi.js';
import { sseEvents } from '../helpers/sse.js';
import {
  fixtureModel,
  get,
  type HttpResult,
  post,
  request,
  startServer,
  type TestServer,
  withServer,
} from '../helpers/voxd.js';
import { smallWav } from './wav-helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON
type Json = any;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every `$ref` in the document, with where it is. */
function refs(node: Json, at: string, out: [string, string][] = []): [string, string][] {
  if (Array.isArray(node))
    node.forEach((v, i) => {
      refs(v, `${at}/${i}`, out);
    });
  else if (node && typeof node === 'object')
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref') out.push([at, value as string]);
      else refs(value, `${at}/${key}`, out);
    }
  return out;
}

function resolvePointer(doc: Json, ref: string): unknown {
  assert.ok(ref.startsWith('#/'), `only local references: ${ref}`);
  let node = doc;
  for (const part of ref.slice(2).split('/')) {
    node = node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    if (node === undefined) return undefined;
  }
  return node;
}

describe('the OpenAPI document', () => {
  test('is structurally OpenAPI 3.1: top-level fields, resolvable references, responses everywhere', () => {
    const doc = buildOpenApi(ROUTES);
    assert.equal(doc['openapi'], '3.1.0');
    const info = doc['info'] as Json;
    assert.equal(typeof info.title, 'string');
    assert.match(info.version, /^\d+\.\d+\.\d+/);
    assert.deepEqual(doc['servers'], [{ url: '/' }]);
    const tags = new Set((doc['tags'] as Json[]).map((t) => t.name));
    assert.deepEqual(
      [...tags].sort(),
      ['Audio', 'Installer', 'Management', 'Models', 'Operations', 'Tasks', 'UI'].sort(),
    );
    for (const [at, ref] of refs(doc, '#'))
      assert.notEqual(resolvePointer(doc, ref), undefined, `${at}: $ref ${ref} does not resolve`);
    const operationIds = new Set<string>();
    for (const [path, item] of Object.entries(doc['paths'] as Json)) {
      assert.ok(path.startsWith('/'), path);
      for (const [method, op] of Object.entries(item as Json) as [string, Json][]) {
        assert.ok(METHODS.includes(method), `${path}: ${method}`);
        assert.ok(Object.keys(op.responses ?? {}).length > 0, `${method} ${path} has no responses`);
        // The realtime route's success is the WebSocket upgrade, 101.
        assert.ok(op.responses['200'] ?? op.responses['101'], `${method} ${path} has no 200 (or 101)`);
        assert.ok(typeof op.summary === 'string' && op.summary.length > 0, `${method} ${path} summary`);
        assert.ok(op.tags.length === 1 && tags.has(op.tags[0]), `${method} ${path} tags ${op.tags}`);
        assert.ok(!operationIds.has(op.operationId), `duplicate operationId ${op.operationId}`);
        operationIds.add(op.operationId);
        for (const [status, response] of Object.entries(op.responses) as [string, Json][]) {
          assert.match(status, /^[1-5]\d\d$/, `${method} ${path}`);
          const resolved = response.$ref ? resolvePointer(doc, response.$ref) : response;
          assert.equal(typeof (resolved as Json).description, 'string', `${method} ${path} ${status}`);
        }
      }
    }
    // Every schema is valid JSON Schema 2020-12, OpenAPI 3.1's dialect (no 3.0 `nullable`).
    const ajv = new Ajv2020({ strict: false });
    const schemas: Json[] = [...Object.values((doc['components'] as Json).schemas)];
    for (const item of Object.values(doc['paths'] as Json) as Json[])
      for (const op of Object.values(item) as Json[]) {
        for (const p of op.parameters ?? []) schemas.push(p.schema);
        for (const media of Object.values(op.requestBody?.content ?? {}) as Json[])
          schemas.push(media.schema);
      }
    for (const schema of schemas) {
      assert.ok(ajv.validateSchema(schema), `${JSON.stringify(schema).slice(0, 200)}: ${ajv.errorsText()}`);
      assert.ok(!JSON.stringify(schema).includes('"nullable"'), 'nullable is OpenAPI 3.0');
    }
    // The document is plain JSON (what the route sends).
    assert.deepEqual(JSON.parse(JSON.stringify(doc)), doc);
  });

  test('describes every route of ROUTES, and nothing else', () => {
    const doc = buildOpenApi(ROUTES);
    const described = new Set<string>();
    for (const [path, item] of Object.entries(doc['paths'] as Json))
      for (const method of Object.keys(item as Json)) described.add(`${method.toUpperCase()} ${path}`);
    const registered = new Set(ROUTES.map((r) => `${r.method} ${r.path}`));
    for (const route of registered) assert.ok(described.has(route), `${route} is not in the document`);
    for (const op of described) assert.ok(registered.has(op), `${op} is described but not served`);
    assert.ok(registered.has('GET /openapi.json'));
  });

  test('a route with no description is refused when the document is built', () => {
    const handler = async () => ({});
    assert.throws(
      () => buildOpenApi([...ROUTES, { method: 'POST', path: '/v1/new', scope: 'inference', handler }]),
      /POST \/v1\/new has no description/,
    );
  });

  test("a route's 200 JSON answer is the response it declares, published under its title", () => {
    const doc = buildOpenApi(ROUTES) as Json;
    let declared = 0;
    for (const route of ROUTES) {
      const where = `${route.method} ${route.path}`;
      const documented = doc.paths[route.path][route.method.toLowerCase()].responses['200']?.content ?? {};
      if (!route.response) {
        assert.equal(
          documented['application/json'],
          undefined,
          `${where} documents JSON it does not declare`,
        );
        continue;
      }
      declared++;
      const name = route.response.title;
      assert.ok(name, `${where}: its response schema has no title`);
      assert.deepEqual(
        documented['application/json'],
        { schema: { $ref: `#/components/schemas/${name}` } },
        where,
      );
      assert.deepEqual(doc.components.schemas[name], JSON.parse(JSON.stringify(route.response)), where);
    }
    // The JSON-answering routes: operations, models, voices, speech, transcriptions, tasks, management, installer.
    assert.ok(declared >= 25, `only ${declared} routes declare a response`);
  });

  test('a JSON-answering route that declares no response is refused when the document is built', () => {
    const health = ROUTES.find((r) => r.path === '/health')!;
    const { response: _, ...undeclared } = health;
    assert.throws(
      () => buildOpenApi(ROUTES.map((r) => (r === health ? undeclared : r))),
      /GET \/health: its 200 has no content/,
    );
  });

  test('security: bearerAuth on every route except the open ones', () => {
    const doc = buildOpenApi(ROUTES) as Json;
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
      ...doc.components.securitySchemes.bearerAuth,
      type: 'http',
      scheme: 'bearer',
    });
    assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
    // Open whatever the keys: the API's description and the UI's files. Open while listed in
    // open_endpoints (the default), else keyed: health, readiness and metrics.
    const open = new Set(['/openapi.json', '/']);
    const openable = new Set(['/health', '/ready', '/metrics']);
    for (const [path, item] of Object.entries(doc.paths) as [string, Json][])
      for (const op of Object.values(item) as Json[]) {
        if (openable.has(path)) {
          assert.deepEqual(op.security, [{}, { bearerAuth: [] }], path);
          assert.ok(op.responses['401'], `${path}: 401 once closed`);
          continue;
        }
        const isOpen = open.has(path) || path.startsWith('/ui/');
        assert.deepEqual(op.security, isOpen ? [] : undefined, path);
        if (!isOpen) assert.ok(op.responses['401'] && op.responses['403'], `${path}: 401 and 403`);
      }
  });
});

/** One checked exchange: the status the test expects, and the document's word on the response. */
function expect(res: HttpResult, method: string, path: string, status: number): HttpResult {
  assert.equal(res.status, status, `${method} ${path}: ${res.body.toString('utf8').slice(0, 300)}`);
  assertMatchesOpenApi(method, path, res.status, res.headers, res.body);
  return res;
}

async function getOk(s: TestServer, path: string, status = 200): Promise<HttpResult> {
  return expect(await get(s.url, path), 'GET', path, status);
}

async function postOk(s: TestServer, path: string, body: unknown, status = 200): Promise<HttpResult> {
  return expect(await post(s.url, path, body), 'POST', path, status);
}

async function postForm(
  s: TestServer,
  path: string,
  fields: Record<string, string>,
  files = 1,
  status = 200,
) {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.set(key, value);
  for (let i = 0; i < files; i++) form.append('file', new Blob([smallWav()]), `a${i}.wav`);
  return expect(await request(s.url, 'POST', path, { body: form }), 'POST', path, status);
}

/** A live route: raw PCM sent chunked (a streamed request body), read to its end. */
async function postLive(s: TestServer, target: string, status = 200): Promise<HttpResult> {
  const pcm = smallWav().subarray(44);
  const body = new ReadableStream({
    start(controller) {
      controller.enqueue(pcm.subarray(0, 1000));
      controller.enqueue(pcm.subarray(1000));
      controller.close();
    },
  });
  const res = await fetch(`${s.url}${target}`, { method: 'POST', body, duplex: 'half' } as RequestInit);
  const result = {
    status: res.status,
    headers: res.headers,
    body: Buffer.from(await res.arrayBuffer()),
    json: undefined,
  };
  return expect(result, 'POST', target, status);
}

describe('real responses match the document', () => {
  let s: TestServer;
  const streaming = { mode: 'streaming' };
  before(async () => {
    s = await startServer({
      ui: true,
      ui_management: true,
      models: [
        fixtureModel('asr'),
        fixtureModel('asr-stream', { ...streaming, default_request_options: { chunks: 2 } }),
        fixtureModel('tts', { task: 'tts', load_options: { sample_rate: 16000 } }),
        fixtureModel('tts-stream', { task: 'tts', ...streaming, default_request_options: { chunks: 2 } }),
        fixtureModel('diar', { task: 'diar', ...streaming }),
        fixtureModel('vad', { task: 'vad' }),
        { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
      ],
    });
  });
  after(() => s.close());

  test('operations: health, readiness, models, voices, the document itself', async () => {
    assert.equal((await getOk(s, '/health')).json.status, 'ok');
    await getOk(s, '/ready');
    const models = await getOk(s, '/v1/models?include_params=true&include_session_options=1');
    // The seven models, then flite's default aliases: tts-1, tts-1-hd, gpt-4o-mini-tts.
    assert.equal(models.json.data.length, 10);
    await getOk(s, '/v1/models/flite?include_params=1');
    await getOk(s, '/v1/models/tts-1');
    await getOk(s, '/v1/models/nope', 404);
    await getOk(s, '/v1/audio/voices?model=flite');
    await getOk(s, '/v1/audio/voices?model=nope');
    const doc = await getOk(s, '/openapi.json');
    assert.equal(doc.headers.get('cache-control'), 'no-cache');
    assert.deepEqual(doc.json, OPENAPI);
    await expect(await request(s.url, 'POST', '/openapi.json'), 'POST', '/openapi.json', 405);
    await expect(await request(s.url, 'POST', '/health'), 'POST', '/health', 405);
    await getOk(s, '/v2/nothing', 404);
  });

  test('speech: every plain format, both stream formats, errors', async () => {
    const wav = await postOk(s, '/v1/audio/speech', { model: 'tts', input: 'hello' });
    assert.equal(wav.headers.get('content-type'), 'audio/wav');
    await postOk(s, '/v1/audio/speech', { model: 'tts', input: 'hello', response_format: 'pcm' });
    await postOk(s, '/v1/audio/speech', { model: 'tts', input: 'hello', response_format: 'json' });
    await postOk(s, '/v1/audio/speech', {
      model: 'flite',
      input: 'hello',
      voice: 'alloy',
      response_format: 'b64_json',
    });
    const streamed = await postOk(s, '/v1/audio/speech', { model: 'tts-stream', input: 'hi', stream: true });
    assert.equal(sseEvents(streamed.body).at(-1), '[DONE]');
    await postOk(s, '/v1/audio/speech', { model: 'tts-stream', input: 'hi', stream_format: 'audio' });
    await postOk(s, '/v1/audio/speech', { model: 'tts', input: 'hi', response_format: 'nope' }, 400);
    await postOk(s, '/v1/audio/speech', { model: 'tts' }, 400);
    await postOk(s, '/v1/audio/speech', { model: 'nope', input: 'hi' }, 404);
    await postOk(s, '/v1/audio/speech', { model: 'tts', input: 'hi', options: { run_fail: true } }, 500);
    await expect(
      await request(s.url, 'POST', '/v1/audio/speech', {
        body: '{"model":',
        headers: { 'content-type': 'application/json' },
      }),
      'POST',
      '/v1/audio/speech',
      400,
    );
    await getOk(s, '/v1/audio/speech', 405);
  });

  test('transcriptions: every response format, JSON requests, streams, details, translations, batches', async () => {
    const path = '/v1/audio/transcriptions';
    for (const response_format of ['json', 'text', 'verbose_json', 'srt', 'vtt'])
      await postForm(s, path, { model: 'asr', response_format, 'timestamp_granularities[]': 'word' });
    await postForm(s, path, { model: 'diar', response_format: 'diarized_json' });
    await postForm(s, path, { model: 'diar' });
    const streamed = await postForm(s, path, { model: 'asr-stream', stream: 'true' });
    assert.equal(sseEvents(streamed.body).at(-1), '[DONE]');
    await postForm(s, path, { model: 'asr', response_format: 'nope' }, 1, 400);
    await postForm(s, path, { model: 'nope' }, 1, 404);
    await postForm(s, path, { model: 'asr' }, 0, 400);
    // A server path outside the file roots.
    await postOk(s, path, { model: 'asr', audio: '/etc/passwd' }, 403);
    await postForm(s, '/v1/audio/transcriptions/details', { model: 'diar' });
    await postForm(s, '/v1/audio/transcriptions/details', { model: 'asr', stream: 'true' }, 1, 400);
    await postForm(s, '/v1/audio/translations', { model: 'asr' }, 1, 400);
    const batch = await postForm(s, '/v1/batches/transcriptions', { model: 'asr' }, 2);
    assert.equal(sseEvents(batch.body).at(-1), '[DONE]');
    await postOk(s, '/v1/batches/transcriptions', { model: 'asr' }, 400);
    await getOk(s, '/v1/audio/translations', 405);
  });

  test('live routes', async () => {
    await postLive(s, '/v1/audio/transcriptions/live?model=asr-stream');
    await postLive(s, '/v1/audio/speech/live?model=tts-stream&input=hello&return_text=true');
    await postLive(s, '/v1/audio/speech/live?model=tts-stream&input=hello&stream_format=audio');
    await postLive(s, '/v1/audio/transcriptions/live?model=asr-stream&sample_rate=12junk', 400);
    // The live routes take their model from the query: an unknown one is a bad parameter.
    await postLive(s, '/v1/audio/speech/live?model=nope&input=x', 400);
    await getOk(s, '/v1/audio/speech/live', 405);
  });

  test('tasks: run on each task, stream (JSON and SSE), batch, errors', async () => {
    for (const model of ['asr', 'tts', 'diar', 'vad']) await postOk(s, '/v1/tasks/run', { model, text: 'x' });
    await postOk(s, '/v1/tasks/run', { model: 'asr', audio_base64: smallWav().toString('base64') });
    await postOk(s, '/v1/tasks/run', { model: 'asr', request: 3 }, 400);
    await postOk(s, '/v1/tasks/run', { model: 'nope', text: 'x' }, 404);
    await postOk(s, '/v1/tasks/stream', { model: 'asr-stream', text: 'x' });
    await postOk(s, '/v1/tasks/stream', { model: 'tts-stream', text: 'x', stream_format: 'sse' });
    await postOk(s, '/v1/tasks/stream', { model: 'asr', text: 'x' }, 400);
    const batch = await postOk(s, '/v1/tasks/batch', {
      model: 'asr',
      requests: [{ text: 'one' }, { text: 'two', options: { run_fail: true } }],
    });
    assert.equal(sseEvents(batch.body).at(-1), '[DONE]');
    await postOk(s, '/v1/tasks/batch', { model: 'asr', requests: [] }, 400);
    await getOk(s, '/v1/tasks/run', 405);
  });

  test('management: load, config, unload, unload_models, unload_all_models', async () => {
    await postOk(s, '/v1/models/load', fixtureModel('extra', { task: 'tts' }));
    const config = await getOk(s, '/v1/ui/models/config?id=extra');
    assert.equal((await postOk(s, '/v1/models/load', config.json)).json.reconfigured, false);
    await postOk(s, '/v1/models/load', { id: 'broken', family: 'nope' }, 400);
    await postOk(s, '/v1/models/load', fixtureModel('failing', { load_options: { fail_load: true } }), 500);
    await getOk(s, '/v1/ui/models/config?id=nope', 404);
    await getOk(s, '/v1/ui/models/config', 400);
    await postOk(s, '/v1/models/unload', { id: 'extra' });
    await postOk(s, '/v1/models/unload', { id: 'nope' }, 404);
    await postOk(s, '/v1/tasks/unload_models', { model_ids: ['tts', 'nope'] });
    await postOk(s, '/v1/tasks/unload_models', {}, 400);
    await expect(
      await request(s.url, 'POST', '/v1/tasks/unload_all_models'),
      'POST',
      '/v1/tasks/unload_all_models',
      200,
    );
    await getOk(s, '/v1/models/load', 405);
  });

  test('models root and installer', async () => {
    const root = await getOk(s, '/v1/ui/models-root');
    await postOk(s, '/v1/ui/models-root', { path: '' });
    await postOk(s, '/v1/ui/browse-directories', { path: '' });
    await postOk(s, '/v1/ui/browse-directories', { path: '/proc' }, 403);
    await postOk(s, '/v1/ui/path-status', { path: root.json.models_root });
    await postOk(s, '/v1/ui/path-status', { path: 3 }, 400);
    await postOk(s, '/v1/ui/models/install', { id: 'no-such-package' }, 404);
    await postOk(s, '/v1/ui/models/install', { id: '.bad' }, 400);
    await postOk(s, '/v1/ui/models/install/stop', { id: 'nothing-running' }, 404);
    await postOk(s, '/v1/ui/models/clean-partial', { id: 'nothing' });
    await postOk(s, '/v1/ui/models/delete', { id: 'not-installed' }, 404);
    await getOk(s, '/v1/ui/models/install-status');
    await getOk(s, '/v1/ui/models/install-status?id=nothing');
    await getOk(s, '/v1/ui/models/package-sizes');
    await getOk(s, '/v1/ui/models/installed');
    await getOk(s, '/v1/ui/models/install', 405);
  });

  test('web UI: the page, every file, the status stream', async () => {
    await getOk(s, '/');
    for (const route of ROUTES.filter((r) => r.path.startsWith('/ui/'))) await getOk(s, route.path);
    await getOk(s, '/ui/missing.js', 404);
    const controller = new AbortController();
    const res = await fetch(`${s.url}/v1/ui/status/stream`, { signal: controller.signal });
    const reader = res.body!.getReader();
    let first = '';
    while (!first.includes('\n\n')) first += Buffer.from((await reader.read()).value!).toString('utf8');
    controller.abort();
    await reader.cancel().catch(() => {});
    expect(
      { status: res.status, headers: res.headers, body: Buffer.from(first), json: undefined },
      'GET',
      '/v1/ui/status/stream',
      200,
    );
    assert.equal((sseEvents(Buffer.from(first))[0] as Json).object, 'list');
  });

  test('an undocumented status or content type, or a body off its schema, fails the check', () => {
    const headers = { 'content-type': 'application/json' };
    assert.throws(() => assertMatchesOpenApi('GET', '/health', 418, headers, '{}'), /status not documented/);
    assert.throws(
      () => assertMatchesOpenApi('GET', '/v1/models', 200, { 'content-type': 'text/html' }, ''),
      /Content-Type/,
    );
    assert.throws(
      () => assertMatchesOpenApi('GET', '/v1/models', 200, headers, '{"object":"list","data":[{"id":3}]}'),
      /does not match/,
    );
    assert.throws(() => assertMatchesOpenApi('GET', '/v1/audio/speech', 200, headers, '{}'), /only 405/);
    assert.throws(() => assertMatchesOpenApi('GET', '/nope', 200, headers, '{}'), /only 404/);
  });
});

describe('the gates, as the document says', () => {
  test('ui_management off: 403; ui off: 404', async () => {
    await withServer({ ui: false, ui_management: false, models: [fixtureModel('asr')] }, async (s) => {
      await postOk(s, '/v1/models/load', fixtureModel('x'), 403);
      await getOk(s, '/v1/ui/models/installed', 403);
      await getOk(s, '/v1/ui/models-root', 403);
      await getOk(s, '/', 404);
      await getOk(s, '/v1/ui/status/stream', 404);
    });
  });
});
