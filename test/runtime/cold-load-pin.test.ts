/**
 * A cold load keeps managers out until it ends, even once the request that started it has gone
 * (the load goes on for whoever asks next): an unload sent then waits in line for the load, and
 * then unloads what it built. Without that pin the unload would find a model that is not ready,
 * answer at once, and the load would publish a model after its unload.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fixtureModel, runTask, startServer, tempDir, withDeadline } from '../helpers/voxd.js';

test('the client of a cold load leaves; an unload then waits for the load and unloads the model it built', async () => {
  const dir = tempDir();
  const gatePath = join(dir, 'load-gate');
  const s = await startServer({
    busy_timeout_ms: 0,
    models: [fixtureModel('m', { lazy: true, load_options: { load_gate: gatePath } })],
  });
  try {
    const { runtime } = s.voxd;
    const entry = () => runtime.get('m');
    const client = new AbortController();
    const first = runTask(s, 'm', {}, client.signal).catch((err: unknown) => err);
    await withDeadline(runtime.whenState('m', 'loading'), 'the cold load starts', 5000);
    client.abort(new Error('the client left'));
    await first;
    await withDeadline(
      runtime.changes.when(() => entry().scheduler.snapshot().activeRequests === 0),
      'the leaving client gives its slot back',
      5000,
    );
    assert.equal(entry().state.kind, 'loading', 'the load goes on without it');
    const unload = runtime.unload('m');
    let settled = false;
    void unload.then(
      () => (settled = true),
      () => (settled = true),
    );
    await withDeadline(runtime.whenQueued('m', 0, 1), 'the unload waits in line', 5000);
    const { managerActive } = entry().scheduler.snapshot();
    assert.equal(managerActive, false, 'no manager runs during the load');
    assert.equal(settled, false);
    writeFileSync(gatePath, '');
    assert.deepEqual(await withDeadline(unload, 'the unload after the load', 5000), {
      id: 'm',
      loaded: false,
    });
    assert.equal(entry().state.kind, 'unloaded');
    const record = s.fixture.record;
    assert.equal(record.of('m', 'load').length, 1, 'loaded once');
    assert.equal(record.of('m', 'weights-disposed').length, 1, 'and what it built was unloaded');
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
