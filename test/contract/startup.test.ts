/**
 * Contract cells `startup.*`: which runtime the flag selects, the `slots` schema and its range,
 * the engine's advertised capacity, and the scope line printed at startup.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startVoxd } from '../../src/app.js';
import { ConfigError } from '../../src/config/errors.js';
import { loadServerConfig } from '../../src/config/server-config.js';
import { createEngineCatalog } from '../../src/engines/catalog.js';
import type { FixtureFamily } from '../../src/engines/fixture/fixture-family.js';
import { VoxdError } from '../../src/errors.js';
import { configFolder, LISTENING, VoxdProcess } from '../helpers/cli.js';
import {
  closeAfter,
  errorOf,
  fixtureModel,
  get,
  post,
  quietLogger,
  reportOf,
  waitUntil,
  withServer,
} from '../helpers/voxd.js';
import { COUNTS, listed, pick, readyView, unloadedView } from './assertions.js';
import { type ContractServer, withContractServer } from './harness.js';

/** The scope line's message, in a JSON log line on stderr. */
const SCOPE_LINE = /"msg":"parallel runtime \(--parallel-jobs, experimental\): validated scope[^"]*"/g;
const configs = configFolder('voxd-contract-startup-');

/** Loads a config file exactly as `voxd serve --config` does, with or without --parallel-jobs. */
function loadConfig(config: Record<string, unknown>, parallel: boolean) {
  const catalog = createEngineCatalog();
  const loaded = loadServerConfig({
    configPath: configs.write({ ui: false, ...config }),
    overrides: { port: 0, host: '127.0.0.1', parallel_jobs: parallel, enable_fixture: true },
    knownFamilies: [...catalog.keys()],
  });
  return { catalog, config: loaded.config };
}

async function healthCount(url: string): Promise<number> {
  return (await get(url, '/health')).json.models as number;
}

