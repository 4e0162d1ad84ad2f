/**
 * The contract's "Operations crossed with model states" matrix, rows Reconfiguring and Unloading
 * (state-matrix-1.test.ts has Unloaded, Loading and Ready). Each test holds M in the row's state
 * with fixture gates, performs the column's operation over HTTP and asserts the response, the
 * GET /v1/models fields and the fixture record. Every lifecycle test runs at 1, 2 and 4 slots.
 *
 * A reconfiguration here changes slots (1->2, 2->4, 4->2), load options and session options, so a
 * private capacity probe runs: the old pool is generation 1, the probe 2, the replacement 3.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock, post } from '../helpers/voxd.js';
import { COUNTS, pick, readyView, track, unloadedView, view } from './assertions.js';
import { withContractServer } from './harness.js';
import {
  abortable,
  assertAllUnloaded,
  assertBefore,
  assertBulk,
  assertRegistered,
  assertUnloaded,
  disposedSlots,
  freedTally,
  holdReconfiguring,
  leases,
  loadedTally,
  mAndB,
  NONE,
  nextSlots,
  pollStatus,
  rep,
  report,
  reverseSlots,
  statusOf,
  tally,
  waitFor,
  waitSnapshot,
} from './state-matrix-helpers.js';

const NEW_SESSION_OPTIONS = { tag: 'new' };

/** The record of M after a completed reconfiguration from `slots` to `next` (no request run). */
const reconfigured = (slots: number, next: number) => ({
  ...NONE,
  load: [1, 2, 3],
  created: [...rep(1, slots), ...rep(3, next)],
  disposed: rep(1, slots),
  weights: [2, 1],
});

