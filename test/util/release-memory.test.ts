import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import {
  COLLECT_DELAY_MS,
  COLLECT_THRESHOLD_BYTES,
  IDLE_RELEASE_MS as IDLE_MS,
  MIN_RELEASE_INTERVAL_MS as INTERVAL_MS,
  MemoryRelease,
  memoryRelease,
  OWED_MIN_BYTES,
} from '../../src/util/release-memory.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { releasesAfter } from '../helpers/memory-release.js';
import { waitUntil } from '../helpers/voxd.js';

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
  releasesAfter(clock, memory, IDLE_MS);
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
  releasesAfter(clock, memory, IDLE_MS);
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
  releasesAfter(
    clock,
    memory,
    first + INTERVAL_MS - clock.now(),
    'not sooner than MIN_RELEASE_INTERVAL_MS after the last',
  );
  assert.equal(clock.timers, 0);
});

test('large buffers are collected COLLECT_DELAY_MS after the last request, unless one has begun', () => {
  const { clock, memory } = counted();
  clock.advance(INTERVAL_MS);
  memory.requestStarted();
  memory.noteLargeBuffer(COLLECT_THRESHOLD_BYTES);
  memory.requestEnded();
  memory.requestStarted();
  clock.advance(COLLECT_DELAY_MS);
  assert.equal(memory.releases, 0, 'the new request may hold the buffers');
  memory.requestEnded();
  releasesAfter(clock, memory, COLLECT_DELAY_MS);
  // The idle release that was due after it is not a second collection.
  clock.advance(INTERVAL_MS * 2);
  assert.equal(memory.releases, 1);
});

test("short requests' buffers are not owed, however many: no forced collection after them, only the idle release", () => {
  const { clock, memory } = counted();
  clock.advance(INTERVAL_MS);
  // A 5 s VAD request's JSON body notes three times its 260 KB; these notes, each just under
  // OWED_MIN_BYTES, add up to twice the collection threshold.
  const note = OWED_MIN_BYTES - 1;
  for (let i = 0; i * note < 2 * COLLECT_THRESHOLD_BYTES; i++) {
    memory.requestStarted();
    memory.noteLargeBuffer(note);
    memory.requestEnded();
  }
  clock.advance(COLLECT_DELAY_MS * 5);
  assert.equal(memory.releases, 0, 'a full collection after short requests slows the load that follows');
  releasesAfter(clock, memory, IDLE_MS - COLLECT_DELAY_MS * 5);
});

test('large notes add up to a collection', () => {
  const { clock, memory } = counted();
  clock.advance(INTERVAL_MS);
  for (let owed = 0; owed < COLLECT_THRESHOLD_BYTES; owed += OWED_MIN_BYTES) {
    memory.requestStarted();
    memory.noteLargeBuffer(OWED_MIN_BYTES);
    memory.requestEnded();
  }
  releasesAfter(clock, memory, COLLECT_DELAY_MS);
});

test('requests back to back are steady load: no collection between two of them, one once they stop', () => {
  const { clock, memory } = counted();
  clock.advance(INTERVAL_MS);
  memory.noteLargeBuffer(COLLECT_THRESHOLD_BYTES);
  // Each request takes a third of the delay, with a millisecond between two: the delay always ends
  // in a moment with none running, after others began and ended.
  for (let i = 0; i < 30; i++) {
    memory.requestStarted();
    clock.advance(COLLECT_DELAY_MS / 3);
    memory.requestEnded();
    clock.advance(1);
  }
  assert.equal(memory.releases, 0, 'V8 collects under load on its own');
  releasesAfter(clock, memory, COLLECT_DELAY_MS - 1);
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
