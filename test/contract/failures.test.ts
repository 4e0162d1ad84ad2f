/**
 * Contract cells `fail.*`: failure boundaries and recovery. Each failure is injected by the fixture
 * engine (fail_load, null_primary, fail_clone_at, capacity, prepare_fail, run_fail) or by residency
 * limits; each test asserts the response, GET /v1/models and the fixture's record.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  errorOf,
  fixtureModel,
  get,
  modelStatus,
  post,
  reportOf,
  tempDir,
  waitUntil,
  whenRuntime,
  withServer,
} from '../helpers/voxd.js';
import {
  COUNTS,
  disposeSessions,
  FAULTY_TEARDOWN,
  faultyTeardownOf,
  lifecycle,
  listed,
  loadOf,
  pick,
  probeOf,
  range,
  readyView,
  teardownOf,
  unloadedView,
  view,
  within,
} from './assertions.js';
import { contractServer, slotted, withContractServer } from './harness.js';

type Failure = { option: 'fail_load' | 'null_primary' } | { option: 'fail_clone_at'; at: number };

function failureOptions(f: Failure): Record<string, string> {
  return f.option === 'fail_clone_at' ? { fail_clone_at: String(f.at) } : { [f.option]: 'true' };
}

function failureName(f: Failure): string {
  return f.option === 'fail_clone_at' ? `fail_clone_at=${f.at}` : f.option;
}

/** The record of one failed build: private sessions disposed in reverse, then the weights. */
function failedBuild(g: number, f: Failure): string[] {
  if (f.option === 'fail_load') return [`load-failed:${g}`];
  const made = f.option === 'fail_clone_at' ? f.at : 0;
  const failedSlot = made;
  return [
    `load:${g}`,
    ...range(made).map((i) => `session-created:${g}:${i}`),
    `session-failed:${g}:${failedSlot}`,
    ...disposeSessions(g, made),
    `weights-disposed:${g}`,
  ];
}

function failureMessage(f: Failure, id: string): RegExp {
  if (f.option === 'fail_load') return new RegExp(`failed to load model '${id}'.*fail_load`);
  const slot = f.option === 'fail_clone_at' ? f.at : 0;
  return new RegExp(`failed to create session ${slot} of model '${id}'`);
}

const FAILURES_AT = (n: number): Failure[] => [
  { option: 'fail_load' },
  { option: 'null_primary' },
  ...range(n - 1).map((i): Failure => ({ option: 'fail_clone_at', at: i + 1 })),
];

