/**
 * Engines that cannot take the server down: a runner process that dies mid-request, and one stuck
 * in blocking code, with the inference watchdog (max_inference_ms). The fixture's `crash` and `spin`
 * options run in a real runner child process.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fixtureModel, modelStatus, runTask, startServer, waitUntil } from '../helpers/voxd.js';

describe('engine isolation', () => {
  test('a runner that dies mid-request: a clear 500, the model unloaded with last_error, other models serve, the next request reloads', async () => {
    const s = await startServer(
      { busy_timeout_ms: 0, models: [fixtureModel('a', { slots: 2 }), fixtureModel('b')] },
      { parallel: true },
    );
    try {
      assert.equal((await runTask(s, 'a')).status, 200);
      const crashed = await runTask(s, 'a', { crash: 'true' });
      assert.equal(crashed.status, 500);
      assert.equal(crashed.json.error.type, 'server_error');
      assert.match(crashed.json.error.message, /model 'a' failed: engine process exited on signal SIGSEGV/);
      await waitUntil('a is unloaded', async () => (await modelStatus(s.url, 'a')).loaded === false);
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
    } finally {
      await s.close();
    }
  });

  test('max_inference_ms cancels a spinning engine for real: 504, the session replaced, the model keeps serving', async () => {
    const s = await startServer({ max_inference_ms: 1000, busy_timeout_ms: 0, models: [fixtureModel('m')] });
    try {
      const res = await runTask(s, 'm', { spin: 'true' });
      assert.equal(res.status, 504);
      assert.equal(res.json.error.type, 'timeout_error');
      assert.match(res.json.error.message, /model 'm': the request ran past max_inference_ms=1000/);
      // The runner was killed (the loop cannot be stopped any other way) and the model still serves.
      assert.equal((await runTask(s, 'm')).status, 200);
      assert.equal((await modelStatus(s.url, 'm')).loaded, true);
    } finally {
      await s.close();
    }
  });

  test('a model can set its own max_inference_ms over the server-wide one', async () => {
    const s = await startServer({
      max_inference_ms: 60_000,
      busy_timeout_ms: 0,
      models: [fixtureModel('quick', { max_inference_ms: 300 }), fixtureModel('patient')],
    });
    try {
      const res = await runTask(s, 'quick', { hang: 'true' });
      assert.equal(res.status, 504);
      assert.match(res.json.error.message, /max_inference_ms=300/);
      assert.equal((await runTask(s, 'patient', { run_ms: '400' })).status, 200);
    } finally {
      await s.close();
    }
  });

  test('shutdown with a spinning engine ends within shutdown_timeout_ms: the runner is killed', async () => {
    const s = await startServer({
      shutdown_timeout_ms: 500,
      busy_timeout_ms: 0,
      models: [fixtureModel('m')],
    });
    const spinning = runTask(s, 'm', { spin: 'true' });
    await waitUntil('the spin runs', () => s.fixture.record.of('m', 'run-start').length === 1);
    const started = performance.now();
    await s.close();
    const took = performance.now() - started;
    assert.ok(took < 500 + 1500, `close took ${took.toFixed(0)} ms`);
    const res = await spinning.catch((err: unknown) => err);
    if (!(res instanceof Error)) assert.equal((res as { status: number }).status, 503);
  });
});

test('a teardown that never ends does not keep the shutdown open past its deadline and grace', async () => {
  const s = await startServer({ shutdown_timeout_ms: 300, models: [fixtureModel('stuck', { lazy: false })] });
  const gate = s.gate('never');
  // Reconfigure the teardown gate to one that stays shut: the model's teardown will wait forever.
  const entry = s.voxd.runtime.get('stuck');
  assert.equal(entry.loaded, true);
  await s.voxd.runtime.register({ ...entry.config, load_options: { teardown_gate: gate.path } });
  const started = performance.now();
  await s.voxd.close();
  const took = performance.now() - started;
  assert.ok(took >= 300 && took < 300 + 1500 + 1000, `close took ${took.toFixed(0)} ms`);
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
