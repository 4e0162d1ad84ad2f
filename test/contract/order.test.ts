/**
 * Contract cells `order.*`: arrival order and operation interactions. Every starting situation is
 * held by fixture gates (load, teardown, run); every wait has a deadline; nothing sleeps.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorOf, type HttpResult, post, reportOf, waitUntil, whenRuntime } from '../helpers/voxd.js';
import {
  COUNTS,
  FAULTY_TEARDOWN,
  faultyTeardownOf,
  fmt,
  lifecycle,
  loadOf,
  probeOf,
  queued,
  range,
  readyView,
  teardownOf,
  unloadedView,
  view,
  within,
} from './assertions.js';
import {
  type ContractModel,
  type ContractServer,
  slotted,
  type ToggleGate,
  withContractServer,
} from './harness.js';

/**
 * What the fixture record of one model must show for a sequence of operations: generations count
 * every load attempt, a changed multi-slot replacement is probed privately first, a reload tears
 * the old pool down (sessions in reverse, then weights) before the new load.
 */
class Expected {
  events: string[] = [];
  gen = 0;
  loadedGen: number | null = null;
  constructor(readonly n: number) {}
  load(): this {
    this.gen += 1;
    this.events.push(...loadOf(this.gen, this.n));
    this.loadedGen = this.gen;
    return this;
  }
  unload(): this {
    if (this.loadedGen !== null) this.events.push(...teardownOf(this.loadedGen, this.n));
    this.loadedGen = null;
    return this;
  }
  /** A reconfiguration with changed load inputs. */
  reconfigure(): this {
    if (this.n > 1) {
      this.gen += 1;
      this.events.push(...probeOf(this.gen));
    }
    return this.unload().load();
  }
}

type Manager = 'reconfigure' | 'unload' | 'bulk';
const MANAGERS: Manager[] = ['reconfigure', 'unload', 'bulk'];
const ACTIVITY: Record<Manager, string> = {
  reconfigure: 'reconfiguring',
  unload: 'unloading',
  bulk: 'unloading',
};

function sendManager(c: ContractServer, id: string, kind: Manager, variant = 'next'): Promise<HttpResult> {
  if (kind === 'reconfigure') return c.register(id, { load_options: { variant } });
  if (kind === 'unload') return c.unload(id);
  return c.bulkUnload([id]);
}

function assertManagerResult(res: HttpResult, kind: Manager, id: string): void {
  assert.equal(res.status, 200, res.body.toString());
  if (kind === 'reconfigure') assert.deepEqual(res.json, { id, loaded: true, reconfigured: true });
  else if (kind === 'unload') assert.deepEqual(res.json, { id, loaded: false });
  else assert.deepEqual(res.json, { unloaded: [id], not_found: [] });
}

/**
 * Starts a manager on a ready, idle model and holds it while it owns the model: a reconfiguration
 * waits on the closed load gate (in its private probe when slots > 1, else in the replacement
 * load after teardown); an unload or bulk unload waits on the closed teardown gate.
 */
async function holdManager(
  c: ContractServer,
  id: string,
  kind: Manager,
  n: number,
): Promise<{ request: Promise<HttpResult> }> {
  if (kind === 'reconfigure') {
    await c.load(id).close();
    const request = sendManager(c, id, kind);
    await whenRuntime(
      c.s.voxd.runtime,
      `${id} is reconfiguring`,
      () => c.entry(id).activity === 'reconfiguring' && (n > 1 || c.entry(id).state.kind === 'loading'),
    );
    return { request };
  }
  await c.teardown(id).close();
  const request = sendManager(c, id, kind);
  await whenRuntime(c.s.voxd.runtime, `${id} is unloading`, () => c.entry(id).state.kind === 'unloading');
  return { request };
}

async function openAll(c: ContractServer, id: string): Promise<void> {
  await Promise.all([c.load(id).open(), c.teardown(id).open()]);
}

/** Requests that each hold a slot until their own gate opens. */
async function gated(
  c: ContractServer,
  id: string,
  count: number,
  tag: string,
): Promise<{ gates: ToggleGate[]; requests: Promise<HttpResult>[] }> {
  const gates: ToggleGate[] = [];
  for (let i = 0; i < count; i++) gates.push(await c.runGate());
  const requests = gates.map((g, i) => c.infer(id, { run_gate: g.path, tag: `${tag}${i}` }));
  return { gates, requests };
}