describe('failure: invalid metadata and capacity', () => {
  for (const n of COUNTS) {
    test(`[fail.invalid-metadata] slots=${n}: an invalid replacement is rejected before any live change`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', 1);
        const before = (await get(c.url, '/v1/models?include_session_options=true')).json;
        const notWav = join(c.gateDir, 'not-a-wav.wav');
        writeFileSync(notWav, 'this is not a WAV file');
        const base = c.body('M');
        const invalid: Record<string, unknown>[] = [
          { family: 'nope' },
          { task: 'speak' },
          { mode: 'sideways' },
          { path: 42 },
          { slots: 0 },
          { slots: '2' },
          { load_options: 'x' },
          { busy_timeout_ms: -1 },
          { voice_presets: { v: { voice_ref: join(c.gateDir, 'missing.wav') } } },
          { voice_presets: { v: { voice_ref: notWav } } },
          { default_voice_preset: 'missing' },
        ];
        for (const change of invalid) {
          // Rejected at once, although a request holds the model: validation takes no lease.
          const res = await within(
            post(c.url, '/v1/models/load', { ...base, ...change, session_options: { tag: 'new' } }),
            `the response to ${JSON.stringify(change)}`,
          );
          errorOf(res, 400, 'invalid_request_error');
        }
        assert.deepEqual(
          (await get(c.url, '/v1/models?include_session_options=true')).json,
          before,
          'metadata and counters unchanged',
        );
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n), 'no load, probe or teardown happened');
        assert.equal(c.count('M', 'run-start'), 1);
        await gate.open();
        assert.equal(reportOf(await requests[0]!).generation, 1);
        const report = reportOf(await c.infer('M'));
        assert.equal(report.generation, 1, 'the working pool still serves');
        assert.deepEqual(report.session_options, {});
        assert.deepEqual(await view(c, 'M'), readyView(n));
      });
    });

    test(`[fail.unsupported-capacity] slots=${n}: slots=5 on a capacity-4 engine is 400; pool, count and lease survive`, async () => {
      await withContractServer(
        [
          { id: 'M', slots: n, load_options: { capacity: '4' } },
          { id: 'U', slots: n, load_options: { capacity: '4' } },
        ],
        async (c) => {
          await c.ready('M');
          const sessions = c.events('M', 'session-created').map((e) => (e as { session: string }).session);
          // Behind a running request the resize waits its turn, then is refused.
          const { gate, requests } = await c.running('M', 1);
          const refused = c.register('M', { slots: 5 });
          await whenRuntime(
            c.s.voxd.runtime,
            'the resize queues',
            () => c.snapshot('M').queuedManagers === 1,
          );
          await gate.open();
          assert.equal(reportOf(await requests[0]!).generation, 1);
          const message = errorOf(await refused, 400, 'invalid_request_error');
          assert.match(message, /slots=5 exceeds the capacity 4/);
          const again = errorOf(await c.register('M', { slots: 16 }), 400, 'invalid_request_error');
          assert.match(again, /slots=16 exceeds the capacity 4/);
          assert.deepEqual(await view(c, 'M'), readyView(n));
          assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n), 'live capacity reused: no probe, no teardown');
          assert.equal(c.snapshot('M').managerActive, false, 'the manager lease was released');
          const report = reportOf(await within(c.infer('M'), 'a request after the refusal'));
          assert.equal(report.generation, 1);
          assert.ok(sessions.includes(report.session), 'served by the retained pool');
          // A valid resize works afterwards.
          const resize = n === 3 ? 2 : 3;
          assert.deepEqual((await c.register('M', { slots: resize })).json, {
            id: 'M',
            loaded: true,
            reconfigured: true,
          });
          assert.deepEqual(await view(c, 'M'), readyView(resize));
          assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...teardownOf(1, n), ...loadOf(2, resize)]);

          // An unloaded registration has no live capacity: a private probe refuses it, nothing else changes.
          const probe = errorOf(await c.register('U', { slots: 5 }), 400, 'invalid_request_error');
          assert.match(probe, /slots=5 exceeds the capacity 4/);
          assert.deepEqual(await view(c, 'U'), unloadedView(n));
          assert.deepEqual(lifecycle(c, 'U'), probeOf(1));
          assert.equal(reportOf(await c.infer('U')).generation, 2);
          assert.deepEqual(await view(c, 'U'), readyView(n));
        },
      );
    });
  }
});

