/**
 * The contract's "Operations crossed with model states" matrix, rows Unloaded, Loading and Ready
 * (state-matrix-2.test.ts has Reconfiguring and Unloading). Each test holds M in the row's state
 * with fixture gates, performs the column's operation over HTTP and asserts the response, the
 * GET /v1/models fields and the fixture record. Every lifecycle test runs at 1, 2 and 4 slots.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorOf, ManualClock } from '../helpers/voxd.js';
import { COUNTS, pick, readyView, type Tracked, track, unloadedView, view } from './assertions.js';
import { type ContractServer, withContractServer } from './harness.js';
import {
  abortable,
  assertAllUnloaded,
  assertBefore,
  assertBulk,
  assertRegistered,
  assertUnloaded,
  disposedSlots,
  freedTally,
  leases,
  loadedTally,
  mAndB,
  NONE,
  pollStatus,
  rep,
  replacedTally,
  report,
  reverseSlots,
  statusOf,
  tally,
  waitFor,
  waitSnapshot,
} from './state-matrix-helpers.js';

/**
 * With a manager (`reg`) sent behind M's cold load: a later request queues behind the manager and
 * does not take a spare slot ahead of it; asserts the queues, the GET /v1/models fields and that
 * the manager waits. Returns the later request.
 */
async function requestBehindManager(c: ContractServer, slots: number, reg: Tracked): Promise<Tracked> {
  await waitSnapshot(c, 'M', { queuedManagers: 1 });
  const later = track(c.infer('M'));
  await waitSnapshot(c, 'M', { queuedManagers: 1, queuedRequests: 1, activeRequests: 1 });
  assert.deepEqual(
    await view(c, 'M'),
    unloadedView(slots, { state: 'loading', active_slots: 1, queued_requests: 1 }),
  );
  assert.equal(reg.settled, false);
  return later;
}

/**
 * M's cold load is held by its closed load gate for a request that will then be held in its run
 * by `gate`; a request on X follows and waits to load. Returns the gate and both requests.
 */
async function coldLoadBehindLoadingM(c: ContractServer) {
  const gate = await c.runGate();
  await c.load('M').close();
  const first = track(c.infer('M', { run_gate: gate.path }));
  await waitFor('M loads', () => c.entry('M').state.kind === 'loading');
  const x = track(c.infer('X'));
  await waitFor('X waits to load', () => c.entry('X').state.kind === 'loading');
  return { gate, first, x };
}