/**
 * Starts the registration of a new id `N` (built from M's body, so M's closed load gate holds its
 * first load) and waits until the entry is published under its registration lease.
 */
async function holdNewRegistration(c: ContractServer): Promise<{ request: Promise<HttpResult> }> {
  await c.load('M').close();
  const request = post(c.url, '/v1/models/load', { ...c.body('M'), id: 'N' });
  await whenRuntime(
    c.s.voxd.runtime,
    'N is registering',
    () => c.s.voxd.runtime.has('N') && c.entry('N').activity === 'registering',
  );
  return { request };
}

describe('arrival order: request then request', () => {
  for (const n of COUNTS) {
    test(`[order.request-request] slots=${n}: cold requests share one initialisation, fill the slots, later callers queue FIFO`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.load('M').close();
        const first = await gated(c, 'M', n, 'R');
        await whenRuntime(
          c.s.voxd.runtime,
          'all slots admitted during the load',
          () => c.snapshot('M').activeRequests === n,
        );
        assert.deepEqual(await view(c, 'M'), {
          ...unloadedView(n),
          state: 'loading',
          active_slots: n,
        });
        const later = await gated(c, 'M', 2, 'Q');
        await queued(c, 'M', 2);
        await c.load('M').open();
        await c.waitCount('M', 'run-start', n);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 2 });
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n), 'one shared initialisation');
        const sessions = new Set(c.events('M', 'run-start').map((e) => (e as { session: string }).session));
        assert.equal(sessions.size, n, 'each admitted request owns its own session');

        // One slot frees: the oldest queued caller (Q0) takes it, Q1 keeps waiting.
        await first.gates[0]!.open();
        const r0 = reportOf(await first.requests[0]!);
        await c.waitCount('M', 'run-start', n + 1);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 1 });
        // Q0 can finish while Q1's gate stays closed only if Q0, not Q1, holds the freed slot.
        await later.gates[0]!.open();
        const q0 = reportOf(await within(later.requests[0]!, 'Q0, the older queued request'));
        assert.equal(q0.options.tag, 'Q0');
        assert.equal(q0.session, r0.session, 'Q0 is bound to the session R0 released');
        await c.waitCount('M', 'run-start', n + 2);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 0 });
        await Promise.all([...first.gates, ...later.gates].map((g) => g.open()));
        const rest = await Promise.all([...first.requests.slice(1), later.requests[1]!]);
        for (const res of rest) assert.equal(reportOf(res).generation, 1);
        assert.equal(reportOf(rest[rest.length - 1]!).session, q0.session, 'Q1 got the slot Q0 left');
        assert.deepEqual(await view(c, 'M'), readyView(n));
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n), 'no further loads or disposals');
      });
    });
  }
});