describe('failure: capacity probe', () => {
  for (const n of [2, 4]) {
    test(`[fail.capacity-probe] slots=${n}: changed load inputs are probed privately before teardown, without evicting`, async () => {
      await withContractServer(
        [
          { id: 'M', slots: n, load_options: { capacity: '4' } },
          { id: 'B', slots: 1 },
        ],
        { max_loaded_models: 2 },
        async (c) => {
          await c.ready('M');
          await c.ready('B');
          await c.load('M').close();
          const reg = c.register('M', { load_options: { capacity: '4', variant: 'next' } });
          await whenRuntime(
            c.s.voxd.runtime,
            'M is reconfiguring',
            () => c.entry('M').activity === 'reconfiguring',
          );
          // The probe waits on the load gate: the old pool is still published and untouched.
          assert.deepEqual(await view(c, 'M'), { ...readyView(n), state: 'reconfiguring' });
          assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n));
          assert.equal((await view(c, 'B')).loaded, true, 'nothing is evicted for the probe');
          await c.load('M').open();
          assert.deepEqual((await within(reg, 'the reconfiguration')).json, {
            id: 'M',
            loaded: true,
            reconfigured: true,
          });
          assert.deepEqual(lifecycle(c, 'M'), [
            ...loadOf(1, n),
            ...probeOf(2),
            ...teardownOf(1, n),
            ...loadOf(3, n),
          ]);
          assert.deepEqual(await view(c, 'M'), readyView(n));
          assert.deepEqual(await view(c, 'B'), readyView(1), 'B stayed resident');
          assert.equal(c.count('B', 'weights-disposed'), 0);
          assert.equal(reportOf(await c.infer('M')).load_options.variant, 'next');
        },
      );
    });

    test(`[fail.capacity-probe] slots=${n}: a probe that finds too little capacity is 400 and keeps the old pool`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const res = await c.register('M', { load_options: { capacity: '1' } });
        assert.match(
          errorOf(res, 400, 'invalid_request_error'),
          new RegExp(`slots=${n} exceeds the capacity 1`),
        );
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...probeOf(2)], 'old sessions never touched');
        assert.deepEqual(await view(c, 'M'), readyView(n));
        assert.ok(c.entry('M').scheduler.idle, 'the manager lease was released');
        const report = reportOf(await c.infer('M'));
        assert.equal(report.generation, 1);
        assert.equal(report.load_options.capacity, undefined, 'old metadata retained');
      });
    });

    test(`[fail.capacity-probe] slots=${n}: a probe whose load fails is an error before commit; old pool kept`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const res = await c.register('M', { load_options: { fail_load: 'true' } });
        assert.match(errorOf(res, 500, 'server_error'), /capacity probe of model 'M' failed/);
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), 'load-failed:2']);
        assert.deepEqual(await view(c, 'M'), readyView(n));
        const report = reportOf(await c.infer('M'));
        assert.equal(report.generation, 1);
        assert.equal(report.load_options.fail_load, undefined);
      });
    });

    test(`[fail.capacity-probe] slots=${n}: unchanged load inputs reuse the live capacity, no probe load`, async () => {
      await withContractServer([{ id: 'M', slots: n, load_options: { capacity: '4' } }], async (c) => {
        await c.ready('M');
        const resize = n === 2 ? 4 : 2;
        assert.equal((await c.register('M', { slots: resize })).status, 200);
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...teardownOf(1, n), ...loadOf(2, resize)]);
        assert.deepEqual(await view(c, 'M'), readyView(resize));
      });
    });
  }

  test('[fail.capacity-probe] slots=1: a changed single-slot replacement needs no probe', async () => {
    await withContractServer([{ id: 'M', slots: 1 }], async (c) => {
      await c.ready('M');
      assert.equal((await c.register('M', { load_options: { variant: 'next' } })).status, 200);
      assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, 1), ...teardownOf(1, 1), ...loadOf(2, 1)]);
      assert.deepEqual(await view(c, 'M'), readyView(1));
    });
  });
});

