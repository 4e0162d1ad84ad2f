/**
 * Contract cells `time.*` (admission timeouts, overdue blockers, timeout zero, disconnects while
 * queued or initialising). The server runs on a ManualClock: it decides what counts as overdue and
 * when a bounded wait runs out, so every timeout here happens when the test moves time, to the
 * millisecond, and no test waits for real time to pass.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorOf, ManualClock, post, reportOf, whenRuntime, withDeadline } from '../helpers/voxd.js';
import { COUNTS, lifecycle, loadOf, queued, range, readyView, view } from './assertions.js';
import { type ContractServer, withContractServer } from './harness.js';

/** A busy timeout no test moves the clock past unless it means to make a blocker overdue. */
const LONG_MS = 600_000;

/**
 * Moves the clock to 1 ms before a waiting request's busy timeout of `ms`, checks that the request
 * is still queued, then moves it the last millisecond: the request must then be refused.
 */
async function expire(c: ContractServer, clock: ManualClock, id: string, ms: number, queuedNow: number) {
  clock.advance(ms - 1);
  assert.equal(c.snapshot(id).queuedRequests, queuedNow, `still waiting 1 ms before its ${ms} ms timeout`);
  clock.advance(1);
}

/** Fails when `promise` has not settled within 2 s (a deadline, never a sleep). */
const within = <T>(promise: Promise<T>, what: string): Promise<T> => withDeadline(promise, what, 2000);

/**
 * With M's n slots held by requests running until `gate` opens, a request tagged `tag` queues, and
 * one with busy_timeout_ms `ms` behind it: that one is answered 503 once the clock passed its wait,
 * not a millisecond before. Returns the gate, the running requests and the first queued request.
 */
async function timeOutBehind(c: ContractServer, clock: ManualClock, n: number, tag: string, ms: number) {
  const { gate, requests } = await c.running('M', n);
  const first = c.infer('M', { tag });
  await queued(c, 'M', 1);
  const pending = c.infer('M', {}, { busy_timeout_ms: ms });
  await queued(c, 'M', 2);
  await expire(c, clock, 'M', ms, 2);
  const res = await within(pending, `the ${ms} ms admission timeout`);
  assert.match(errorOf(res, 503, 'server_busy'), new RegExp(`timed out after ${ms} ms`));
  return { gate, requests, first };
}

/** A request whose client can go away. */
function abortable(c: ContractServer, id: string, options: Record<string, string> = {}) {
  const client = new AbortController();
  const response = c.infer(id, options, {}, client.signal);
  response.catch(() => {});
  return { client, response };
}