describe('arrival order: request then manager', () => {
  for (const kind of MANAGERS) {
    for (const n of COUNTS.filter((x) => x > 1)) {
      test(`[order.request-manager] slots=${n}, ${kind}: waits for the running request; a later request may not take a spare slot ahead of it`, async () => {
        await withContractServer([{ id: 'M', slots: n }], async (c) => {
          await c.ready('M');
          const { gates, requests } = await gated(c, 'M', 1, 'R');
          await c.waitCount('M', 'run-start', 1);
          const manager = sendManager(c, 'M', kind);
          await queued(c, 'M', 0, 1);
          const late = c.infer('M', { tag: 'late' });
          await queued(c, 'M', 1, 1);
          assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: 1, queued_requests: 1 });
          assert.equal(c.count('M', 'run-start'), 1, `${n - 1} spare slot(s) stay unused behind the manager`);
          assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n), 'the manager has not started');

          await gates[0]!.open();
          assert.equal(reportOf(await requests[0]!).generation, 1);
          assertManagerResult(await manager, kind, 'M');
          const expected = new Expected(n).load();
          if (kind === 'reconfigure') expected.reconfigure();
          else expected.unload().load();
          const report = reportOf(await late);
          assert.equal(report.generation, expected.loadedGen, 'the later request runs after the manager');
          assert.equal(report.load_options.variant, kind === 'reconfigure' ? 'next' : undefined);
          assert.deepEqual(lifecycle(c, 'M'), expected.events);
          assert.deepEqual(await view(c, 'M'), readyView(n));
        });
      });
    }

    for (const n of COUNTS) {
      test(`[order.request-manager] slots=${n}, ${kind}: waits for every admitted and queued older request`, async () => {
        await withContractServer([{ id: 'M', slots: n }], async (c) => {
          await c.ready('M');
          const { gate, requests } = await c.running('M', n);
          const older = c.infer('M', { tag: 'older' });
          await queued(c, 'M', 1);
          const manager = sendManager(c, 'M', kind);
          await queued(c, 'M', 1, 1);
          const late = c.infer('M', { tag: 'late' });
          await queued(c, 'M', 2, 1);
          assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: 2 });

          await gate.open();
          for (const res of await Promise.all(requests)) assert.equal(reportOf(res).generation, 1);
          const olderReport = reportOf(await older);
          assert.equal(olderReport.generation, 1, 'the older queued request ran on the old pool');
          assertManagerResult(await manager, kind, 'M');
          const expected = new Expected(n).load();
          if (kind === 'reconfigure') expected.reconfigure();
          else expected.unload().load();
          const lateReport = reportOf(await late);
          assert.equal(lateReport.generation, expected.loadedGen);
          assert.equal(lateReport.load_options.variant, kind === 'reconfigure' ? 'next' : undefined);
          assert.deepEqual(lifecycle(c, 'M'), expected.events);
          // Every old-pool run ended before the manager's first step.
          const all = c.events('M').map(fmt);
          const managerStart = all.findIndex((e, i) => i >= loadOf(1, n).length && !e.startsWith('run-'));
          const before = all.slice(0, managerStart);
          assert.equal(before.filter((e) => e.startsWith('run-end:1')).length, n + 1);
          assert.ok(
            all.slice(managerStart).every((e) => !e.startsWith('run-') || !e.includes(':1:')),
            `no old-pool run after the manager started: ${all.join(' ')}`,
          );
          assert.deepEqual(await view(c, 'M'), readyView(n));
        });
      });
    }
  }
});

describe('arrival order: manager then request', () => {
  for (const kind of MANAGERS) {
    for (const n of COUNTS) {
      test(`[order.manager-request] slots=${n}, ${kind}: requests queue behind the manager and bind its result`, async () => {
        await withContractServer([{ id: 'M', slots: n }], async (c) => {
          await c.ready('M');
          const { request: manager } = await holdManager(c, 'M', kind, n);
          const held = lifecycle(c, 'M');
          const requests = range(n + 1).map((i) => c.infer('M', { tag: `Q${i}` }));
          await queued(c, 'M', n + 1);
          const status = await view(c, 'M');
          assert.equal(status.state, ACTIVITY[kind]);
          assert.equal(status.active_slots, 0);
          assert.equal(status.queued_requests, n + 1);
          // A request with a busy timeout gives up with 503 and leaves no lease or queue entry.
          const impatient = await c.infer('M', {}, { busy_timeout_ms: 50 });
          errorOf(impatient, 503, 'server_busy');
          assert.equal(c.snapshot('M').queuedRequests, n + 1);
          assert.equal(c.count('M', 'run-start'), 0);
          assert.deepEqual(lifecycle(c, 'M'), held, 'nothing ran while the manager held the model');

          await openAll(c, 'M');
          assertManagerResult(await manager, kind, 'M');
          const expected = new Expected(n).load();
          if (kind === 'reconfigure') expected.reconfigure();
          else expected.unload().load();
          const reports = (await Promise.all(requests)).map(reportOf);
          for (const r of reports) {
            assert.equal(r.generation, expected.loadedGen, 'bound to the pool the manager left');
            assert.equal(r.load_options.variant, kind === 'reconfigure' ? 'next' : undefined);
          }
          assert.equal(new Set(reports.map((r) => r.session)).size, n);
          assert.deepEqual(lifecycle(c, 'M'), expected.events);
          assert.deepEqual(await view(c, 'M'), readyView(n));
        });
      });
    }
  }
  for (const n of COUNTS) {
    test(`[order.manager-request] slots=${n}, new registration: requests to the published entry wait for its first load`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        const { request: registration } = await holdNewRegistration(c);
        assert.deepEqual(await view(c, 'N'), { ...unloadedView(n), state: 'registering' });
        const requests = range(n + 1).map((i) => c.infer('N', { tag: `Q${i}` }));
        await queued(c, 'N', n + 1);
        assert.deepEqual(await view(c, 'N'), {
          ...unloadedView(n),
          state: 'registering',
          queued_requests: n + 1,
        });
        assert.deepEqual(c.events('N'), []);
        await c.load('M').open();
        assert.deepEqual((await registration).json, { id: 'N', loaded: true, reconfigured: false });
        const reports = (await Promise.all(requests)).map(reportOf);
        for (const r of reports) assert.equal(r.generation, 1);
        assert.equal(new Set(reports.map((r) => r.session)).size, n);
        assert.deepEqual(lifecycle(c, 'N'), loadOf(1, n), 'one load: the registration');
        assert.deepEqual(await view(c, 'N'), readyView(n));
      });
    });
  }
});

