/**
 * Bulk unloads publish their barriers on every model they name in the same turn, before anything
 * is awaited: two bulks started in one tick with their ids in opposite orders must both stand in
 * line on both models at once. A bulk that queued on A, awaited a microtask, then queued on B would
 * let the other bulk get ahead of it on B while it is ahead on A: the two would then wait for each
 * other. The contract's order.bulk-bulk cell starts its bulks over HTTP, one after the other, so
 * it cannot see this.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixtureModel, runTask, startServer, withDeadline } from '../helpers/voxd.js';

test('two bulk unloads started in one tick, ids reversed: both queue on both models before any await, then both finish', async () => {
  const s = await startServer({
    busy_timeout_ms: 0,
    models: [fixtureModel('A', { lazy: false }), fixtureModel('B', { lazy: false })],
  });
  try {
    const { runtime } = s.voxd;
    const gates = { A: s.gate('a'), B: s.gate('b') };
    const holders = (['A', 'B'] as const).map((id) => runTask(s, id, { run_gate: gates[id].path }));
    await withDeadline(
      runtime.changes.when(() =>
        ['A', 'B'].every((id) => runtime.get(id).scheduler.snapshot().activeRequests === 1),
      ),
      'a request holds each model',
      5000,
    );
    const first = runtime.bulkUnload(['A', 'B']);
    const second = runtime.bulkUnload(['B', 'A']);
    // Still the same tick: nothing has been awaited since the two calls.
    for (const id of ['A', 'B'])
      assert.equal(runtime.get(id).scheduler.snapshot().queuedManagers, 2, `two barriers queued on ${id}`);
    await gates.A.open();
    await gates.B.open();
    for (const res of await Promise.all(holders)) assert.equal(res.status, 200);
    const results = await withDeadline(Promise.all([first, second]), 'both bulks finish', 5000);
    assert.deepEqual(results[0].not_found, []);
    assert.deepEqual(results[1].not_found, []);
    for (const id of ['A', 'B']) assert.equal(runtime.get(id).state.kind, 'unloaded');
  } finally {
    await s.close();
  }
});