describe('failure: loads', () => {
  for (const n of COUNTS) {
    const failures: Failure[] =
      n === 1 ? [{ option: 'fail_load' }, { option: 'null_primary' }] : [{ option: 'null_primary' }];
    if (n > 1) failures.push({ option: 'fail_clone_at', at: n - 1 });
    for (const f of failures) {
      test(`[fail.post-commit-load] slots=${n}, ${failureName(f)}: a replacement whose load fails leaves the new config unloaded`, async () => {
        await withContractServer([{ id: 'M', slots: n }], async (c) => {
          await c.ready('M');
          const body = {
            ...c.body('M', { load_options: failureOptions(f) }),
            session_options: { tag: 'new' },
          };
          const res = await post(c.url, '/v1/models/load', body);
          assert.match(errorOf(res, 500, 'server_error'), failureMessage(f, 'M'));
          const probe = n > 1 ? probeOf(2) : [];
          const g = n > 1 ? 3 : 2;
          const expected = [...loadOf(1, n), ...probe, ...teardownOf(1, n), ...failedBuild(g, f)];
          assert.deepEqual(lifecycle(c, 'M'), expected, 'old weights are not kept; no partial pool');
          const status = (await get(c.url, '/v1/models?include_session_options=true')).json.data[0];
          assert.deepEqual(pick(status), unloadedView(n));
          assert.deepEqual(status.session_options, { tag: 'new' }, 'the new configuration is committed');
          assert.ok(c.entry('M').scheduler.idle, 'the manager lease was released');
          // The next request retries the load of the new configuration.
          assert.match(errorOf(await c.infer('M'), 500, 'server_error'), failureMessage(f, 'M'));
          expected.push(...failedBuild(g + 1, f));
          assert.deepEqual(lifecycle(c, 'M'), expected);
          assert.deepEqual(await view(c, 'M'), unloadedView(n));
          // A corrected registration loads.
          assert.equal((await c.register('M', { load_options: { variant: 'fixed' } })).status, 200);
          assert.deepEqual(await view(c, 'M'), readyView(n));
          assert.equal(reportOf(await c.infer('M')).load_options.variant, 'fixed');
        });
      });
    }
  }

  for (const n of COUNTS) {
    for (const f of FAILURES_AT(n)) {
      test(`[fail.initial-load] slots=${n}, ${failureName(f)}: sessions die before weights, nothing is published, retry works once fixed`, async () => {
        await withContractServer([{ id: 'M', slots: n, load_options: failureOptions(f) }], async (c) => {
          // Every slot is admitted to the one shared initialisation before it fails.
          await c.load('M').close();
          const requests = range(n).map(() => c.infer('M'));
          await whenRuntime(
            c.s.voxd.runtime,
            'all slots wait for the load',
            () => c.snapshot('M').activeRequests === n,
          );
          await c.load('M').open();
          for (const res of await Promise.all(requests)) {
            assert.match(errorOf(res, 500, 'server_error'), failureMessage(f, 'M'));
          }
          const expected = failedBuild(1, f);
          assert.deepEqual(lifecycle(c, 'M'), expected);
          assert.deepEqual(await view(c, 'M'), unloadedView(n));
          assert.ok(c.entry('M').scheduler.idle, 'leases and the initialisation pin are released');
          assert.equal(c.count('M', 'run-start'), 0);
          // A retry is allowed (and fails the same way while the fault is configured).
          assert.match(errorOf(await c.infer('M'), 500, 'server_error'), failureMessage(f, 'M'));
          expected.push(...failedBuild(2, f));
          assert.deepEqual(lifecycle(c, 'M'), expected);
          // Fixed, it loads a complete pool.
          const fixed = await c.register('M', { load_options: {} });
          assert.deepEqual(fixed.json, { id: 'M', loaded: true, reconfigured: true });
          expected.push(...(n > 1 ? [...probeOf(3), ...loadOf(4, n)] : loadOf(3, n)));
          assert.deepEqual(lifecycle(c, 'M'), expected);
          assert.deepEqual(await view(c, 'M'), readyView(n));
          assert.equal(reportOf(await c.infer('M')).generation, n > 1 ? 4 : 3);
        });
      });
    }
  }

  for (const f of FAILURES_AT(2)) {
    test(`[fail.initial-load] slots=2, ${failureName(f)}: a new registration whose first load fails stays registered, unloaded`, async () => {
      await withContractServer([{ id: 'M', slots: 2 }], async (c) => {
        const body = { ...c.body('M', { load_options: failureOptions(f) }), id: 'N' };
        const res = await post(c.url, '/v1/models/load', body);
        assert.match(errorOf(res, 500, 'server_error'), failureMessage(f, 'N'));
        assert.deepEqual(lifecycle(c, 'N'), failedBuild(1, f));
        assert.deepEqual(await view(c, 'N'), unloadedView(2));
        assert.ok(c.entry('N').scheduler.idle, 'the registration lease was released');
        const fixed = await post(c.url, '/v1/models/load', { ...c.body('M'), id: 'N' });
        assert.equal(fixed.status, 200, fixed.body.toString());
        assert.deepEqual(await view(c, 'N'), readyView(2));
      });
    });
  }
});

