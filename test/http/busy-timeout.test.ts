import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  errorOf,
  fixtureModel,
  type HttpResult,
  ManualClock,
  post,
  reportOf,
  request,
  type TestServer,
  waitUntil,
  withServer,
} from '../helpers/voxd.js';
import { wavHeader } from './wav-helpers.js';

const run = (s: TestServer, options: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  post(s.url, '/v1/tasks/run', { model: 'm', request: { text: 'x', options }, ...extra });

const runStarts = (s: TestServer) => s.fixture.record.of('m', 'run-start').length;
const queued = (s: TestServer) => s.voxd.runtime.get('m').scheduler.snapshot().queuedRequests;

/**
 * Sends a request behind the holder, moves the server's ManualClock to 1 ms before `ms` (the
 * request must still wait), then onto it: the answer is the busy timeout's.
 */
async function timesOutAt(s: TestServer, clock: ManualClock, ms: number, send: () => Promise<HttpResult>) {
  const answer = send();
  await s.voxd.runtime.whenQueued('m', 1);
  clock.advance(ms - 1);
  assert.equal(queued(s), 1, `still waiting 1 ms before ${ms} ms`);
  clock.advance(1);
  return answer;
}

/**
 * Runs `body` on a server with `config` on a manual clock, once a holder request runs on model 'm'
 * held by a gate; `release` opens the gate and asserts the holder's 200.
 */
async function withHolder(
  config: Record<string, unknown>,
  body: (s: TestServer, clock: ManualClock, release: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const clock = new ManualClock();
  await withServer(config, { clock }, async (s) => {
    const gate = s.gate('hold');
    const holder = run(s, { run_gate: gate.path });
    await waitUntil('the holder runs', () => runStarts(s) === 1);
    await body(s, clock, async () => {
      await gate.open();
      assert.equal((await holder).status, 200);
    });
  });
}

describe('busy timeout (serial runtime)', () => {
  test('a request that finds the holder already running longer than its timeout fails at once', async () => {
    await withHolder({ busy_timeout_ms: 1000, models: [fixtureModel('m')] }, async (s, clock, release) => {
      clock.advance(1500);
      const refused = await run(s);
      const message = errorOf(refused, 503, 'server_busy');
      assert.match(message, /model 'm' is busy: current inference has run 1500 ms \(busy_timeout_ms=1000\)/);
      assert.equal(queued(s), 0, 'the refused request never queued');
      await release();
      assert.equal(runStarts(s), 1, 'the refused request never ran');
    });
  });

  test('a request that waits longer than its timeout gets 503 and leaves the queue', async () => {
    await withHolder({ busy_timeout_ms: 60, models: [fixtureModel('m')] }, async (s, clock, release) => {
      const waited = await timesOutAt(s, clock, 60, () => run(s));
      assert.match(errorOf(waited, 503, 'server_busy'), /timed out after 60 ms waiting for a slot/);
      assert.equal(queued(s), 0);
      await release();
      assert.equal(runStarts(s), 1);
    });
  });

  test('a request value shortens the model ceiling but can not lengthen it', async () => {
    const config = { busy_timeout_ms: 0, models: [fixtureModel('m', { busy_timeout_ms: 80 })] };
    await withHolder(config, async (s, clock, release) => {
      const shorter = await timesOutAt(s, clock, 30, () => run(s, {}, { busy_timeout_ms: 30 }));
      assert.match(errorOf(shorter, 503, 'server_busy'), /timed out after 30 ms/);
      // The holder has now run 30 ms, under the 80 ms ceiling: the next request queues again.
      const longer = await timesOutAt(s, clock, 80, () => run(s, {}, { busy_timeout_ms: 600_000 }));
      assert.match(errorOf(longer, 503, 'server_busy'), /timed out after 80 ms/, 'the ceiling wins');
      await release();
    });
  });

  test('the request value comes from the JSON body, a multipart field or the query string', async () => {
    await withHolder({ busy_timeout_ms: 0, models: [fixtureModel('m')] }, async (s, clock, release) => {
      const viaQuery = await timesOutAt(s, clock, 25, () =>
        request(s.url, 'POST', '/v1/tasks/run?busy_timeout_ms=25', {
          body: JSON.stringify({ model: 'm', text: 'x' }),
          headers: { 'Content-Type': 'application/json' },
        }),
      );
      assert.match(errorOf(viaQuery, 503, 'server_busy'), /timed out after 25 ms/);
      const form = new FormData();
      form.set('model', 'm');
      form.set('busy_timeout_ms', '35');
      form.set('file', new Blob([silentWav()]), 'a.wav');
      // The transcription route needs an asr model; 'm' is one (fixtureModel defaults to asr).
      // The holder has run 25 ms, under 35: fail-fast does not apply, the form's request waits.
      const viaForm = await timesOutAt(s, clock, 35, () =>
        request(s.url, 'POST', '/v1/audio/transcriptions', { body: form }),
      );
      assert.match(errorOf(viaForm, 503, 'server_busy'), /timed out after 35 ms/);
      await release();
    });
  });

  test('0 waits without limit on both sides, even behind a holder that ran for hours', async () => {
    await withHolder({ busy_timeout_ms: 0, models: [fixtureModel('m')] }, async (s, clock, release) => {
      clock.advance(5 * 3600_000);
      const waiter = run(s, {}, { busy_timeout_ms: 0 });
      await waitUntil('the second request queues', () => queued(s) === 1);
      await release();
      assert.equal((await waiter).status, 200);
    });
  });

  test('requests to one model run one at a time in arrival order', async () => {
    await withServer({ busy_timeout_ms: 0, models: [fixtureModel('m')] }, async (s) => {
      const gate = s.gate('hold');
      const first = run(s, { run_gate: gate.path });
      await waitUntil('the first request runs', () => runStarts(s) === 1);
      const second = post(s.url, '/v1/tasks/run', { model: 'm', text: 'second' });
      await waitUntil('the second queues', () => queued(s) === 1);
      const third = post(s.url, '/v1/tasks/run', { model: 'm', text: 'third' });
      await waitUntil('the third queues', () => queued(s) === 2);
      await gate.open();
      const results = await Promise.all([first, second, third]);
      assert.deepEqual(
        results.map((r) => reportOf(r).text),
        ['x', 'second', 'third'],
      );
      const timeline = s.fixture.record
        .of('m')
        .filter((e) => e.type === 'run-start' || e.type === 'run-end')
        .map((e) => e.type);
      assert.deepEqual(timeline, ['run-start', 'run-end', 'run-start', 'run-end', 'run-start', 'run-end']);
    });
  });
});

/** 10 ms of 16 kHz mono silence as a WAV. */
function silentWav(): Buffer {
  const frames = 160;
  return Buffer.concat([
    wavHeader({ sampleRate: 16000, channels: 1, bits: 16 }, frames * 2),
    Buffer.alloc(frames * 2),
  ]);
}