describe('state x operation: M reconfiguring', () => {
  for (const slots of COUNTS) {
    const next = nextSlots(slots);

    for (const phase of ['validating', 'loading'] as const) {
      const where =
        phase === 'validating'
          ? 'while the replacement is validated (old pool still published with free slots)'
          : 'while the committed replacement loads';
      test(`[state.reconfiguring.inference] slots=${slots}->${next}: requests ${where} queue behind the manager and bind the new config; 200, ready`, async () => {
        await withContractServer([{ id: 'M', slots }], async (c) => {
          await c.ready('M');
          const held = await holdReconfiguring(c, 'M', next, phase);
          const runGate = await c.runGate();
          const requests = Array.from({ length: next + 1 }, () =>
            track(c.infer('M', { run_gate: runGate.path })),
          );
          const gone = abortable(c, 'M');
          await waitSnapshot(c, 'M', { managerActive: true, activeRequests: 0, queuedRequests: next + 2 });
          // Better than the contract: a queued client that disconnects leaves the queue at once.
          gone.abort();
          assert.equal((await gone.promise).aborted, true);
          await waitSnapshot(c, 'M', { managerActive: true, activeRequests: 0, queuedRequests: next + 1 });
          assert.deepEqual(
            await view(c, 'M'),
            phase === 'validating'
              ? readyView(slots, { state: 'reconfiguring', queued_requests: next + 1 })
              : unloadedView(next, { state: 'reconfiguring', queued_requests: next + 1 }),
          );
          assert.deepEqual(tally(c, 'M').runs, [], 'nothing runs on the old pool');
          await held.gate.open();
          await assertRegistered(held.request, 'M', true);
          // The new capacity applies: `next` run at once, one waits.
          await c.waitCount('M', 'run-start', next);
          assert.deepEqual(await view(c, 'M'), readyView(next, { active_slots: next, queued_requests: 1 }));
          await runGate.open();
          for (const t of requests) {
            const r = report(await t.promise);
            assert.equal(r.generation, 3);
            assert.equal(r.load_options.variant, 'next');
            assert.deepEqual(r.session_options, NEW_SESSION_OPTIONS);
          }
          assert.deepEqual(tally(c, 'M'), { ...reconfigured(slots, next), runs: rep(3, next + 1) });
          assert.deepEqual(await view(c, 'M'), readyView(next));
        });
      });
    }

    test(`[state.reconfiguring.register] slots=${slots}->${next}: a later same-config registration queues behind the manager; 200 with the final config`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const held = await holdReconfiguring(c, 'M', next, 'loading');
        const again = track(post(c.url, '/v1/models/load', held.body));
        await waitSnapshot(c, 'M', { managerActive: true, queuedManagers: 1 });
        assert.deepEqual(await view(c, 'M'), unloadedView(next, { state: 'reconfiguring' }));
        assert.equal(again.settled, false);
        await held.gate.open();
        await assertRegistered(held.request, 'M', true);
        await assertRegistered(again, 'M', false);
        assert.ok(held.request.order < again.order, 'in scheduler order');
        assert.deepEqual(tally(c, 'M'), reconfigured(slots, next), 'the same config loads nothing more');
        assert.deepEqual(await view(c, 'M'), readyView(next));
        assert.deepEqual((await statusOf(c, 'M')).session_options, NEW_SESSION_OPTIONS);
      });
    });

    test(`[state.reconfiguring.register] slots=${slots}->${next}->${slots}: a later reconfiguration runs after the first and after a request queued between them; 200 with the final config`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const held = await holdReconfiguring(c, 'M', next, 'loading');
        const between = track(c.infer('M'));
        await waitSnapshot(c, 'M', { queuedRequests: 1 });
        const second = track(c.register('M', { slots, load_options: { variant: 'third' } }));
        await waitSnapshot(c, 'M', { managerActive: true, queuedRequests: 1, queuedManagers: 1 });
        assert.deepEqual(
          await view(c, 'M'),
          unloadedView(next, { state: 'reconfiguring', queued_requests: 1 }),
        );
        await held.gate.open();
        await assertRegistered(held.request, 'M', true);
        await assertRegistered(second, 'M', true);
        assert.ok(held.request.order < second.order, 'in scheduler order');
        // The request queued between the two managers ran on the first one's configuration.
        const rb = report(await between.promise);
        assert.equal(rb.generation, 3);
        assert.equal(rb.load_options.variant, 'next');
        assertBefore(
          c,
          ['M', 'run-end', 3],
          ['M', 'session-disposed', 3],
          'the request ran before the second teardown',
        );
        // The second replacement is probed too when it has more than one slot.
        const g = slots > 1 ? 5 : 4;
        assert.deepEqual(tally(c, 'M'), {
          ...NONE,
          load: slots > 1 ? [1, 2, 3, 4, 5] : [1, 2, 3, 4],
          created: [...rep(1, slots), ...rep(3, next), ...rep(g, slots)],
          disposed: [...rep(1, slots), ...rep(3, next)],
          weights: slots > 1 ? [2, 1, 4, 3] : [2, 1, 3],
          runs: [3],
        });
        assert.deepEqual(await view(c, 'M'), readyView(slots));
        assert.deepEqual((await statusOf(c, 'M')).session_options, {});
        const r = report(await c.infer('M'));
        assert.equal(r.generation, g);
        assert.equal(r.load_options.variant, 'third');
      });
    });

    test(`[state.reconfiguring.unload] slots=${slots}->${next}: a later unload queues, retires the replacement once it is published; 200 unloaded`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const held = await holdReconfiguring(c, 'M', next, 'loading');
        const unload = track(c.unload('M'));
        await waitSnapshot(c, 'M', { managerActive: true, queuedManagers: 1 });
        assert.deepEqual(await view(c, 'M'), unloadedView(next, { state: 'reconfiguring' }));
        assert.equal(unload.settled, false);
        await held.gate.open();
        await assertRegistered(held.request, 'M', true);
        await assertUnloaded(unload, 'M');
        assert.ok(held.request.order < unload.order, 'in scheduler order');
        assert.deepEqual(tally(c, 'M'), {
          ...reconfigured(slots, next),
          disposed: [...rep(1, slots), ...rep(3, next)],
          weights: [2, 1, 3],
        });
        assert.deepEqual(disposedSlots(c, 'M', 3), reverseSlots(next));
        // Unloaded with the new configuration kept.
        assert.deepEqual(await view(c, 'M'), unloadedView(next));
        assert.deepEqual((await statusOf(c, 'M')).session_options, NEW_SESSION_OPTIONS);
      });
    });

    test(`[state.reconfiguring.bulk-unload] slots=${slots}->${next}: the barrier queues behind the manager while ready B retires; 200 unloaded`, async () => {
      await withContractServer(mAndB(slots), async (c) => {
        await c.ready('M');
        await c.ready('B');
        const held = await holdReconfiguring(c, 'M', next, 'loading');
        const bulk = track(c.bulkUnload(['M', 'B']));
        await c.waitCount('B', 'weights-disposed', 1);
        assert.deepEqual(await view(c, 'B'), unloadedView(slots));
        await waitSnapshot(c, 'M', { managerActive: true, queuedManagers: 1 });
        assert.deepEqual(await view(c, 'M'), unloadedView(next, { state: 'reconfiguring' }));
        assert.equal(bulk.settled, false);
        await held.gate.open();
        await assertRegistered(held.request, 'M', true);
        await assertBulk(bulk, { unloaded: ['M', 'B'], not_found: [] });
        assert.deepEqual(tally(c, 'M'), {
          ...reconfigured(slots, next),
          disposed: [...rep(1, slots), ...rep(3, next)],
          weights: [2, 1, 3],
        });
        assertBefore(c, ['B', 'weights-disposed', 1], ['M', 'load', 3], 'B retires before M is published');
        assert.deepEqual(await view(c, 'M'), unloadedView(next));
        assert.deepEqual(await view(c, 'B'), unloadedView(slots));
      });
    });

    test(`[state.reconfiguring.evict] slots=${slots}->${next}: idle retirement skips M whose old pool is held by the manager, retires idle B; the reconfiguration continues`, async () => {
      const clock = new ManualClock();
      await withContractServer(mAndB(slots), { idle_unload_ms: 1000, clock }, async (c) => {
        c.s.voxd.runtime.residency.stopIdleTimer();
        await c.ready('M');
        await c.ready('B');
        const held = await holdReconfiguring(c, 'M', next, 'validating');
        clock.advance(5000);
        assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), ['B']);
        assert.deepEqual(await view(c, 'M'), readyView(slots, { state: 'reconfiguring' }));
        assert.deepEqual(tally(c, 'M'), loadedTally(slots, []), 'the old pool is intact');
        assert.deepEqual(await view(c, 'B'), unloadedView(slots));
        await held.gate.open();
        await assertRegistered(held.request, 'M', true);
        assert.deepEqual(tally(c, 'M'), reconfigured(slots, next));
        assert.deepEqual(await view(c, 'M'), readyView(next));
      });
    });

    test(`[state.reconfiguring.evict] slots=${slots}->${next}: max_loaded_models: eviction skips the least recently used M under its manager and evicts idle B; the reconfiguration continues`, async () => {
      const clock = new ManualClock();
      await withContractServer(
        [
          { id: 'M', slots },
          { id: 'B', slots },
          { id: 'X', slots },
        ],
        { max_loaded_models: 2, clock },
        async (c) => {
          await c.ready('M');
          clock.advance(10);
          await c.ready('B');
          assert.ok(c.entry('M').lastUsedAt < c.entry('B').lastUsedAt, 'M is the least recently used');
          const held = await holdReconfiguring(c, 'M', next, 'validating');
          assert.equal(report(await c.infer('X')).generation, 1);
          assert.match(c.s.logs.join('\n'), /evicted model 'B' to load 'X'/);
          assert.doesNotMatch(c.s.logs.join('\n'), /evicted model 'M'/);
          assert.deepEqual(tally(c, 'M'), loadedTally(slots, []));
          assert.deepEqual(await view(c, 'M'), readyView(slots, { state: 'reconfiguring' }));
          assert.deepEqual(await view(c, 'B'), unloadedView(slots));
          await held.gate.open();
          await assertRegistered(held.request, 'M', true);
          assert.deepEqual(tally(c, 'M'), reconfigured(slots, next));
          assert.deepEqual(await view(c, 'M'), readyView(next));
          assert.deepEqual(await view(c, 'X'), readyView(slots));
        },
      );
    });

    test(`[state.reconfiguring.status] slots=${slots}->${next}: status shows complete old or complete new metadata in every phase, never a partial pool or mix, and reserves nothing`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const gate = await c.runGate();
        const teardown = await c.runGate();
        await teardown.open();
        const body = {
          ...c.body('M', {
            slots: next,
            load_options: { variant: 'next', load_gate: gate.path, teardown_gate: teardown.path },
          }),
          session_options: NEW_SESSION_OPTIONS,
        };
        const entry = c.entry('M');
        const poll = pollStatus(c, 'M');
        await c.teardown('M').close();
        const reg = track(post(c.url, '/v1/models/load', body));
        // Validating: the probe waits on the replacement's gate; old metadata, old pool.
        await waitFor('M validates', () => entry.activity === 'reconfiguring');
        let st = await statusOf(c, 'M');
        assert.deepEqual(pick(st), readyView(slots, { state: 'reconfiguring' }));
        assert.deepEqual(st.session_options, {});
        const before = leases(c.snapshot('M'));
        await statusOf(c, 'M');
        assert.deepEqual(leases(c.snapshot('M')), before, 'status reserves nothing');
        // Retiring the old pool: still the old metadata, no capacity.
        await gate.open();
        await waitFor('M retires its old pool', () => entry.state.kind === 'unloading');
        st = await statusOf(c, 'M');
        assert.deepEqual(pick(st), unloadedView(slots, { state: 'reconfiguring' }));
        assert.deepEqual(st.session_options, {});
        assert.deepEqual(tally(c, 'M').weights, [2], 'the probe was disposed before the teardown');
        // Loading the replacement: the complete new metadata, no capacity yet.
        await gate.close();
        await c.teardown('M').open();
        await waitFor('M loads its replacement', () => entry.state.kind === 'loading');
        st = await statusOf(c, 'M');
        assert.deepEqual(pick(st), unloadedView(next, { state: 'reconfiguring' }));
        assert.deepEqual(st.session_options, NEW_SESSION_OPTIONS);
        await gate.open();
        await assertRegistered(reg, 'M', true);
        const samples = await poll.stop();
        st = await statusOf(c, 'M');
        assert.deepEqual(pick(st), readyView(next));
        assert.deepEqual(st.session_options, NEW_SESSION_OPTIONS);
        assert.ok(samples.length > 0);
        for (const sample of samples) {
          const v = pick(sample);
          const old = v.slots === slots && Object.keys(sample.session_options).length === 0;
          const neu = v.slots === next && sample.session_options.tag === 'new';
          assert.ok(old || neu, `complete old or new metadata: ${JSON.stringify(sample)}`);
          if (v.max_parallel_slots === null) assert.equal(v.loaded, false);
          else {
            assert.equal(v.loaded, true);
            assert.equal(
              v.max_parallel_slots,
              v.slots,
              `the pool matches the metadata: ${JSON.stringify(v)}`,
            );
          }
          assert.ok(['ready', 'reconfiguring'].includes(v.state), v.state);
          assert.equal(v.active_slots, 0);
        }
        assert.deepEqual(tally(c, 'M'), reconfigured(slots, next));
      });
    });
  }
});

