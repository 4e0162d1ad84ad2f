import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorOf } from '../helpers/voxd.js';
import { withContractServer } from './harness.js';

describe('harness self-check', () => {
  test('[fail.unsupported-capacity] slots above the capacity of a live pool is 400 and keeps the pool', async () => {
    await withContractServer([{ id: 'M', slots: 2, load_options: { capacity: '4' } }], async (c) => {
      await c.ready('M');
      const res = await c.register('M', { slots: 5 });
      assert.match(errorOf(res, 400, 'invalid_request_error'), /slots=5 exceeds the capacity 4/);
      const status = await c.status('M');
      assert.equal(status.slots, 2);
      assert.equal(status.max_parallel_slots, 2);
      assert.equal(c.count('M', 'load'), 1);
      assert.equal(c.count('M', 'weights-disposed'), 0);
    });
  });
});
