/** The runtime's awaitable conditions (whenQueued, whenState, whenIdle): event-driven, no polling. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixtureModel, runTask, startServer, withDeadline } from '../helpers/voxd.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

function tracked(promise: Promise<void>) {
  const t = { done: false };
  void promise.then(() => {
    t.done = true;
  });
  return t;
}

test('whenQueued, whenState and whenIdle resolve on the change that makes them true', async () => {
  const s = await startServer({ busy_timeout_ms: 0, models: [fixtureModel('m', { lazy: false })] });
  try {
    const { runtime } = s.voxd;
    const gate = s.gate('run');
    const running = runTask(s, 'm', { run_gate: gate.path });
    await withDeadline(
      runtime.changes.when(() => runtime.get('m').scheduler.snapshot().activeRequests === 1),
      'the gated request holds the slot',
      5000,
    );
    const queuedOne = tracked(runtime.whenQueued('m', 1));
    const idle = tracked(runtime.whenIdle());
    const behind = runTask(s, 'm', {});
    await withDeadline(runtime.whenQueued('m', 1), 'one request queued', 5000);
    await turn();
    assert.equal(queuedOne.done, true);
    assert.equal(idle.done, false, 'a request runs and another waits');
    const unloading = tracked(runtime.whenState('m', 'unloading'));
    const unload = s.voxd.runtime.unload('m');
    await withDeadline(runtime.whenQueued('m', 1, 1), 'the unload queued behind the requests', 5000);
    assert.equal(unloading.done, false, 'queued, not yet unloading');
    await gate.open();
    assert.equal((await running).status, 200);
    assert.equal((await behind).status, 200);
    assert.deepEqual(await unload, { id: 'm', loaded: false });
    await withDeadline(runtime.whenState('m', 'unloaded'), 'unloaded', 5000);
    assert.equal(unloading.done, true, 'the unload passed through unloading');
    await withDeadline(runtime.whenIdle(), 'every model idle', 5000);
    assert.equal(idle.done, true);
  } finally {
    await s.close();
  }
});

test('a when*() wait ends with its signal and names an unknown model at once', async () => {
  const s = await startServer({ models: [fixtureModel('m')] });
  try {
    const stop = new AbortController();
    const waiting = s.voxd.runtime.whenState('m', 'unloading', stop.signal);
    stop.abort(new Error('stopped waiting'));
    await assert.rejects(waiting, /stopped waiting/);
    assert.throws(() => s.voxd.runtime.whenQueued('nope', 1), { code: 'E_MODEL_NOT_FOUND' });
  } finally {
    await s.close();
  }
});
