import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import { MemoryRelease, memoryRelease } from '../../src/util/release-memory.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { waitUntil } from '../helpers/voxd.js';

/** The quiet period, the rate limit and the large-buffer delay of release-memory.ts. */
const IDLE_MS = 5000;
const INTERVAL_MS = 30_000;
const COLLECT_DELAY_MS = 200;

function counted() {
  const clock = new ManualClock();
  const memory = new MemoryRelease(clock, () => {});
  return { clock, memory };
}

test('quiet after serving, the process collects once, IDLE_RELEASE_MS after the last request ended', () => {
  const { clock, memory } = counted();
  // Nothing served yet: nothing to give back.
  clock.advance(INTERVAL_MS * 2);
  assert.equal(memory.releases, 0);
  memory.requestStarted();
  memory.requestStarted();
  memory.requestEnded();
  clock.advance(IDLE_MS * 2);
  assert.equal(memory.releases, 0, 'a request still runs');
  memory.requestEnded();
  clock.advance(IDLE_MS - 1);
  assert.equal(memory.releases, 0);
  clock.advance(1);
  assert.equal(memory.releases, 1);
  // Once: a quiet server does not collect again.
  clock.advance(INTERVAL_MS * 3);
  assert.equal(memory.releases, 1);
  assert.equal(clock.timers, 0);
});

test('a request within the quiet period moves the release to IDLE_RELEASE_MS after its own end', () => {
  const { clock, memory } = counted();
  clock.advance(INTERVAL_MS);
  memory.requestStarted();
  memory.requestEnded();
  clock.advance(IDLE_MS - 1000);
  memory.requestStarted();
  clock.advance(2000);
  assert.equal(memory.releases, 0, 'not while it runs');
  memory.requestEnded();
  clock.advance(IDLE_MS - 1);
  assert.equal(memory.releases, 0);
  clock.advance(1);
  assert.equal(memory.releases, 1);
});

test('a burst that ends just after a release is given back when the interval has passed, not dropped', () => {
  const { clock, memory } = counted();
  memory.requestStarted();
  memory.requestEnded();
  clock.advance(IDLE_MS);
  assert.equal(memory.releases, 1);
  const first = clock.now();
  // A burst 6 s later: quiet 5 s after it is only 11 s after the first release.
  clock.advance(6000);
  for (let i = 0; i < 3; i++) {
    memory.requestStarted();
    memory.requestEnded();
  }
  clock.advance(first + INTERVAL_MS - 1 - clock.now());
  assert.equal(memory.releases, 1, 'not sooner than MIN_RELEASE_INTERVAL_MS after the last');
  clock.advance(1);
  assert.equal(memory.releases, 2);
  assert.equal(clock.timers, 0);
});

test('large buffers are collected COLLECT_DELAY_MS after the last request, unless one has begun', () => {
  const { clock, memory } = counted();
  clock.advance(INTERVAL_MS);
  memory.requestStarted();
  memory.noteLargeBuffer(64 * 1024 * 1024);
  memory.requestEnded();
  memory.requestStarted();
  clock.advance(COLLECT_DELAY_MS);
  assert.equal(memory.releases, 0, 'the new request may hold the buffers');
  memory.requestEnded();
  clock.advance(COLLECT_DELAY_MS - 1);
  assert.equal(memory.releases, 0);
  clock.advance(1);
  assert.equal(memory.releases, 1);
  // The idle release that was due after it is not a second collection.
  clock.advance(INTERVAL_MS * 2);
  assert.equal(memory.releases, 1);
});

test('the process release gives back the heap a burst grew', async () => {
  memoryRelease.requestStarted();
  // A burst's garbage: V8 grows the heap it keeps committed to absorb it.
  let kept: object[] = [];
  for (let round = 0; round < 100; round++) {
    kept = Array.from({ length: 20_000 }, (_, i) => ({ i, s: `x${i}` }));
  }
  assert.ok(kept.length > 0);
  kept = [];
  const grown = getHeapStatistics().total_heap_size;
  const before = memoryRelease.releases;
  memoryRelease.requestEnded();
  // Not at once: a request may follow.
  assert.equal(memoryRelease.releases, before);
  await waitUntil('the idle release', () => memoryRelease.releases === before + 1, 15_000);
  const after = getHeapStatistics().total_heap_size;
  assert.ok(after < grown, `committed heap ${grown} -> ${after} bytes`);
});
