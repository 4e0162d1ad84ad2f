import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  errorOf,
  fixtureModel,
  ManualClock,
  modelStatus,
  reportOf,
  runTask,
  startServer,
  type TestServer,
  waitUntil,
  whenRuntime,
  withServer,
} from '../helpers/voxd.js';

const loaded = async (s: TestServer, ids: string[]) =>
  Promise.all(ids.map(async (id) => (await modelStatus(s.url, id)).loaded as boolean));

describe('residency: max_loaded_models, idle_unload_ms, min_free_memory_mb', () => {
  test('max_loaded_models evicts the least recently used idle model', async () => {
    const clock = new ManualClock();
    await withServer(
      { max_loaded_models: 2, models: ['a', 'b', 'c'].map((id) => fixtureModel(id, { lazy: true })) },
      { clock },
      async (s) => {
        await runTask(s, 'a');
        clock.advance(10);
        await runTask(s, 'b');
        clock.advance(10);
        await runTask(s, 'a'); // a is now the most recently used
        clock.advance(10);
        assert.equal((await runTask(s, 'c')).status, 200);
        assert.deepEqual(await loaded(s, ['a', 'b', 'c']), [true, false, true]);
        assert.match(s.logs.join('\n'), /evicted model 'b' to load 'c' \(max_loaded_models=2\)/);
      },
    );
  });

  test('eviction skips a busy model even when it is the least recently used', async () => {
    const clock = new ManualClock();
    await withServer(
      {
        busy_timeout_ms: 0,
        max_loaded_models: 2,
        models: ['a', 'b', 'c'].map((id) => fixtureModel(id, { lazy: true })),
      },
      { clock },
      async (s) => {
        const gate = s.gate('a');
        await runTask(s, 'a');
        clock.advance(10);
        await runTask(s, 'b');
        clock.advance(10);
        const busy = runTask(s, 'a', { run_gate: gate.path });
        await waitUntil('a runs', () => s.fixture.record.of('a', 'run-start').length === 2);
        // Make busy a the least recently used: b is stamped later than a's run start.
        clock.advance(10);
        s.voxd.runtime.get('b').touch();
        assert.ok(s.voxd.runtime.get('a').lastUsedAt < s.voxd.runtime.get('b').lastUsedAt);
        assert.equal((await runTask(s, 'c')).status, 200);
        assert.deepEqual(
          await loaded(s, ['a', 'b', 'c']),
          [true, false, true],
          'busy a kept, idle b evicted',
        );
        await gate.open();
        assert.equal((await busy).status, 200);
      },
    );
  });

  test('when every loaded model is busy, a load gets 503 server_busy and nothing is built', async () => {
    await withServer(
      {
        busy_timeout_ms: 0,
        max_loaded_models: 1,
        models: [fixtureModel('a'), fixtureModel('b', { lazy: true })],
      },
      async (s) => {
        const gate = s.gate('a');
        const busy = runTask(s, 'a', { run_gate: gate.path });
        await waitUntil('a runs', () => s.fixture.record.of('a', 'run-start').length === 1);
        const refused = await runTask(s, 'b');
        assert.match(
          errorOf(refused, 503, 'server_busy'),
          /cannot load model 'b': max_loaded_models=1 and every loaded model is busy; retry later/,
        );
        assert.equal(s.fixture.record.of('b').length, 0, 'no partial pool');
        assert.equal((await modelStatus(s.url, 'b')).loaded, false);
        await gate.open();
        assert.equal((await busy).status, 200);
        assert.equal((await runTask(s, 'b')).status, 200, 'once a is idle it can be evicted');
        assert.deepEqual(await loaded(s, ['a', 'b']), [false, true]);
      },
    );
  });

  test('at startup only the first max_loaded_models eager models load; the rest are deferred with a notice', async () => {
    await withServer({ max_loaded_models: 1, models: [fixtureModel('a'), fixtureModel('b')] }, async (s) => {
      assert.deepEqual(await loaded(s, ['a', 'b']), [true, false]);
      assert.match(s.logs.join('\n'), /model 'b' not loaded at startup: max_loaded_models=1/);
    });
  });

  test('idle_unload_ms retires models idle that long, never a busy one', async () => {
    const clock = new ManualClock();
    await withServer(
      { busy_timeout_ms: 0, idle_unload_ms: 1000, models: [fixtureModel('a'), fixtureModel('b')] },
      { clock },
      async (s) => {
        const { residency } = s.voxd.runtime;
        const gate = s.gate('a');
        const busy = runTask(s, 'a', { run_gate: gate.path });
        await waitUntil('a runs', () => s.fixture.record.of('a', 'run-start').length === 1);
        // The idle sweep runs on the server's clock (every 250 ms here): moving the clock runs it.
        clock.advance(999);
        await residency.whenSwept();
        assert.deepEqual(await loaded(s, ['a', 'b']), [true, true], 'nothing is idle for 1000 ms yet');
        clock.advance(1);
        await whenRuntime(s.voxd.runtime, 'the sweep retires b', () => !s.voxd.runtime.get('b').loaded);
        clock.advance(5000);
        await residency.whenSwept();
        assert.deepEqual(await loaded(s, ['a', 'b']), [true, false], 'busy a is skipped');
        await gate.open();
        assert.equal((await busy).status, 200);
        clock.advance(999);
        await residency.whenSwept();
        assert.deepEqual(await loaded(s, ['a', 'b']), [true, false], 'a was used 999 ms ago');
        // The first sweep at or after 1000 ms idle comes within one sweep period.
        clock.advance(250);
        await whenRuntime(s.voxd.runtime, 'the sweep retires a', () => !s.voxd.runtime.get('a').loaded);
        assert.match(s.logs.join('\n'), /idle 1000 ms: unloaded 1 model\(s\): b/);
        assert.equal(
          reportOf(await runTask(s, 'a')).generation,
          2,
          'a retired model reloads on its next request',
        );
      },
    );
  });

  test('idle_unload_ms runs on its own timer', async () => {
    await withServer({ idle_unload_ms: 30, models: [fixtureModel('a')] }, async (s) => {
      await whenRuntime(s.voxd.runtime, 'the idle timer unloads a', () => !s.voxd.runtime.get('a').loaded);
    });
  });

  test('min_free_memory_mb refuses a load with 503 insufficient_memory and builds nothing', async () => {
    let free = 1500;
    await withServer(
      {
        min_free_memory_mb: 1000,
        models: [
          fixtureModel('big', { lazy: true, load_options: { footprint_mb: 600 } }),
          fixtureModel('small', { lazy: true, load_options: { footprint_mb: 400 } }),
        ],
      },
      { freeMemoryMb: async () => free },
      async (s) => {
        const refused = await runTask(s, 'big');
        assert.match(
          errorOf(refused, 503, 'insufficient_memory'),
          /cannot load model 'big': 1500 MB free, the model needs about 600 MB and min_free_memory_mb=1000/,
        );
        assert.equal(s.fixture.record.of('big').length, 0);
        assert.equal((await runTask(s, 'small')).status, 200);
        free = 2000;
        assert.equal((await runTask(s, 'big')).status, 200, 'the guard reads free memory at each load');
      },
    );
  });

  test('a memory refusal of an eager model aborts startup', async () => {
    await assert.rejects(
      startServer(
        { min_free_memory_mb: 100, models: [fixtureModel('a', { load_options: { footprint_mb: 50 } })] },
        { freeMemoryMb: async () => 120 },
      ),
      /cannot load model 'a'/,
    );
  });
});

