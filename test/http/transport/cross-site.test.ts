/**
 * A keyless voxd and web pages of other sites (probe F8), through real HTTP and WebSockets: the
 * probe's four cross-site `text/plain` POSTs (unload every model, register a model, delete a
 * package, move the models root) are refused and change nothing, while the same requests as JSON
 * from voxd's own page or from curl (no Origin) work; a multipart upload from another origin is
 * refused; a DNS-rebinding Host is refused over HTTP, on /v1/realtime and on a bridge socket; an
 * allowed_hosts name is answered; with API keys or cors_origins "*" the checks step aside as
 * documented.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { hostAllowed, hostnameOf } from '../../../src/http/transport/host.js';
import { fixtureModel, modelStatus, startServer, type TestServer, withServer } from '../../helpers/voxd.js';
import { openSocket, refusal } from '../../helpers/websocket.js';

const EVIL = 'http://evil.example';

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: error bodies and answers are read as plain JSON
  json: any;
}

/**
 * One request through node:http, which sends the Host given (fetch sets its own): the header a
 * rebinding page's requests carry.
 */
function send(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const json = (res.headers['content-type'] ?? '').includes('application/json')
          ? JSON.parse(text)
          : text;
        resolve({ status: res.statusCode ?? 0, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The answer's error code after checking its status and that its message names `parts`. */
function refusedWith(answer: Answer, status: number, code: string, ...parts: string[]): void {
  assert.equal(answer.status, status, JSON.stringify(answer.json));
  assert.equal(answer.json.error.code, code);
  for (const part of parts) assert.ok(answer.json.error.message.includes(part), answer.json.error.message);
}

/** A folder the installer lists as an installed package (what the probe deleted), in `root`. */
function fakePackage(root: string, id: string): string {
  const dir = join(root, id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, '.voxd-package.json'),
    JSON.stringify({ family: 'whisper_asr', task: 'asr', path: '.' }),
  );
  return dir;
}

const WAV = encodeWav({
  samples: Float32Array.from({ length: 8000 }, (_, i) => 0.3 * Math.sin(i / 5)),
  sampleRate: 16000,
  channels: 1,
});
const BOUNDARY = 'voxd-cross-site';
const UPLOAD = Buffer.concat([
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nasr\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  ),
  WAV,
  Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
]);
const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;

describe('a keyless server with ui_management', () => {
  let s: TestServer;
  /** voxd's own origin, as its web UI sends it. */
  let own: string;
  before(async () => {
    s = await startServer({
      ui: true,
      ui_management: true,
      models: [fixtureModel('asr'), fixtureModel('tts', { task: 'tts' })],
    });
    own = new URL(s.url).origin;
  });
  after(() => s.close());

  /** The probe's four requests; `n` tells apart the ids and folders of repeated runs. */
  const probe = (n: string) => [
    { path: '/v1/tasks/unload_all_models', body: {} },
    { path: '/v1/models/load', body: { id: `csrf${n}`, family: 'fixture', task: 'tts', path: '.' } },
    { path: '/v1/ui/models/delete', body: { id: `whisper-tiny.en${n}` } },
    { path: '/v1/ui/models-root', body: { path: join(s.dir, `moved${n}`) } },
  ];

  test("the probe's cross-site text/plain POSTs are refused and change nothing", async () => {
    const pkg = fakePackage(join(s.dir, 'models'), 'whisper-tiny.en');
    assert.equal((await modelStatus(s.url, 'tts')).loaded, true);
    for (const { path, body } of probe('')) {
      const text = JSON.stringify(body);
      // A page's form or fetch: another origin, so no preflight was needed for text/plain.
      const page = await send(s.url, 'POST', path, { 'content-type': 'text/plain', origin: EVIL }, text);
      refusedWith(page, 403, 'origin_not_allowed', `POST ${path}`, `"${EVIL}"`, '--allowed-hosts');
      // A browser that sent no Origin: the content type alone refuses it where the route reads
      // JSON (unload_all_models reads no body; the Origin check is what guards it).
      if (path === '/v1/tasks/unload_all_models') continue;
      const bare = await send(s.url, 'POST', path, { 'content-type': 'text/plain' }, text);
      refusedWith(bare, 415, 'unsupported_media_type', 'Content-Type "text/plain"', path, 'application/json');
    }
    const form = await send(
      s.url,
      'POST',
      '/v1/models/load',
      { 'content-type': 'application/x-www-form-urlencoded' },
      'id=csrf&family=fixture&task=tts&path=.',
    );
    refusedWith(form, 415, 'unsupported_media_type', 'application/x-www-form-urlencoded');
    // Nothing happened: the model is loaded, none was registered, the package and the root stay.
    assert.equal((await modelStatus(s.url, 'tts')).loaded, true);
    assert.equal(await modelStatus(s.url, 'csrf'), undefined);
    assert.ok(existsSync(pkg));
    assert.equal(existsSync(join(s.dir, 'moved')), false);
    const root = await send(s.url, 'GET', '/v1/ui/models-root');
    assert.equal(root.json.models_root, join(s.dir, 'models'));
  });

  test("the same requests as JSON work from voxd's own page and from a client without Origin", async () => {
    for (const [n, origin] of [
      ['-ui', { origin: own }],
      ['-curl', {}],
    ] as const) {
      const root = (await send(s.url, 'GET', '/v1/ui/models-root')).json.models_root;
      const pkg = fakePackage(root, `whisper-tiny.en${n}`);
      for (const { path, body } of probe(n)) {
        const headers = { 'content-type': 'application/json; charset=utf-8', ...origin };
        const answer = await send(s.url, 'POST', path, headers, JSON.stringify(body));
        assert.equal(answer.status, 200, `${n} ${path}: ${JSON.stringify(answer.json)}`);
      }
      assert.ok((await modelStatus(s.url, `csrf${n}`)) !== undefined);
      assert.equal(existsSync(pkg), false);
      assert.ok(existsSync(join(s.dir, `moved${n}`)));
    }
  });

  test("a multipart upload from another origin is refused; from voxd's page or without Origin it runs", async () => {
    const type = { 'content-type': MULTIPART };
    const path = '/v1/audio/transcriptions';
    refusedWith(
      await send(s.url, 'POST', path, { ...type, origin: EVIL }, UPLOAD),
      403,
      'origin_not_allowed',
      EVIL,
    );
    assert.equal((await send(s.url, 'POST', path, { ...type, origin: own }, UPLOAD)).status, 200);
    assert.equal((await send(s.url, 'POST', path, type, UPLOAD)).status, 200);
    // A form a page posts as text/plain without Origin: the upload routes read JSON or multipart only.
    const plain = await send(s.url, 'POST', path, { 'content-type': 'text/plain' }, UPLOAD);
    refusedWith(plain, 415, 'unsupported_media_type', 'application/json or multipart/form-data');
  });

  test('an Origin of "null" (a sandboxed frame, a file) is no page of voxd', async () => {
    const answer = await send(s.url, 'POST', '/v1/tasks/unload_all_models', { origin: 'null' });
    refusedWith(answer, 403, 'origin_not_allowed', '"null"');
  });

  test('a DNS-rebinding Host is refused; IP addresses and names no outside page can own are answered', async () => {
    const { port } = new URL(s.url);
    for (const host of [
      `evil.example:${port}`,
      'evil.example',
      `127.0.0.1.nip.io:${port}`,
      'localhost.example',
    ]) {
      // A rebinding page is of its own origin to the browser: Origin matches Host, and GETs send none.
      refusedWith(
        await send(s.url, 'GET', '/v1/models', { host }),
        403,
        'host_not_allowed',
        `"${host}"`,
        'allowed_hosts',
      );
      const post = await send(
        s.url,
        'POST',
        '/v1/tasks/unload_all_models',
        { host, origin: `http://${host}`, 'content-type': 'application/json' },
        '{}',
      );
      refusedWith(post, 403, 'host_not_allowed');
    }
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      `LOCALHOST:${port}`,
      `192.168.1.5:${port}`,
      'voxd',
      `app.localhost:${port}`,
      'printer.local',
      'svc.cluster.internal',
    ])
      assert.equal((await send(s.url, 'GET', '/v1/models', { host })).status, 200, host);
  });

  test('a DNS-rebinding Host is refused on the /v1/realtime upgrade', async () => {
    const { port } = new URL(s.url);
    const host = `evil.example:${port}`;
    const r = await refusal(`${s.url}/v1/realtime?model=asr`, {
      headers: { host, origin: `http://${host}` },
    });
    assert.equal(r.status, 403);
    assert.equal(r.error.code, 'host_not_allowed');
    // The page's own origin under a name voxd answers still opens a session.
    const ok = await openSocket(`${s.url}/v1/realtime?model=asr`, { headers: { origin: own } });
    ok.ws.close();
    await ok.closed;
  });
});

