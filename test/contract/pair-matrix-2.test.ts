/**
 * Two-model situations, part 2 (contract "Two-model situations" rows 5-8): A reconfiguring with B
 * running, A unloading slowly with B ready, A and B both busy, and another bulk unload already
 * waiting on A and B. Part 1 (rows 1-4) is pair-matrix.test.ts; the helpers are pair-helpers.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { reportOf } from '../helpers/voxd.js';
import { track } from './assertions.js';
import { type ContractServer, contractSituation, withContractServer } from './harness.js';
import {
  A_UNLOADED,
  BOTH,
  eventIndex,
  expectAllBefore,
  expectFields,
  expectJson,
  expectRecord,
  expectReports,
  LIMIT,
  NEXT,
  poolless,
  RECONFIGURED,
  readyFields,
  reconfigLoads,
  waitScheduler,
} from './pair-helpers.js';

const THIRD = { load_options: { variant: 'third' } };

// ---------------------------------------------------------------------------------------------
describe('pair: A reconfiguring, B running', () => {
  /**
   * A (1 slot) is reconfiguring to NEXT: the old pool is torn down and the replacement load waits on
   * A's closed load gate, under the manager lease. B (m slots) runs one request held by a gate.
   */
  const situation = contractSituation(
    (m) => [
      { id: 'A', slots: 1 },
      { id: 'B', slots: m },
    ],
    async (c, m) => {
      await c.ready('A');
      await c.ready('B');
      const { gate, requests: bHeld } = await c.running('B', 1);
      const { request: reconfigure } = await c.reconfiguring('A');
      await expectFields(c, 'A', poolless('reconfiguring', 1), 'at the start');
      expectRecord(
        c,
        'A',
        { loads: [1], sessions: 1, sessionsDisposed: 1, weightsDisposed: [1] },
        'at the start',
      );
      await expectFields(c, 'B', readyFields(m, 1, 0), 'at the start');
      expectRecord(
        c,
        'B',
        { loads: [1], sessions: m, sessionsDisposed: 0, weightsDisposed: [] },
        'at the start',
      );
      return { bGate: gate, bHeld, reconfigure };
    },
  );

  for (const m of [1, 2]) {
    test(
      `[pair.a-reconfiguring-b-running.request-a] B slots=${m}: A's request waits for the manager and binds the new configuration`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, bGate, bHeld, reconfigure }) => {
          const request = track(c.infer('A'));
          await waitScheduler(c, 'A', 'request queued behind the manager', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', poolless('reconfiguring', 1, 0, 1), 'with the request queued');
          assert.equal(request.settled, false);
          await c.load('A').open();
          await expectJson(reconfigure, RECONFIGURED);
          const [report] = await expectReports([request.promise], 2);
          assert.equal(report.load_options.variant, 'next', 'bound to the committed configuration');
          await expectFields(c, 'A', readyFields(1));
          expectRecord(c, 'A', { loads: [1, 2], sessions: 2, sessionsDisposed: 1, weightsDisposed: [1] });
          // B's run is untouched and still held.
          await expectFields(c, 'B', readyFields(m, 1, 0), 'after A finished');
          assert.equal(c.count('B', 'run-end'), 0);
          await bGate.open();
          await expectReports(bHeld, 1);
        });
      },
    );

    test(
      `[pair.a-reconfiguring-b-running.request-b] B slots=${m}: ${m > 1 ? "B's spare slot runs the request" : 'full B queues the request'} while A stays reconfiguring`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, bGate, bHeld, reconfigure }) => {
          const request = track(c.infer('B'));
          if (m > 1) {
            await expectReports([request.promise], 1);
            assert.equal(c.count('B', 'run-end'), 1, "B's older run is still held");
            await expectFields(c, 'B', readyFields(m, 1, 0), 'after the spare-slot request');
            await bGate.open();
            await expectReports(bHeld, 1);
          } else {
            await waitScheduler(c, 'B', 'request queued', (s) => s.queuedRequests === 1);
            await expectFields(c, 'B', readyFields(m, 1, 1), 'with the request queued');
            await bGate.open();
            await expectReports([...bHeld, request.promise], 1);
          }
          await expectFields(c, 'B', readyFields(m));
          expectRecord(c, 'B', { loads: [1], sessions: m, sessionsDisposed: 0, weightsDisposed: [] });
          // A's manager is still held by its load gate the whole time.
          await expectFields(c, 'A', poolless('reconfiguring', 1), 'after B ran');
          expectRecord(c, 'A', { loads: [1], sessions: 1, sessionsDisposed: 1, weightsDisposed: [1] });
          await c.load('A').open();
          await expectJson(reconfigure, RECONFIGURED);
          await expectFields(c, 'A', readyFields(1));
        });
      },
    );

    test(
      `[pair.a-reconfiguring-b-running.reconfigure-a] B slots=${m}: a second reconfiguration queues behind the first; final A has the last configuration`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, bGate, bHeld, reconfigure }) => {
          const second = track(c.register('A', THIRD));
          await waitScheduler(c, 'A', 'second manager queued', (s) => s.queuedManagers === 1);
          await expectFields(c, 'A', poolless('reconfiguring', 1), 'with the second manager queued');
          assert.equal(second.settled, false);
          await c.load('A').open();
          await expectJson(reconfigure, RECONFIGURED);
          await expectJson(second.promise, RECONFIGURED);
          await expectFields(c, 'A', readyFields(1));
          expectRecord(c, 'A', {
            loads: [1, 2, 3],
            sessions: 3,
            sessionsDisposed: 2,
            weightsDisposed: [1, 2],
          });
          const report = reportOf(await c.infer('A'));
          assert.equal(report.generation, 3);
          assert.equal(report.load_options.variant, 'third');
          await expectFields(c, 'B', readyFields(m, 1, 0), 'after A finished');
          await bGate.open();
          await expectReports(bHeld, 1);
        });
      },
    );

    test(
      `[pair.a-reconfiguring-b-running.unload-a] B slots=${m}: the unload queues behind the manager, then unloads the replacement`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, bGate, bHeld, reconfigure }) => {
          const unload = track(c.unload('A'));
          await waitScheduler(c, 'A', 'unload queued', (s) => s.queuedManagers === 1);
          await expectFields(c, 'A', poolless('reconfiguring', 1), 'with the unload queued');
          assert.equal(unload.settled, false);
          await c.load('A').open();
          await expectJson(reconfigure, RECONFIGURED);
          await expectJson(unload.promise, A_UNLOADED);
          await expectFields(c, 'A', poolless('unloaded', 1));
          expectRecord(c, 'A', { loads: [1, 2], sessions: 2, sessionsDisposed: 2, weightsDisposed: [1, 2] });
          await expectFields(c, 'B', readyFields(m, 1, 0), 'after A finished');
          await bGate.open();
          await expectReports(bHeld, 1);
        });
      },
    );

    test(
      `[pair.a-reconfiguring-b-running.unload-ab] B slots=${m}: A's barrier waits for the manager, B's for its older request; both unloaded`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, bGate, bHeld, reconfigure }) => {
          const bulk = track(c.bulkUnload(['A', 'B']));
          await waitScheduler(c, 'A', 'barrier queued', (s) => s.queuedManagers === 1);
          assert.equal(c.snapshot('B').queuedManagers, 1, "B's barrier was published with A's");
          await expectFields(c, 'B', readyFields(m, 1, 0), 'with its barrier queued');
          await bGate.open();
          await expectReports(bHeld, 1);
          await c.waitCount('B', 'weights-disposed', 1);
          // B is freed while A's manager is still held by its load gate.
          await expectFields(c, 'B', poolless('unloaded', m));
          expectRecord(c, 'B', { loads: [1], sessions: m, sessionsDisposed: m, weightsDisposed: [1] });
          await expectFields(c, 'A', poolless('reconfiguring', 1), 'after B was freed');
          assert.equal(bulk.settled, false);
          await c.load('A').open();
          await expectJson(reconfigure, RECONFIGURED);
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'A', poolless('unloaded', 1));
          expectRecord(c, 'A', { loads: [1, 2], sessions: 2, sessionsDisposed: 2, weightsDisposed: [1, 2] });
          await expectFields(c, 'B', poolless('unloaded', m));
        });
      },
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe('pair: A unloading slowly, B ready', () => {
  /** A (n slots) is unloading: logically unloaded, its weights' teardown held by its closed gate. */
  const situation = contractSituation(
    (n) => [
      { id: 'A', slots: n },
      { id: 'B', slots: 1 },
    ],
    async (c, n) => {
      await c.ready('A');
      await c.ready('B');
      const { request: unload } = await c.unloading('A');
      await expectFields(c, 'A', poolless('unloading', n), 'at the start');
      expectRecord(
        c,
        'A',
        { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [] },
        'at the start',
      );
      await expectFields(c, 'B', readyFields(1), 'at the start');
      expectRecord(
        c,
        'B',
        { loads: [1], sessions: 1, sessionsDisposed: 0, weightsDisposed: [] },
        'at the start',
      );
      return { unload };
    },
  );

  const expectBIdle = async (c: ContractServer) => {
    await expectFields(c, 'B', readyFields(1));
    expectRecord(c, 'B', { loads: [1], sessions: 1, sessionsDisposed: 0, weightsDisposed: [] });
  };

  for (const n of [1, 2]) {
    test(
      `[pair.a-unloading-b-ready.request-a] slots=${n}: A's request waits for the teardown, then reloads and runs`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, unload }) => {
          const request = track(c.infer('A'));
          await waitScheduler(c, 'A', 'request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', poolless('unloading', n, 0, 1), 'with the request queued');
          assert.equal(request.settled, false);
          await c.teardown('A').open();
          await expectJson(unload, A_UNLOADED);
          await expectReports([request.promise], 2);
          await expectFields(c, 'A', readyFields(n));
          expectRecord(c, 'A', { loads: [1, 2], sessions: 2 * n, sessionsDisposed: n, weightsDisposed: [1] });
          assert.ok(
            eventIndex(c, { type: 'weights-disposed', model: 'A', generation: 1 }) <
              eventIndex(c, { type: 'load', model: 'A', generation: 2 }),
            'the reload starts after the old weights are gone',
          );
          await expectBIdle(c);
        });
      },
    );

    test(
      `[pair.a-unloading-b-ready.request-b] slots=${n}: warm B completes while A's teardown is still held`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, unload }) => {
          await expectReports([c.infer('B')], 1);
          // B answered while A's weights are still held by the closed teardown gate.
          assert.equal(c.entry('A').state.kind, 'unloading');
          await expectFields(c, 'A', poolless('unloading', n), 'after B ran');
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [] });
          await expectBIdle(c);
          assert.equal(c.count('B', 'run-end'), 1);
          await c.teardown('A').open();
          await expectJson(unload, A_UNLOADED);
          await expectFields(c, 'A', poolless('unloaded', n));
        });
      },
    );

    test(
      `[pair.a-unloading-b-ready.reconfigure-a] slots=${n}: the reconfiguration waits for the teardown, then loads the replacement`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, unload }) => {
          const reconfigure = track(c.register('A', NEXT));
          await waitScheduler(c, 'A', 'reconfiguration queued', (s) => s.queuedManagers === 1);
          await expectFields(c, 'A', poolless('unloading', n), 'with the reconfiguration queued');
          assert.equal(reconfigure.settled, false);
          await c.teardown('A').open();
          await expectJson(unload, A_UNLOADED);
          await expectJson(reconfigure.promise, RECONFIGURED);
          const { probe, replacement } = reconfigLoads(1, n);
          await expectFields(c, 'A', readyFields(n));
          expectRecord(c, 'A', {
            loads: probe ? [1, probe, replacement] : [1, replacement],
            sessions: 2 * n,
            sessionsDisposed: n,
            weightsDisposed: probe ? [1, probe] : [1],
          });
          assert.ok(
            eventIndex(c, { type: 'weights-disposed', model: 'A', generation: 1 }) <
              eventIndex(c, { type: 'load', model: 'A', generation: probe ?? replacement }),
            'nothing of the replacement loads before the old teardown finished',
          );
          const report = reportOf(await c.infer('A'));
          assert.equal(report.generation, replacement);
          assert.equal(report.load_options.variant, 'next');
          await expectBIdle(c);
        });
      },
    );

    test(
      `[pair.a-unloading-b-ready.unload-a] slots=${n}: a second unload waits for the teardown and is idempotent`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, unload }) => {
          const second = track(c.unload('A'));
          await waitScheduler(c, 'A', 'second unload queued', (s) => s.queuedManagers === 1);
          await expectFields(c, 'A', poolless('unloading', n), 'with the second unload queued');
          assert.equal(second.settled, false);
          await c.teardown('A').open();
          await expectJson(unload, A_UNLOADED);
          await expectJson(second.promise, A_UNLOADED);
          await expectFields(c, 'A', poolless('unloaded', n));
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
          await expectBIdle(c);
        });
      },
    );

    test(
      `[pair.a-unloading-b-ready.unload-ab] slots=${n}: bulk frees idle B before waiting for A's teardown`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, unload }) => {
          const bulk = track(c.bulkUnload(['A', 'B']));
          await c.waitCount('B', 'weights-disposed', 1);
          await expectFields(c, 'B', poolless('unloaded', 1));
          expectRecord(c, 'B', { loads: [1], sessions: 1, sessionsDisposed: 1, weightsDisposed: [1] });
          // A's teardown is still held and A's barrier queued behind it.
          assert.equal(c.snapshot('A').queuedManagers, 1);
          await expectFields(c, 'A', poolless('unloading', n), 'after B was freed');
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [] });
          assert.equal(bulk.settled, false);
          await c.teardown('A').open();
          await expectJson(unload, A_UNLOADED);
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'A', poolless('unloaded', n));
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
          await expectFields(c, 'B', poolless('unloaded', 1));
        });
      },
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe('pair: A and B both busy (A loading, B running; or both loading)', () => {
  /** A (n slots) is in its cold load, held by its load gate; B (n slots) runs n requests held by a gate. */
  const situation = contractSituation(
    (n) => [
      { id: 'A', slots: n },
      { id: 'B', slots: n },
    ],
    async (c, n) => {
      await c.ready('B');
      const { gate, requests: bHeld } = await c.running('B', n);
      const { request: first } = await c.loading('A');
      await expectFields(c, 'A', poolless('loading', n, 1, 0), 'at the start');
      expectRecord(
        c,
        'A',
        { loads: [], sessions: 0, sessionsDisposed: 0, weightsDisposed: [] },
        'at the start',
      );
      await expectFields(c, 'B', readyFields(n, n, 0), 'at the start');
      expectRecord(
        c,
        'B',
        { loads: [1], sessions: n, sessionsDisposed: 0, weightsDisposed: [] },
        'at the start',
      );
      return { bGate: gate, bHeld, first };
    },
  );

  /** B is untouched: still running its n held requests. */
  async function expectBHeld(c: ContractServer, n: number, when: string): Promise<void> {
    await expectFields(c, 'B', readyFields(n, n, 0), when);
    expectRecord(c, 'B', { loads: [1], sessions: n, sessionsDisposed: 0, weightsDisposed: [] }, when);
    assert.equal(c.count('B', 'run-end'), 0, `B's runs are still held ${when}`);
  }

  for (const n of [1, 2, 4]) {
    test(
      `[pair.ab-busy.request-a] slots=${n}: A's request ${n > 1 ? 'joins A initialisation' : 'queues on A'}; A loads and runs while B stays busy`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, bGate, bHeld, first }) => {
          const second = c.infer('A');
          if (n > 1) await waitScheduler(c, 'A', 'second request admitted', (s) => s.activeRequests === 2);
          else await waitScheduler(c, 'A', 'second request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', poolless('loading', n, n > 1 ? 2 : 1, n > 1 ? 0 : 1), 'while loading');
          await c.load('A').open();
          await expectReports([first, second], 1);
          await expectFields(c, 'A', readyFields(n));
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: 0, weightsDisposed: [] });
          await expectBHeld(c, n, 'after A ran');
          await bGate.open();
          await expectReports(bHeld, 1);
        });
      },
    );

    test(
      `[pair.ab-busy.request-b] slots=${n}: B's request queues on full B only and runs while A is still loading`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, bGate, bHeld, first }) => {
          const request = track(c.infer('B'));
          await waitScheduler(c, 'B', 'request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'B', readyFields(n, n, 1), 'with the request queued');
          await bGate.open();
          await expectReports([...bHeld, request.promise], 1);
          await expectFields(c, 'B', readyFields(n));
          // All of that happened while A's load is still held.
          assert.equal(c.entry('A').state.kind, 'loading');
          await expectFields(c, 'A', poolless('loading', n, 1, 0), 'after B ran');
          assert.equal(c.count('A', 'load'), 0);
          await c.load('A').open();
          await expectReports([first], 1);
          await expectFields(c, 'A', readyFields(n));
        });
      },
    );

    test(
      `[pair.ab-busy.reconfigure-a] slots=${n}: the reconfiguration drains A only; B stays busy`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, bGate, bHeld, first }) => {
          const reconfigure = track(c.register('A', NEXT));
          await waitScheduler(c, 'A', 'reconfiguration queued', (s) => s.queuedManagers === 1);
          assert.equal(reconfigure.settled, false);
          await c.load('A').open();
          await expectReports([first], 1);
          await expectJson(reconfigure.promise, RECONFIGURED);
          const { probe, replacement } = reconfigLoads(1, n);
          await expectFields(c, 'A', readyFields(n));
          expectRecord(c, 'A', {
            loads: probe ? [1, probe, replacement] : [1, replacement],
            sessions: 2 * n,
            sessionsDisposed: n,
            weightsDisposed: probe ? [probe, 1] : [1],
          });
          await expectBHeld(c, n, 'after A was reconfigured');
          const report = reportOf(await c.infer('A'));
          assert.equal(report.generation, replacement);
          assert.equal(report.load_options.variant, 'next');
          await bGate.open();
          await expectReports(bHeld, 1);
        });
      },
    );

    test(`[pair.ab-busy.unload-a] slots=${n}: the unload drains A only; B stays busy`, LIMIT, async () => {
      await situation(n, async ({ c, bGate, bHeld, first }) => {
        const unload = track(c.unload('A'));
        await waitScheduler(c, 'A', 'unload queued', (s) => s.queuedManagers === 1);
        assert.equal(unload.settled, false);
        await c.load('A').open();
        await expectReports([first], 1);
        await expectJson(unload.promise, A_UNLOADED);
        await expectFields(c, 'A', poolless('unloaded', n));
        expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
        expectAllBefore(c, { type: 'run-end', model: 'A' }, { type: 'session-disposed', model: 'A' });
        await expectBHeld(c, n, 'after A was unloaded');
        await bGate.open();
        await expectReports(bHeld, 1);
      });
    });

    test(
      `[pair.ab-busy.unload-ab] slots=${n}: bulk publishes both barriers before waiting; each model unloads after its own earlier work`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, bGate, bHeld, first }) => {
          const bulk = track(c.bulkUnload(['A', 'B']));
          await waitUntilBoth(c);
          await expectFields(c, 'A', poolless('loading', n, 1, 0), 'with both barriers queued');
          await expectBHeld(c, n, 'with both barriers queued');
          await c.load('A').open();
          await expectReports([first], 1);
          await c.waitCount('A', 'weights-disposed', 1);
          await expectFields(c, 'A', poolless('unloaded', n), 'while B is still busy');
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
          await expectBHeld(c, n, 'after A was unloaded');
          assert.equal(bulk.settled, false);
          await bGate.open();
          await expectReports(bHeld, 1);
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'B', poolless('unloaded', n));
          expectRecord(c, 'B', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
          await expectFields(c, 'A', poolless('unloaded', n));
        });
      },
    );
  }

  for (const n of [1, 2]) {
    test(
      `[pair.ab-busy.unload-ab] slots=${n}, A and B both in a cold load under the cold-load guard: a reversed bulk publishes both barriers, then unloads each after its own load and request`,
      LIMIT,
      async () => {
        await withContractServer(
          [
            { id: 'A', slots: n },
            { id: 'B', slots: n },
          ],
          { max_loaded_models: 2 },
          async (c) => {
            const { request: aFirst } = await c.loading('A');
            const { request: bFirst } = await c.loading('B');
            for (const id of ['A', 'B']) {
              await expectFields(c, id, poolless('loading', n, 1, 0), 'at the start');
              expectRecord(
                c,
                id,
                { loads: [], sessions: 0, sessionsDisposed: 0, weightsDisposed: [] },
                'at the start',
              );
            }
            const bulk = track(c.bulkUnload(['B', 'A']));
            await waitUntilBoth(c);
            await c.load('A').open();
            await expectReports([aFirst], 1);
            await c.waitCount('A', 'weights-disposed', 1);
            await expectFields(c, 'A', poolless('unloaded', n), 'while B is still loading');
            expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
            assert.equal(c.entry('B').state.kind, 'loading');
            await expectFields(c, 'B', poolless('loading', n, 1, 0), 'after A was unloaded');
            assert.equal(c.count('B', 'load'), 0);
            assert.equal(bulk.settled, false);
            await c.load('B').open();
            await expectReports([bFirst], 1);
            await expectJson(bulk.promise, { unloaded: ['B', 'A'], not_found: [] });
            for (const id of ['A', 'B']) {
              await expectFields(c, id, poolless('unloaded', n));
              expectRecord(c, id, { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
            }
          },
        );
      },
    );
  }

  /** Both barriers visible in one observation: published together, neither granted. */
  async function waitUntilBoth(c: ContractServer): Promise<void> {
    await waitScheduler(
      c,
      'A',
      "A's and B's barriers both queued",
      (a) => a.queuedManagers === 1 && c.snapshot('B').queuedManagers === 1,
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe('pair: another bulk unload already waits on A and B', () => {
  /**
   * A (n slots) and B (1 slot) each run one request held by its own gate; a bulk unload of [A, B]
   * has published its barriers on both and waits.
   */
  const situation = contractSituation(
    (n) => [
      { id: 'A', slots: n },
      { id: 'B', slots: 1 },
    ],
    async (c, n) => {
      await c.ready('A');
      await c.ready('B');
      const { gate: aGate, requests: aHeld } = await c.running('A', 1);
      const { gate: bGate, requests: bHeld } = await c.running('B', 1);
      const bulk = track(c.bulkUnload(['A', 'B']));
      await waitScheduler(
        c,
        'A',
        "the bulk's barriers queued on A and B",
        (a) => a.queuedManagers === 1 && c.snapshot('B').queuedManagers === 1,
      );
      await expectFields(c, 'A', readyFields(n, 1, 0), 'at the start');
      expectRecord(
        c,
        'A',
        { loads: [1], sessions: n, sessionsDisposed: 0, weightsDisposed: [] },
        'at the start',
      );
      await expectFields(c, 'B', readyFields(1, 1, 0), 'at the start');
      expectRecord(
        c,
        'B',
        { loads: [1], sessions: 1, sessionsDisposed: 0, weightsDisposed: [] },
        'at the start',
      );
      return { aGate, aHeld, bGate, bHeld, bulk };
    },
  );

  for (const n of [1, 2]) {
    test(
      `[pair.other-bulk.request-a] slots=${n}: A's request queues behind the bulk's barrier${n > 1 ? ' despite a spare slot' : ''}, then reloads A (generation 2)`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, aGate, aHeld, bGate, bHeld, bulk }) => {
          const request = track(c.infer('A'));
          await waitScheduler(c, 'A', 'request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', readyFields(n, 1, 1), 'with the request queued');
          assert.equal(c.count('A', 'run-start'), 1);
          await aGate.open();
          await expectReports(aHeld, 1);
          const [report] = await expectReports([request.promise], 2);
          assert.equal(report.generation, 2, 'A was unloaded by the bulk, then reloaded');
          await expectFields(c, 'A', readyFields(n));
          expectRecord(c, 'A', { loads: [1, 2], sessions: 2 * n, sessionsDisposed: n, weightsDisposed: [1] });
          expectAllBefore(
            c,
            { type: 'weights-disposed', model: 'A', generation: 1 },
            { type: 'load', model: 'A', generation: 2 },
          );
          // The bulk still waits on B.
          assert.equal(bulk.settled, false);
          await bGate.open();
          await expectReports(bHeld, 1);
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'B', poolless('unloaded', 1));
          await expectFields(c, 'A', readyFields(n));
        });
      },
    );

    test(
      `[pair.other-bulk.request-b] slots=${n}: B's request queues behind the bulk's barrier, then reloads B (generation 2)`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, aGate, aHeld, bGate, bHeld, bulk }) => {
          const request = track(c.infer('B'));
          await waitScheduler(c, 'B', 'request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'B', readyFields(1, 1, 1), 'with the request queued');
          await bGate.open();
          await expectReports(bHeld, 1);
          await expectReports([request.promise], 2);
          await expectFields(c, 'B', readyFields(1));
          expectRecord(c, 'B', { loads: [1, 2], sessions: 2, sessionsDisposed: 1, weightsDisposed: [1] });
          expectAllBefore(
            c,
            { type: 'weights-disposed', model: 'B', generation: 1 },
            { type: 'load', model: 'B', generation: 2 },
          );
          assert.equal(bulk.settled, false);
          await expectFields(c, 'A', readyFields(n, 1, 0), 'after B ran');
          await aGate.open();
          await expectReports(aHeld, 1);
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'A', poolless('unloaded', n));
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
          await expectFields(c, 'B', readyFields(1));
        });
      },
    );

    test(
      `[pair.other-bulk.reconfigure-a] slots=${n}: the reconfiguration queues on A behind the bulk, then loads the replacement`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, aGate, aHeld, bGate, bHeld, bulk }) => {
          const reconfigure = track(c.register('A', NEXT));
          await waitScheduler(c, 'A', 'reconfiguration queued', (s) => s.queuedManagers === 2);
          await expectFields(c, 'A', readyFields(n, 1, 0), 'with the reconfiguration queued');
          assert.equal(reconfigure.settled, false);
          await aGate.open();
          await expectReports(aHeld, 1);
          await expectJson(reconfigure.promise, RECONFIGURED);
          const { probe, replacement } = reconfigLoads(1, n);
          await expectFields(c, 'A', readyFields(n));
          expectRecord(c, 'A', {
            loads: probe ? [1, probe, replacement] : [1, replacement],
            sessions: 2 * n,
            sessionsDisposed: n,
            weightsDisposed: probe ? [1, probe] : [1],
          });
          expectAllBefore(
            c,
            { type: 'weights-disposed', model: 'A', generation: 1 },
            { type: 'load', model: 'A', generation: 2 },
          );
          const report = reportOf(await c.infer('A'));
          assert.equal(report.generation, replacement);
          assert.equal(report.load_options.variant, 'next');
          assert.equal(bulk.settled, false);
          await bGate.open();
          await expectReports(bHeld, 1);
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'A', readyFields(n));
        });
      },
    );

    test(
      `[pair.other-bulk.unload-a] slots=${n}: the unload queues on A behind the bulk and is idempotent after it`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, aGate, aHeld, bGate, bHeld, bulk }) => {
          const unload = track(c.unload('A'));
          await waitScheduler(c, 'A', 'unload queued', (s) => s.queuedManagers === 2);
          assert.equal(unload.settled, false);
          await aGate.open();
          await expectReports(aHeld, 1);
          await expectJson(unload.promise, A_UNLOADED);
          await expectFields(c, 'A', poolless('unloaded', n));
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
          assert.equal(bulk.settled, false);
          await bGate.open();
          await expectReports(bHeld, 1);
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'B', poolless('unloaded', 1));
        });
      },
    );

    test(
      `[pair.other-bulk.unload-ab] slots=${n}: an overlapping bulk in reversed order with a duplicate queues behind the first on both models; no deadlock`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, aGate, aHeld, bGate, bHeld, bulk }) => {
          const second = track(c.bulkUnload(['B', 'A', 'B', 'Z']));
          await waitScheduler(
            c,
            'A',
            "the second bulk's barriers queued on A and B",
            (a) => a.queuedManagers === 2 && c.snapshot('B').queuedManagers === 2,
          );
          // Free B first: both bulks pass B, the first one doing the teardown.
          await bGate.open();
          await expectReports(bHeld, 1);
          await waitScheduler(
            c,
            'B',
            'both barriers on B done',
            (s) => s.queuedManagers === 0 && !s.managerActive,
          );
          await expectFields(c, 'B', poolless('unloaded', 1));
          expectRecord(c, 'B', { loads: [1], sessions: 1, sessionsDisposed: 1, weightsDisposed: [1] });
          // A still holds both bulks.
          assert.equal(bulk.settled, false);
          assert.equal(second.settled, false);
          await expectFields(c, 'A', readyFields(n, 1, 0), 'with both bulks waiting');
          await aGate.open();
          await expectReports(aHeld, 1);
          await expectJson(bulk.promise, BOTH);
          await expectJson(second.promise, { unloaded: ['B', 'A'], not_found: ['Z'] });
          await expectFields(c, 'A', poolless('unloaded', n));
          expectRecord(c, 'A', { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [1] });
          await expectFields(c, 'B', poolless('unloaded', 1));
          expectRecord(c, 'B', { loads: [1], sessions: 1, sessionsDisposed: 1, weightsDisposed: [1] });
        });
      },
    );
  }
});
