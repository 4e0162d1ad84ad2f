import assert from 'node:assert/strict';
import type { MemoryRelease } from '../../src/util/release-memory.js';
import type { ManualClock } from './manual-clock.js';

/** Moves time `ms` on: nothing is collected until its last millisecond, then one collection. */
export function releasesAfter(clock: ManualClock, memory: MemoryRelease, ms: number, message?: string): void {
  const before = memory.releases;
  clock.advance(ms - 1);
  assert.equal(memory.releases, before, message ?? `not before ${ms} ms`);
  clock.advance(1);
  assert.equal(memory.releases, before + 1, `one collection at ${ms} ms`);
}