describe('startup and runtime selection', () => {
  test('[startup.legacy-rejects-slots] without --parallel-jobs a config with slots 1, null or 2 does not start', async () => {
    const cases: [unknown, string][] = [
      [1, '1'],
      [null, 'null'],
      [2, '2'],
    ];
    await Promise.all(
      cases.map(async ([slots, shown]) => {
        const config = configs.write({ port: 0, ui: false, models: [fixtureModel('a', { slots })] });
        const voxd = new VoxdProcess(['serve', '--config', config]);
        try {
          const exit = await voxd.exit();
          assert.equal(exit.signal, null);
          assert.notEqual(exit.code, 0, `slots=${shown} started the legacy runtime`);
          assert.doesNotMatch(voxd.stderr, LISTENING);
          const lines = voxd.stderr.split('\n').filter((l) => l.startsWith('voxd: '));
          assert.equal(lines.length, 1, voxd.stderr);
          assert.ok(lines[0]!.includes('models[0].slots'), lines[0]);
          assert.ok(lines[0]!.includes(shown), lines[0]);
          assert.ok(lines[0]!.includes('--parallel-jobs'), lines[0]);
        } finally {
          await voxd.stop();
        }
      }),
    );
    // The same config without `slots` starts the legacy runtime (the refusal is about `slots` only).
    const { catalog, config } = loadConfig({ models: [fixtureModel('a')] }, false);
    await closeAfter(startVoxd({ config, catalog, logger: quietLogger() }), async (voxd) => {
      const status = (await get(voxd.url, '/v1/models')).json.data[0];
      assert.equal(status.loaded, true);
      for (const key of ['slots', 'active_slots', 'queued_requests', 'max_parallel_slots']) {
        assert.equal(key in status, false, `legacy status shows ${key}`);
      }
    });
  });

  test('[startup.legacy-rejects-slots] without --parallel-jobs a registration with slots is 400 and changes nothing', async () => {
    await withContractServer([{ id: 'M' }], { parallel: false }, async (c) => {
      await c.ready('M');
      const before = await c.status('M');
      assert.equal('slots' in before, false, 'legacy status has no slot fields');
      for (const slots of [1, null, 2]) {
        // A new id and a reconfiguration of the live model are both refused before anything happens.
        for (const id of ['N', 'M']) {
          const res = await post(c.url, '/v1/models/load', { ...c.body('M'), id, slots });
          const message = errorOf(res, 400, 'invalid_request_error');
          assert.match(message, /slots/, message);
          assert.match(message, /--parallel-jobs/, message);
        }
      }
      assert.deepEqual(await listed(c.url), ['M'], 'no entry was published for N');
      assert.equal(await healthCount(c.url), 1);
      assert.deepEqual(await c.status('M'), before, 'the live model is unchanged');
      assert.equal(c.count('M', 'load'), 1);
      assert.equal(c.count('M', 'weights-disposed'), 0);
      assert.equal(c.events('N').length, 0);
      assert.equal(reportOf(await c.infer('M')).generation, 1, 'the old pool still serves');
      // Without `slots` the same registration is accepted: the refusal is about `slots` only.
      assert.equal((await post(c.url, '/v1/models/load', { ...c.body('M'), id: 'N' })).status, 200);
    });
  });

  test('[startup.flag-capacity-one] with --parallel-jobs and no slots a model runs the parallel runtime with capacity 1', async () => {
    await withServer(
      {
        ui_management: true,
        busy_timeout_ms: 0,
        models: [fixtureModel('M', { lazy: true }), fixtureModel('E', { lazy: false })],
      },
      { parallel: true },
      async (s) => {
        const status = async (id: string) =>
          pick((await get(s.url, '/v1/models')).json.data.find((m: { id: string }) => m.id === id));
        assert.deepEqual(await status('E'), readyView(1));
        assert.deepEqual(await status('M'), unloadedView(1));
        const gate = s.gate('run');
        const run = (options: Record<string, string> = {}) =>
          post(s.url, '/v1/tasks/run', { model: 'M', request: { text: 'x', options } });
        const first = run({ run_gate: gate.path });
        await waitUntil('M runs', () => s.fixture.record.of('M', 'run-start').length === 1);
        const second = run();
        await waitUntil('the second request queues', async () => (await status('M')).queued_requests === 1);
        assert.deepEqual(await status('M'), readyView(1, { active_slots: 1, queued_requests: 1 }));
        assert.equal(s.fixture.record.of('M', 'run-start').length, 1, 'capacity one: the second waits');
        assert.deepEqual(
          s.fixture.record.of('M', 'session-created').map((e) => (e as { slot: number }).slot),
          [0],
        );
        await gate.open();
        const [a, b] = [reportOf(await first), reportOf(await second)];
        assert.equal(a.slot, 0);
        assert.equal(b.slot, 0);
        assert.equal(a.session, b.session, 'one session serves both, one after the other');
        // A dynamic registration without slots is parallel with capacity one too.
        const res = await post(s.url, '/v1/models/load', fixtureModel('N'));
        assert.equal(res.status, 200, res.body.toString());
        assert.deepEqual(await status('N'), readyView(1));
        assert.equal(s.fixture.record.of('N', 'session-created').length, 1);
      },
    );
  });

  test('[startup.slots-range] a config slots outside the integers 1..16 is a startup error', () => {
    for (const slots of [null, true, '2', 1.5, 0, 17, -1]) {
      assert.throws(
        () => loadConfig({ models: [fixtureModel('a', { slots })] }, true),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError, `slots=${JSON.stringify(slots)}: ${String(err)}`);
          assert.equal(err.key, 'models[0].slots');
          assert.match(err.message, /1 and 16/);
          return true;
        },
      );
    }
    for (const slots of [1, 16]) {
      const { config } = loadConfig({ models: [fixtureModel('a', { slots })] }, true);
      assert.equal(config.models[0]!.slots, slots);
    }
  });

  test('[startup.slots-range] a registration with slots outside 1..16 is 400 and publishes nothing', async () => {
    await withContractServer([{ id: 'M', slots: 2 }], async (c) => {
      await c.ready('M');
      const before = await c.status('M');
      for (const slots of [null, true, '2', 1.5, 0, 17]) {
        for (const id of ['N', 'M']) {
          const res = await post(c.url, '/v1/models/load', { ...c.body('M'), id, slots });
          const message = errorOf(res, 400, 'invalid_request_error');
          assert.match(message, /slots/, `${id} slots=${JSON.stringify(slots)}: ${message}`);
        }
      }
      assert.deepEqual(await listed(c.url), ['M']);
      assert.equal(await healthCount(c.url), 1);
      assert.deepEqual(await c.status('M'), before);
      assert.equal(c.count('M', 'load'), 1);
      assert.equal(c.count('M', 'weights-disposed'), 0);
      assert.equal(c.events('N').length, 0);
      // Both ends of the range are accepted.
      for (const slots of [16, 1]) {
        const res = await post(c.url, '/v1/models/load', { ...c.body('M'), id: 'N', slots });
        assert.equal(res.status, 200, res.body.toString());
        assert.deepEqual(pick(await c.status('N')), readyView(slots));
      }
    });
  });

  for (const capacity of COUNTS) {
    const slots = capacity + 1;
    test(`[startup.capacity-limited] capacity=${capacity}: slots=${slots} is refused and never publishes a pool`, async () => {
      await withContractServer(
        [{ id: 'L', slots, load_options: { capacity: String(capacity) } }],
        async (c) => {
          const expectRefusal = (res: Awaited<ReturnType<ContractServer['infer']>>) => {
            const message = errorOf(res, 400, 'invalid_request_error');
            assert.match(message, new RegExp(`slots=${slots} exceeds the capacity ${capacity}`));
          };
          const unloaded = unloadedView(slots);
          // A lazy model from the config: its first request loads, finds the capacity short, disposes.
          expectRefusal(await c.infer('L'));
          assert.deepEqual(pick(await c.status('L')), unloaded);
          assert.deepEqual(
            c.events('L').map((e) => e.type),
            ['load', 'weights-disposed'],
          );
          // Dynamic registration of a new id: same refusal, the entry stays registered but unloaded.
          const body = { ...c.body('L'), id: 'N' };
          expectRefusal(await post(c.url, '/v1/models/load', body));
          assert.deepEqual(pick(await c.status('N')), unloaded);
          assert.deepEqual(
            c.events('N').map((e) => e.type),
            ['load', 'weights-disposed'],
          );
          assert.equal(c.snapshot('N').managerActive, false, 'the registration lease was released');
          // Corrected to the advertised capacity, both load a complete pool.
          for (const id of ['L', 'N']) {
            const res = await post(c.url, '/v1/models/load', { ...c.body('L'), id, slots: capacity });
            assert.equal(res.status, 200, res.body.toString());
            assert.deepEqual(pick(await c.status(id)), readyView(capacity));
            assert.equal(c.count(id, 'session-created'), capacity);
          }
        },
      );
    });
  }

  test('[startup.capacity-limited] an eager model with slots above its capacity aborts startup, no pool', async () => {
    const { catalog, config } = loadConfig(
      { models: [fixtureModel('a', { slots: 5, load_options: { capacity: '4' } })] },
      true,
    );
    await assert.rejects(startVoxd({ config, catalog, logger: quietLogger() }), (err: unknown) => {
      assert.ok(err instanceof VoxdError, String(err));
      assert.equal(err.code, 'E_INVALID_REQUEST');
      assert.match(err.message, /slots=5 exceeds the capacity 4/);
      return true;
    });
    const fixture = catalog.get('fixture') as FixtureFamily;
    assert.deepEqual(
      fixture.record.of('a').map((e) => e.type),
      ['load', 'weights-disposed'],
    );
  });

  test('[startup.scope-warning] the scope line calls the runtime experimental and its lifecycle/backend coverage incomplete', async () => {
    const config = configs.write({ port: 0, ui: false, models: [fixtureModel('a')] });
    const flagged = new VoxdProcess(['serve', '--config', config, '--parallel-jobs']);
    try {
      await flagged.listening();
      const scope = (flagged.stderr.match(SCOPE_LINE) ?? []).join('\n');
      assert.ok(scope, flagged.stderr);
      // Contract, "Scope": startup prints this experimental scope and the incomplete lifecycle/backend coverage.
      assert.match(
        scope,
        /experimental/i,
        `the scope line does not say the runtime is experimental: ${scope}`,
      );
      assert.match(
        scope,
        /(lifecycle|backend)[^;]*(incomplete|partial|not (yet )?(validated|tested)|untested)|(incomplete|partial)[^;]*(lifecycle|backend)/i,
        `the scope line does not say lifecycle/backend coverage is incomplete: ${scope}`,
      );
    } finally {
      assert.deepEqual(await flagged.stop(), { code: 0, signal: null });
    }
  });

  test('[startup.scope-warning] --parallel-jobs prints the validated scope once; without it there is no such line', async () => {
    const config = configs.write({ port: 0, ui: false, models: [fixtureModel('a')] });
    const flagged = new VoxdProcess(['serve', '--config', config, '--parallel-jobs']);
    const legacy = new VoxdProcess(['serve', '--config', config]);
    try {
      await Promise.all([flagged.listening(), legacy.listening()]);
      const lines = flagged.stderr.match(SCOPE_LINE) ?? [];
      assert.equal(lines.length, 1, flagged.stderr);
      assert.match(lines[0]!, /fixture \(up to 16\)/, 'names the validated multi-slot family');
      assert.match(lines[0]!, /1 slot per model/, 'says everything else runs one slot');
      assert.ok(
        flagged.stderr.indexOf(lines[0]!) < flagged.stderr.search(LISTENING),
        'printed before the listening line',
      );
      assert.doesNotMatch(legacy.stderr, /parallel runtime|validated scope/, legacy.stderr);
    } finally {
      const exits = await Promise.all([flagged.stop(), legacy.stop()]);
      for (const exit of exits) assert.deepEqual(exit, { code: 0, signal: null });
    }
  });
});