describe('state x operation: M unloaded', () => {
  for (const slots of COUNTS) {
    test(`[state.unloaded.inference] slots=${slots}: a request is admitted, initialises the complete pool, then runs; 200 and ready`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
        await c.load('M').close();
        const request = track(c.infer('M'));
        await waitFor('M loads', () => c.entry('M').state.kind === 'loading');
        // Admitted (it owns a slot) and waiting for the one initialisation.
        assert.deepEqual(await view(c, 'M'), unloadedView(slots, { state: 'loading', active_slots: 1 }));
        await c.load('M').open();
        const r = report(await request.promise);
        assert.equal(r.generation, 1);
        assert.ok(r.slot >= 0 && r.slot < slots);
        assert.deepEqual(await view(c, 'M'), readyView(slots));
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1]));
        assertBefore(
          c,
          ['M', 'session-created', 1],
          ['M', 'run-start', 1],
          'the complete pool precedes the run',
        );
      });
    });

    test(`[state.unloaded.register] slots=${slots}: re-registering the same config loads it exclusively; 200 loaded, ready`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.load('M').close();
        const reg = track(c.register('M'));
        await waitFor('M loads for the registration', () => c.entry('M').state.kind === 'loading');
        const later = track(c.infer('M'));
        await waitSnapshot(c, 'M', { managerActive: true, activeRequests: 0, queuedRequests: 1 });
        // Exclusive: the request queues behind the manager even though every slot is free.
        assert.deepEqual(
          await view(c, 'M'),
          unloadedView(slots, { state: 'registering', queued_requests: 1 }),
        );
        assert.equal(reg.settled || later.settled, false);
        await c.load('M').open();
        await assertRegistered(reg, 'M', false);
        assert.equal(report(await later.promise).generation, 1);
        assert.deepEqual(await view(c, 'M'), readyView(slots));
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1]));
      });
    });

    test(`[state.unloaded.register] slots=${slots}: a changed config is validated and loaded exclusively; 200 loaded, ready with the new config`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.load('M').close();
        const reg = track(c.register('M', { load_options: { variant: 'next' } }));
        await waitFor('M reconfigures', () => c.entry('M').activity === 'reconfiguring');
        const later = track(c.infer('M'));
        await waitSnapshot(c, 'M', { managerActive: true, activeRequests: 0, queuedRequests: 1 });
        const held = await view(c, 'M');
        assert.deepEqual(held, unloadedView(slots, { state: 'reconfiguring', queued_requests: 1 }));
        await c.load('M').open();
        await assertRegistered(reg, 'M', true);
        // A multi-slot replacement is probed privately (weights only, disposed) before its load.
        const g = slots > 1 ? 2 : 1;
        const r = report(await later.promise);
        assert.equal(r.generation, g);
        assert.equal(r.load_options.variant, 'next');
        assert.deepEqual(await view(c, 'M'), readyView(slots));
        assert.deepEqual(tally(c, 'M'), {
          ...NONE,
          load: slots > 1 ? [1, 2] : [1],
          weights: slots > 1 ? [1] : [],
          created: rep(g, slots),
          runs: [g],
        });
      });
    });

    test(`[state.unloaded.unload] slots=${slots}: unloading an unloaded model is an idempotent 200 loaded=false`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await assertUnloaded(c.unload('M'), 'M');
        await assertUnloaded(c.unload('M'), 'M');
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
        assert.deepEqual(tally(c, 'M'), NONE);
        assert.equal(c.entry('M').scheduler.idle, true, 'the manager lease is released');
      });
    });

    test(`[state.unloaded.bulk-unload] slots=${slots}: a bulk unload lists an unloaded M once; 200, unloaded`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        const res = await c.bulkUnload(['M', 'ghost', 'M']);
        assert.equal(res.status, 200);
        assert.deepEqual(res.json, { unloaded: ['M'], not_found: ['ghost'] });
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
        assert.deepEqual(tally(c, 'M'), NONE);
        assert.equal(c.entry('M').scheduler.idle, true);
      });
    });

    test(`[state.unloaded.evict] slots=${slots}: eviction and idle retirement find no resident M and skip it`, async () => {
      const clock = new ManualClock();
      await withContractServer(
        mAndB(slots),
        { max_loaded_models: 1, idle_unload_ms: 1000, clock },
        async (c) => {
          c.s.voxd.runtime.residency.stopIdleTimer();
          // max_loaded_models=1: loading B finds no resident M to evict.
          assert.equal(report(await c.infer('B')).generation, 1);
          assert.doesNotMatch(c.s.logs.join('\n'), /evicted model/);
          clock.advance(5000);
          assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), ['B']);
          assert.deepEqual(await view(c, 'M'), unloadedView(slots));
          assert.deepEqual(tally(c, 'M'), NONE);
          assert.deepEqual(await view(c, 'B'), unloadedView(slots));
        },
      );
    });

    test(`[state.unloaded.status] slots=${slots}: status reads metadata and counters of an unloaded M; null capacity, no load`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        const before = leases(c.snapshot('M'));
        const st = await statusOf(c, 'M');
        assert.equal(st.id, 'M');
        assert.equal(st.family, 'fixture');
        assert.equal(st.task, 'asr');
        assert.deepEqual(st.session_options, {});
        assert.deepEqual(pick(st), unloadedView(slots));
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
        assert.deepEqual(leases(c.snapshot('M')), before, 'status reserves nothing');
        assert.equal(c.entry('M').scheduler.idle, true);
        assert.deepEqual(tally(c, 'M'), NONE, 'status loads nothing');
      });
    });
  }
});

