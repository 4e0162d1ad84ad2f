/**
 * A manager that leaves the head of a model's queue (its caller gave up) lets the requests behind
 * it in at once: with 2 slots, one held by a gated request, a bulk unload waits at the head for the
 * model to drain and keeps the request behind it out of the free slot (a barrier); once the bulk
 * is cancelled, that request runs on the free slot while the first is still gated. A leaving head
 * that did not pump the queue would leave it waiting for the gated request, for no reason.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixtureModel, runTask, startServer, withDeadline } from '../helpers/voxd.js';

test('a bulk unload cancelled at the head of the queue lets the request behind it take the free slot at once', async () => {
  const s = await startServer(
    { busy_timeout_ms: 0, models: [fixtureModel('m', { lazy: false, slots: 2 })] },
    { parallel: true },
  );
  try {
    const { runtime } = s.voxd;
    const snapshot = () => runtime.get('m').scheduler.snapshot();
    const gate = s.gate('hold');
    const holder = runTask(s, 'm', { run_gate: gate.path });
    await withDeadline(
      runtime.changes.when(() => snapshot().activeRequests === 1),
      'the gated request holds one slot',
      5000,
    );
    const stop = new AbortController();
    const bulk = runtime.bulkUnload(['m'], stop.signal);
    assert.equal(snapshot().queuedManagers, 1, 'the bulk waits at the head');
    const behind = runTask(s, 'm', {});
    await withDeadline(runtime.whenQueued('m', 1, 1), 'the request waits behind the barrier', 5000);
    stop.abort(new Error('the operator gave up'));
    await assert.rejects(bulk, /the operator gave up/);
    const res = await withDeadline(behind, 'the request behind runs while the first is still gated', 5000);
    assert.equal(res.status, 200);
    assert.deepEqual([snapshot().activeRequests, snapshot().queuedManagers], [1, 0]);
    await gate.open();
    assert.equal((await holder).status, 200);
  } finally {
    await s.close();
  }
});
