/**
 * Engines that cannot take the server down: a runner process that dies mid-request, and one stuck
 * in blocking code, with the inference watchdog (max_inference_ms). The fixture's `crash`, `spin`
 * and `runner_gate` options run in a real runner child process: the session's own under isolation
 * "session", the model's shared one under isolation "model". Every test runs in both modes; the
 * last ones show what a shared runner's loss costs the other requests on it, and what it does not.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TEARDOWN_GRACE_MS } from '../../src/runtime/shutdown-timing.js';
import {
  fixtureModel,
  ManualClock,
  modelStatus,
  post,
  runTask,
  startServer,
  waitUntil,
  whenRuntime,
  withDeadline,
  withServer,
} from '../helpers/voxd.js';

for (const isolation of ['session', 'model'] as const)
  describe(`engine isolation (isolation "${isolation}")`, () => {
    const model = (id: string, extra: Record<string, unknown> = {}) =>
      fixtureModel(id, { isolation, ...extra });

    test('a runner that dies mid-request: a clear 500, the model unloaded with last_error, other models serve, the next request reloads', async () => {
      await withServer(
        { busy_timeout_ms: 0, models: [model('a', { slots: 2 }), model('b')] },
        { parallel: true },
        async (s) => {
          assert.equal((await runTask(s, 'a')).status, 200);
          const crashed = await runTask(s, 'a', { crash: 'true' });
          assert.equal(crashed.status, 500);
          assert.equal(crashed.json.error.type, 'server_error');
          assert.match(
            crashed.json.error.message,
            /model 'a' failed: engine process exited on signal SIGSEGV/,
          );
          await whenRuntime(s.voxd.runtime, 'a is unloaded', () => !s.voxd.runtime.get('a').loaded);
          const status = await modelStatus(s.url, 'a');
          assert.match(status.last_error, /engine process exited on signal SIGSEGV/);
          assert.equal(status.active_slots, 0);
          // The other model was never touched.
          assert.equal((await runTask(s, 'b')).status, 200);
          assert.equal(s.fixture.record.of('b', 'load').length, 1);
          // The next request reloads the model; last_error goes once it is loaded again.
          const again = await runTask(s, 'a');
          assert.equal(again.status, 200);
          assert.equal(JSON.parse(again.json.text).generation, 2);
          assert.equal((await modelStatus(s.url, 'a')).last_error, undefined);
        },
      );
    });

    test('max_inference_ms cancels a spinning engine for real: 504, the session replaced, the model keeps serving', async () => {
      await withServer({ max_inference_ms: 1000, busy_timeout_ms: 0, models: [model('m')] }, async (s) => {
        const res = await runTask(s, 'm', { spin: 'true' });
        assert.equal(res.status, 504);
        assert.equal(res.json.error.type, 'timeout_error');
        assert.match(res.json.error.message, /model 'm': the request ran past max_inference_ms=1000/);
        // The runner was killed (the loop cannot be stopped any other way) and the model still serves.
        assert.equal((await runTask(s, 'm')).status, 200);
        assert.equal((await modelStatus(s.url, 'm')).loaded, true);
      });
    });

    test('a model can set its own max_inference_ms over the server-wide one', async () => {
      await withServer(
        {
          max_inference_ms: 60_000,
          busy_timeout_ms: 0,
          models: [model('quick', { max_inference_ms: 300 }), model('patient')],
        },
        async (s) => {
          const res = await runTask(s, 'quick', { hang: 'true' });
          assert.equal(res.status, 504);
          assert.match(res.json.error.message, /max_inference_ms=300/);
          assert.equal((await runTask(s, 'patient', { run_ms: '400' })).status, 200);
        },
      );
    });

    test('max_inference_ms times the run, not a cold load before it (found by the chaos soak)', async () => {
      // The load takes twice the watchdog's limit; the run itself is instant.
      await withServer(
        {
          busy_timeout_ms: 0,
          models: [model('m', { lazy: true, max_inference_ms: 300, load_options: { load_ms: 600 } })],
        },
        async (s) => {
          const first = await runTask(s, 'm');
          assert.equal(first.status, 200, JSON.stringify(first.json));
          assert.equal(JSON.parse(first.json.text).generation, 1);
          // The watchdog still cuts a run that is itself too long.
          const slow = await runTask(s, 'm', { run_ms: '600' });
          assert.equal(slow.status, 504);
          assert.match(slow.json.error.message, /max_inference_ms=300/);
        },
      );
    });

    test('shutdown with a spinning engine ends at shutdown_timeout_ms: the runner is killed', async () => {
      const clock = new ManualClock();
      const s = await startServer(
        { shutdown_timeout_ms: 500, busy_timeout_ms: 0, models: [model('m')] },
        { clock },
      );
      const spinning = runTask(s, 'm', { spin: 'true' });
      await waitUntil('the spin runs', () => s.fixture.record.of('m', 'run-start').length === 1);
      let closed = false;
      const closing = s.voxd.close().then(() => {
        closed = true;
      });
      clock.advance(499);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(closed, false, 'the spinning run is given until the deadline');
      assert.equal(s.voxd.runtime.get('m').scheduler.snapshot().activeRequests, 1);
      // At the deadline the run is cancelled and its runner, which cannot stop by itself, killed.
      clock.advance(1);
      await withDeadline(closing, 'the shutdown after its deadline', 10_000);
      await s.close();
      const res = await spinning.catch((err: unknown) => err);
      if (!(res instanceof Error)) assert.equal((res as { status: number }).status, 503);
    });
  });

describe('a shared runner (isolation "model") lost for one request', () => {
  const shared = (extra: Record<string, unknown> = {}) =>
    fixtureModel('m', { isolation: 'model', slots: 2, ...extra });

  test('the shared runner serves its slots at once: the later request finishes while the earlier one still waits in it', async () => {
    await withServer({ busy_timeout_ms: 0, models: [shared()] }, { parallel: true }, async (s) => {
      const first = s.gate('first');
      const second = s.gate('second');
      const earlier = runTask(s, 'm', { runner_gate: first.path });
      await waitUntil(
        'the first request is in the runner',
        () => s.fixture.record.of('m', 'run-start').length === 1,
      );
      const later = runTask(s, 'm', { runner_gate: second.path });
      await second.open();
      assert.equal((await later).status, 200);
      assert.equal(s.fixture.record.of('m', 'run-end').length, 1, 'the earlier request still runs');
      await first.open();
      assert.equal((await earlier).status, 200);
    });
  });

  test('max_inference_ms: the overrunning request gets 504, the other one on the runner a retryable 503; the next request runs on a fresh runner', async () => {
    await withServer(
      { max_inference_ms: 1000, busy_timeout_ms: 0, models: [shared()] },
      { parallel: true },
      async (s) => {
        const gate = s.gate('held');
        // The spinning request starts first, so its watchdog fires first; the held one is then on its runner.
        const spinning = runTask(s, 'm', { spin: 'true' });
        await waitUntil('the spin runs', () => s.fixture.record.of('m', 'run-start').length === 1);
        const held = runTask(s, 'm', { runner_gate: gate.path });
        await waitUntil(
          'the held request is on the runner',
          () => s.fixture.record.of('m', 'run-start').length === 2,
        );
        assert.equal((await spinning).status, 504);
        const lost = await held;
        assert.equal(lost.status, 503, lost.body.toString());
        assert.equal(lost.json.error.code, 'engine_restarted');
        assert.equal(lost.json.error.type, 'server_busy');
        assert.match(
          lost.json.error.message,
          /model 'm': its engine runner was stopped because another request on it was cancelled \(model 'm': the request ran past max_inference_ms=1000.*\); this request was lost with it and can be retried/,
        );
        // Not a fault of the model: it stays loaded, and the retry runs on a fresh runner.
        const status = await modelStatus(s.url, 'm');
        assert.equal(status.loaded, true);
        assert.equal(status.last_error, undefined);
        await gate.open();
        assert.equal((await runTask(s, 'm', { runner_gate: gate.path })).status, 200);
      },
    );
  });

  test('a client that leaves while its request is in the runner: the runner is stopped, the other request gets a 503', async () => {
    await withServer({ busy_timeout_ms: 0, models: [shared()] }, { parallel: true }, async (s) => {
      const gate = s.gate('held');
      const held = runTask(s, 'm', { runner_gate: gate.path });
      await waitUntil(
        'the held request is in the runner',
        () => s.fixture.record.of('m', 'run-start').length === 1,
      );
      const client = new AbortController();
      const leaving = runTask(s, 'm', { runner_gate: gate.path }, client.signal);
      await waitUntil(
        'the second request is in the runner',
        () => s.fixture.record.of('m', 'run-start').length === 2,
      );
      client.abort();
      await assert.rejects(leaving);
      const lost = await held;
      assert.equal(lost.status, 503);
      assert.match(
        lost.json.error.message,
        /another request on it was cancelled \(client closed the connection\)/,
      );
      await whenRuntime(
        s.voxd.runtime,
        'both slots are free',
        () => s.voxd.runtime.get('m').scheduler.snapshot().activeRequests === 0,
      );
    });
  });

  test('a crash under two requests cannot be pinned on one: both get a retryable 503, and the model is unloaded with last_error', async () => {
    await withServer({ busy_timeout_ms: 0, models: [shared()] }, { parallel: true }, async (s) => {
      const gate = s.gate('held');
      const held = runTask(s, 'm', { runner_gate: gate.path });
      await waitUntil(
        'the held request is in the runner',
        () => s.fixture.record.of('m', 'run-start').length === 1,
      );
      const crashed = await runTask(s, 'm', { crash: 'true' });
      const lost = await held;
      for (const res of [crashed, lost]) {
        assert.equal(res.status, 503, res.body.toString());
        assert.match(
          res.json.error.message,
          /its engine process exited on signal SIGSEGV while 2 requests ran on it; this request was lost with it and can be retried/,
        );
      }
      await whenRuntime(s.voxd.runtime, 'm is unloaded', () => !s.voxd.runtime.get('m').loaded);
      assert.match((await modelStatus(s.url, 'm')).last_error, /SIGSEGV while 2 requests ran on it/);
      await gate.open();
      assert.equal((await runTask(s, 'm', { runner_gate: gate.path })).status, 200);
    });
  });

  test('isolation "session": a request stopped in its runner costs only its own slot; the other request finishes', async () => {
    await withServer(
      { busy_timeout_ms: 0, models: [shared({ isolation: 'session' })] },
      { parallel: true },
      async (s) => {
        const gate = s.gate('held');
        const held = runTask(s, 'm', { runner_gate: gate.path });
        await waitUntil(
          'the held request is in its runner',
          () => s.fixture.record.of('m', 'run-start').length === 1,
        );
        const client = new AbortController();
        const spinning = runTask(s, 'm', { spin: 'true' }, client.signal);
        await waitUntil('the spin runs', () => s.fixture.record.of('m', 'run-start').length === 2);
        client.abort();
        await assert.rejects(spinning);
        await waitUntil('the spinning run ended', () => s.fixture.record.of('m', 'run-end').length === 1);
        await gate.open();
        assert.equal((await held).status, 200);
      },
    );
  });

  test('isolation "model" is refused for a family whose engine cannot serve two slots at once', async () => {
    await withServer({ ui_management: true, models: [] }, { parallel: true }, async (s) => {
      const res = await post(s.url, '/v1/models/load', {
        id: 'vad',
        family: 'silero_vad',
        task: 'vad',
        isolation: 'model',
      });
      assert.equal(res.status, 400);
      assert.match(
        res.json.error.message,
        /isolation: "model" is not available for model 'vad': family 'silero_vad' supports "session"/,
      );
    });
  });
});

test('a teardown that never ends does not keep the shutdown open past its deadline and grace', async () => {
  const clock = new ManualClock();
  const s = await startServer(
    { shutdown_timeout_ms: 300, models: [fixtureModel('stuck', { lazy: false })] },
    { clock },
  );
  const gate = s.gate('never');
  // Reconfigure the teardown gate to one that stays shut: the model's teardown will wait forever.
  const entry = s.voxd.runtime.get('stuck');
  assert.equal(entry.loaded, true);
  await s.voxd.runtime.register({ ...entry.config, load_options: { teardown_gate: gate.path } });
  let closed = false;
  const closing = s.voxd.close().then(() => {
    closed = true;
  });
  // The teardown waits on its gate; the shutdown waits for it up to the deadline plus the grace.
  await whenRuntime(
    s.voxd.runtime,
    'the teardown began',
    () => s.voxd.runtime.get('stuck').state.kind === 'unloading',
  );
  clock.advance(300 + TEARDOWN_GRACE_MS - 1);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(closed, false, 'the teardown is waited for until the deadline and its grace');
  clock.advance(1);
  await withDeadline(closing, 'the shutdown to give up on the teardown', 10_000);
  assert.ok(
    s.logs.some((line) => /gave up waiting for the teardown of stuck/.test(line)),
    s.logs.join('\n'),
  );
  // Let the abandoned teardown finish before the test's folder (and its gate) is removed: it polls
  // for the gate file and would otherwise keep this process alive.
  await gate.open();
  await waitUntil(
    'the abandoned teardown ends',
    () => s.fixture.record.of('stuck', 'weights-disposed').length === 2,
  );
  await s.close();
});
