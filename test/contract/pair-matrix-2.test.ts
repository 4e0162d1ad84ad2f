/**
 * Two-model situations, part 2 (contract "Two-model situations" rows 5-8): A reconfiguring with B
 * running, A unloading slowly with B ready, A and B both busy, and another bulk unload already
 * waiting on A and B. Part 1 (rows 1-4) is pair-matrix.test.ts; the helpers are pair-helpers.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type HttpResult, reportOf } from '../helpers/voxd.js';
import { track } from './assertions.js';
import {
  type ContractServer,
  contractSituation,
  slotted,
  type ToggleGate,
  withContractServer,
} from './harness.js';
import {
  A_UNLOADED,
  aAndB,
  BOTH,
  bulkFreeingB,
  eventIndex,
  expectAllBefore,
  expectFields,
  expectFreed,
  expectIdle,
  expectJson,
  expectModel,
  expectReconfigured,
  expectReplacement,
  expectReports,
  expectUnloadAfterOlderWork,
  freedOnce,
  LIMIT,
  loadedOnce,
  NEVER_LOADED,
  NEXT,
  poolless,
  queueManager,
  RECONFIGURED,
  readyFields,
  reconfigLoads,
  waitScheduler,
} from './pair-helpers.js';

const THIRD = { load_options: { variant: 'third' } };

/** Opens the gate holding `requests` in their runs and asserts their reports (generation 1). */
function releaser(gate: ToggleGate, requests: Promise<HttpResult>[]) {
  return async () => {
    await gate.open();
    return expectReports(requests, 1);
  };
}

