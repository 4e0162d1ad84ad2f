import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorOf, reportOf } from '../helpers/voxd.js';
import { contractServer } from './harness.js';

describe('harness self-check', () => {
  for (const slots of [1, 2]) {
    test(`[state.loading.inference] slots=${slots}: requests during a cold load share it and run once it is published`, async () => {
      const c = await contractServer([{ id: 'M', slots }]);
      try {
        const { request: first } = await c.loading('M');
        const second = c.infer('M');
        if (slots === 1) await c.waitCount('M', 'load', 0);
        const status = await c.status('M');
        assert.equal(status.loaded, false);
        assert.equal(status.max_parallel_slots, null);
        assert.equal(status.state, 'loading');
        await c.load('M').open();
        const [a, b] = await Promise.all([first, second]);
        assert.equal(reportOf(a).generation, 1);
        assert.equal(reportOf(b).generation, 1);
        assert.equal(c.count('M', 'load'), 1, 'one shared initialisation');
        assert.equal(c.count('M', 'session-created'), slots);
        const after = await c.status('M');
        assert.equal(after.loaded, true);
        assert.equal(after.max_parallel_slots, slots);
        assert.equal(after.active_slots, 0);
      } finally {
        await c.close();
      }
    });
  }

  test('[state.unloading.inference] a request during a slow unload waits, then reloads and runs', async () => {
    const c = await contractServer([{ id: 'M' }]);
    try {
      await c.ready('M');
      const { request: unload } = await c.unloading('M');
      const status = await c.status('M');
      assert.equal(status.loaded, false);
      assert.equal(status.max_parallel_slots, null);
      const request = c.infer('M');
      await c.teardown('M').open();
      assert.deepEqual((await unload).json, { id: 'M', loaded: false });
      assert.equal(reportOf(await request).generation, 2);
      assert.equal((await c.status('M')).loaded, true);
    } finally {
      await c.close();
    }
  });

  test('[fail.unsupported-capacity] slots above the capacity of a live pool is 400 and keeps the pool', async () => {
    const c = await contractServer([{ id: 'M', slots: 2, load_options: { capacity: '4' } }]);
    try {
      await c.ready('M');
      const res = await c.register('M', { slots: 5 });
      assert.match(errorOf(res, 400, 'invalid_request_error'), /slots=5 exceeds the capacity 4/);
      const status = await c.status('M');
      assert.equal(status.slots, 2);
      assert.equal(status.max_parallel_slots, 2);
      assert.equal(c.count('M', 'load'), 1);
      assert.equal(c.count('M', 'weights-disposed'), 0);
    } finally {
      await c.close();
    }
  });
});
