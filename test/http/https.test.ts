/**
 * [time.custom-listener] HTTPS is another listener on the same ownership and drain path: requests
 * and streams over TLS, and a shutdown that refuses queued work, lets the running request finish
 * and closes the TLS connections like plain ones. The certificate is a committed self-signed test
 * pair for 127.0.0.1 (test/fixtures/tls; `openssl req -x509 ...`, valid for 100 years).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fixtureModel, waitUntil, whenRuntime, withServer } from '../helpers/voxd.js';

const TLS = fileURLToPath(new URL('../../../test/fixtures/tls/', import.meta.url));
const CA = readFileSync(`${TLS}cert.pem`);

/** One HTTPS request trusting the test certificate; its own connection. */
function call(url: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: body === undefined ? 'GET' : 'POST',
        ca: CA,
        agent: false,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

test('[time.custom-listener] an HTTPS listener serves, streams and drains through the same path', async () => {
  await withServer(
    {
      tls_cert_file: `${TLS}cert.pem`,
      tls_key_file: `${TLS}key.pem`,
      busy_timeout_ms: 0,
      models: [
        fixtureModel('m'),
        fixtureModel('tts', { task: 'tts', mode: 'streaming', default_request_options: { chunks: '2' } }),
      ],
    },
    async (s) => {
      assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await call(s.url, '/ready')).status, 200);
      const stream = await call(s.url, '/v1/audio/speech', { model: 'tts', input: 'secure', stream: true });
      assert.equal(stream.status, 200);
      assert.match(stream.text, /speech\.audio\.delta[\s\S]*speech\.audio\.done[\s\S]*data: \[DONE\]/);

      // A shutdown: the running request finishes, the queued one is refused, the listener closes.
      const gate = s.gate('tls-run');
      const running = call(s.url, '/v1/tasks/run', {
        model: 'm',
        text: 'x',
        options: { run_gate: gate.path },
      });
      await waitUntil('the request runs', () => s.fixture.record.of('m', 'run-start').length === 1);
      const queued = call(s.url, '/v1/tasks/run', { model: 'm', text: 'y' });
      await whenRuntime(
        s.voxd.runtime,
        'the second request queues',
        () => s.voxd.runtime.get('m').scheduler.snapshot().queuedRequests === 1,
      );
      const closing = s.voxd.close();
      const refused = await queued;
      assert.equal(refused.status, 503);
      assert.match(refused.text, /shutting down/);
      await assert.rejects(call(s.url, '/health'), /ECONNREFUSED/);
      await gate.open();
      assert.equal((await running).status, 200);
      await closing;
    },
  );
});

for (const n of [1, 2, 4]) {
  test(`[time.custom-listener] --parallel-jobs, slots=${n}: the HTTPS listener drains the running slots, refuses the queue and closes`, async () => {
    await withServer(
      {
        tls_cert_file: `${TLS}cert.pem`,
        tls_key_file: `${TLS}key.pem`,
        busy_timeout_ms: 0,
        models: [fixtureModel('m', { slots: n })],
      },
      { parallel: true },
      async (s) => {
        const gate = s.gate('tls-run');
        const running = Array.from({ length: n }, (_, i) =>
          call(s.url, '/v1/tasks/run', { model: 'm', text: `r${i}`, options: { run_gate: gate.path } }),
        );
        await waitUntil('every slot runs', () => s.fixture.record.of('m', 'run-start').length === n);
        const queued = call(s.url, '/v1/tasks/run', { model: 'm', text: 'q' });
        await whenRuntime(
          s.voxd.runtime,
          'one more request queues',
          () => s.voxd.runtime.get('m').scheduler.snapshot().queuedRequests === 1,
        );
        let closed = false;
        const closing = s.voxd.close().then(() => {
          closed = true;
        });
        const refused = await queued;
        assert.equal(refused.status, 503);
        assert.match(refused.text, /shutting down/);
        await assert.rejects(call(s.url, '/health'), /ECONNREFUSED/);
        assert.equal(closed, false, 'the shutdown waits for the running slots');
        assert.equal(
          s.fixture.record.of('m', 'session-disposed').length,
          0,
          'no session destroyed while in use',
        );
        await gate.open();
        for (const res of await Promise.all(running)) assert.equal(res.status, 200);
        await closing;
        assert.equal(s.fixture.record.of('m', 'session-disposed').length, n);
      },
    );
  });
}

test('[time.custom-listener] --parallel-jobs: a running slot past shutdown_timeout_ms is cancelled (503) and the HTTPS listener closes within the deadline', async () => {
  await withServer(
    {
      tls_cert_file: `${TLS}cert.pem`,
      tls_key_file: `${TLS}key.pem`,
      busy_timeout_ms: 0,
      shutdown_timeout_ms: 300,
      models: [fixtureModel('m', { slots: 2 })],
    },
    { parallel: true },
    async (s) => {
      const hung = call(s.url, '/v1/tasks/run', { model: 'm', text: 'h', options: { hang: 'true' } });
      await waitUntil('the hung run starts', () => s.fixture.record.of('m', 'run-start').length === 1);
      await s.voxd.close();
      const res = await hung;
      assert.equal(res.status, 503);
      assert.match(res.text, /shutdown_timeout_ms=300/);
      assert.deepEqual(
        s.fixture.record.of('m', 'run-end').map((e) => (e as { outcome: string }).outcome),
        ['aborted'],
      );
    },
  );
});

test("audio.cpp's https frontend listener is the same HTTPS: frontend_options cert_file and key_file", async () => {
  await withServer(
    {
      frontend_listener: 'https',
      frontend_options: { cert_file: `${TLS}cert.pem`, key_file: `${TLS}key.pem` },
      models: [fixtureModel('m')],
    },
    async (s) => {
      assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const ready = await call(s.url, '/ready');
      assert.equal(ready.status, 200, ready.text);
    },
  );
});