describe('arrival order: manager then manager', () => {
  for (const first of MANAGERS) {
    for (const second of MANAGERS) {
      for (const n of COUNTS) {
        test(`[order.manager-manager] slots=${n}: ${first} then ${second} run exclusively in enqueue order`, async () => {
          await withContractServer([{ id: 'M', slots: n }], async (c) => {
            await c.ready('M');
            const { request: one } = await holdManager(c, 'M', first, n);
            const held = lifecycle(c, 'M');
            const two = sendManager(c, 'M', second, 'v3');
            await queued(c, 'M', 0, 1);
            assert.equal((await view(c, 'M')).state, ACTIVITY[first]);
            assert.deepEqual(lifecycle(c, 'M'), held, `the ${second} waits for the ${first}`);

            await openAll(c, 'M');
            assertManagerResult(await one, first, 'M');
            assertManagerResult(await two, second, 'M');
            const expected = new Expected(n).load();
            let variant: string | undefined;
            for (const [kind, v] of [
              [first, 'next'],
              [second, 'v3'],
            ] as const) {
              if (kind === 'reconfigure') {
                expected.reconfigure();
                variant = v;
              } else expected.unload();
            }
            assert.deepEqual(lifecycle(c, 'M'), expected.events);
            const finalReady = second === 'reconfigure';
            assert.deepEqual(await view(c, 'M'), finalReady ? readyView(n) : unloadedView(n));
            // The model is free afterwards and serves the last committed configuration.
            const report = reportOf(await within(c.infer('M'), 'a request after both managers'));
            assert.equal(report.load_options.variant, variant);
            assert.equal(report.generation, finalReady ? expected.loadedGen : expected.gen + 1);
          });
        });
      }
    }
  }
  for (const second of ['register', ...MANAGERS] as const) {
    for (const n of COUNTS) {
      const what = second === 'register' ? 'the same registration again' : second;
      test(`[order.manager-manager] slots=${n}: a new registration then ${what} run exclusively in enqueue order`, async () => {
        await withContractServer([{ id: 'M', slots: n }], async (c) => {
          const { request: one } = await holdNewRegistration(c);
          const two =
            second === 'register'
              ? post(c.url, '/v1/models/load', { ...c.body('M'), id: 'N' })
              : second === 'reconfigure'
                ? post(c.url, '/v1/models/load', {
                    ...c.body('M', { load_options: { variant: 'v3' } }),
                    id: 'N',
                  })
                : second === 'unload'
                  ? c.unload('N')
                  : c.bulkUnload(['N']);
          await queued(c, 'N', 0, 1);
          assert.deepEqual(await view(c, 'N'), { ...unloadedView(n), state: 'registering' });
          assert.deepEqual(c.events('N'), [], `the ${what} waits for the first load`);

          await c.load('M').open();
          assert.deepEqual((await one).json, { id: 'N', loaded: true, reconfigured: false });
          const res = await two;
          const expected = new Expected(n).load();
          if (second === 'register') {
            assert.deepEqual(res.json, { id: 'N', loaded: true, reconfigured: false });
          } else {
            assertManagerResult(res, second, 'N');
            if (second === 'reconfigure') expected.reconfigure();
            else expected.unload();
          }
          assert.deepEqual(lifecycle(c, 'N'), expected.events);
          const finalReady = second === 'register' || second === 'reconfigure';
          assert.deepEqual(await view(c, 'N'), finalReady ? readyView(n) : unloadedView(n));
          const report = reportOf(await within(c.infer('N'), 'a request after both managers'));
          assert.equal(report.load_options.variant, second === 'reconfigure' ? 'v3' : undefined);
        });
      });
    }
  }
});

