/**
 * ModelEntry on its own: one shared load for concurrent first requests, only complete pools
 * published (a failed build disposes what it made, in reverse order), the logical unload before the
 * slow teardown, sessions bound to slots, and the states it refuses to leave out of order. The
 * engine is a scripted family (test/runtime/scripted-family.ts), so every step is seen in order.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { VoxdError } from '../../src/errors.js';
import { deferred, modelConfig, ScriptedFamily, scriptedEntry } from './scripted-family.js';

test('concurrent first requests share one load; the pool has one session per slot, primary first', async () => {
  const gate = deferred();
  const { entry, family } = scriptedEntry('m', { script: { loadGate: gate.promise }, config: { slots: 3 } });
  const first = entry.ensureReady();
  const second = entry.ensureReady();
  assert.equal(entry.state.kind, 'loading');
  assert.equal(entry.loaded, false);
  gate.resolve();
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a, b, 'one pool for both');
  assert.equal(family.loads, 1);
  assert.deepEqual(
    a.sessions.map((s) => s.id),
    ['session-0', 'session-1', 'session-2'],
  );
  assert.equal(a.generation, 1);
  assert.equal(entry.loaded, true);
  assert.equal(entry.poolSize, 3);
  assert.deepEqual(family.events, ['load', 'create 0', 'create 1', 'create 2']);
});

for (const as of ['throw', 'null'] as const) {
  test(`a session that fails to be created (${as}) publishes nothing: the ones made are disposed in reverse, then the weights`, async () => {
    const { entry, family } = scriptedEntry('m', {
      script: { failSession: { index: 2, as } },
      config: { slots: 3 },
    });
    await assert.rejects(entry.ensureReady(), (err: unknown) => {
      assert.ok(err instanceof VoxdError);
      assert.equal(err.code, 'E_ENGINE');
      assert.match(err.message, /^failed to create session 2 of model 'm'/);
      return true;
    });
    assert.deepEqual(family.events, [
      'load',
      'create 0',
      'create 1',
      'create 2',
      'dispose session 1',
      'dispose session 0',
      'dispose weights',
    ]);
    assert.equal(entry.state.kind, 'unloaded');
    assert.equal(entry.poolSize, null);
    // The next request tries again from scratch.
    family.script = {};
    const pool = await entry.ensureReady();
    assert.equal(pool.sessions.length, 3);
    assert.equal(pool.generation, 1, 'only published pools count');
  });
}

test('a failed load leaves the entry unloaded with the engine error; slots over capacity are a 400 that frees the weights', async () => {
  const failing = scriptedEntry('m', { script: { failLoad: true } });
  await assert.rejects(
    failing.entry.ensureReady(),
    /^VoxdError: failed to load model 'm': scripted: load failed$/,
  );
  assert.equal(failing.entry.state.kind, 'unloaded');

  const { entry, family } = scriptedEntry('big', { script: { capacity: 2 }, config: { slots: 3 } });
  await assert.rejects(entry.ensureReady(), (err: unknown) => {
    assert.ok(err instanceof VoxdError);
    assert.equal(err.status, 400);
    assert.match(err.message, /slots=3 exceeds the capacity 2/);
    return true;
  });
  assert.deepEqual(family.events, ['load', 'dispose weights']);
});

test('a waiting caller that gives up stops waiting; the load goes on for the others', async () => {
  const gate = deferred();
  const { entry } = scriptedEntry('m', { script: { loadGate: gate.promise } });
  const quitter = new AbortController();
  const leaving = entry.ensureReady(quitter.signal);
  const staying = entry.ensureReady();
  quitter.abort(new Error('client gone'));
  await assert.rejects(leaving, /client gone/);
  assert.equal(entry.state.kind, 'loading');
  gate.resolve();
  assert.equal((await staying).sessions.length, 1);
});

test('unload is logical first: unloaded for status while the teardown still runs, sessions in reverse, weights last', async () => {
  const disposing = deferred();
  const { entry, family } = scriptedEntry('m', {
    script: { disposeGate: disposing.promise },
    config: { slots: 2 },
  });
  await entry.ensureReady();
  family.events.length = 0;
  const unloading = entry.unload();
  assert.equal(entry.state.kind, 'unloading');
  assert.equal(entry.loaded, false, 'no longer loaded while the teardown runs');
  assert.equal(entry.poolSize, null);
  await family.reached('dispose session 0');
  assert.deepEqual(family.events, ['dispose session 1', 'dispose session 0'], 'held in session 0');
  assert.equal(entry.state.kind, 'unloading', 'still unloading while the teardown hangs');
  disposing.resolve();
  assert.equal(await unloading, true);
  assert.deepEqual(family.events, ['dispose session 1', 'dispose session 0', 'dispose weights']);
  assert.equal(entry.state.kind, 'unloaded');
  assert.equal(await entry.unload(), false, 'nothing to unload');
});

test('a reconfiguration is refused while loading; a checked-out session has its slot, and checking in twice frees it once', async () => {
  const gate = deferred();
  const { entry, family } = scriptedEntry('m', { script: { loadGate: gate.promise }, config: { slots: 2 } });
  const loading = entry.ensureReady();
  assert.throws(
    () => entry.replaceConfig(modelConfig('m', { slots: 3 }), family, new Map()),
    /cannot reconfigure 'm' while loading/,
  );
  gate.resolve();
  const pool = await loading;
  const a = entry.checkout(pool);
  const b = entry.checkout(pool);
  assert.deepEqual([a.slot, b.slot].sort(), [0, 1]);
  assert.throws(() => entry.checkout(pool), /has no free session/);
  b.checkin();
  b.checkin();
  assert.equal(pool.free.length, 1, 'a second check-in is a no-op');
  a.checkin();
  assert.equal(pool.free.length, 2);
  // Ready: a new config is taken, and capacity follows it.
  entry.replaceConfig(modelConfig('m', { slots: 3 }), new ScriptedFamily(), new Map());
  assert.equal(entry.config.slots, 3);
});

test('touch stamps the clock; manage shows the activity and releases the lease however the work ends', async () => {
  const { entry, clock } = scriptedEntry('m');
  clock.advance(5000);
  entry.touch();
  assert.equal(entry.lastUsedAt, clock.now());
  const lease = await entry.scheduler.acquire('manager', { timeoutMs: 0 });
  await assert.rejects(
    entry.manage(lease, 'reconfiguring', async () => {
      assert.equal(entry.activity, 'reconfiguring');
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(entry.activity, null);
  assert.ok(entry.scheduler.tryAcquireManager(), 'the lease came back');
});
