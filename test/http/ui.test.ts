/** The web UI over real HTTP: the static files and their headers, and the dashboard's status stream. */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openStatusStreams } from '../../src/http/routes/ui.js';
import { suiteServer } from '../helpers/suite-server.js';
import { fixtureModel, get, runTask, tempDir, waitUntil, withDeadline, withServer } from '../helpers/voxd.js';

const CSP_PARTS = [
  "default-src 'self'",
  "img-src 'self' blob: data:",
  "media-src 'self' blob: data:",
  "script-src 'self'",
];

function assertUiHeaders(headers: Headers): void {
  assert.equal(headers.get('cache-control'), 'no-store');
  assert.equal(headers.get('expires'), '0');
  assert.equal(headers.get('pragma'), 'no-cache');
  assert.equal(headers.get('x-content-type-options'), 'nosniff');
  const csp = headers.get('content-security-policy') ?? '';
  for (const part of CSP_PARTS) assert.ok(csp.includes(part), `CSP has ${part}: ${csp}`);
  assert.ok(
    !csp.includes('unsafe-inline') && !csp.includes('http'),
    `CSP allows only self, blob:, data: ${csp}`,
  );
}

/** GET with the path sent exactly as written (fetch would resolve `..` segments first). */
function rawGet(base: string, path: string): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    httpGet({ hostname, port, path }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

/** Reads a status stream's `data:` events as they come. */
class StreamReader {
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #text = '';
  #decoder = new TextDecoder();
  ended = false;
  constructor(body: ReadableStream<Uint8Array>) {
    this.#reader = body.getReader();
  }
  /** The next `data:` event (parsed, or the string `[DONE]`); comments are skipped. */
  async next(): Promise<unknown> {
    for (;;) {
      const end = this.#text.indexOf('\n\n');
      if (end >= 0) {
        const frame = this.#text.slice(0, end);
        this.#text = this.#text.slice(end + 2);
        if (frame.startsWith(':')) continue;
        assert.ok(frame.startsWith('data: '), frame);
        const data = frame.slice(6);
        return data === '[DONE]' ? data : JSON.parse(data);
      }
      const { value, done } = await this.#reader.read();
      if (done) {
        this.ended = true;
        return undefined;
      }
      this.#text += this.#decoder.decode(value, { stream: true });
    }
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the stream's JSON
const stateOf = (event: any, id: string) => event.data.find((m: { id: string }) => m.id === id)?.state;

describe('ui on', () => {
  const s = suiteServer({ ui: true, models: [fixtureModel('m')] });

  test('GET / serves the page with the UI headers and Clear-Site-Data', async () => {
    const res = await get(s.url, '/');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assertUiHeaders(res.headers);
    assert.equal(res.headers.get('clear-site-data'), '"cache"');
    const html = res.body.toString('utf8');
    assert.match(html, /<script type="module" src="\/ui\/app.js"><\/script>/);
    assert.doesNotMatch(
      html,
      /<script>|<script type="module">|https?:\/\//,
      'no inline script, nothing from elsewhere',
    );
  });

  test('assets come with their content types and the UI headers', async () => {
    for (const [path, type] of [
      ['/ui/app.js', 'text/javascript; charset=utf-8'],
      ['/ui/style.css', 'text/css; charset=utf-8'],
      ['/ui/index.html', 'text/html; charset=utf-8'],
    ]) {
      const res = await get(s.url, path!);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-type'), type, path);
      assertUiHeaders(res.headers);
      assert.equal(res.headers.get('clear-site-data'), null, `${path}: Clear-Site-Data only on /`);
      assert.ok(res.body.length > 0);
    }
  });

  test('every module the page imports is served as JavaScript', async () => {
    const pending = ['app.js'];
    const seen = new Set<string>();
    while (pending.length > 0) {
      const name = pending.pop()!;
      if (seen.has(name)) continue;
      seen.add(name);
      const res = await get(s.url, `/ui/${name}`);
      assert.equal(res.status, 200, name);
      assert.equal(res.headers.get('content-type'), 'text/javascript; charset=utf-8', name);
      for (const [, imported] of res.body.toString('utf8').matchAll(/from '\.\/([a-z-]+\.js)'/g)) {
        pending.push(imported!);
      }
    }
    assert.ok(seen.size > 3, `only ${[...seen].join(', ')}`);
  });

  test('paths outside the allow-list answer 404, traversal included', async () => {
    for (const path of [
      '/ui/../package.json',
      '/ui/%2e%2e/package.json',
      '/ui/..%2fpackage.json',
      '/ui/app.js/../../package.json',
      '/ui/',
      '/ui/missing.js',
      '/ui//etc/passwd',
      '/ui/%2fetc%2fpasswd',
      '/../ui/app.js/..',
      '/index.html',
    ]) {
      assert.equal(await rawGet(s.url, path), 404, path);
    }
  });
});

describe('ui off', () => {
  const s = suiteServer({ ui: false, models: [fixtureModel('m')] });

  test('GET /, the assets and the status stream answer 404', async () => {
    for (const path of ['/', '/ui/app.js', '/ui/style.css', '/v1/ui/status/stream']) {
      const res = await get(s.url, path);
      assert.equal(res.status, 404, path);
      assert.equal(res.json.error.message, `unknown endpoint: ${path}`);
    }
  });
});

describe('status stream', () => {
  test('sends the models at once, then a new event as a model loads; stops when the client goes', async (t) => {
    const gateDir = tempDir();
    t.after(() => rmSync(gateDir, { recursive: true, force: true }));
    const loadGate = join(gateDir, 'load');
    const controller = new AbortController();
    await withServer(
      {
        ui: true,
        models: [fixtureModel('cold', { lazy: true, load_options: { load_gate: loadGate } })],
      },
      { beforeClose: [() => controller.abort(), () => writeFileSync(loadGate, '')] },
      async (s) => {
        const res = await fetch(`${s.url}/v1/ui/status/stream`, { signal: controller.signal });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
        const events = new StreamReader(res.body!);
        // biome-ignore lint/suspicious/noExplicitAny: the stream's JSON
        const first: any = await events.next();
        assert.equal(first.object, 'list');
        const entry = first.data[0];
        for (const key of ['id', 'family', 'task', 'mode', 'state', 'isolation'])
          assert.ok(key in entry, key);
        assert.equal(entry.id, 'cold');
        assert.equal(entry.loaded, false);
        assert.equal(openStatusStreams(), 1);

        const running = runTask(s, 'cold');
        assert.equal(
          stateOf(await withDeadline(events.next(), 'the loading event', 5000), 'cold'),
          'loading',
        );
        writeFileSync(loadGate, '');
        assert.equal((await running).status, 200);
        // The next change is the loaded model (a run may show in between).
        let last: unknown;
        do last = await withDeadline(events.next(), 'the loaded event', 5000);
        while (stateOf(last, 'cold') !== 'ready');

        controller.abort();
        await waitUntil('the stream stopped', () => openStatusStreams() === 0, 3000);
      },
    );
  });

  test('ends with [DONE] when the server shuts down, without holding the shutdown', async () => {
    await withServer({ ui: true, shutdown_timeout_ms: 60_000, models: [fixtureModel('m')] }, async (s) => {
      const res = await fetch(`${s.url}/v1/ui/status/stream`);
      const events = new StreamReader(res.body!);
      await events.next();
      const closed = s.voxd.close();
      assert.equal(await withDeadline(events.next(), 'the end of the stream', 3000), '[DONE]');
      assert.equal(await events.next(), undefined);
      await withDeadline(closed, 'the shutdown', 3000);
      assert.equal(openStatusStreams(), 0);
    });
  });
});
