import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import * as memory from '../../src/util/release-memory.js';
import { waitUntil } from '../helpers/voxd.js';

test('quiet after serving, the process collects once and gives back the heap a burst grew', async () => {
  memory.requestStarted();
  // A burst's garbage: V8 grows the heap it keeps committed to absorb it.
  let kept: object[] = [];
  for (let round = 0; round < 100; round++) {
    kept = Array.from({ length: 20_000 }, (_, i) => ({ i, s: `x${i}` }));
  }
  assert.ok(kept.length > 0);
  kept = [];
  const grown = getHeapStatistics().total_heap_size;
  const before = memory.releases;
  memory.requestEnded();
  // Not at once: a request may follow.
  assert.equal(memory.releases, before);
  await waitUntil('the idle release', () => memory.releases === before + 1, 15_000);
  const after = getHeapStatistics().total_heap_size;
  assert.ok(after < grown, `committed heap ${grown} -> ${after} bytes`);
});