describe('timeouts: admission', () => {
  for (const n of COUNTS) {
    test(`[time.admission-timeout] slots=${n}: a request override times out with 503 server_busy and leaves the queue`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: LONG_MS, clock }, async (c) => {
        await c.ready('M');
        const { gate, requests, first: patient } = await timeOutBehind(c, clock, n, 'patient', 100);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 1 });
        assert.equal(c.count('M', 'run-start'), n, 'the timed-out request never ran');
        await gate.open();
        for (const r of await Promise.all([...requests, patient])) assert.equal(reportOf(r).generation, 1);
        assert.deepEqual(await view(c, 'M'), readyView(n));
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n));
      });
    });

    test(`[time.admission-timeout] slots=${n}: the model ceiling caps a request's longer busy_timeout_ms`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: 0, clock }, async (c) => {
        await c.ready('M');
        // A metadata-only change: the ceiling applies without a reload.
        const reg = await post(c.url, '/v1/models/load', { ...c.body('M'), busy_timeout_ms: 100 });
        assert.deepEqual(reg.json, { id: 'M', loaded: true, reconfigured: true });
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n));
        const { gate, requests } = await c.running('M', n);
        for (const extra of [{}, { busy_timeout_ms: LONG_MS }]) {
          const pending = c.infer('M', {}, extra);
          await queued(c, 'M', 1);
          await expire(c, clock, 'M', 100, 1);
          const res = await within(pending, `the ceiling with ${JSON.stringify(extra)}`);
          assert.match(errorOf(res, 503, 'server_busy'), /timed out after 100 ms/);
          assert.equal(c.snapshot('M').queuedRequests, 0);
        }
        await gate.open();
        for (const r of await Promise.all(requests)) assert.equal(r.status, 200);
        assert.deepEqual(await view(c, 'M'), readyView(n));
      });
    });
  }

  // The contract lets a targeted manager time out; voxd follows the reference and its issue instead:
  // management waits without a timeout (its client may still leave), so an operator's unload or
  // reconfiguration is never lost to a busy model. A request queued behind it still times out.
  for (const kind of ['unload', 'reconfigure'] as const) {
    test(`[time.admission-timeout] a targeted ${kind} waits past busy_timeout_ms, while a request behind it times out with 503`, async () => {
      const clock = new ManualClock();
      const n = 2;
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: 100, clock }, async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        const manager =
          kind === 'unload' ? c.unload('M') : c.register('M', { load_options: { variant: 'next' } });
        await queued(c, 'M', 0, 1);
        const pending = c.infer('M');
        await queued(c, 'M', 1, 1);
        await expire(c, clock, 'M', 100, 1);
        const behind = await within(pending, 'the request behind the manager to time out');
        assert.match(errorOf(behind, 503, 'server_busy'), /timed out after 100 ms/);
        clock.advance(LONG_MS); // far past busy_timeout_ms: the manager has no deadline to run out
        assert.equal(c.snapshot('M').queuedManagers, 1, 'the manager is still waiting');
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n });
        await gate.open();
        for (const r of await Promise.all(requests)) assert.equal(reportOf(r).generation, 1);
        const res = await within(manager, `the ${kind}`);
        assert.equal(res.status, 200);
        if (kind === 'unload') assert.deepEqual(res.json, { id: 'M', loaded: false });
        else assert.deepEqual(res.json, { id: 'M', loaded: true, reconfigured: true });
      });
    });
  }
});

describe('timeouts: overdue blockers', () => {
  for (const n of COUNTS) {
    test(`[time.overdue-blockers] slots=${n}: a healthy blocker permits a bounded wait that succeeds when it finishes`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: 5000, clock }, async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        clock.advance(4999); // not yet overdue
        const waiting = c.infer('M', {}, { busy_timeout_ms: LONG_MS });
        await queued(c, 'M', 1);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 1 });
        await gate.open();
        assert.equal(reportOf(await within(waiting, 'the waiting request')).generation, 1);
        for (const r of await Promise.all(requests)) assert.equal(r.status, 200);
      });
    });

    test(`[time.overdue-blockers] slots=${n}: when every occupied slot is overdue a new request fails fast`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: LONG_MS, clock }, async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        clock.advance(LONG_MS + 1);
        // Its real timer would wait ten minutes; fail-fast answers at once.
        const res = await within(c.infer('M'), 'the fail-fast answer');
        errorOf(res, 503, 'server_busy');
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n });
        await gate.open();
        for (const r of await Promise.all(requests)) assert.equal(r.status, 200);
        // Existing work continued; the model is free again.
        assert.equal(reportOf(await within(c.infer('M'), 'a request afterwards')).generation, 1);
      });
    });

    test(`[time.overdue-blockers] slots=${n}: an overdue manager makes a request fail fast; a healthy one permits waiting`, async () => {
      const clock = new ManualClock();
      // Admission unbounded by default, so that the request waiting behind the healthy manager keeps
      // waiting however far the clock moves; the probe sets its own bound.
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: 0, clock }, async (c) => {
        await c.ready('M');
        const { request: unload } = await c.unloading('M');
        const waiting = c.infer('M', { tag: 'healthy-manager' });
        await queued(c, 'M', 1);
        clock.advance(LONG_MS + 1);
        const res = await within(c.infer('M', {}, { busy_timeout_ms: LONG_MS }), 'the fail-fast answer');
        assert.match(errorOf(res, 503, 'server_busy'), /management/);
        assert.deepEqual(await view(c, 'M'), {
          ...readyView(n),
          loaded: false,
          state: 'unloading',
          max_parallel_slots: null,
          queued_requests: 1,
        });
        await c.teardown('M').open();
        assert.deepEqual((await unload).json, { id: 'M', loaded: false });
        assert.equal(reportOf(await within(waiting, 'the request queued earlier')).generation, 2);
      });
    });
  }

  for (const n of [2, 4]) {
    test(`[time.overdue-blockers] slots=${n}: overdue occupied slots fail fast even with spare slots behind a waiting manager`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: LONG_MS, clock }, async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', 1);
        const bulk = c.bulkUnload(['M']);
        await queued(c, 'M', 0, 1);
        clock.advance(LONG_MS + 1);
        const res = await within(c.infer('M'), 'the fail-fast answer');
        errorOf(res, 503, 'server_busy');
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: 1 });
        assert.equal(c.snapshot('M').queuedManagers, 1, 'the manager keeps its place');

        await gate.open();
        assert.equal((await requests[0]!).status, 200);
        assert.deepEqual((await within(bulk, 'the bulk')).json, { unloaded: ['M'], not_found: [] });
        assert.equal((await view(c, 'M')).loaded, false);
      });
    });

    test(`[time.overdue-blockers] slots=${n}: one healthy occupied slot among overdue ones permits a bounded wait`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: LONG_MS, clock }, async (c) => {
        await c.ready('M');
        const old = await c.running('M', n - 1);
        clock.advance(LONG_MS + 1); // these are overdue now
        const healthy = await c.running('M', 1);
        const waiting = c.infer('M', { tag: 'waits' });
        await queued(c, 'M', 1);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 1 });
        await healthy.gate.open();
        assert.equal(reportOf(await within(waiting, 'the waiting request')).options.tag, 'waits');
        await old.gate.open();
        for (const r of await Promise.all([...old.requests, ...healthy.requests]))
          assert.equal(r.status, 200);
        assert.deepEqual(await view(c, 'M'), readyView(n));
      });
    });
  }
});