// ---------------------------------------------------------------------------------------------
describe('pair: A reconfiguring, B running', () => {
  /**
   * A (1 slot) is reconfiguring to NEXT: the old pool is torn down and the replacement load waits on
   * A's closed load gate, under the manager lease (`finishA` opens it and checks the 200). B (m
   * slots) runs one request held by a gate (`releaseB`).
   */
  const situation = contractSituation(
    (m) => slotted({ A: 1, B: m }),
    async (c, m) => {
      await c.ready('A');
      await c.ready('B');
      const { gate, requests: bHeld } = await c.running('B', 1);
      const { request: reconfigure } = await c.reconfiguring('A');
      await expectModel(c, 'A', poolless('reconfiguring', 1), freedOnce(1), 'at the start');
      await expectModel(c, 'B', readyFields(m, 1, 0), loadedOnce(m), 'at the start');
      const finishA = async () => {
        await c.load('A').open();
        await expectJson(reconfigure, RECONFIGURED);
      };
      return { bGate: gate, bHeld, releaseB: releaser(gate, bHeld), finishA };
    },
  );

  /** A after the manager and `then` more manager(s): loaded twice, the first load torn down. */
  const replaced = { loads: [1, 2], sessions: 2, sessionsDisposed: 1, weightsDisposed: [1] };
  const replacedAndFreed = { loads: [1, 2], sessions: 2, sessionsDisposed: 2, weightsDisposed: [1, 2] };

  for (const m of [1, 2]) {
    test(
      `[pair.a-reconfiguring-b-running.request-a] B slots=${m}: A's request waits for the manager and binds the new configuration`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, releaseB, finishA }) => {
          const request = track(c.infer('A'));
          await waitScheduler(c, 'A', 'request queued behind the manager', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', poolless('reconfiguring', 1, 0, 1), 'with the request queued');
          assert.equal(request.settled, false);
          await finishA();
          const [report] = await expectReports([request.promise], 2);
          assert.equal(report.load_options.variant, 'next', 'bound to the committed configuration');
          await expectModel(c, 'A', readyFields(1), replaced);
          // B's run is untouched and still held.
          await expectFields(c, 'B', readyFields(m, 1, 0), 'after A finished');
          assert.equal(c.count('B', 'run-end'), 0);
          await releaseB();
        });
      },
    );

    test(
      `[pair.a-reconfiguring-b-running.request-b] B slots=${m}: ${m > 1 ? "B's spare slot runs the request" : 'full B queues the request'} while A stays reconfiguring`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, bGate, bHeld, releaseB, finishA }) => {
          const request = track(c.infer('B'));
          if (m > 1) {
            await expectReports([request.promise], 1);
            assert.equal(c.count('B', 'run-end'), 1, "B's older run is still held");
            await expectFields(c, 'B', readyFields(m, 1, 0), 'after the spare-slot request');
            await releaseB();
          } else {
            await waitScheduler(c, 'B', 'request queued', (s) => s.queuedRequests === 1);
            await expectFields(c, 'B', readyFields(m, 1, 1), 'with the request queued');
            await bGate.open();
            await expectReports([...bHeld, request.promise], 1);
          }
          await expectIdle(c, 'B', m);
          // A's manager is still held by its load gate the whole time.
          await expectModel(c, 'A', poolless('reconfiguring', 1), freedOnce(1), 'after B ran');
          await finishA();
          await expectFields(c, 'A', readyFields(1));
        });
      },
    );

    test(
      `[pair.a-reconfiguring-b-running.reconfigure-a] B slots=${m}: a second reconfiguration queues behind the first; final A has the last configuration`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, releaseB, finishA }) => {
          const reconfiguring = poolless('reconfiguring', 1);
          const second = await queueManager(c, 'A', c.register('A', THIRD), 'second manager', reconfiguring);
          await finishA();
          await expectJson(second.promise, RECONFIGURED);
          await expectModel(c, 'A', readyFields(1), {
            loads: [1, 2, 3],
            sessions: 3,
            sessionsDisposed: 2,
            weightsDisposed: [1, 2],
          });
          const report = reportOf(await c.infer('A'));
          assert.equal(report.generation, 3);
          assert.equal(report.load_options.variant, 'third');
          await expectFields(c, 'B', readyFields(m, 1, 0), 'after A finished');
          await releaseB();
        });
      },
    );

    test(
      `[pair.a-reconfiguring-b-running.unload-a] B slots=${m}: the unload queues behind the manager, then unloads the replacement`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, releaseB, finishA }) => {
          const unload = await queueManager(c, 'A', c.unload('A'), 'unload', poolless('reconfiguring', 1));
          await finishA();
          await expectJson(unload.promise, A_UNLOADED);
          await expectModel(c, 'A', poolless('unloaded', 1), replacedAndFreed);
          await expectFields(c, 'B', readyFields(m, 1, 0), 'after A finished');
          await releaseB();
        });
      },
    );

    test(
      `[pair.a-reconfiguring-b-running.unload-ab] B slots=${m}: A's barrier waits for the manager, B's for its older request; both unloaded`,
      LIMIT,
      async () => {
        await situation(m, async ({ c, releaseB, finishA }) => {
          const bulk = track(c.bulkUnload(['A', 'B']));
          await waitScheduler(c, 'A', 'barrier queued', (s) => s.queuedManagers === 1);
          assert.equal(c.snapshot('B').queuedManagers, 1, "B's barrier was published with A's");
          await expectFields(c, 'B', readyFields(m, 1, 0), 'with its barrier queued');
          await releaseB();
          await c.waitCount('B', 'weights-disposed', 1);
          // B is freed while A's manager is still held by its load gate.
          await expectFreed(c, 'B', m);
          await expectFields(c, 'A', poolless('reconfiguring', 1), 'after B was freed');
          assert.equal(bulk.settled, false);
          await finishA();
          await expectJson(bulk.promise, BOTH);
          await expectModel(c, 'A', poolless('unloaded', 1), replacedAndFreed);
          await expectFields(c, 'B', poolless('unloaded', m));
        });
      },
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe('pair: A unloading slowly, B ready', () => {
  /**
   * A (n slots) is unloading: logically unloaded, its weights' teardown held by its closed gate
   * (`finishA` opens it and checks the unload's 200).
   */
  const situation = contractSituation(aAndB, async (c, n) => {
    await c.ready('A');
    await c.ready('B');
    const { request: unload } = await c.unloading('A');
    const unloading = { loads: [1], sessions: n, sessionsDisposed: n, weightsDisposed: [] };
    await expectModel(c, 'A', poolless('unloading', n), unloading, 'at the start');
    await expectIdle(c, 'B', 1, 'at the start');
    const finishA = async () => {
      await c.teardown('A').open();
      await expectJson(unload, A_UNLOADED);
    };
    return { unloading, finishA };
  });

  const expectBIdle = (c: ContractServer) => expectIdle(c, 'B', 1);

  for (const n of [1, 2]) {
    test(
      `[pair.a-unloading-b-ready.request-a] slots=${n}: A's request waits for the teardown, then reloads and runs`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, finishA }) => {
          const request = track(c.infer('A'));
          await waitScheduler(c, 'A', 'request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', poolless('unloading', n, 0, 1), 'with the request queued');
          assert.equal(request.settled, false);
          await finishA();
          await expectReports([request.promise], 2);
          await expectModel(c, 'A', readyFields(n), {
            loads: [1, 2],
            sessions: 2 * n,
            sessionsDisposed: n,
            weightsDisposed: [1],
          });
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
        await situation(n, async ({ c, unloading, finishA }) => {
          await expectReports([c.infer('B')], 1);
          // B answered while A's weights are still held by the closed teardown gate.
          assert.equal(c.entry('A').state.kind, 'unloading');
          await expectModel(c, 'A', poolless('unloading', n), unloading, 'after B ran');
          await expectBIdle(c);
          assert.equal(c.count('B', 'run-end'), 1);
          await finishA();
          await expectFields(c, 'A', poolless('unloaded', n));
        });
      },
    );

    test(
      `[pair.a-unloading-b-ready.reconfigure-a] slots=${n}: the reconfiguration waits for the teardown, then loads the replacement`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, finishA }) => {
          const unloading = poolless('unloading', n);
          const reconfigure = await queueManager(c, 'A', c.register('A', NEXT), 'reconfiguration', unloading);
          await finishA();
          const replacement = await expectReconfigured(c, reconfigure.promise, n, 'old-first');
          const { probe } = reconfigLoads(1, n);
          assert.ok(
            eventIndex(c, { type: 'weights-disposed', model: 'A', generation: 1 }) <
              eventIndex(c, { type: 'load', model: 'A', generation: probe ?? replacement }),
            'nothing of the replacement loads before the old teardown finished',
          );
          await expectReplacement(c, replacement);
          await expectBIdle(c);
        });
      },
    );

    test(
      `[pair.a-unloading-b-ready.unload-a] slots=${n}: a second unload waits for the teardown and is idempotent`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, finishA }) => {
          const second = await queueManager(c, 'A', c.unload('A'), 'second unload', poolless('unloading', n));
          await finishA();
          await expectJson(second.promise, A_UNLOADED);
          await expectFreed(c, 'A', n);
          await expectBIdle(c);
        });
      },
    );

    test(
      `[pair.a-unloading-b-ready.unload-ab] slots=${n}: bulk frees idle B before waiting for A's teardown`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, unloading, finishA }) => {
          const bulk = await bulkFreeingB(c);
          // A's teardown is still held and A's barrier queued behind it.
          assert.equal(c.snapshot('A').queuedManagers, 1);
          await expectModel(c, 'A', poolless('unloading', n), unloading, 'after B was freed');
          assert.equal(bulk.settled, false);
          await finishA();
          await expectJson(bulk.promise, BOTH);
          await expectFreed(c, 'A', n);
          await expectFields(c, 'B', poolless('unloaded', 1));
        });
      },
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe('pair: A and B both busy (A loading, B running; or both loading)', () => {
  /**
   * A (n slots) is in its cold load, held by its load gate (`releaseA` opens it and checks the first
   * request's report); B (n slots) runs n requests held by a gate (`releaseB`).
   */
  const situation = contractSituation(
    (n) => slotted({ A: n, B: n }),
    async (c, n) => {
      await c.ready('B');
      const { gate, requests: bHeld } = await c.running('B', n);
      const { request: first } = await c.loading('A');
      await expectModel(c, 'A', poolless('loading', n, 1, 0), NEVER_LOADED, 'at the start');
      await expectModel(c, 'B', readyFields(n, n, 0), loadedOnce(n), 'at the start');
      const releaseA = async () => {
        await c.load('A').open();
        return expectReports([first], 1);
      };
      return { bGate: gate, bHeld, first, releaseA, releaseB: releaser(gate, bHeld) };
    },
  );

  /** B is untouched: still running its n held requests. */
  async function expectBHeld(c: ContractServer, n: number, when: string): Promise<void> {
    await expectModel(c, 'B', readyFields(n, n, 0), loadedOnce(n), when);
    assert.equal(c.count('B', 'run-end'), 0, `B's runs are still held ${when}`);
  }

  for (const n of [1, 2, 4]) {
    test(
      `[pair.ab-busy.request-a] slots=${n}: A's request ${n > 1 ? 'joins A initialisation' : 'queues on A'}; A loads and runs while B stays busy`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, first, releaseB }) => {
          const second = c.infer('A');
          if (n > 1) await waitScheduler(c, 'A', 'second request admitted', (s) => s.activeRequests === 2);
          else await waitScheduler(c, 'A', 'second request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', poolless('loading', n, n > 1 ? 2 : 1, n > 1 ? 0 : 1), 'while loading');
          await c.load('A').open();
          await expectReports([first, second], 1);
          await expectIdle(c, 'A', n);
          await expectBHeld(c, n, 'after A ran');
          await releaseB();
        });
      },
    );

    test(
      `[pair.ab-busy.request-b] slots=${n}: B's request queues on full B only and runs while A is still loading`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, bGate, bHeld, releaseA }) => {
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
          await releaseA();
          await expectFields(c, 'A', readyFields(n));
        });
      },
    );

    test(
      `[pair.ab-busy.reconfigure-a] slots=${n}: the reconfiguration drains A only; B stays busy`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, releaseA, releaseB }) => {
          const reconfigure = await queueManager(c, 'A', c.register('A', NEXT), 'reconfiguration');
          await releaseA();
          const replacement = await expectReconfigured(c, reconfigure.promise, n, 'probe-first');
          await expectBHeld(c, n, 'after A was reconfigured');
          await expectReplacement(c, replacement);
          await releaseB();
        });
      },
    );

    test(`[pair.ab-busy.unload-a] slots=${n}: the unload drains A only; B stays busy`, LIMIT, async () => {
      await situation(n, async ({ c, releaseA, releaseB }) => {
        await expectUnloadAfterOlderWork(c, n, releaseA, 'session-disposed');
        await expectBHeld(c, n, 'after A was unloaded');
        await releaseB();
      });
    });

    test(
      `[pair.ab-busy.unload-ab] slots=${n}: bulk publishes both barriers before waiting; each model unloads after its own earlier work`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, releaseA, releaseB }) => {
          const bulk = track(c.bulkUnload(['A', 'B']));
          await waitUntilBoth(c);
          await expectFields(c, 'A', poolless('loading', n, 1, 0), 'with both barriers queued');
          await expectBHeld(c, n, 'with both barriers queued');
          await releaseA();
          await c.waitCount('A', 'weights-disposed', 1);
          await expectFreed(c, 'A', n, 'while B is still busy');
          await expectBHeld(c, n, 'after A was unloaded');
          assert.equal(bulk.settled, false);
          await releaseB();
          await expectJson(bulk.promise, BOTH);
          await expectFreed(c, 'B', n);
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
        await withContractServer(slotted({ A: n, B: n }), { max_loaded_models: 2 }, async (c) => {
          const { request: aFirst } = await c.loading('A');
          const { request: bFirst } = await c.loading('B');
          for (const id of ['A', 'B'])
            await expectModel(c, id, poolless('loading', n, 1, 0), NEVER_LOADED, 'at the start');
          const bulk = track(c.bulkUnload(['B', 'A']));
          await waitUntilBoth(c);
          await c.load('A').open();
          await expectReports([aFirst], 1);
          await c.waitCount('A', 'weights-disposed', 1);
          await expectFreed(c, 'A', n, 'while B is still loading');
          assert.equal(c.entry('B').state.kind, 'loading');
          await expectFields(c, 'B', poolless('loading', n, 1, 0), 'after A was unloaded');
          assert.equal(c.count('B', 'load'), 0);
          assert.equal(bulk.settled, false);
          await c.load('B').open();
          await expectReports([bFirst], 1);
          await expectJson(bulk.promise, { unloaded: ['B', 'A'], not_found: [] });
          for (const id of ['A', 'B']) await expectFreed(c, id, n);
        });
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
   * A (n slots) and B (1 slot) each run one request held by its own gate (`releaseA`, `releaseB`);
   * a bulk unload of [A, B] has published its barriers on both and waits.
   */
  const situation = contractSituation(aAndB, async (c, n) => {
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
    await expectModel(c, 'A', readyFields(n, 1, 0), loadedOnce(n), 'at the start');
    await expectModel(c, 'B', readyFields(1, 1, 0), loadedOnce(1), 'at the start');
    return { bulk, releaseA: releaser(aGate, aHeld), releaseB: releaser(bGate, bHeld) };
  });

  for (const n of [1, 2]) {
    test(
      `[pair.other-bulk.request-a] slots=${n}: A's request queues behind the bulk's barrier${n > 1 ? ' despite a spare slot' : ''}, then reloads A (generation 2)`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, releaseA, releaseB, bulk }) => {
          const request = track(c.infer('A'));
          await waitScheduler(c, 'A', 'request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', readyFields(n, 1, 1), 'with the request queued');
          assert.equal(c.count('A', 'run-start'), 1);
          await releaseA();
          const [report] = await expectReports([request.promise], 2);
          assert.equal(report.generation, 2, 'A was unloaded by the bulk, then reloaded');
          await expectModel(c, 'A', readyFields(n), {
            loads: [1, 2],
            sessions: 2 * n,
            sessionsDisposed: n,
            weightsDisposed: [1],
          });
          expectAllBefore(
            c,
            { type: 'weights-disposed', model: 'A', generation: 1 },
            { type: 'load', model: 'A', generation: 2 },
          );
          // The bulk still waits on B.
          assert.equal(bulk.settled, false);
          await releaseB();
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
        await situation(n, async ({ c, releaseA, releaseB, bulk }) => {
          const request = track(c.infer('B'));
          await waitScheduler(c, 'B', 'request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'B', readyFields(1, 1, 1), 'with the request queued');
          await releaseB();
          await expectReports([request.promise], 2);
          await expectModel(c, 'B', readyFields(1), {
            loads: [1, 2],
            sessions: 2,
            sessionsDisposed: 1,
            weightsDisposed: [1],
          });
          expectAllBefore(
            c,
            { type: 'weights-disposed', model: 'B', generation: 1 },
            { type: 'load', model: 'B', generation: 2 },
          );
          assert.equal(bulk.settled, false);
          await expectFields(c, 'A', readyFields(n, 1, 0), 'after B ran');
          await releaseA();
          await expectJson(bulk.promise, BOTH);
          await expectFreed(c, 'A', n);
          await expectFields(c, 'B', readyFields(1));
        });
      },
    );

    test(
      `[pair.other-bulk.reconfigure-a] slots=${n}: the reconfiguration queues on A behind the bulk, then loads the replacement`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, releaseA, releaseB, bulk }) => {
          const busy = readyFields(n, 1, 0);
          const reconfigure = await queueManager(c, 'A', c.register('A', NEXT), 'reconfiguration', busy, 2);
          await releaseA();
          const replacement = await expectReconfigured(c, reconfigure.promise, n, 'old-first');
          expectAllBefore(
            c,
            { type: 'weights-disposed', model: 'A', generation: 1 },
            { type: 'load', model: 'A', generation: 2 },
          );
          await expectReplacement(c, replacement);
          assert.equal(bulk.settled, false);
          await releaseB();
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'A', readyFields(n));
        });
      },
    );

    test(
      `[pair.other-bulk.unload-a] slots=${n}: the unload queues on A behind the bulk and is idempotent after it`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, releaseA, releaseB, bulk }) => {
          const unload = await queueManager(c, 'A', c.unload('A'), 'unload', undefined, 2);
          await releaseA();
          await expectJson(unload.promise, A_UNLOADED);
          await expectFreed(c, 'A', n);
          assert.equal(bulk.settled, false);
          await releaseB();
          await expectJson(bulk.promise, BOTH);
          await expectFields(c, 'B', poolless('unloaded', 1));
        });
      },
    );

    test(
      `[pair.other-bulk.unload-ab] slots=${n}: an overlapping bulk in reversed order with a duplicate queues behind the first on both models; no deadlock`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, releaseA, releaseB, bulk }) => {
          const second = track(c.bulkUnload(['B', 'A', 'B', 'Z']));
          await waitScheduler(
            c,
            'A',
            "the second bulk's barriers queued on A and B",
            (a) => a.queuedManagers === 2 && c.snapshot('B').queuedManagers === 2,
          );
          // Free B first: both bulks pass B, the first one doing the teardown.
          await releaseB();
          await waitScheduler(
            c,
            'B',
            'both barriers on B done',
            (s) => s.queuedManagers === 0 && !s.managerActive,
          );
          await expectFreed(c, 'B', 1);
          // A still holds both bulks.
          assert.equal(bulk.settled, false);
          assert.equal(second.settled, false);
          await expectFields(c, 'A', readyFields(n, 1, 0), 'with both bulks waiting');
          await releaseA();
          await expectJson(bulk.promise, BOTH);
          await expectJson(second.promise, { unloaded: ['B', 'A'], not_found: ['Z'] });
          await expectFreed(c, 'A', n);
          await expectFreed(c, 'B', 1);
        });
      },
    );
  }
});