describe('state x operation: M loading', () => {
  for (const slots of COUNTS) {
    test(`[state.loading.inference] slots=${slots}: spare slots admit and wait on the one initialisation, a full pool queues; 200 after publication`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        const { request: first } = await c.loading('M');
        // Admitted and waiting for the initialisation when slots > 1, queued when slots = 1.
        const gone = abortable(c, 'M');
        await waitSnapshot(c, 'M', slots > 1 ? { activeRequests: 2 } : { queuedRequests: 1 });
        const more = Array.from({ length: slots }, () => c.infer('M'));
        await waitSnapshot(c, 'M', { activeRequests: slots, queuedRequests: 2 });
        // Better than the contract: a client that disconnects while initialising or queued leaves
        // at once, and its slot goes to the next in line.
        gone.abort();
        assert.equal((await gone.promise).aborted, true);
        await waitSnapshot(c, 'M', { activeRequests: slots, queuedRequests: 1 });
        assert.deepEqual(
          await view(c, 'M'),
          unloadedView(slots, { state: 'loading', active_slots: slots, queued_requests: 1 }),
        );
        assert.deepEqual(tally(c, 'M'), NONE, 'nothing runs before the pool is published');
        await c.load('M').open();
        const reports = (await Promise.all([first, ...more])).map(report);
        for (const r of reports) assert.equal(r.generation, 1);
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, rep(1, slots + 1)));
        assertBefore(
          c,
          ['M', 'session-created', 1],
          ['M', 'run-start', 1],
          'runs start after the complete pool',
        );
        assert.deepEqual(await view(c, 'M'), readyView(slots));
      });
    });

    test(`[state.loading.register] slots=${slots}: a same-config registration waits behind the load and earlier requests; 200, ready`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        const { request: first } = await c.loading('M');
        const reg = track(c.register('M'));
        const later = await requestBehindManager(c, slots, reg);
        await c.load('M').open();
        assert.equal(report(await first).generation, 1);
        await assertRegistered(reg, 'M', false);
        assert.equal(report(await later.promise).generation, 1);
        assert.deepEqual(await view(c, 'M'), readyView(slots));
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1, 1]));
      });
    });

    test(`[state.loading.register] slots=${slots}: a reconfiguration waits behind the first load and its request, then replaces the pool; 200 new ready state`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        const { request: first } = await c.loading('M');
        const reg = track(c.register('M', { load_options: { variant: 'next' } }));
        const later = await requestBehindManager(c, slots, reg);
        await c.load('M').open();
        const r0 = report(await first);
        assert.equal(r0.generation, 1);
        assert.equal(r0.load_options.variant, undefined);
        await assertRegistered(reg, 'M', true);
        const g = slots > 1 ? 3 : 2;
        const r = report(await later.promise);
        assert.equal(r.generation, g);
        assert.equal(r.load_options.variant, 'next');
        assert.deepEqual(tally(c, 'M'), replacedTally(slots, g));
        assertBefore(
          c,
          ['M', 'run-end', 1],
          ['M', 'session-disposed', 1],
          'the earlier request drains first',
        );
        if (slots > 1)
          assertBefore(
            c,
            ['M', 'weights-disposed', 2],
            ['M', 'session-disposed', 1],
            'the probe precedes teardown',
          );
        assert.deepEqual(await view(c, 'M'), readyView(slots));
      });
    });

    test(`[state.loading.unload] slots=${slots}: an unload waits for the first load and its request; 200 unloaded`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        const { request: first } = await c.loading('M');
        const unload = track(c.unload('M'));
        await waitSnapshot(c, 'M', { queuedManagers: 1, activeRequests: 1 });
        assert.deepEqual(await view(c, 'M'), unloadedView(slots, { state: 'loading', active_slots: 1 }));
        assert.equal(unload.settled, false);
        await c.load('M').open();
        assert.equal(report(await first).generation, 1);
        await assertUnloaded(unload, 'M');
        assert.deepEqual(tally(c, 'M'), freedTally(slots, [1]));
        assertBefore(c, ['M', 'run-end', 1], ['M', 'session-disposed', 1], 'the first request drains first');
        assert.deepEqual(disposedSlots(c, 'M', 1), reverseSlots(slots), 'clones before the primary');
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
      });
    });

    test(`[state.loading.bulk-unload] slots=${slots}: the barrier is published before the pool exists, ready B is freed first, then M; 200 unloaded`, async () => {
      await withContractServer(mAndB(slots), async (c) => {
        await c.ready('B');
        const { request: first } = await c.loading('M');
        const bulk = track(c.bulkUnload(['M', 'B', 'ghost', 'M']));
        await c.waitCount('B', 'weights-disposed', 1);
        assert.deepEqual(await view(c, 'B'), unloadedView(slots));
        await waitSnapshot(c, 'M', { queuedManagers: 1, activeRequests: 1 });
        assert.equal(c.entry('M').state.kind, 'loading', 'M is still loading');
        assert.deepEqual(tally(c, 'M'), NONE);
        assert.equal(bulk.settled, false);
        await c.load('M').open();
        assert.equal(report(await first).generation, 1);
        await assertBulk(bulk, { unloaded: ['M', 'B'], not_found: ['ghost'] });
        assert.deepEqual(tally(c, 'M'), freedTally(slots, [1]));
        assertBefore(
          c,
          ['B', 'weights-disposed', 1],
          ['M', 'load', 1],
          'B is freed before M finishes loading',
        );
        await assertAllUnloaded(c, slots, ['M', 'B']);
      });
    });

    test(`[state.loading.evict] slots=${slots}: idle retirement skips a loading M and retires idle B; M goes on loading`, async () => {
      const clock = new ManualClock();
      await withContractServer(mAndB(slots), { idle_unload_ms: 1000, clock }, async (c) => {
        c.s.voxd.runtime.residency.stopIdleTimer();
        await c.ready('B');
        const { request: first } = await c.loading('M');
        clock.advance(5000);
        assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), ['B']);
        assert.equal(c.entry('M').state.kind, 'loading');
        assert.deepEqual(await view(c, 'M'), unloadedView(slots, { state: 'loading', active_slots: 1 }));
        assert.deepEqual(await view(c, 'B'), unloadedView(slots));
        await c.load('M').open();
        assert.equal(report(await first).generation, 1);
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1]));
        assert.deepEqual(await view(c, 'M'), readyView(slots));
      });
    });

    test(`[state.loading.evict] slots=${slots}: max_loaded_models: a cold load behind loading M never disturbs it, skips busy M and evicts idle B`, async () => {
      await withContractServer(
        [
          { id: 'M', slots },
          { id: 'B', slots },
          { id: 'X', slots },
        ],
        { max_loaded_models: 2 },
        async (c) => {
          await c.ready('B');
          // Guarded cold loads are serialised: X waits for M's load; nothing is evicted meanwhile.
          const { gate, first, x } = await coldLoadBehindLoadingM(c);
          assert.deepEqual(tally(c, 'X'), NONE);
          assert.deepEqual(tally(c, 'B').weights, []);
          assert.deepEqual(await view(c, 'M'), unloadedView(slots, { state: 'loading', active_slots: 1 }));
          await c.load('M').open();
          assert.equal(report(await x.promise).generation, 1);
          await c.waitCount('M', 'run-start', 1);
          assert.match(c.s.logs.join('\n'), /evicted model 'B' to load 'X'/);
          assert.doesNotMatch(c.s.logs.join('\n'), /evicted model 'M'/);
          assert.deepEqual(await view(c, 'B'), unloadedView(slots));
          assert.deepEqual(await view(c, 'M'), readyView(slots, { active_slots: 1 }));
          assert.equal(first.settled, false);
          await gate.open();
          assert.equal(report(await first.promise).generation, 1);
          assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1]));
          assert.deepEqual(await view(c, 'X'), readyView(slots));
        },
      );
    });

    test(`[state.loading.evict] slots=${slots}: max_loaded_models=1: a cold load behind loading M finds it busy and gets 503; M goes on`, async () => {
      await withContractServer(
        [
          { id: 'M', slots },
          { id: 'X', slots },
        ],
        { max_loaded_models: 1 },
        async (c) => {
          const { gate, first, x } = await coldLoadBehindLoadingM(c);
          await c.load('M').open();
          assert.match(errorOf(await x.promise, 503, 'server_busy'), /every loaded model is busy/);
          assert.deepEqual(tally(c, 'X'), NONE, 'nothing of X was built');
          assert.deepEqual(await view(c, 'X'), unloadedView(slots));
          await c.waitCount('M', 'run-start', 1);
          assert.deepEqual(await view(c, 'M'), readyView(slots, { active_slots: 1 }));
          await gate.open();
          assert.equal(report(await first.promise).generation, 1);
          assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1]));
        },
      );
    });

    test(`[state.loading.status] slots=${slots}: status during a load never exposes a partial pool and changes nothing`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        const { request: first } = await c.loading('M');
        const before = leases(c.snapshot('M'));
        const st = await statusOf(c, 'M');
        assert.equal(st.family, 'fixture');
        assert.deepEqual(pick(st), unloadedView(slots, { state: 'loading', active_slots: 1 }));
        assert.deepEqual(leases(c.snapshot('M')), before, 'status reserves nothing');
        assert.deepEqual(tally(c, 'M'), NONE);
        const poll = pollStatus(c, 'M');
        await c.load('M').open();
        assert.equal(report(await first).generation, 1);
        const samples = await poll.stop();
        assert.ok(samples.length > 0);
        for (const sample of samples) {
          const v = pick(sample);
          const loading = v.state === 'loading' && !v.loaded && v.max_parallel_slots === null;
          const ready = v.state === 'ready' && v.loaded && v.max_parallel_slots === slots;
          assert.ok(loading || ready, `a complete observation: ${JSON.stringify(v)}`);
          assert.equal(v.slots, slots);
        }
        assert.deepEqual(await view(c, 'M'), readyView(slots));
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1]));
      });
    });
  }
});