test('hostnameOf and hostAllowed: the port, brackets, case and a final dot do not matter', () => {
  assert.equal(hostnameOf('Evil.Example.:8080'), 'evil.example');
  assert.equal(hostnameOf('[::1]:80'), '::1');
  assert.equal(hostnameOf('::1'), '::1');
  const none = { allowed_hosts: [] };
  assert.equal(hostAllowed('evil.example.', none), false);
  // A dotless name with a final dot is still dotless; a suffix is no match inside a label.
  assert.equal(hostAllowed('voxd.', none), true);
  assert.equal(hostAllowed('notlocalhost.example', none), false);
  const listed = { allowed_hosts: ['voxd.example.com', '.corp.example'] };
  assert.equal(hostAllowed('VOXD.example.com:443', listed), true);
  assert.equal(hostAllowed('a.b.corp.example', listed), true);
  assert.equal(hostAllowed('corp.example', listed), true);
  assert.equal(hostAllowed('xcorp.example', listed), false);
  assert.equal(hostAllowed('anything.example', { allowed_hosts: ['*'] }), true);
});

test('allowed_hosts: a listed name is answered, its pages may call voxd, other names are still refused', async () => {
  await withServer(
    { allowed_hosts: ['voxd.example.com'], models: [fixtureModel('asr')], frontend_listener: 'websocket' },
    async (s) => {
      const { port } = new URL(s.url);
      assert.equal(
        (await send(s.url, 'GET', '/v1/models', { host: `voxd.example.com:${port}` })).status,
        200,
      );
      refusedWith(
        await send(s.url, 'GET', '/v1/models', { host: `other.example:${port}` }),
        403,
        'host_not_allowed',
      );
      // Behind a proxy that sends its upstream's name as Host, the page's Origin is the public name.
      const unload = await send(
        s.url,
        'POST',
        '/v1/tasks/unload_all_models',
        { host: 'voxd', origin: 'https://voxd.example.com', 'content-type': 'application/json' },
        '{}',
      );
      assert.equal(unload.status, 200);
      const listed = await openSocket(`${s.url}/v1/realtime`, {
        headers: { host: `voxd.example.com:${port}`, origin: `http://voxd.example.com:${port}` },
      });
      listed.ws.close();
      await listed.closed;
    },
  );
});