test('a model waiting its turn to load is not counted as resident by the load ahead of it', async () => {
  const { withContractServer } = await import('../contract/harness.js');
  await withContractServer(
    [{ id: 'C' }, { id: 'A' }, { id: 'B' }],
    {
      max_loaded_models: 2,
      parallel: false,
    },
    async (c) => {
      await c.load('C').close();
      const registration = c.register('C');
      await whenRuntime(
        c.s.voxd.runtime,
        'C loads under the cold-load guard',
        () => c.entry('C').state.kind === 'loading',
      );
      const gate = await c.runGate();
      const a = c.infer('A', { run_gate: gate.path });
      await whenRuntime(
        c.s.voxd.runtime,
        'A waits for the guard',
        () => c.entry('A').state.kind === 'loading',
      );
      const b = c.infer('B');
      await whenRuntime(
        c.s.voxd.runtime,
        'B waits for the guard',
        () => c.entry('B').state.kind === 'loading',
      );
      await c.load('C').open();
      assert.equal((await registration).status, 200);
      await c.waitCount('A', 'run-start', 1);
      assert.equal((await b).status, 200, 'B evicts idle C, not busy A');
      assert.equal(c.count('C', 'weights-disposed'), 1);
      // A's load fitted beside C (waiting B did not count), so C was evicted only after A loaded, by B.
      const order = c.s.fixture.record.events.map((e) => `${e.type}:${e.model}`);
      assert.ok(order.indexOf('load:A') < order.indexOf('weights-disposed:C'), order.join(' '));
      assert.ok(order.indexOf('weights-disposed:C') < order.indexOf('load:B'), order.join(' '));
      await gate.open();
      assert.equal((await a).status, 200);
      assert.deepEqual(
        [(await c.status('A')).loaded, (await c.status('B')).loaded, (await c.status('C')).loaded],
        [true, true, false],
      );
    },
  );
});