describe('state x operation: M ready', () => {
  for (const slots of COUNTS) {
    test(`[state.ready.inference] slots=${slots}: requests fill the spare slots, then queue; 200, ready, no reload`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', slots);
        const extra = track(c.infer('M'));
        const gone = abortable(c, 'M');
        await waitSnapshot(c, 'M', { activeRequests: slots, queuedRequests: 2 });
        // Better than the contract: a queued client that disconnects leaves the queue at once.
        gone.abort();
        assert.equal((await gone.promise).aborted, true);
        await waitSnapshot(c, 'M', { activeRequests: slots, queuedRequests: 1 });
        assert.deepEqual(await view(c, 'M'), readyView(slots, { active_slots: slots, queued_requests: 1 }));
        assert.equal(c.count('M', 'run-start'), slots);
        await gate.open();
        const reports = (await Promise.all(requests)).map(report);
        assert.deepEqual(
          reports.map((r) => r.slot).sort(),
          Array.from({ length: slots }, (_, i) => i),
          'independent sessions',
        );
        for (const r of reports) assert.equal(r.generation, 1);
        assert.equal(report(await extra.promise).generation, 1);
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, rep(1, slots + 1)));
        assert.deepEqual(await view(c, 'M'), readyView(slots));
      });
    });

    for (const changed of [false, true]) {
      test(`[state.ready.register] slots=${slots}: ${changed ? 'a reconfiguration' : 'a same-config registration'} waits for earlier work${changed ? ', validates before teardown' : ''}; 200 loaded, ready`, async () => {
        await withContractServer([{ id: 'M', slots }], async (c) => {
          await c.ready('M');
          const { gate, requests } = await c.running('M', 1);
          const reg = track(c.register('M', changed ? { load_options: { variant: 'next' } } : {}));
          await waitSnapshot(c, 'M', { queuedManagers: 1 });
          const later = track(c.infer('M'));
          await waitSnapshot(c, 'M', { queuedManagers: 1, queuedRequests: 1, activeRequests: 1 });
          // Spare slots or not, the later request waits behind the manager.
          assert.deepEqual(await view(c, 'M'), readyView(slots, { active_slots: 1, queued_requests: 1 }));
          assert.deepEqual(tally(c, 'M').disposed, []);
          assert.equal(reg.settled, false);
          await gate.open();
          assert.equal(report(await requests[0]!).generation, 1);
          await assertRegistered(reg, 'M', changed);
          const g = changed ? (slots > 1 ? 3 : 2) : 1;
          const r = report(await later.promise);
          assert.equal(r.generation, g);
          assert.equal(r.load_options.variant, changed ? 'next' : undefined);
          assert.deepEqual(await view(c, 'M'), readyView(slots));
          if (!changed) {
            assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1, 1]));
            return;
          }
          assert.deepEqual(tally(c, 'M'), replacedTally(slots, g));
          assertBefore(c, ['M', 'run-end', 1], ['M', 'session-disposed', 1], 'earlier work drains first');
          if (slots > 1) {
            assertBefore(c, ['M', 'run-end', 1], ['M', 'load', 2], 'the probe waits for earlier work');
            assertBefore(
              c,
              ['M', 'weights-disposed', 2],
              ['M', 'session-disposed', 1],
              'the probe precedes teardown',
            );
          }
        });
      });
    }

    test(`[state.ready.unload] slots=${slots}: an unload waits for earlier work, then tears down clones before the primary; 200 loaded=false`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', 1);
        const unload = track(c.unload('M'));
        await waitSnapshot(c, 'M', { queuedManagers: 1, activeRequests: 1 });
        assert.deepEqual(await view(c, 'M'), readyView(slots, { active_slots: 1 }));
        assert.deepEqual(tally(c, 'M').disposed, []);
        assert.equal(unload.settled, false);
        await gate.open();
        assert.equal(report(await requests[0]!).generation, 1);
        await assertUnloaded(unload, 'M');
        assert.deepEqual(tally(c, 'M'), freedTally(slots, [1]));
        assertBefore(c, ['M', 'run-end', 1], ['M', 'session-disposed', 1], 'earlier work drains first');
        assertBefore(
          c,
          ['M', 'session-disposed', 1],
          ['M', 'weights-disposed', 1],
          'sessions before weights',
        );
        assert.deepEqual(disposedSlots(c, 'M', 1), reverseSlots(slots));
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
      });
    });

    test(`[state.ready.bulk-unload] slots=${slots}: per-model barriers; ready-idle M is freed first while busy B drains; 200 unloaded`, async () => {
      await withContractServer(mAndB(slots), async (c) => {
        await c.ready('M');
        await c.ready('B');
        const { gate, requests } = await c.running('B', 1);
        const bulk = track(c.bulkUnload(['B', 'M']));
        await c.waitCount('M', 'weights-disposed', 1);
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
        await waitSnapshot(c, 'B', { queuedManagers: 1, activeRequests: 1 });
        assert.deepEqual(await view(c, 'B'), readyView(slots, { active_slots: 1 }));
        assert.equal(bulk.settled, false);
        await gate.open();
        assert.equal(report(await requests[0]!).generation, 1);
        await assertBulk(bulk, { unloaded: ['B', 'M'], not_found: [] });
        for (const id of ['M', 'B']) {
          assert.deepEqual(tally(c, id).weights, [1]);
          assert.deepEqual(tally(c, id).disposed, rep(1, slots));
          assert.deepEqual(await view(c, id), unloadedView(slots));
        }
        assertBefore(c, ['M', 'weights-disposed', 1], ['B', 'run-end', 1], 'idle M is freed before B drains');
      });
    });

    test(`[state.ready.evict] slots=${slots}: idle retirement takes M only when idle and queue-free for idle_unload_ms; no client sees it`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots }], { idle_unload_ms: 1000, clock }, async (c) => {
        c.s.voxd.runtime.residency.stopIdleTimer();
        await c.ready('M');
        const { gate, requests } = await c.running('M', 1);
        const queued = slots === 1 ? track(c.infer('M')) : undefined;
        if (queued) await waitSnapshot(c, 'M', { queuedRequests: 1 });
        clock.advance(5000);
        assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), [], 'busy M is not retired');
        assert.deepEqual(tally(c, 'M').disposed, []);
        await gate.open();
        assert.equal(report(await requests[0]!).generation, 1);
        if (queued) assert.equal(report(await queued.promise).generation, 1);
        clock.advance(999);
        assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), [], 'the last request renewed it');
        assert.deepEqual(await view(c, 'M'), readyView(slots));
        clock.advance(1);
        assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), ['M']);
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
        assert.deepEqual(tally(c, 'M'), freedTally(slots, rep(1, queued ? 2 : 1)));
        assert.deepEqual(disposedSlots(c, 'M', 1), reverseSlots(slots));
      });
    });

    test(`[state.ready.evict] slots=${slots}: max_loaded_models=1: busy M is skipped (503 for the other load), idle M is evicted`, async () => {
      await withContractServer(
        [
          { id: 'M', slots },
          { id: 'X', slots },
        ],
        { max_loaded_models: 1 },
        async (c) => {
          await c.ready('M');
          const { gate, requests } = await c.running('M', 1);
          assert.match(errorOf(await c.infer('X'), 503, 'server_busy'), /every loaded model is busy/);
          assert.deepEqual(tally(c, 'X'), NONE);
          assert.deepEqual(await view(c, 'M'), readyView(slots, { active_slots: 1 }));
          await gate.open();
          assert.equal(report(await requests[0]!).generation, 1);
          assert.equal(report(await c.infer('X')).generation, 1);
          assert.match(c.s.logs.join('\n'), /evicted model 'M' to load 'X'/);
          assert.deepEqual(await view(c, 'M'), unloadedView(slots));
          assert.deepEqual(await view(c, 'X'), readyView(slots));
          assert.deepEqual(tally(c, 'M'), freedTally(slots, [1]));
        },
      );
    });

    test(`[state.ready.status] slots=${slots}: status reports counters and metadata and reserves no lease`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', 1);
        const before = leases(c.snapshot('M'));
        const st = await statusOf(c, 'M');
        assert.equal(st.family, 'fixture');
        assert.equal(st.task, 'asr');
        assert.deepEqual(st.session_options, {});
        assert.deepEqual(pick(st), readyView(slots, { active_slots: 1 }));
        assert.deepEqual(leases(c.snapshot('M')), before, 'status reserves nothing');
        // The next request still finds every spare slot (or queues when there is none).
        const next = track(c.infer('M', { run_gate: gate.path }));
        if (slots > 1) {
          await c.waitCount('M', 'run-start', 2);
          assert.deepEqual(await view(c, 'M'), readyView(slots, { active_slots: 2 }));
        } else {
          await waitSnapshot(c, 'M', { queuedRequests: 1 });
          assert.deepEqual(await view(c, 'M'), readyView(slots, { active_slots: 1, queued_requests: 1 }));
        }
        await gate.open();
        assert.equal(report(await requests[0]!).generation, 1);
        assert.equal(report(await next.promise).generation, 1);
        assert.deepEqual(await view(c, 'M'), readyView(slots));
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, [1, 1]));
      });
    });
  }
});