describe('arrival order: different models', () => {
  type Held = 'loading' | 'reconfiguring' | 'unloading' | 'full';
  for (const held of ['loading', 'reconfiguring', 'unloading', 'full'] as Held[]) {
    for (const n of COUNTS) {
      test(`[order.cross-model] slots=${n}: while A is ${held}, B's requests and managers proceed`, async () => {
        await withContractServer(slotted({ A: n, B: 2 }), async (c) => {
          await c.ready('B');
          if (held !== 'loading') await c.ready('A');
          const pending: Promise<HttpResult>[] = [];
          let runGate: ToggleGate | undefined;
          if (held === 'loading') pending.push((await c.loading('A')).request);
          else if (held === 'reconfiguring')
            pending.push((await holdManager(c, 'A', 'reconfigure', n)).request);
          else if (held === 'unloading') pending.push((await c.unloading('A')).request);
          else {
            const running = await c.running('A', n);
            runGate = running.gate;
            pending.push(...running.requests);
            pending.push(c.infer('A'));
            await queued(c, 'A', 1);
            pending.push(c.unload('A'));
            await queued(c, 'A', 1, 1);
          }
          const aFields = await view(c, 'A');
          const aEvents = c.events('A').length;

          assert.equal(reportOf(await within(c.infer('B'), 'a warm B request')).generation, 1);
          assert.deepEqual((await within(c.unload('B'), 'unload B')).json, { id: 'B', loaded: false });
          const reg = await within(c.register('B', { load_options: { variant: 'b2' } }), 'reconfigure B');
          assert.deepEqual(reg.json, { id: 'B', loaded: true, reconfigured: true });
          assert.equal(reportOf(await within(c.infer('B'), 'B after reload')).load_options.variant, 'b2');
          assert.deepEqual((await within(c.bulkUnload(['B']), 'bulk unload of B')).json, {
            unloaded: ['B'],
            not_found: [],
          });
          assert.deepEqual(await view(c, 'B'), unloadedView(2));
          assert.deepEqual(await view(c, 'A'), aFields, 'A is still held where it was');
          assert.equal(c.events('A').length, aEvents);

          await openAll(c, 'A');
          await runGate?.open();
          for (const res of await Promise.all(pending)) assert.equal(res.status, 200, res.body.toString());
          assert.deepEqual(
            await view(c, 'A'),
            held === 'unloading' || held === 'full' ? unloadedView(n) : readyView(n),
          );
        });
      });
    }
  }

  test('[order.cross-model] while B is full with a queued manager, A loads, reconfigures and unloads', async () => {
    await withContractServer(slotted({ A: 2, B: 2 }), async (c) => {
      await c.ready('B');
      const { gate, requests } = await c.running('B', 2);
      const bQueued = c.infer('B');
      await queued(c, 'B', 1);
      const bUnload = c.unload('B');
      await queued(c, 'B', 1, 1);
      const bFields = await view(c, 'B');

      assert.equal(reportOf(await within(c.infer('A'), 'a cold A request')).generation, 1);
      const reg = await within(c.register('A', { load_options: { variant: 'a2' } }), 'reconfigure A');
      assert.equal(reg.status, 200, reg.body.toString());
      assert.equal(reportOf(await within(c.infer('A'), 'A after reconfiguring')).load_options.variant, 'a2');
      assert.deepEqual((await within(c.unload('A'), 'unload A')).json, { id: 'A', loaded: false });
      assert.deepEqual(await view(c, 'A'), unloadedView(2));
      assert.deepEqual(await view(c, 'B'), bFields, 'B is still held');

      await gate.open();
      for (const res of await Promise.all([...requests, bQueued, bUnload])) assert.equal(res.status, 200);
      assert.deepEqual(await view(c, 'B'), unloadedView(2));
    });
  });
});

