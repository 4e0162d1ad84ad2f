import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IDLE_RELEASE_MS as IDLE_MS, MemoryRelease } from '../../src/util/release-memory.js';
import { releasesAfter } from '../helpers/memory-release.js';
import { fixtureModel, get, ManualClock, runTask, waitUntil, withServer } from '../helpers/voxd.js';

function countedRelease() {
  const clock = new ManualClock();
  // Past the rate limit from the start: only the quiet period is in play.
  clock.advance(60_000);
  return { clock, memory: new MemoryRelease(clock, () => {}) };
}

test('probes, scrapes and listings while idle do not hold off the memory release that work earned', async () => {
  const { clock, memory } = countedRelease();
  await withServer({ models: [fixtureModel('m')] }, { memory }, async (s) => {
    assert.equal((await runTask(s, 'm')).status, 200);
    await waitUntil('the run request has ended on the server', () => memory.running === 0);
    // A probe every second, as a load balancer or the web UI would send them.
    for (let second = 1; second < IDLE_MS / 1000; second++) {
      clock.advance(1000);
      for (const path of ['/health', '/metrics', '/v1/models'])
        assert.equal((await get(s.url, path)).status, 200);
    }
    assert.equal(memory.releases, 0);
    clock.advance(1000);
    assert.equal(memory.releases, 1, 'released IDLE_RELEASE_MS after the run, probes or not');
    // Reads alone earn nothing: no second release.
    assert.equal((await get(s.url, '/health')).status, 200);
    clock.advance(IDLE_MS * 20);
    assert.equal(memory.releases, 1);
  });
});

test('a run in flight holds the release off; it comes IDLE_RELEASE_MS after the run ends', async () => {
  const { clock, memory } = countedRelease();
  await withServer({ models: [fixtureModel('m')] }, { memory }, async (s) => {
    const gate = s.gate('run');
    const run = runTask(s, 'm', { run_gate: gate.path });
    await waitUntil('the run has begun on the server', () => memory.running === 1);
    clock.advance(IDLE_MS * 3);
    assert.equal(memory.releases, 0, 'not while a request runs');
    await gate.open();
    assert.equal((await run).status, 200);
    await waitUntil('the run request has ended on the server', () => memory.running === 0);
    releasesAfter(clock, memory, IDLE_MS);
  });
});
