import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  errorOf,
  fixtureModel,
  ManualClock,
  modelStatus,
  reportOf,
  runTask,
  startServer,
  tempDir,
  waitUntil,
  whenRuntime,
  withServer,
} from '../helpers/voxd.js';

describe('loading, failures and disconnects', () => {
  test('eager models load at startup, lazy ones on first use (lazy_load sets the default)', async () => {
    await withServer(
      {
        lazy_load: true,
        models: [fixtureModel('eager', { lazy: false }), fixtureModel('lazy')],
      },
      async (s) => {
        assert.equal(s.fixture.record.of('eager', 'load').length, 1, 'loaded before any request');
        assert.equal(s.fixture.record.of('lazy', 'load').length, 0);
        assert.equal((await modelStatus(s.url, 'lazy')).loaded, false);
        assert.equal(reportOf(await runTask(s, 'lazy')).generation, 1);
        assert.equal((await modelStatus(s.url, 'lazy')).loaded, true);
      },
    );
  });

  test('a failing eager load aborts startup', async () => {
    await assert.rejects(
      startServer({ models: [fixtureModel('bad', { load_options: { fail_load: 'true' } })] }),
      /failed to load model 'bad'/,
    );
  });

  test('a failing lazy load is a 500, leaves the model unloaded, and the server keeps serving', async () => {
    await withServer(
      {
        models: [
          fixtureModel('bad', { lazy: true, load_options: { fail_load: 'true' } }),
          fixtureModel('ok'),
        ],
      },
      async (s) => {
        assert.match(errorOf(await runTask(s, 'bad'), 500, 'server_error'), /failed to load model 'bad'/);
        assert.equal((await modelStatus(s.url, 'bad')).loaded, false);
        assert.equal((await runTask(s, 'ok')).status, 200);
        // A retry loads again rather than reusing a failed half-state.
        errorOf(await runTask(s, 'bad'), 500, 'server_error');
        assert.equal(s.fixture.record.of('bad', 'load-failed').length, 2);
      },
    );
  });

  test('a null primary session publishes nothing and releases the weights', async () => {
    await withServer(
      {
        models: [fixtureModel('np', { lazy: true, load_options: { null_primary: 'true' } })],
      },
      async (s) => {
        assert.match(errorOf(await runTask(s, 'np'), 500, 'server_error'), /session 0 of model 'np'/);
        assert.deepEqual(
          s.fixture.record.of('np').map((e) => e.type),
          ['load', 'session-failed', 'weights-disposed'],
        );
        assert.equal((await modelStatus(s.url, 'np')).loaded, false);
      },
    );
  });

  test('preparation and execution failures are 500s that release the slot; the model stays loaded', async () => {
    await withServer({ busy_timeout_ms: 0, models: [fixtureModel('m')] }, async (s) => {
      assert.match(
        errorOf(await runTask(s, 'm', { prepare_fail: 'true' }), 500, 'server_error'),
        /preparation failed/,
      );
      assert.match(errorOf(await runTask(s, 'm', { run_fail: 'true' }), 500, 'server_error'), /run failed/);
      const ok = reportOf(await runTask(s, 'm'));
      assert.equal(ok.generation, 1, 'no reload was needed');
      assert.equal(s.voxd.runtime.get('m').scheduler.idle, true);
    });
  });

  test('[time.disconnect-queued] a queued request whose client goes away leaves the queue at once', async () => {
    await withServer(
      { busy_timeout_ms: 0, models: [fixtureModel('m')] },
      { clock: new ManualClock() },
      async (s) => {
        const gate = s.gate('run');
        const holder = runTask(s, 'm', { run_gate: gate.path });
        await waitUntil('the holder runs', () => s.fixture.record.of('m', 'run-start').length === 1);
        const controller = new AbortController();
        const queued = runTask(s, 'm', {}, controller.signal).catch((err: unknown) => err);
        const scheduler = s.voxd.runtime.get('m').scheduler;
        await whenRuntime(
          s.voxd.runtime,
          'the second request queues',
          () => scheduler.snapshot().queuedRequests === 1,
        );
        controller.abort();
        await queued;
        await whenRuntime(
          s.voxd.runtime,
          'the departed request leaves the queue',
          () => scheduler.snapshot().queuedRequests === 0,
        );
        assert.equal(s.fixture.record.of('m', 'run-start').length, 1, 'still only the holder ran');
        await gate.open();
        assert.equal((await holder).status, 200);
        assert.equal(s.fixture.record.of('m', 'run-start').length, 1, 'the departed request never ran');
      },
    );
  });

  test('[time.disconnect-queued] a client that leaves while its model initialises stops waiting; the load completes', async (t) => {
    const gateDir = tempDir();
    t.after(() => rmSync(gateDir, { recursive: true, force: true }));
    const loadGate = join(gateDir, 'load');
    await withServer(
      {
        busy_timeout_ms: 0,
        models: [fixtureModel('cold', { lazy: true, load_options: { load_gate: loadGate } })],
      },
      { beforeClose: [() => writeFile(loadGate, '')] },
      async (s) => {
        const entry = s.voxd.runtime.get('cold');
        const controller = new AbortController();
        const leaving = runTask(s, 'cold', {}, controller.signal).catch((err: unknown) => err);
        await whenRuntime(s.voxd.runtime, 'the load waits on its gate', () => entry.state.kind === 'loading');
        controller.abort();
        await leaving;
        await whenRuntime(
          s.voxd.runtime,
          'the leaver released its slot',
          () => entry.scheduler.snapshot().activeRequests === 0,
        );
        assert.equal(entry.state.kind, 'loading', 'the shared load goes on');
        await writeFile(loadGate, '');
        await whenRuntime(s.voxd.runtime, 'the load completes', () => entry.loaded);
        assert.equal(reportOf(await runTask(s, 'cold')).generation, 1, 'the next request uses that load');
        assert.equal(s.fixture.record.of('cold', 'load').length, 1);
      },
    );
  });

  test('[time.disconnect-executing] a client that leaves during a run cancels the engine call and frees the slot', async () => {
    await withServer({ busy_timeout_ms: 0, models: [fixtureModel('m')] }, async (s) => {
      const controller = new AbortController();
      const hanging = runTask(s, 'm', { hang: 'true' }, controller.signal).catch((err: unknown) => err);
      await waitUntil('the hung run starts', () => s.fixture.record.of('m', 'run-start').length === 1);
      controller.abort();
      await hanging;
      await waitUntil('the run is cancelled', () => s.fixture.record.of('m', 'run-end').length === 1);
      assert.equal((s.fixture.record.of('m', 'run-end')[0] as { outcome: string }).outcome, 'aborted');
      assert.equal((await runTask(s, 'm')).status, 200, 'the slot was freed');
    });
  });

  for (const n of [1, 2, 4]) {
    test(`[time.disconnect-executing] --parallel-jobs, slots=${n}: the leaver's engine call is cancelled and its slot freed at once; the other slots' requests run on untouched`, async () => {
      await withServer(
        { busy_timeout_ms: 0, models: [fixtureModel('m', { slots: n })] },
        { parallel: true },
        async (s) => {
          const gate = s.gate('others');
          const scheduler = s.voxd.runtime.get('m').scheduler;
          // The other n-1 slots hold requests on a gate, so the leaver's slot is the only one it can free.
          const others = Array.from({ length: n - 1 }, (_, i) =>
            runTask(s, 'm', { run_gate: gate.path, seed: `${i}` }),
          );
          await waitUntil(
            'the other slots run',
            () => s.fixture.record.of('m', 'run-start').length === n - 1,
          );
          const controller = new AbortController();
          const leaving = runTask(s, 'm', { hang: 'true' }, controller.signal).catch((err: unknown) => err);
          await waitUntil('every slot runs', () => s.fixture.record.of('m', 'run-start').length === n);
          assert.equal(scheduler.snapshot().activeRequests, n);
          controller.abort();
          await leaving;
          await waitUntil(
            'the hung run is cancelled',
            () => s.fixture.record.of('m', 'run-end').length === 1,
          );
          assert.equal((s.fixture.record.of('m', 'run-end')[0] as { outcome: string }).outcome, 'aborted');
          await whenRuntime(
            s.voxd.runtime,
            'the slot is free',
            () => scheduler.snapshot().activeRequests === n - 1,
          );
          // The freed slot serves a new request while the others still hold theirs.
          assert.equal(reportOf(await runTask(s, 'm', { seed: 'next' })).generation, 1);
          assert.equal(s.fixture.record.of('m', 'run-end').length, 2, 'the held requests still run');
          await gate.open();
          for (const res of await Promise.all(others)) assert.equal(res.status, 200);
          const outcomes = s.fixture.record.of('m', 'run-end').map((e) => (e as { outcome: string }).outcome);
          assert.deepEqual(outcomes, ['aborted', ...Array(n).fill('ok')]);
          assert.equal(s.fixture.record.of('m', 'load').length, 1, 'the model was never reloaded');
        },
      );
    });
  }
});
