/**
 * The structured log: JSON lines whose request id is the response's X-Request-Id, a client's own
 * id kept when valid and replaced when not, no secrets, and log_level filtering.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readable } from '../../src/observability/logger.js';
import { suiteServer } from '../helpers/suite-server.js';
import { fixtureModel, get, post, request, startServer, waitUntil, withServer } from '../helpers/voxd.js';

const ID = /^[A-Za-z0-9._:-]{1,128}$/;

describe('request log lines (--log)', () => {
  const s = suiteServer(
    { models: [fixtureModel('m'), fixtureModel('live', { mode: 'streaming' })] },
    { overrides: { log: true }, parallel: true },
  );

  /** The request line of `id`, once written (a response can reach the client before its line). */
  async function lineOf(id: string) {
    await waitUntil(`the log line of ${id}`, () =>
      s.records.some((r) => r.req_id === id && r.status !== undefined),
    );
    const lines = s.records.filter((r) => r.req_id === id && r.status !== undefined);
    assert.equal(lines.length, 1);
    return lines[0]!;
  }

  test('a request line holds its id, route, status, timing and model, as JSON', async () => {
    const res = await post(s.url, '/v1/tasks/run', { model: 'm', text: 'x' });
    assert.equal(res.status, 200);
    const id = res.headers.get('x-request-id')!;
    assert.match(id, ID);
    const line = await lineOf(id);
    assert.equal(line.level, 'info');
    assert.match(line.time, /^\d{4}-\d\d-\d\dT/);
    assert.equal(line.method, 'POST');
    assert.equal(line.route, '/v1/tasks/run');
    assert.equal(line.status, 200);
    assert.equal(typeof line.duration_ms, 'number');
    assert.equal(line.model, 'm');
    assert.equal(line.slot, 0);
    assert.equal(typeof line.queue_ms, 'number');
    assert.equal(typeof line.inference_ms, 'number');
    // The phases split the request's time: each one measured, together no more than the whole.
    const phases = [
      line.read_ms,
      line.prepare_ms,
      line.queue_ms,
      line.inference_ms,
      line.reply_ms,
    ] as number[];
    for (const ms of phases) assert.ok(typeof ms === 'number' && ms >= 0, JSON.stringify(line));
    const sum = phases.reduce((a, b) => a + b, 0);
    // Each is rounded to 0.1 ms.
    assert.ok(sum <= (line.duration_ms as number) + 0.3, JSON.stringify(line));
    assert.equal(line.bytes_in, Buffer.byteLength(JSON.stringify({ model: 'm', text: 'x' })));
    assert.equal(line.bytes_out, res.body.length);
    assert.match(line.msg, /^POST \/v1\/tasks\/run 200 [\d.]+ ms$/);
  });

  test('each request gets its own id; errors and unknown paths carry one too', async () => {
    const a = await post(s.url, '/v1/tasks/run', { model: 'nope' });
    const b = await get(s.url, '/no/such/path');
    assert.equal(a.status, 404);
    assert.equal(b.status, 404);
    const ids = [a.headers.get('x-request-id')!, b.headers.get('x-request-id')!];
    assert.notEqual(ids[0], ids[1]);
    assert.equal((await lineOf(ids[0]!)).status, 404);
    const unknown = await lineOf(ids[1]!);
    assert.equal(unknown.route, 'unknown');
    assert.equal(unknown.model, undefined);
  });

  test("a client's valid X-Request-Id is echoed and logged; an invalid one is replaced", async () => {
    const given = 'trace-01:abc.DEF_9';
    const kept = await request(s.url, 'POST', '/v1/tasks/run', {
      body: JSON.stringify({ model: 'm', text: 'x' }),
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': given },
    });
    assert.equal(kept.headers.get('x-request-id'), given);
    assert.equal((await lineOf(given)).status, 200);
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon', 'quo"te', '{"json":1}']) {
      const res = await get(s.url, '/health', { 'X-Request-Id': bad });
      const id = res.headers.get('x-request-id')!;
      assert.match(id, ID);
      assert.notEqual(id, bad);
      await lineOf(id);
    }
  });

  test('a stream carries its id in the headers and logs one line when it ends', async () => {
    const res = await post(s.url, '/v1/tasks/stream', { model: 'live', text: 'x', stream_format: 'sse' });
    assert.equal(res.status, 200);
    const id = res.headers.get('x-request-id')!;
    assert.match(id, ID);
    const line = await lineOf(id);
    assert.equal(line.route, '/v1/tasks/stream');
    assert.equal(line.model, 'live');
  });

  test('neither the Authorization header nor the body is logged', async () => {
    const res = await request(s.url, 'POST', '/v1/tasks/run', {
      body: JSON.stringify({ model: 'm', text: 'secret-body-text' }),
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk-very-secret' },
    });
    assert.equal(res.status, 200);
    await lineOf(res.headers.get('x-request-id')!);
    const all = JSON.stringify(s.records);
    assert.doesNotMatch(all, /sk-very-secret|secret-body-text|authorization/i);
  });

  test('a fault is an error line with the request id and the stack', async () => {
    const res = await post(s.url, '/v1/tasks/run', { model: 'm', options: { run_fail: 1 } });
    assert.equal(res.status, 500);
    const id = res.headers.get('x-request-id')!;
    await lineOf(id);
    const fault = s.records.find((r) => r.req_id === id && r.level === 'error');
    assert.ok(fault, JSON.stringify(s.records));
    assert.equal(fault.msg, 'POST /v1/tasks/run failed');
    assert.match(fault.err?.stack ?? '', /run_fail[\s\S]*\n\s+at /);
  });
});