describe('state x operation: M unloading', () => {
  for (const slots of COUNTS) {
    test(`[state.unloading.inference] slots=${slots}: requests during a slow unload queue, then reload and run after the teardown; 200, ready`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const { request: unload } = await c.unloading('M');
        const requests = Array.from({ length: slots }, () => track(c.infer('M')));
        const gone = abortable(c, 'M');
        await waitSnapshot(c, 'M', { managerActive: true, activeRequests: 0, queuedRequests: slots + 1 });
        // Better than the contract: a queued client that disconnects leaves the queue at once.
        gone.abort();
        assert.equal((await gone.promise).aborted, true);
        await waitSnapshot(c, 'M', { managerActive: true, activeRequests: 0, queuedRequests: slots });
        assert.deepEqual(
          await view(c, 'M'),
          unloadedView(slots, { state: 'unloading', queued_requests: slots }),
        );
        assert.deepEqual(tally(c, 'M').load, [1]);
        assert.deepEqual(tally(c, 'M').weights, []);
        await c.teardown('M').open();
        await assertUnloaded(unload, 'M');
        for (const t of requests) assert.equal(report(await t.promise).generation, 2);
        assert.deepEqual(tally(c, 'M'), {
          ...NONE,
          load: [1, 2],
          created: [...rep(1, slots), ...rep(2, slots)],
          disposed: rep(1, slots),
          weights: [1],
          runs: rep(2, slots),
        });
        assertBefore(c, ['M', 'weights-disposed', 1], ['M', 'load', 2], 'the reload follows the teardown');
        assert.deepEqual(await view(c, 'M'), readyView(slots));
      });
    });

    for (const changed of [false, true]) {
      test(`[state.unloading.register] slots=${slots}: ${changed ? 'a reconfiguration' : 'a same-config registration'} queues behind the unload, then validates and loads; 200 ready${changed ? ' replacement' : ''}`, async () => {
        await withContractServer([{ id: 'M', slots }], async (c) => {
          await c.ready('M');
          const { request } = await c.unloading('M');
          const unload = track(request);
          const reg = track(c.register('M', changed ? { load_options: { variant: 'next' } } : {}));
          await waitSnapshot(c, 'M', { managerActive: true, queuedManagers: 1 });
          assert.deepEqual(await view(c, 'M'), unloadedView(slots, { state: 'unloading' }));
          assert.deepEqual(tally(c, 'M').load, [1]);
          assert.equal(reg.settled, false);
          await c.teardown('M').open();
          await assertUnloaded(unload, 'M');
          await assertRegistered(reg, 'M', changed);
          assert.ok(unload.order < reg.order, 'in scheduler order');
          const g = changed && slots > 1 ? 3 : 2;
          assert.deepEqual(tally(c, 'M'), {
            ...NONE,
            load: g === 3 ? [1, 2, 3] : [1, 2],
            created: [...rep(1, slots), ...rep(g, slots)],
            disposed: rep(1, slots),
            weights: g === 3 ? [1, 2] : [1],
          });
          assertBefore(
            c,
            ['M', 'weights-disposed', 1],
            ['M', 'load', 2],
            'validation and load follow the teardown',
          );
          assert.deepEqual(await view(c, 'M'), readyView(slots));
          const r = report(await c.infer('M'));
          assert.equal(r.generation, g);
          assert.equal(r.load_options.variant, changed ? 'next' : undefined);
        });
      });
    }

    test(`[state.unloading.unload] slots=${slots}: a second unload queues and is an idempotent 200 unloaded`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const { request } = await c.unloading('M');
        const first = track(request);
        const second = track(c.unload('M'));
        await waitSnapshot(c, 'M', { managerActive: true, queuedManagers: 1 });
        assert.deepEqual(await view(c, 'M'), unloadedView(slots, { state: 'unloading' }));
        assert.equal(second.settled, false);
        await c.teardown('M').open();
        await assertUnloaded(first, 'M');
        await assertUnloaded(second, 'M');
        assert.ok(first.order < second.order, 'in scheduler order');
        assert.deepEqual(tally(c, 'M'), freedTally(slots));
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
      });
    });

    test(`[state.unloading.bulk-unload] slots=${slots}: the barrier queues on unloading M while ready B is freed first; 200 unloaded`, async () => {
      await withContractServer(mAndB(slots), async (c) => {
        await c.ready('M');
        await c.ready('B');
        const { request } = await c.unloading('M');
        const unload = track(request);
        const bulk = track(c.bulkUnload(['M', 'B']));
        await c.waitCount('B', 'weights-disposed', 1);
        assert.deepEqual(await view(c, 'B'), unloadedView(slots));
        await waitSnapshot(c, 'M', { managerActive: true, queuedManagers: 1 });
        assert.deepEqual(await view(c, 'M'), unloadedView(slots, { state: 'unloading' }));
        assert.deepEqual(tally(c, 'M').weights, []);
        assert.equal(bulk.settled, false);
        await c.teardown('M').open();
        await assertUnloaded(unload, 'M');
        await assertBulk(bulk, { unloaded: ['M', 'B'], not_found: [] });
        assert.deepEqual(tally(c, 'M'), freedTally(slots));
        assertBefore(
          c,
          ['B', 'weights-disposed', 1],
          ['M', 'weights-disposed', 1],
          'B is freed before M finishes',
        );
        await assertAllUnloaded(c, slots, ['M', 'B']);
      });
    });

    test(`[state.unloading.evict] slots=${slots}: a retiring M is no resident victim; other idle victims are evicted or retired independently`, async () => {
      const clock = new ManualClock();
      await withContractServer(
        [
          { id: 'M', slots },
          { id: 'B', slots },
          { id: 'X', slots },
        ],
        { max_loaded_models: 1, idle_unload_ms: 1000, clock },
        async (c) => {
          c.s.voxd.runtime.residency.stopIdleTimer();
          await c.ready('M');
          const { request } = await c.unloading('M');
          const unload = track(request);
          // M no longer counts: B loads without evicting or waiting for M's teardown.
          assert.equal(report(await c.infer('B')).generation, 1);
          // B is the one resident idle victim for X.
          assert.equal(report(await c.infer('X')).generation, 1);
          assert.match(c.s.logs.join('\n'), /evicted model 'B' to load 'X'/);
          assert.doesNotMatch(c.s.logs.join('\n'), /evicted model 'M'/);
          clock.advance(5000);
          assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), ['X']);
          assert.equal(c.entry('M').state.kind, 'unloading');
          assert.deepEqual(await view(c, 'M'), unloadedView(slots, { state: 'unloading' }));
          assert.deepEqual(tally(c, 'M').weights, [], 'M is still tearing down, once');
          assert.equal(unload.settled, false);
          await c.teardown('M').open();
          await assertUnloaded(unload, 'M');
          assert.deepEqual(tally(c, 'M'), freedTally(slots));
          for (const id of ['M', 'B', 'X']) assert.deepEqual(await view(c, id), unloadedView(slots));
        },
      );
    });

    test(`[state.unloading.status] slots=${slots}: status shows logical unloaded with null capacity while the physical teardown continues`, async () => {
      await withContractServer([{ id: 'M', slots }], async (c) => {
        await c.ready('M');
        const { request } = await c.unloading('M');
        await c.waitCount('M', 'session-disposed', slots);
        const before = leases(c.snapshot('M'));
        const st = await statusOf(c, 'M');
        assert.equal(st.family, 'fixture');
        assert.deepEqual(st.session_options, {});
        assert.deepEqual(pick(st), unloadedView(slots, { state: 'unloading' }));
        assert.deepEqual(leases(c.snapshot('M')), before, 'status reserves nothing');
        // The weights are not yet disposed: physical teardown goes on behind the logical unload.
        assert.deepEqual(tally(c, 'M'), {
          ...NONE,
          load: [1],
          created: rep(1, slots),
          disposed: rep(1, slots),
        });
        await c.teardown('M').open();
        await assertUnloaded(request, 'M');
        assert.deepEqual(tally(c, 'M').weights, [1]);
        assert.deepEqual(tally(c, 'M').load, [1], 'status loaded nothing');
        assert.deepEqual(await view(c, 'M'), unloadedView(slots));
      });
    });
  }
});
