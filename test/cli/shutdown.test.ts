/**
 * Bounded shutdown of a real `voxd serve` process: SIGTERM refuses queued work at once, lets a
 * running request finish within shutdown_timeout_ms, cancels one that does not, and the process
 * exits 0 within the deadline plus a small margin; a second signal skips the wait.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { configFolder, DEADLINE_MS, type Exit, VoxdProcess } from '../helpers/cli.js';
import { fixtureModel, get, startServer, waitUntil, withDeadline } from '../helpers/voxd.js';

const configs = configFolder('voxd-shutdown-');

/** One request on its own connection (no keep-alive: the drain would close an idle pooled one). */
function postOnce(
  url: string,
  body: unknown,
): Promise<{ status: number; json: { error?: { message: string; type: string } } }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** A server whose fixture model `m` records to a file the test can read. */
function serve(name: string, extra: string[] = [], config: Record<string, unknown> = {}) {
  const record = join(configs.dir, `${name}-record.jsonl`);
  const path = configs.write({ ui: false, models: [fixtureModel('m')], ...config });
  const voxd = new VoxdProcess(['serve', '--config', path, ...extra], {
    env: { ...process.env, VOXD_FIXTURE_RECORD: record },
  });
  const events = () =>
    existsSync(record)
      ? readFileSync(record, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { type: string; outcome?: string })
      : [];
  const started = () => events().filter((e) => e.type === 'run-start').length;
  return { voxd, events, started };
}

describe('shutdown (SIGTERM / SIGINT)', () => {
  test('queued requests are refused with 503 at once; the running one finishes; voxd exits 0', async () => {
    const gate = join(configs.dir, 'queued-gate');
    // The parallel runtime, so GET /v1/models shows the queue (one slot: the second request waits).
    const { voxd, started } = serve('queued', ['--parallel-jobs']);
    let exit: Exit | undefined;
    try {
      const { url } = await voxd.listening();
      const running = postOnce(`${url}/v1/tasks/run`, {
        model: 'm',
        text: 'first',
        options: { run_gate: gate },
      });
      await waitUntil('the first request runs', () => started() === 1, DEADLINE_MS);
      const queued = postOnce(`${url}/v1/tasks/run`, { model: 'm', text: 'second' });
      await waitUntil(
        'the second request queued',
        async () => (await get(url, '/v1/models')).json.data[0].queued_requests === 1,
        DEADLINE_MS,
      );
      assert.equal(started(), 1, 'the second request waits behind the first');
      voxd.child.kill('SIGTERM');
      const refused = await withDeadline(queued, 'the queued request is refused', DEADLINE_MS);
      assert.equal(refused.status, 503);
      assert.equal(refused.json.error?.type, 'server_busy');
      assert.match(refused.json.error!.message, /shutting down/);
      assert.equal(voxd.child.exitCode, null, 'the running request is still allowed to finish');
      writeFileSync(gate, '');
      assert.equal((await withDeadline(running, 'the running request', DEADLINE_MS)).status, 200);
      exit = await voxd.exit();
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('a request still running at shutdown_timeout_ms is cancelled (503) and voxd exits within the deadline', async () => {
    const { voxd, events, started } = serve('hung', ['--shutdown-timeout-ms', '800']);
    let exit: Exit | undefined;
    try {
      const { url } = await voxd.listening();
      const hung = postOnce(`${url}/v1/tasks/run`, {
        model: 'm',
        text: 'never ends',
        options: { hang: 'true' },
      });
      await waitUntil('the hung request runs', () => started() === 1, DEADLINE_MS);
      voxd.child.kill('SIGTERM');
      const res = await withDeadline(hung, 'the hung request is answered', DEADLINE_MS);
      // Cancelled by the deadline (its message says which), not before it.
      assert.equal(res.status, 503);
      assert.match(res.json.error!.message, /ran past shutdown_timeout_ms=800/);
      exit = await withDeadline(voxd.exit(), 'voxd exits', DEADLINE_MS);
      // The clean way out, not the last-resort exit SHUTDOWN_MARGIN_MS after the deadline.
      assert.match(voxd.stderr, /"msg":"stopped"/);
      assert.doesNotMatch(voxd.stderr, /deadline was abandoned/);
      assert.ok(
        events().some((e) => e.type === 'run-end' && e.outcome === 'aborted'),
        'the engine call was cancelled',
      );
      assert.ok(
        events().some((e) => e.type === 'weights-disposed'),
        'the model was unloaded',
      );
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('without a deadline a second SIGTERM cancels the running request; voxd exits 0', async () => {
    const { voxd, events, started } = serve('second', ['--shutdown-timeout-ms', '0']);
    let exit: Exit | undefined;
    try {
      const { url } = await voxd.listening();
      const hung = postOnce(`${url}/v1/tasks/run`, {
        model: 'm',
        text: 'never ends',
        options: { hang: 'true' },
      });
      await waitUntil('the hung request runs', () => started() === 1, DEADLINE_MS);
      voxd.child.kill('SIGTERM');
      await voxd.waitForStderr(/SIGTERM: draining/, 'the drain to start');
      assert.equal(voxd.child.exitCode, null, 'no deadline: voxd waits');
      voxd.child.kill('SIGTERM');
      const res = await withDeadline(hung, 'the hung request is answered', DEADLINE_MS);
      assert.equal(res.status, 503);
      assert.match(res.json.error!.message, /second SIGTERM/);
      exit = await voxd.exit();
      assert.ok(events().some((e) => e.type === 'run-end' && e.outcome === 'aborted'));
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });
});

test('readiness: /ready and /health answer 503 from the moment a shutdown begins', async () => {
  const s = await startServer({ models: [fixtureModel('m')] });
  try {
    assert.deepEqual((await get(s.url, '/ready')).json, { status: 'ready' });
    assert.equal((await get(s.url, '/health')).status, 200);
    // The runtime's shutdown alone (the listener still answers) shows what a probe sees.
    const closing = s.voxd.runtime.close();
    const ready = await get(s.url, '/ready');
    assert.equal(ready.status, 503);
    assert.equal(ready.json.error.type, 'server_busy');
    const health = await get(s.url, '/health');
    assert.equal(health.status, 503);
    assert.equal(health.json.status, 'shutting_down');
    await closing;
  } finally {
    await s.close();
  }
});