/** A with n slots, B (one slot unless `b` says otherwise) and C with one. */
const threeModels = (n: number, b: Partial<ContractModel> = {}): ContractModel[] => [
  { id: 'A', slots: n },
  { id: 'B', slots: 1, ...b },
  { id: 'C', slots: 1 },
];

/**
 * A bulk unload of A, B and C midway: its barrier queued on busy A, B held in its teardown (its
 * gate closed) and C already unloaded.
 */
async function bulkMidway(c: ContractServer): Promise<void> {
  await queued(c, 'A', 0, 1);
  await whenRuntime(c.s.voxd.runtime, 'B is unloading', () => c.entry('B').state.kind === 'unloading');
  await waitUntil('C is unloaded', () => c.count('C', 'weights-disposed') === 1);
}

describe('arrival order: bulk unloads', () => {
  for (const n of COUNTS) {
    test(`[order.bulk-bulk] slots=${n}: overlapping bulks in reversed order serialise per model and both finish`, async () => {
      await withContractServer(threeModels(n), async (c) => {
        await Promise.all(['A', 'B', 'C'].map((id) => c.ready(id)));
        const a = await c.running('A', n);
        const b = await c.running('B', 1);
        const bulk1 = c.bulkUnload(['A', 'B']);
        await queued(c, 'A', 0, 1);
        await queued(c, 'B', 0, 1);
        const between = c.infer('A', { tag: 'between' });
        await queued(c, 'A', 1, 1);
        const bulk2 = c.bulkUnload(['B', 'A', 'A', 'nope']);
        await queued(c, 'A', 1, 2);
        await queued(c, 'B', 0, 2);

        // A model outside both selections is neither blocked by them nor by their publication.
        assert.equal(reportOf(await within(c.infer('C'), 'a request to C')).generation, 1);
        assert.deepEqual((await within(c.bulkUnload(['C']), 'a third bulk on C only')).json, {
          unloaded: ['C'],
          not_found: [],
        });

        // B drains: the first bulk unloads it, the second finds it unloaded.
        await b.gate.open();
        await whenRuntime(c.s.voxd.runtime, 'B is unloaded', () => c.entry('B').scheduler.idle);
        assert.deepEqual(await view(c, 'B'), unloadedView(1));
        assert.deepEqual(lifecycle(c, 'B'), new Expected(1).load().unload().events);

        await a.gate.open();
        for (const res of await Promise.all(a.requests)) assert.equal(reportOf(res).generation, 1);
        assert.equal(
          reportOf(await between).generation,
          2,
          'the request between the bulks reloads after the first',
        );
        assert.deepEqual((await within(bulk1, 'the first bulk')).json, {
          unloaded: ['A', 'B'],
          not_found: [],
        });
        assert.deepEqual((await within(bulk2, 'the second bulk')).json, {
          unloaded: ['B', 'A'],
          not_found: ['nope'],
        });
        assert.deepEqual(lifecycle(c, 'A'), new Expected(n).load().unload().load().unload().events);
        assert.deepEqual(await view(c, 'A'), unloadedView(n));
        assert.ok(c.entry('A').scheduler.idle, 'no lease left on A');
      });
    });
  }

  for (const n of COUNTS) {
    test(`[order.bulk-single] slots=${n}: a request, an unload and a reconfiguration after a bulk each run in enqueue order`, async () => {
      await withContractServer([{ id: 'A', slots: n }], async (c) => {
        await c.ready('A');
        const { gate, requests } = await c.running('A', n);
        const bulk = c.bulkUnload(['A']);
        await queued(c, 'A', 0, 1);
        const request = c.infer('A', { tag: 'after-bulk' });
        await queued(c, 'A', 1, 1);
        const unload = c.unload('A');
        await queued(c, 'A', 1, 2);
        const reconfigure = c.register('A', { load_options: { variant: 'next' } });
        await queued(c, 'A', 1, 3);
        assert.deepEqual(await view(c, 'A'), { ...readyView(n), active_slots: n, queued_requests: 1 });

        await gate.open();
        for (const res of await Promise.all(requests)) assert.equal(reportOf(res).generation, 1);
        assert.deepEqual((await bulk).json, { unloaded: ['A'], not_found: [] });
        assert.equal(reportOf(await request).generation, 2, 'the request reloads after the bulk');
        assert.deepEqual((await unload).json, { id: 'A', loaded: false });
        assert.deepEqual((await reconfigure).json, { id: 'A', loaded: true, reconfigured: true });
        const expected = new Expected(n).load().unload().load().unload().reconfigure();
        assert.deepEqual(lifecycle(c, 'A'), expected.events);
        assert.deepEqual(await view(c, 'A'), readyView(n));
        assert.equal(reportOf(await c.infer('A')).load_options.variant, 'next');
      });
    });
  }

  for (const kind of ['unload', 'reconfigure'] as const) {
    test(`[order.bulk-single] a bulk after a slow ${kind} of A frees ready B first, then waits for A`, async () => {
      const n = 2;
      await withContractServer(slotted({ A: n, B: 2 }), async (c) => {
        await Promise.all([c.ready('A'), c.ready('B')]);
        const single =
          kind === 'unload'
            ? (await c.unloading('A')).request
            : (await holdManager(c, 'A', 'reconfigure', n)).request;
        const bulk = c.bulkUnload(['A', 'B']);
        await queued(c, 'A', 0, 1);
        await waitUntil('B is freed', () => c.count('B', 'weights-disposed') === 1);
        await whenRuntime(c.s.voxd.runtime, 'B is idle', () => c.entry('B').scheduler.idle);
        assert.deepEqual(await view(c, 'B'), unloadedView(2));
        assert.equal((await view(c, 'A')).state, ACTIVITY[kind]);

        await openAll(c, 'A');
        assertManagerResult(await single, kind, 'A');
        assert.deepEqual((await within(bulk, 'the bulk')).json, { unloaded: ['A', 'B'], not_found: [] });
        const expected = new Expected(n).load();
        if (kind === 'reconfigure') expected.reconfigure();
        assert.deepEqual(lifecycle(c, 'A'), expected.unload().events, 'the bulk retires what A ended with');
        assert.deepEqual(await view(c, 'A'), unloadedView(n));
        const report = reportOf(await c.infer('A'));
        assert.equal(report.load_options.variant, kind === 'reconfigure' ? 'next' : undefined);
      });
    });
  }

  test('[order.bulk-single] a registration published after a bulk snapshot is not in that bulk', async () => {
    await withContractServer([{ id: 'A', slots: 2 }], async (c) => {
      await c.ready('A');
      const { gate, requests } = await c.running('A', 1);
      const all = post(c.url, '/v1/tasks/unload_all_models', {});
      const byIds = c.bulkUnload(['A', 'N']);
      await queued(c, 'A', 0, 2);
      // N is registered (and loaded) while both bulks wait on A.
      const reg = await within(post(c.url, '/v1/models/load', { ...c.body('A'), id: 'N' }), 'registering N');
      assert.deepEqual(reg.json, { id: 'N', loaded: true, reconfigured: false });

      await gate.open();
      assert.equal((await requests[0]!).status, 200);
      assert.deepEqual((await within(all, 'unload_all_models')).json, { unloaded: ['A'] });
      assert.deepEqual((await within(byIds, 'unload_models')).json, { unloaded: ['A'], not_found: ['N'] });
      assert.deepEqual(await view(c, 'N'), readyView(2), 'N stayed loaded');
      assert.deepEqual(lifecycle(c, 'N'), loadOf(1, 2));
      assert.deepEqual(await view(c, 'A'), unloadedView(2));
    });
  });
});