describe('failure: execution and publication', () => {
  for (const n of COUNTS) {
    test(`[fail.execution] slots=${n}: preparation and run failures release their slot; the pool stays ready`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const others = n > 1 ? await c.running('M', n - 1) : undefined;
        const prepare = await c.infer('M', { prepare_fail: 'true' });
        assert.match(errorOf(prepare, 500, 'server_error'), /preparation failed/);
        assert.equal(c.count('M', 'run-start'), n - 1, 'a preparation failure never starts a run');
        const run = await c.infer('M', { run_fail: 'true' });
        assert.match(errorOf(run, 500, 'server_error'), /run failed/);
        const ends = c.events('M', 'run-end') as { outcome: string }[];
        assert.deepEqual(
          ends.map((e) => e.outcome),
          ['failed'],
        );
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n - 1 });
        await others?.gate.open();
        for (const res of await Promise.all(others?.requests ?? [])) assert.equal(res.status, 200);

        // Ownership order holds across a failure: an unload queued behind a failing run waits for it.
        const gate = await c.runGate();
        const failing = c.infer('M', { run_gate: gate.path, run_fail: 'true' });
        await waitUntil('the failing run starts', () => c.count('M', 'run-start') === n + 1);
        const unload = c.unload('M');
        await whenRuntime(c.s.voxd.runtime, 'the unload queues', () => c.snapshot('M').queuedManagers === 1);
        const later = c.infer('M', { tag: 'later' });
        await whenRuntime(
          c.s.voxd.runtime,
          'the later request queues',
          () => c.snapshot('M').queuedRequests === 1,
        );
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, n));
        await gate.open();
        errorOf(await failing, 500, 'server_error');
        assert.deepEqual((await unload).json, { id: 'M', loaded: false });
        assert.equal(reportOf(await later).generation, 2);
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...teardownOf(1, n), ...loadOf(2, n)]);
        // Every slot of the fresh pool is usable.
        const all = await c.running('M', n);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n });
        await all.gate.open();
        const sessions = (await Promise.all(all.requests)).map((r) => reportOf(r).session);
        assert.equal(new Set(sessions).size, n);
        assert.deepEqual(await view(c, 'M'), readyView(n));
      });
    });
  }

  test('[fail.publication] a registration that fails validation never publishes an entry', async () => {
    await withContractServer([{ id: 'M', slots: 2 }], async (c) => {
      await c.ready('M');
      const notWav = join(c.gateDir, 'not-a-wav.wav');
      writeFileSync(notWav, 'this is not a WAV file');
      const base = { ...c.body('M'), id: 'N' };
      const invalid: Record<string, unknown>[] = [
        { family: 'nope' },
        { task: 'speak' },
        { slots: 0 },
        { slots: 17 },
        { slots: '2' },
        { load_options: 'x' },
        { voice_presets: { v: { voice_ref: join(c.gateDir, 'missing.wav') } } },
        { voice_presets: { v: { voice_ref: notWav } } },
        { default_voice_preset: 'missing' },
      ];
      const health = async () => (await get(c.url, '/health')).json.models;
      assert.equal(await health(), 1);
      for (const change of invalid) {
        const res = await post(c.url, '/v1/models/load', { ...base, ...change });
        errorOf(res, 400, 'invalid_request_error');
        assert.equal(await health(), 1, `published after ${JSON.stringify(change)}`);
        assert.deepEqual(await listed(c.url), ['M']);
      }
      for (const body of [
        { ...base, id: '' },
        { family: 'fixture', path: '.' },
      ]) {
        errorOf(await post(c.url, '/v1/models/load', body), 400, 'invalid_request_error');
      }
      assert.equal(await health(), 1);
      assert.deepEqual(await listed(c.url), ['M']);
      errorOf(await c.infer('N'), 404, 'not_found');
      assert.equal(c.events('N').length, 0, 'nothing was staged in the engine');
      assert.equal(c.s.voxd.runtime.has('N'), false);
      // The same id registers cleanly afterwards.
      assert.equal((await post(c.url, '/v1/models/load', base)).status, 200);
      assert.equal(await health(), 2);
      assert.deepEqual(await view(c, 'N'), readyView(2));
    });
  });
});