test('log_request_body logs JSON bodies, still without the Authorization header', async () => {
  await withServer(
    { log_request_body: true, models: [fixtureModel('m')] },
    { overrides: { log: true } },
    async (s) => {
      const res = await request(s.url, 'POST', '/v1/tasks/run', {
        body: JSON.stringify({ model: 'm', text: 'logged-body' }),
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk-very-secret' },
      });
      assert.equal(res.status, 200);
      const all = JSON.stringify(s.records);
      assert.match(all, /logged-body/);
      assert.doesNotMatch(all, /sk-very-secret|authorization/i);
    },
  );
});

test('log_level filters: warn keeps faults and drops request lines; debug shows request lines without --log', async () => {
  await withServer(
    { log_level: 'warn', models: [fixtureModel('m')] },
    { overrides: { log: true } },
    async (warn) => {
      assert.equal((await post(warn.url, '/v1/tasks/run', { model: 'm', text: 'x' })).status, 200);
      assert.equal(
        (await post(warn.url, '/v1/tasks/run', { model: 'm', options: { run_fail: 1 } })).status,
        500,
      );
      await waitUntil('the fault is logged', () => warn.records.some((r) => r.level === 'error'));
      assert.deepEqual(
        warn.records.filter((r) => r.level === 'info' || r.level === 'debug'),
        [],
        'lines below warn were written',
      );
    },
  );
  await withServer({ models: [fixtureModel('m')] }, { overrides: { log_level: 'debug' } }, async (debug) => {
    const res = await post(debug.url, '/v1/tasks/run', { model: 'm', text: 'x' });
    const id = res.headers.get('x-request-id');
    await waitUntil('the debug request line', () => debug.records.some((r) => r.req_id === id));
    assert.equal(debug.records.find((r) => r.req_id === id)!.level, 'debug');
  });
  await withServer({ models: [fixtureModel('m')] }, async (info) => {
    assert.equal((await post(info.url, '/v1/tasks/run', { model: 'm', text: 'x' })).status, 200);
    // Startup lines are info; without --log a request line would be debug, below the default level.
    assert.ok(info.records.some((r) => r.msg === 'started'));
    assert.ok(!info.records.some((r) => r.req_id !== undefined));
    // Loads and unloads are lines of their own, with the model id as a field.
    const loaded = info.records.find((r) => r.msg === 'model loaded');
    assert.equal(loaded?.model, 'm');
    assert.equal(loaded?.slots, 1);
    assert.equal((await post(info.url, '/v1/tasks/unload_all_models', {})).status, 200);
    assert.equal(info.records.find((r) => r.msg === 'model unloaded')?.model, 'm');
  });
});

test('an unknown log_level is a config error naming the key and the levels', async () => {
  await assert.rejects(
    startServer({ log_level: 'loud', models: [] }),
    /log_level: "loud" is invalid.*trace.*silent/,
  );
});

test('a terminal gets readable lines: time, level, message, fields, then the stack', () => {
  const line = JSON.stringify({
    level: 'error',
    time: '2026-01-02T03:04:05.678Z',
    msg: 'POST /x failed',
    req_id: 'abc-1',
    status: 500,
    err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at here' },
  });
  assert.equal(
    readable(`${line}\n`),
    '03:04:05.678 ERROR POST /x failed req_id=abc-1 status=500\nError: boom\n    at here\n',
  );
  assert.equal(readable('not json\n'), 'not json\n');
});
