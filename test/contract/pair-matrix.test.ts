/**
 * Two-model situations, part 1 (contract "Two-model situations" rows 1-4): A unloaded, A loading,
 * A running with spare slots, A full with queued requests; B ready in each. Every test puts A and
 * B into the situation with fixture gates, asserts that starting state, performs one operation over
 * HTTP and asserts the response, GET /v1/models and the fixture's record.
 * Part 2 (rows 5-8) is pair-matrix-2.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorOf, ManualClock, waitUntil } from '../helpers/voxd.js';
import { track } from './assertions.js';
import { type ContractServer, contractSituation } from './harness.js';
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
  LIMIT,
  loadedOnce,
  NEVER_LOADED,
  NEXT,
  OLD_RUNS_FIRST,
  poolless,
  queueManager,
  RECONFIGURED,
  readyFields,
  reconfigLoads,
  reconfiguredRecord,
  runEach,
  waitScheduler,
} from './pair-helpers.js';

/** B was loaded once, is idle and was never torn down. */
const expectBIdle = (c: ContractServer, when: string) => expectIdle(c, 'B', 1, when);

const expectBFreed = (c: ContractServer) => expectFreed(c, 'B', 1);

// ---------------------------------------------------------------------------------------------
describe('pair: A unloaded, B ready', () => {
  const situation = contractSituation(aAndB, async (c, n) => {
    await c.ready('B');
    await expectModel(c, 'A', poolless('unloaded', n), NEVER_LOADED, 'at the start');
    await expectBIdle(c, 'at the start');
    return {};
  });

  for (const n of [1, 2, 4]) {
    test(
      `[pair.a-unloaded-b-ready.request-a] slots=${n}: A initialises its whole pool and runs; B untouched`,
      LIMIT,
      async () => {
        await situation(n, async ({ c }) => {
          const [report] = await expectReports([c.infer('A')], 1);
          assert.equal(report.load_options.variant, undefined);
          await expectIdle(c, 'A', n);
          assert.equal(c.count('A', 'run-end'), 1);
          await expectBIdle(c, 'after A ran');
        });
      },
    );

    test(
      `[pair.a-unloaded-b-ready.request-b] slots=${n}: warm B runs; A stays unloaded and is not loaded`,
      LIMIT,
      async () => {
        await situation(n, async ({ c }) => {
          await expectReports([c.infer('B')], 1);
          await expectIdle(c, 'B', 1);
          await expectModel(c, 'A', poolless('unloaded', n), NEVER_LOADED);
        });
      },
    );

    test(
      `[pair.a-unloaded-b-ready.reconfigure-a] slots=${n}: A validates and loads the replacement exclusively; B untouched`,
      LIMIT,
      async () => {
        await situation(n, async ({ c }) => {
          await expectJson(c.register('A', NEXT), RECONFIGURED);
          const { probe, replacement } = reconfigLoads(0, n);
          await expectModel(c, 'A', readyFields(n), {
            loads: probe ? [probe, replacement] : [replacement],
            sessions: n,
            sessionsDisposed: 0,
            weightsDisposed: probe ? [probe] : [],
          });
          await expectBIdle(c, 'after A was reconfigured');
          await expectReplacement(c, replacement);
        });
      },
    );

    test(
      `[pair.a-unloaded-b-ready.unload-a] slots=${n}: idempotent unload of A; B untouched`,
      LIMIT,
      async () => {
        await situation(n, async ({ c }) => {
          await expectJson(c.unload('A'), A_UNLOADED);
          await expectModel(c, 'A', poolless('unloaded', n), NEVER_LOADED);
          await expectBIdle(c, 'after A was unloaded');
        });
      },
    );

    test(
      `[pair.a-unloaded-b-ready.unload-ab] slots=${n}: bulk frees idle B, A already unloaded; both listed once`,
      LIMIT,
      async () => {
        await situation(n, async ({ c }) => {
          await expectJson(c.bulkUnload(['A', 'B', 'A']), BOTH);
          await expectModel(c, 'A', poolless('unloaded', n), NEVER_LOADED);
          await expectBFreed(c);
        });
      },
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe('pair: A loading, B ready', () => {
  /** A's first request is in its cold load, held by A's closed load gate; `release` lets it finish. */
  const situation = contractSituation(aAndB, async (c, n) => {
    await c.ready('B');
    const { request: first } = await c.loading('A');
    await expectModel(c, 'A', poolless('loading', n, 1, 0), NEVER_LOADED, 'at the start');
    await expectBIdle(c, 'at the start');
    const release = async () => {
      await c.load('A').open();
      return expectReports([first], 1);
    };
    return { first, release };
  });

  for (const n of [1, 2, 4]) {
    test(
      `[pair.a-loading-b-ready.request-a] slots=${n}: ${n > 1 ? 'a spare slot admits and waits for the shared initialisation' : 'the full pool queues the request'}; both run on the published pool`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, first }) => {
          const second = c.infer('A');
          if (n > 1) await waitScheduler(c, 'A', 'second request admitted', (s) => s.activeRequests === 2);
          else await waitScheduler(c, 'A', 'second request queued', (s) => s.queuedRequests === 1);
          await expectFields(c, 'A', poolless('loading', n, n > 1 ? 2 : 1, n > 1 ? 0 : 1), 'while loading');
          assert.equal(c.count('A', 'load'), 0, 'the load is still held');
          await c.load('A').open();
          const reports = await expectReports([first, second], 1);
          if (n > 1) assert.notEqual(reports[0].slot, reports[1].slot, 'two independent sessions');
          await expectIdle(c, 'A', n);
          await expectBIdle(c, 'after A loaded');
        });
      },
    );

    for (const guard of [0, 2]) {
      test(
        `[pair.a-loading-b-ready.request-b] slots=${n}, max_loaded_models=${guard}: warm B completes while A's load is still held${guard ? ' (and holds the cold-load guard)' : ''}`,
        LIMIT,
        async () => {
          await situation(
            n,
            async ({ c, release }) => {
              await expectReports([c.infer('B')], 1);
              // B answered while A is still in its cold load, held by the closed load gate.
              assert.equal(c.entry('A').state.kind, 'loading');
              await expectModel(c, 'A', poolless('loading', n, 1, 0), NEVER_LOADED, 'after B ran');
              await expectBIdle(c, 'after B ran');
              assert.equal(c.count('B', 'run-end'), 1);
              await release();
              await expectFields(c, 'A', readyFields(n));
            },
            { max_loaded_models: guard },
          );
        },
      );
    }

    test(
      `[pair.a-loading-b-ready.reconfigure-a] slots=${n}: the reconfiguration waits for the first load and the request that started it`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const loading = poolless('loading', n, 1, 0);
          const reconfigure = await queueManager(c, 'A', c.register('A', NEXT), 'reconfiguration', loading);
          const [report] = await release();
          assert.equal(
            report.load_options.variant,
            undefined,
            'the older request ran on the old configuration',
          );
          const replacement = await expectReconfigured(c, reconfigure.promise, n, 'probe-first');
          expectAllBefore(c, ...OLD_RUNS_FIRST);
          await expectBIdle(c, 'after A was reconfigured');
          await expectReplacement(c, replacement);
        });
      },
    );

    test(
      `[pair.a-loading-b-ready.unload-a] slots=${n}: the unload waits for the first load and older work, then A is unloaded`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const loading = poolless('loading', n, 1, 0);
          await expectUnloadAfterOlderWork(c, n, release, 'weights-disposed', loading);
          await expectBIdle(c, 'after A was unloaded');
        });
      },
    );

    test(
      `[pair.a-loading-b-ready.unload-ab] slots=${n}: bulk frees idle B while A is still loading, then A; both listed once`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const bulk = track(c.bulkUnload(['A', 'B', 'A']));
          await c.waitCount('B', 'weights-disposed', 1);
          // B is gone while A's first load is still held by its gate, with A's barrier queued.
          assert.equal(c.entry('A').state.kind, 'loading');
          assert.equal(c.snapshot('A').queuedManagers, 1);
          await expectFields(c, 'A', poolless('loading', n, 1, 0), 'after B was freed');
          await expectBFreed(c);
          assert.equal(c.count('A', 'load'), 0);
          assert.equal(bulk.settled, false);
          await release();
          await expectJson(bulk.promise, BOTH);
          await expectFreed(c, 'A', n);
          assert.ok(
            eventIndex(c, { type: 'weights-disposed', model: 'B' }) <
              eventIndex(c, { type: 'load', model: 'A' }),
            'B was freed before A finished loading',
          );
          await expectBFreed(c);
        });
      },
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe('pair: A running with spare slots, B ready', () => {
  /** n - 1 of A's n slots run requests held by one gate; `release` opens it and checks their reports. */
  const situation = contractSituation(aAndB, async (c, n) => {
    await c.ready('A');
    await c.ready('B');
    const { gate, requests: held } = await c.running('A', n - 1);
    await expectModel(c, 'A', readyFields(n, n - 1, 0), loadedOnce(n), 'at the start');
    await expectBIdle(c, 'at the start');
    const release = async () => {
      await gate.open();
      return expectReports(held, 1);
    };
    return { release };
  });

  for (const n of [2, 4]) {
    test(
      `[pair.a-spare-b-ready.request-a] slots=${n}: a spare slot admits A's request while ${n - 1} run`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const heldSlots = c.events('A', 'run-start').map((e) => (e as { slot: number }).slot);
          const [report] = await expectReports([c.infer('A')], 1);
          assert.ok(!heldSlots.includes(report.slot), `slot ${report.slot} is a spare one, not ${heldSlots}`);
          assert.equal(c.count('A', 'run-end'), 1, 'the older runs are still held');
          await expectFields(c, 'A', readyFields(n, n - 1, 0), 'after the spare-slot request');
          await release();
          await expectIdle(c, 'A', n);
          await expectBIdle(c, 'after A ran');
        });
      },
    );

    test(
      `[pair.a-spare-b-ready.request-b] slots=${n}: B runs independently while A's runs are held`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          await expectReports([c.infer('B')], 1);
          await expectBIdle(c, 'after B ran');
          await expectFields(c, 'A', readyFields(n, n - 1, 0), 'after B ran');
          assert.equal(c.count('A', 'run-end'), 0);
          await release();
          await expectFields(c, 'A', readyFields(n));
        });
      },
    );

    test(
      `[pair.a-spare-b-ready.reconfigure-a] slots=${n}: the reconfiguration waits for all older A work despite spare slots, and a later request queues behind it`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const reconfigure = track(c.register('A', NEXT));
          await waitScheduler(c, 'A', 'reconfiguration queued', (s) => s.queuedManagers === 1);
          const later = c.infer('A');
          await waitScheduler(c, 'A', 'later request queued', (s) => s.queuedRequests === 1);
          // Spare slots exist, yet neither the manager nor the later request got in.
          await expectFields(c, 'A', readyFields(n, n - 1, 1), 'with the reconfiguration queued');
          assert.equal(c.count('A', 'run-start'), n - 1, 'the later request did not take a spare slot');
          assert.equal(reconfigure.settled, false);
          const old = await release();
          for (const r of old) assert.equal(r.load_options.variant, undefined);
          await expectJson(reconfigure.promise, RECONFIGURED);
          const { replacement } = reconfigLoads(1, n);
          const [report] = await expectReports([later], replacement);
          assert.equal(report.load_options.variant, 'next', 'the later request bound the new configuration');
          await expectModel(c, 'A', readyFields(n), reconfiguredRecord(n, 'probe-first'));
          expectAllBefore(c, ...OLD_RUNS_FIRST);
          await expectBIdle(c, 'after A was reconfigured');
        });
      },
    );

    test(
      `[pair.a-spare-b-ready.unload-a] slots=${n}: the unload waits for all older A work despite spare slots`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const releaseAfterCheck = () => {
            assert.equal(c.count('A', 'weights-disposed'), 0);
            return release();
          };
          await expectUnloadAfterOlderWork(
            c,
            n,
            releaseAfterCheck,
            'session-disposed',
            readyFields(n, n - 1, 0),
          );
          await expectBIdle(c, 'after A was unloaded');
        });
      },
    );

    test(
      `[pair.a-spare-b-ready.unload-ab] slots=${n}: bulk frees idle B at once, then drains A`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const bulk = await bulkFreeingB(c);
          assert.equal(c.snapshot('A').queuedManagers, 1, "A's barrier waits");
          await expectFields(c, 'A', readyFields(n, n - 1, 0), 'after B was freed');
          assert.equal(c.count('A', 'run-end'), 0, "A's runs are still held");
          assert.equal(bulk.settled, false);
          await release();
          await expectJson(bulk.promise, BOTH);
          await expectFreed(c, 'A', n);
          expectAllBefore(c, { type: 'run-end', model: 'A' }, { type: 'weights-disposed', model: 'A' });
          await expectBFreed(c);
        });
      },
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe('pair: A full with a queued request, B ready', () => {
  /**
   * A's n slots each held by their own gate, and one more request `queued` (held by its own gate
   * once it runs); `release` opens every gate and checks all their reports.
   */
  const situation = contractSituation(aAndB, async (c, n) => {
    await c.ready('A');
    await c.ready('B');
    const { gates, requests: held } = await runEach(c, 'A', n);
    const queuedGate = await c.runGate();
    const queued = track(c.infer('A', { run_gate: queuedGate.path }));
    await waitScheduler(c, 'A', 'one request queued', (s) => s.queuedRequests === 1);
    await expectModel(c, 'A', readyFields(n, n, 1), loadedOnce(n), 'at the start');
    await expectBIdle(c, 'at the start');
    const openAll = () => Promise.all([...gates, queuedGate].map((g) => g.open()));
    const release = async () => {
      await openAll();
      return expectReports([...held, queued.promise], 1);
    };
    return { gates, held, queued, queuedGate, openAll, release };
  });

  for (const n of [1, 2, 4]) {
    test(
      `[pair.a-full-b-ready.request-a] slots=${n}: a new A request queues FIFO behind the older queued one`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, gates, held, queued, queuedGate, openAll }) => {
          const laterGate = await c.runGate();
          const later = track(c.infer('A', { run_gate: laterGate.path }));
          await waitScheduler(c, 'A', 'two requests queued', (s) => s.queuedRequests === 2);
          await expectFields(c, 'A', readyFields(n, n, 2), 'with two queued');
          // One slot frees: the older queued request, not the later one, takes it.
          await gates[0]!.open();
          await c.waitCount('A', 'run-start', n + 1);
          await waitScheduler(c, 'A', 'the later request still queued', (s) => s.queuedRequests === 1);
          await queuedGate.open();
          await waitUntil('the older queued request completes', () => queued.settled);
          const [first] = await expectReports([queued.promise], 1);
          assert.equal(first.options.run_gate, queuedGate.path, 'the older queued request ran first');
          assert.equal(later.settled, false);
          await laterGate.open();
          await openAll();
          const [second] = await expectReports([later.promise], 1);
          assert.equal(second.options.run_gate, laterGate.path);
          await expectReports(held, 1);
          await expectIdle(c, 'A', n);
          assert.equal(c.count('A', 'run-end'), n + 2);
          await expectBIdle(c, 'after A ran');
        });
      },
    );

    test(
      `[pair.a-full-b-ready.request-a] slots=${n}: a queued A request with busy_timeout_ms times out with 503 and leaves the queue`,
      LIMIT,
      async () => {
        // The server runs on a manual clock: the running slots become overdue only when the test
        // moves it, so the request queues (no fail-fast) and waits exactly its 100 ms.
        const clock = new ManualClock();
        await situation(
          n,
          async ({ c, release }) => {
            const pending = c.infer('A', {}, { busy_timeout_ms: 100 });
            await waitScheduler(c, 'A', 'the bounded request queued', (s) => s.queuedRequests === 2);
            clock.advance(99);
            assert.equal(c.snapshot('A').queuedRequests, 2, 'still queued 1 ms before its timeout');
            clock.advance(1);
            const res = await pending;
            assert.match(errorOf(res, 503, 'server_busy'), /timed out after 100 ms waiting for a slot/);
            await expectFields(c, 'A', readyFields(n, n, 1), 'after the timeout');
            assert.equal(c.count('A', 'run-start'), n, 'the timed-out request never ran');
            await release();
            await expectIdle(c, 'A', n);
            assert.equal(c.count('A', 'run-end'), n + 1);
            await expectBIdle(c, 'after A ran');
          },
          { clock },
        );
      },
    );

    test(
      `[pair.a-full-b-ready.request-b] slots=${n}: B runs independently of A's full queue`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          await expectReports([c.infer('B')], 1);
          await expectBIdle(c, 'after B ran');
          await expectFields(c, 'A', readyFields(n, n, 1), 'after B ran');
          assert.equal(c.count('A', 'run-end'), 0);
          await release();
          await expectFields(c, 'A', readyFields(n));
        });
      },
    );

    test(
      `[pair.a-full-b-ready.reconfigure-a] slots=${n}: older running and queued A requests run on the old pool first`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const full = readyFields(n, n, 1);
          const reconfigure = await queueManager(c, 'A', c.register('A', NEXT), 'reconfiguration', full);
          const old = await release();
          for (const r of old)
            assert.equal(r.load_options.variant, undefined, 'older work used the old configuration');
          const replacement = await expectReconfigured(c, reconfigure.promise, n, 'probe-first');
          expectAllBefore(c, ...OLD_RUNS_FIRST);
          await expectBIdle(c, 'after A was reconfigured');
          await expectReplacement(c, replacement);
        });
      },
    );

    test(
      `[pair.a-full-b-ready.unload-a] slots=${n}: older running and queued A requests run first, then A unloads`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          await expectUnloadAfterOlderWork(c, n, release, 'session-disposed', readyFields(n, n, 1));
          assert.equal(c.count('A', 'run-end'), n + 1);
          await expectBIdle(c, 'after A was unloaded');
        });
      },
    );

    test(
      `[pair.a-full-b-ready.unload-ab] slots=${n}: bulk publishes both barriers, frees idle B, then drains A's running and queued work`,
      LIMIT,
      async () => {
        await situation(n, async ({ c, release }) => {
          const bulk = await bulkFreeingB(c);
          const a = c.snapshot('A');
          assert.equal(a.queuedManagers, 1, "A's barrier is queued behind the queued request");
          await expectFields(c, 'A', readyFields(n, n, 1), 'after B was freed');
          assert.equal(c.count('A', 'run-end'), 0);
          assert.equal(bulk.settled, false);
          await release();
          await expectJson(bulk.promise, BOTH);
          await expectFreed(c, 'A', n);
          assert.equal(c.count('A', 'run-end'), n + 1);
          expectAllBefore(c, { type: 'run-end', model: 'A' }, { type: 'session-disposed', model: 'A' });
          await expectBFreed(c);
        });
      },
    );
  }
});