describe('timeouts: zero means unbounded', () => {
  for (const n of COUNTS) {
    test(`[time.zero-unbounded] slots=${n}: busy_timeout_ms=0 waits without limit, however long the blocker runs`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: 0, clock }, async (c) => {
        await c.ready('M');
        // A bounded request behind an unbounded one times out while the unbounded one keeps
        // waiting, for as long as the clock moves.
        const { gate, requests, first: unbounded } = await timeOutBehind(c, clock, n, 'unbounded', 50);
        clock.advance(1e9);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 1 });
        await gate.open();
        assert.equal(reportOf(await within(unbounded, 'the unbounded request')).options.tag, 'unbounded');
        for (const r of await Promise.all(requests)) assert.equal(r.status, 200, 'admitted work ran past 0');
      });
    });

    test(`[time.zero-unbounded] slots=${n}: bulk unloads wait without limit despite busy_timeout_ms=50`, async () => {
      const clock = new ManualClock();
      await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: 50, clock }, async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        const bulk = c.bulkUnload(['M']);
        const all = post(c.url, '/v1/tasks/unload_all_models', {});
        await queued(c, 'M', 0, 2);
        // A request with the server's 50 ms times out behind them; the bulks have no deadline.
        const pending = c.infer('M');
        await queued(c, 'M', 1, 2);
        await expire(c, clock, 'M', 50, 1);
        errorOf(await within(pending, 'a bounded request'), 503, 'server_busy');
        clock.advance(1e9);
        errorOf(await within(c.infer('M'), 'a fail-fast request'), 503, 'server_busy');
        assert.equal(c.snapshot('M').queuedManagers, 2, 'both bulks still wait');
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n });
        await gate.open();
        for (const r of await Promise.all(requests))
          assert.equal(r.status, 200, 'admitted work ran past 50 ms');
        assert.deepEqual((await within(bulk, 'the bulk')).json, { unloaded: ['M'], not_found: [] });
        assert.deepEqual((await within(all, 'unload_all_models')).json, { unloaded: ['M'] });
        assert.equal((await view(c, 'M')).loaded, false);
      });
    });
  }
});