describe('arrival order: bulk cancellation', () => {
  for (const n of COUNTS) {
    test(`[order.bulk-cancel] slots=${n}: a teardown that faults in the middle of a bulk still releases its grant; the bulk finishes and every model loads and unloads afterwards`, async () => {
      await withContractServer(threeModels(n, { slots: 2, load_options: FAULTY_TEARDOWN }), async (c) => {
        await Promise.all(['A', 'B', 'C'].map((id) => c.ready(id)));
        const { gate, requests } = await c.running('A', n);
        await c.teardown('B').close();
        const bulk = c.bulkUnload(['A', 'B', 'C']);
        await bulkMidway(c);

        // B's teardown faults (its primary's dispose threw; now its weights' fails) while A's
        // barrier is still pending.
        await c.teardown('B').open();
        await whenRuntime(c.s.voxd.runtime, 'B is idle', () => c.entry('B').scheduler.idle);
        assert.deepEqual(lifecycle(c, 'B'), [...loadOf(1, 2), ...faultyTeardownOf(1, 2)]);
        assert.deepEqual(await view(c, 'B'), unloadedView(2));
        assert.equal(c.snapshot('A').queuedManagers, 1, "A's barrier is still queued");
        assert.deepEqual(await view(c, 'A'), { ...readyView(n), active_slots: n });

        await gate.open();
        for (const res of await Promise.all(requests)) assert.equal(reportOf(res).generation, 1);
        assert.deepEqual((await within(bulk, 'the bulk')).json, {
          unloaded: ['A', 'B', 'C'],
          not_found: [],
        });
        assert.deepEqual(lifecycle(c, 'A'), [...loadOf(1, n), ...teardownOf(1, n)]);
        // No stranded management ownership: each model loads, serves and unloads again.
        for (const [id, slots] of [
          ['A', n],
          ['B', 2],
          ['C', 1],
        ] as const) {
          assert.deepEqual(await view(c, id), unloadedView(slots));
          assert.ok(c.entry(id).scheduler.idle, `no lease left on ${id}`);
          assert.equal(reportOf(await within(c.infer(id), `a request to ${id}`)).generation, 2);
          assert.deepEqual((await within(c.unload(id), `unloading ${id}`)).json, { id, loaded: false });
          assert.deepEqual(await view(c, id), unloadedView(slots));
          assert.ok(c.entry(id).scheduler.idle, `no lease left on ${id} after its unload`);
        }
        assert.deepEqual(lifecycle(c, 'B'), [
          ...loadOf(1, 2),
          ...faultyTeardownOf(1, 2),
          ...loadOf(2, 2),
          ...faultyTeardownOf(2, 2),
        ]);
      });
    });

    test(`[order.bulk-cancel] slots=${n}: a bulk whose client leaves unwinds pending barriers and finishes granted unloads`, async () => {
      await withContractServer(threeModels(n), async (c) => {
        await Promise.all(['A', 'B', 'C'].map((id) => c.ready(id)));
        const { gate, requests } = await c.running('A', n);
        await c.teardown('B').close();
        const client = new AbortController();
        const bulk = post(c.url, '/v1/tasks/unload_models', { model_ids: ['A', 'B', 'C'] }, client.signal);
        bulk.catch(() => {});
        await bulkMidway(c);
        const behind = c.infer('A', { tag: 'behind-the-barrier' });
        await queued(c, 'A', 1, 1);

        client.abort();
        await assert.rejects(bulk);
        await whenRuntime(
          c.s.voxd.runtime,
          "A's pending barrier left its queue",
          () => c.snapshot('A').queuedManagers === 0,
        );
        assert.deepEqual(await view(c, 'A'), { ...readyView(n), active_slots: n, queued_requests: 1 });
        // B's unload was granted before the client left: it completes and releases its lease.
        assert.equal((await view(c, 'B')).state, 'unloading');
        await c.teardown('B').open();
        await whenRuntime(c.s.voxd.runtime, 'B is idle', () => c.entry('B').scheduler.idle);
        assert.deepEqual(await view(c, 'B'), unloadedView(1));
        assert.deepEqual(lifecycle(c, 'B'), new Expected(1).load().unload().events);
        assert.deepEqual(await view(c, 'C'), unloadedView(1));

        await gate.open();
        for (const res of await Promise.all(requests)) assert.equal(reportOf(res).generation, 1);
        assert.equal(reportOf(await behind).generation, 1, 'A was never unloaded');
        assert.deepEqual(lifecycle(c, 'A'), loadOf(1, n));
        assert.deepEqual(await view(c, 'A'), readyView(n));
        assert.ok(c.entry('A').scheduler.idle, 'no stranded manager lease on A');
        // Every model accepts work and management afterwards.
        assert.equal(reportOf(await within(c.infer('A'), 'a request to A')).generation, 1);
        assert.equal(reportOf(await within(c.infer('B'), 'a request to B')).generation, 2);
        assert.deepEqual((await within(c.unload('A'), 'unloading A')).json, { id: 'A', loaded: false });
      });
    });
  }
});