describe('failure: publication faults', () => {
  for (const n of COUNTS) {
    test(`[fail.publication] slots=${n}: a first load failing at its last session, with a session's and the weights' dispose failing too, unwinds all it made and publishes no pool`, async () => {
      await withContractServer([{ id: 'M', slots: 1 }], async (c) => {
        await c.ready('M');
        const base: Record<string, unknown> = { ...c.body('M'), id: 'N', slots: n };
        const gates = base.load_options as Record<string, string>;
        const faults = { ...gates, ...FAULTY_TEARDOWN, fail_clone_at: String(n - 1) };
        const res = await post(c.url, '/v1/models/load', { ...base, load_options: faults });
        assert.match(
          errorOf(res, 500, 'server_error'),
          new RegExp(`failed to create session ${n - 1} of model 'N'`),
        );
        // The unwind goes on past the primary's throwing dispose: the weights' dispose is still tried.
        const failed = [...loadOf(1, n - 1), `session-failed:1:${n - 1}`, ...faultyTeardownOf(1, n - 1)];
        assert.deepEqual(lifecycle(c, 'N'), failed);
        assert.deepEqual(await view(c, 'N'), unloadedView(n), 'no pool, no slot held');
        assert.ok(c.entry('N').scheduler.idle, 'the manager lease was released');
        assert.equal(c.count('N', 'run-start'), 0);
        assert.deepEqual(lifecycle(c, 'M'), loadOf(1, 1), 'the other model is untouched');
        // A corrected registration loads a fresh pool, and every slot of it serves.
        const fixed = await post(c.url, '/v1/models/load', { ...base, load_options: gates });
        assert.equal(fixed.status, 200);
        const g = n > 1 ? 3 : 2;
        assert.deepEqual(lifecycle(c, 'N'), [...failed, ...(n > 1 ? probeOf(2) : []), ...loadOf(g, n)]);
        const all = await c.running('N', n);
        assert.deepEqual(await view(c, 'N'), readyView(n, { active_slots: n }));
        await all.gate.open();
        const reports = (await Promise.all(all.requests)).map(reportOf);
        assert.deepEqual(new Set(reports.map((r) => r.generation)), new Set([g]));
        assert.equal(new Set(reports.map((r) => r.session)).size, n);
        assert.deepEqual(await view(c, 'N'), readyView(n));
      });
    });

    test(`[fail.publication] slots=${n}: a reconfiguration whose old pool's teardown fails (the primary's dispose throws, the weights' rejects) retires the whole old pool and publishes only the new one`, async () => {
      await withContractServer([{ id: 'M', slots: n, load_options: FAULTY_TEARDOWN }], async (c) => {
        await c.ready('M');
        const res = await c.register('M', { load_options: { variant: 'next' } });
        assert.deepEqual(res.json, { id: 'M', loaded: true, reconfigured: true });
        const g = n > 1 ? 3 : 2;
        assert.deepEqual(lifecycle(c, 'M'), [
          ...loadOf(1, n),
          ...(n > 1 ? probeOf(2) : []),
          ...faultyTeardownOf(1, n),
          ...loadOf(g, n),
        ]);
        assert.deepEqual(await view(c, 'M'), readyView(n));
        assert.ok(c.entry('M').scheduler.idle, 'the manager lease was released');
        const all = await c.running('M', n);
        await all.gate.open();
        for (const res of await Promise.all(all.requests)) {
          const report = reportOf(res);
          assert.equal(report.generation, g, 'only the new pool serves');
          assert.equal(report.load_options.variant, 'next');
        }
        assert.deepEqual((await c.unload('M')).json, { id: 'M', loaded: false });
        assert.deepEqual(await view(c, 'M'), unloadedView(n));
      });
    });
  }
});