describe('timeouts: zero means unbounded (model ceiling)', () => {
  test('[time.zero-unbounded] a model busy_timeout_ms=0 makes its admission unbounded under a 50 ms server default', async () => {
    const clock = new ManualClock();
    const n = 2;
    await withContractServer([{ id: 'M', slots: n }], { busy_timeout_ms: 50, clock }, async (c) => {
      await c.ready('M');
      const reg = await post(c.url, '/v1/models/load', { ...c.body('M'), busy_timeout_ms: 0 });
      assert.deepEqual(reg.json, { id: 'M', loaded: true, reconfigured: true });
      const { gate, requests, first: unbounded } = await timeOutBehind(c, clock, n, 'unbounded', 50);
      clock.advance(1e9);
      assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 1 });
      await gate.open();
      assert.equal(reportOf(await within(unbounded, 'the unbounded request')).options.tag, 'unbounded');
      for (const r of await Promise.all(requests)) assert.equal(r.status, 200);
      assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n));
    });
  });
});

describe('timeouts: disconnects while queued or initialising', () => {
  for (const n of COUNTS) {
    test(`[time.disconnect-queued] slots=${n}: a queued request whose client leaves leaves the queue at once`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        const gone = abortable(c, 'M', { tag: 'gone' });
        await queued(c, 'M', 1);
        const behind = c.infer('M', { tag: 'behind' });
        await queued(c, 'M', 2);
        gone.client.abort();
        await assert.rejects(gone.response);
        await queued(c, 'M', 1);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 1 });
        await gate.open();
        for (const r of await Promise.all(requests)) assert.equal(r.status, 200);
        assert.equal(reportOf(await behind).options.tag, 'behind');
        assert.equal(c.count('M', 'run-start'), n + 1, 'the departed request never ran');
        assert.deepEqual(await view(c, 'M'), readyView(n));
      });
    });

    test(`[time.disconnect-queued] slots=${n}: a client that leaves while its slot waits for initialisation frees the slot at once`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.load('M').close();
        const stay = range(n - 1).map((i) => c.infer('M', { tag: `stay${i}` }));
        const gone = abortable(c, 'M', { tag: 'gone' });
        await whenRuntime(
          c.s.voxd.runtime,
          'every slot waits for the load',
          () => c.snapshot('M').activeRequests === n,
        );
        const next = c.infer('M', { tag: 'next' });
        await queued(c, 'M', 1);
        gone.client.abort();
        await assert.rejects(gone.response);
        // The departed slot goes straight to the next caller while the load is still held.
        await queued(c, 'M', 0);
        assert.equal(c.entry('M').state.kind, 'loading');
        assert.deepEqual(await view(c, 'M'), {
          ...readyView(n),
          loaded: false,
          state: 'loading',
          active_slots: n,
          max_parallel_slots: null,
        });
        await c.load('M').open();
        const reports = (await Promise.all([...stay, next])).map(reportOf);
        assert.deepEqual(
          reports.map((r) => r.options.tag).sort(),
          [...range(n - 1).map((i) => `stay${i}`), 'next'].sort(),
        );
        assert.equal(c.count('M', 'run-start'), n, 'the departed request never ran');
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n), 'the shared load finished for the others');
        assert.deepEqual(await view(c, 'M'), readyView(n));
      });
    });

    test(`[time.disconnect-queued] slots=${n}: a queued manager whose client leaves stops blocking later requests`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', 1);
        const client = new AbortController();
        const unload = post(c.url, '/v1/models/unload', { id: 'M' }, client.signal);
        unload.catch(() => {});
        await queued(c, 'M', 0, 1);
        const later = c.infer('M', { tag: 'later' });
        await queued(c, 'M', 1, 1);
        client.abort();
        await assert.rejects(unload);
        if (n > 1) {
          // The spare slot it was blocking is taken at once.
          assert.equal(reportOf(await within(later, 'the later request')).generation, 1);
        } else {
          await queued(c, 'M', 1, 0);
        }
        await gate.open();
        assert.equal((await requests[0]!).status, 200);
        assert.equal(reportOf(await later).generation, 1, 'the model was never unloaded');
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n));
        assert.deepEqual(await view(c, 'M'), readyView(n));
      });
    });
  }
});