test('the WebSocket bridge: a rebinding Host and a foreign Origin are refused at the upgrade, and its frames are checked as HTTP', async () => {
  await withServer({ frontend_listener: 'websocket', models: [fixtureModel('asr')] }, async (s) => {
    const { port } = new URL(s.url);
    const url = `${s.url}/v1/tasks/unload_all_models`;
    const host = `evil.example:${port}`;
    const rebound = await refusal(url, { headers: { host, origin: `http://${host}` } });
    assert.equal(rebound.status, 403);
    assert.equal(rebound.error.code, 'host_not_allowed');
    const foreign = await refusal(url, { headers: { origin: EVIL } });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.error.code, 'origin_not_allowed');
    assert.match(foreign.error.message, /open a bridge WebSocket/);
    // A socket without Origin is open; a frame that names a page of another origin is refused as HTTP.
    const socket = await openSocket(url);
    socket.send({ id: 1, headers: { origin: EVIL }, body_json: {} });
    const answer = await socket.messages.next((m) => m.id === 1);
    assert.equal(answer.status, 403, JSON.stringify(answer));
    socket.send({ id: 2, body_json: {} });
    assert.equal((await socket.messages.next((m) => m.id === 2)).status, 200);
    socket.ws.close();
    await socket.closed;
  });
});

test('cors_origins "*": pages of any origin may call a keyless server, but a rebinding Host is still refused', async () => {
  await withServer({ cors_origins: '*', models: [fixtureModel('asr')] }, async (s) => {
    const { port } = new URL(s.url);
    const json = { 'content-type': 'application/json' };
    assert.equal(
      (await send(s.url, 'POST', '/v1/tasks/unload_all_models', { ...json, origin: EVIL }, '{}')).status,
      200,
    );
    // The content type still holds: a page must send JSON, with the preflight "*" grants.
    refusedWith(
      await send(
        s.url,
        'POST',
        '/v1/models/unload',
        { 'content-type': 'text/plain', origin: EVIL },
        '{"id":"asr"}',
      ),
      415,
      'unsupported_media_type',
    );
    refusedWith(
      await send(s.url, 'GET', '/v1/models', { host: `evil.example:${port}` }),
      403,
      'host_not_allowed',
    );
  });
});

test('with API keys the checks step aside: a page cannot attach a key, and a proxy needs no listing', async () => {
  const key = 'sk-cross-site-admin-4b1e';
  await withServer({ api_keys: [{ key, scope: 'admin' }], models: [fixtureModel('asr')] }, async (s) => {
    const auth = { authorization: `Bearer ${key}` };
    assert.equal((await send(s.url, 'GET', '/v1/models', { ...auth, host: 'voxd.example.com' })).status, 200);
    const plain = await send(
      s.url,
      'POST',
      '/v1/tasks/unload_all_models',
      { ...auth, 'content-type': 'text/plain', origin: EVIL },
      '{}',
    );
    assert.equal(plain.status, 200);
    // What protects it: the same request without the key.
    const page = await send(s.url, 'POST', '/v1/tasks/unload_all_models', {
      'content-type': 'text/plain',
      origin: EVIL,
    });
    refusedWith(page, 401, 'missing_api_key');
  });
});