describe('failure: residency, teardown', () => {
  for (const n of COUNTS) {
    test(`[fail.residency] slots=${n}: max_loaded_models with every loaded model busy is 503 server_busy, nothing built`, async () => {
      await withContractServer(slotted({ A: 1, B: n }), { max_loaded_models: 1 }, async (c) => {
        await c.ready('A');
        const { gate, requests } = await c.running('A', 1);
        const refused = await within(c.infer('B'), 'the refused load');
        assert.match(errorOf(refused, 503, 'server_busy'), /max_loaded_models=1/);
        assert.deepEqual(await view(c, 'B'), unloadedView(n));
        assert.equal(c.events('B').length, 0, 'no weights or sessions were built for B');
        // A new registration is refused the same way and stays registered, unloaded.
        const reg = await within(
          post(c.url, '/v1/models/load', { ...c.body('B'), id: 'C' }),
          'registering C',
        );
        errorOf(reg, 503, 'server_busy');
        assert.deepEqual(await view(c, 'C'), unloadedView(n));
        assert.equal(c.events('C').length, 0);
        assert.deepEqual(await view(c, 'A'), { ...readyView(1), active_slots: 1 }, 'A keeps running');
        await gate.open();
        assert.equal((await requests[0]!).status, 200);
        // Once A is idle it is evicted and B loads.
        assert.equal(reportOf(await c.infer('B')).generation, 1);
        assert.deepEqual(await view(c, 'B'), readyView(n));
        assert.deepEqual(await view(c, 'A'), unloadedView(1));
      });
    });

    test(`[fail.residency] slots=${n}: min_free_memory_mb refuses a load with 503 insufficient_memory, no partial pool`, async () => {
      let freeMb = 1200;
      await withServer(
        {
          ui_management: true,
          min_free_memory_mb: 1000,
          models: [fixtureModel('M', { lazy: true, slots: n, load_options: { footprint_mb: '500' } })],
        },
        { parallel: true, freeMemoryMb: async () => freeMb },
        async (s) => {
          const run = () => post(s.url, '/v1/tasks/run', { model: 'M', request: { text: 'x' } });
          const refused = await run();
          assert.match(errorOf(refused, 503, 'insufficient_memory'), /min_free_memory_mb=1000/);
          assert.deepEqual(pick(await modelStatus(s.url, 'M')), unloadedView(n));
          assert.equal(s.fixture.record.of('M').length, 0, 'nothing was loaded');
          assert.ok(s.voxd.runtime.get('M').scheduler.idle);
          freeMb = 2000;
          assert.equal(reportOf(await run()).generation, 1);
          assert.deepEqual(pick(await modelStatus(s.url, 'M')), readyView(n));
          assert.equal(s.fixture.record.of('M', 'session-created').length, n);
        },
      );
    });
  }

  test('[fail.residency] an eviction done before a failed memory check is not undone', async () => {
    let freeMb = 5000;
    await withServer(
      {
        ui_management: true,
        max_loaded_models: 1,
        min_free_memory_mb: 1000,
        models: [
          fixtureModel('A', { lazy: true, slots: 2 }),
          fixtureModel('B', { lazy: true, slots: 2, load_options: { footprint_mb: '500' } }),
        ],
      },
      { parallel: true, freeMemoryMb: async () => freeMb },
      async (s) => {
        const run = (model: string) => post(s.url, '/v1/tasks/run', { model, request: { text: 'x' } });
        assert.equal((await run('A')).status, 200);
        freeMb = 1200;
        errorOf(await run('B'), 503, 'insufficient_memory');
        assert.deepEqual(pick(await modelStatus(s.url, 'A')), unloadedView(2), 'A stays evicted');
        assert.deepEqual(pick(await modelStatus(s.url, 'B')), unloadedView(2));
        assert.equal(s.fixture.record.of('B').length, 0);
      },
    );
  });

  for (const n of COUNTS) {
    test(`[fail.slow-teardown] slots=${n}: logical unload first, exclusive ownership kept, unrelated warm B runs`, async () => {
      await withContractServer(slotted({ A: n, B: 2 }), async (c) => {
        await Promise.all([c.ready('A'), c.ready('B')]);
        const { request: unload } = await c.unloading('A');
        await waitUntil('the sessions are disposed', () => c.count('A', 'session-disposed') === n);
        assert.deepEqual(await view(c, 'A'), { ...unloadedView(n), state: 'unloading' });
        assert.deepEqual(
          lifecycle(c, 'A'),
          [...loadOf(1, n), ...disposeSessions(1, n)],
          'weights still held',
        );
        const request = c.infer('A', { tag: 'waits' });
        await whenRuntime(c.s.voxd.runtime, 'the request queues', () => c.snapshot('A').queuedRequests === 1);
        const second = c.unload('A');
        await whenRuntime(
          c.s.voxd.runtime,
          'the second unload queues',
          () => c.snapshot('A').queuedManagers === 1,
        );
        assert.deepEqual(await view(c, 'A'), {
          ...unloadedView(n),
          state: 'unloading',
          queued_requests: 1,
        });

        // B is not held up by A's teardown.
        assert.equal(reportOf(await within(c.infer('B'), 'a warm B request')).generation, 1);
        assert.deepEqual((await within(c.unload('B'), 'unloading B')).json, { id: 'B', loaded: false });
        assert.equal(reportOf(await within(c.infer('B'), 'reloading B')).generation, 2);
        assert.deepEqual(lifecycle(c, 'A'), [...loadOf(1, n), ...disposeSessions(1, n)], 'A unchanged');

        await c.teardown('A').open();
        assert.deepEqual((await unload).json, { id: 'A', loaded: false });
        assert.equal(reportOf(await request).generation, 2, 'the queued request reloads after teardown');
        assert.deepEqual((await second).json, { id: 'A', loaded: false });
        assert.deepEqual(lifecycle(c, 'A'), [
          ...loadOf(1, n),
          ...teardownOf(1, n),
          ...loadOf(2, n),
          ...teardownOf(2, n),
        ]);
        assert.deepEqual(await view(c, 'A'), unloadedView(n));
      });
    });

    test(`[fail.slow-teardown] slots=${n}: a session dispose that never returns fails only its model: A stays owned, unloaded, and answers 503 busy; warm B serves and reloads; the shutdown gives A up`, async () => {
      // A hung dispose has no completion bound (the contract allows none), so the gate stays shut
      // until the shutdown has given A up; only then is it opened, to let the test process exit.
      const dir = tempDir('voxd-dispose-');
      const disposeGate = join(dir, 'never');
      const c = await contractServer(
        [
          { id: 'A', slots: n, load_options: { dispose_gate: disposeGate } },
          { id: 'B', slots: 2 },
        ],
        { busy_timeout_ms: 300, shutdown_timeout_ms: 200 },
      );
      try {
        await Promise.all([c.ready('A'), c.ready('B')]);
        const unload = c.unload('A');
        unload.catch(() => {});
        await whenRuntime(c.s.voxd.runtime, 'A is unloading', () => c.entry('A').state.kind === 'unloading');
        // Logical unload first: status shows A unloaded (capacity cleared) while its first dispose hangs.
        assert.deepEqual(await view(c, 'A'), { ...unloadedView(n), state: 'unloading' });
        assert.equal(c.count('A', 'session-disposed'), 0, 'the first dispose hangs');
        assert.equal(c.count('A', 'weights-disposed'), 0, 'the weights are not freed under a hung session');

        // The teardown keeps A's exclusive ownership: nothing runs on A, nothing reloads it; a
        // request waits its busy timeout and is answered 503; a second unload (managers have no
        // busy timeout) queues behind the hung one until the shutdown sends it away.
        errorOf(await within(c.infer('A'), 'a request for A'), 503, 'server_busy');
        const second = c.unload('A');
        await whenRuntime(
          c.s.voxd.runtime,
          'the second unload queues',
          () => c.snapshot('A').queuedManagers === 1,
        );
        assert.equal(c.count('A', 'run-start'), 0);
        assert.equal(c.count('A', 'load'), 1, 'A is not reloaded while its teardown hangs');
        assert.equal(c.entry('A').state.kind, 'unloading');

        // The server is not failed: B, warm, serves, unloads and reloads; the server stays healthy.
        assert.equal(reportOf(await within(c.infer('B'), 'a warm B request')).generation, 1);
        assert.deepEqual((await within(c.unload('B'), 'unloading B')).json, { id: 'B', loaded: false });
        assert.equal(reportOf(await within(c.infer('B'), 'reloading B')).generation, 2);
        assert.equal((await get(c.url, '/health')).status, 200);

        // The shutdown is bounded: past its deadline and grace it ends without A's teardown.
        const closing = c.s.voxd.close();
        errorOf(await within(second, 'the queued unload at the shutdown'), 503, 'server_busy');
        await within(closing, 'the shutdown', 10_000);
        assert.ok(
          c.s.logs.some((line) => /gave up waiting for the teardown of A\b/.test(line)),
          c.s.logs.join('\n'),
        );
        assert.equal(c.count('B', 'weights-disposed'), 2, 'B was torn down by the shutdown');
        assert.equal(c.count('A', 'weights-disposed'), 0);
      } finally {
        writeFileSync(disposeGate, '');
        await waitUntil('the abandoned teardown ends', () => c.count('A', 'weights-disposed') === 1);
        await c.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test(`[fail.slow-teardown] slots=${n}: session destructors that throw are logged and passed over: the other sessions and the weights are still freed, the unload answers, the next request reloads`, async () => {
      await withContractServer(
        [{ id: 'A', slots: n, load_options: { fail_sessions_dispose: 'true' } }],
        async (c) => {
          await c.ready('A');
          assert.deepEqual((await within(c.unload('A'), 'the unload')).json, { id: 'A', loaded: false });
          assert.equal(c.count('A', 'session-disposed'), 0, 'every session destructor threw');
          assert.equal(c.count('A', 'weights-disposed'), 1, 'the weights are freed after them');
          const warnings = c.s.logs.filter((line) =>
            /disposing a session failed: fixture: dispose failed/.test(line),
          );
          assert.equal(warnings.length, n, c.s.logs.join('\n'));
          assert.deepEqual(await view(c, 'A'), unloadedView(n));
          assert.equal(reportOf(await within(c.infer('A'), 'the next request')).generation, 2);
        },
      );
    });
  }
});
