import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Installer } from '../../src/models/installer.js';
import {
  errorOf,
  fixtureModel,
  get,
  modelStatus,
  post,
  reportOf,
  runTask,
  waitUntil,
  whenRuntime,
  withServer,
} from '../helpers/voxd.js';

const managed = (models: unknown[] = [], extra: Record<string, unknown> = {}) => ({
  ui_management: true,
  busy_timeout_ms: 0,
  models,
  ...extra,
});

describe('model management routes', () => {
  test('load and unload answer 403 forbidden without ui_management; bulk routes are not gated', async () => {
    await withServer({ models: [fixtureModel('a')] }, async (s) => {
      const load = await post(s.url, '/v1/models/load', fixtureModel('b'));
      assert.match(errorOf(load, 403, 'forbidden'), /dynamic model management is disabled/);
      errorOf(await post(s.url, '/v1/models/unload', { id: 'a' }), 403, 'forbidden');
      assert.equal((await get(s.url, '/health')).json.models, 1, 'nothing was registered');
      const bulk = await post(s.url, '/v1/tasks/unload_models', { model_ids: ['a'] });
      assert.equal(bulk.status, 200);
      assert.equal((await post(s.url, '/v1/tasks/unload_all_models', {})).status, 200);
    });
  });

  test('registering a new id publishes it and loads it; the same config again is not a reconfiguration', async () => {
    await withServer(managed(), async (s) => {
      const first = await post(
        s.url,
        '/v1/models/load',
        fixtureModel('new', { load_options: { capacity: 4 } }),
      );
      assert.equal(first.status, 200);
      assert.deepEqual(first.json, { id: 'new', loaded: true, reconfigured: false });
      const status = await modelStatus(s.url, 'new');
      assert.equal(status.loaded, true);
      assert.equal(status.family, 'fixture');
      assert.equal((await get(s.url, '/health')).json.models, 1);
      const again = await post(
        s.url,
        '/v1/models/load',
        fixtureModel('new', { load_options: { capacity: 4 } }),
      );
      assert.deepEqual(again.json, { id: 'new', loaded: true, reconfigured: false });
      assert.equal(s.fixture.record.of('new', 'load').length, 1, 'no second load');
    });
  });

  test('a changed load option reconfigures: old pool torn down, new config loaded and used', async () => {
    await withServer(managed([fixtureModel('m', { load_options: { sample_rate: 16000 } })]), async (s) => {
      assert.equal(reportOf(await runTask(s, 'm')).generation, 1);
      const res = await post(
        s.url,
        '/v1/models/load',
        fixtureModel('m', { load_options: { sample_rate: 8000 } }),
      );
      assert.deepEqual(res.json, { id: 'm', loaded: true, reconfigured: true });
      const types = s.fixture.record.of('m').map((e) => e.type);
      assert.deepEqual(types.slice(-5), [
        'run-end',
        'session-disposed',
        'weights-disposed',
        'load',
        'session-created',
      ]);
      const report = reportOf(await runTask(s, 'm'));
      assert.equal(report.generation, 2);
      assert.deepEqual(report.load_options, { sample_rate: '8000' });
    });
  });

  test('a metadata-only change is applied without reloading', async () => {
    await withServer(managed([fixtureModel('m')]), async (s) => {
      const res = await post(
        s.url,
        '/v1/models/load',
        fixtureModel('m', { default_request_options: { beam: 3 } }),
      );
      assert.deepEqual(res.json, { id: 'm', loaded: true, reconfigured: true });
      const report = reportOf(await runTask(s, 'm'));
      assert.equal(report.generation, 1, 'same pool');
      assert.equal(report.options.beam, '3');
      assert.equal(s.fixture.record.of('m', 'load').length, 1);
    });
  });

  test('[startup.legacy-rejects-slots] any slots key is a 400 without --parallel-jobs and registers nothing', async () => {
    await withServer(managed(), async (s) => {
      for (const slots of [1, null, 2]) {
        const res = await post(s.url, '/v1/models/load', fixtureModel('s', { slots }));
        assert.match(
          errorOf(res, 400, 'invalid_request_error'),
          /slots requires --parallel-jobs at server startup/,
        );
      }
      assert.equal((await get(s.url, '/health')).json.models, 0);
      assert.equal(s.fixture.record.events.length, 0);
    });
  });

  test('invalid registrations are 400 naming the field and value, and change nothing', async () => {
    await withServer(managed([fixtureModel('m')]), async (s) => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ ...fixtureModel('x'), family: 'nope' }, /family.*"nope"/],
        [{ ...fixtureModel('x'), task: 'sing' }, /task.*"sing"/],
        [{ family: 'fixture', path: '.' }, /id/],
        [{ ...fixtureModel('x'), busy_timeout_ms: -1 }, /busy_timeout_ms.*-1/],
        [{ ...fixtureModel('m'), task: 'bogus' }, /task.*"bogus"/],
      ];
      for (const [body, pattern] of cases) {
        const res = await post(s.url, '/v1/models/load', body);
        assert.match(errorOf(res, 400, 'invalid_request_error'), pattern);
      }
      errorOf(await post(s.url, '/v1/models/load', [1]), 400, 'invalid_request_error');
      const status = await modelStatus(s.url, 'm');
      assert.equal(status.task, 'asr', 'the existing registration is untouched');
      assert.equal(status.loaded, true);
      assert.equal((await get(s.url, '/health')).json.models, 1);
    });
  });

  test('a new id over 128 characters or with other characters is a 400 naming id, and /metrics stays small', async () => {
    await withServer(managed([fixtureModel('m')]), async (s) => {
      const before = (await get(s.url, '/metrics')).body.length;
      for (const id of ['a'.repeat(1024 * 1024), 'a'.repeat(129), 'a/b', '.x', 'x y']) {
        const res = await post(s.url, '/v1/models/load', fixtureModel(id));
        const message = errorOf(res, 400, 'invalid_request_error');
        assert.equal(res.json.error.param, 'id', message);
        assert.ok(message.startsWith(`id: ${JSON.stringify(id).slice(0, 10)}`), message);
        assert.ok(message.length < 300, `a cut value: ${message.length} chars`);
      }
      assert.equal((await get(s.url, '/health')).json.models, 1, 'nothing was registered');
      const after = (await get(s.url, '/metrics')).body.length;
      assert.ok(after < before + 10_000, `/metrics grew from ${before} to ${after} bytes`);
    });
  });

  test('a failed first load leaves the new id registered and unloaded; a corrected registration loads it', async () => {
    await withServer(managed(), async (s) => {
      const failed = await post(
        s.url,
        '/v1/models/load',
        fixtureModel('f', { load_options: { fail_load: 'true' } }),
      );
      assert.match(errorOf(failed, 500, 'server_error'), /failed to load model 'f'/);
      const status = await modelStatus(s.url, 'f');
      assert.equal(status.loaded, false);
      assert.equal(status.state, 'unloaded');
      const fixed = await post(s.url, '/v1/models/load', fixtureModel('f'));
      assert.deepEqual(fixed.json, { id: 'f', loaded: true, reconfigured: true });
    });
  });

  test('unload: 404 for an unknown id, idempotent, and the next request reloads transparently', async () => {
    await withServer(managed([fixtureModel('m')]), async (s) => {
      assert.match(
        errorOf(await post(s.url, '/v1/models/unload', { id: 'zz' }), 404, 'not_found'),
        /unknown model id: "zz"/,
      );
      errorOf(await post(s.url, '/v1/models/unload', {}), 400, 'invalid_request_error');
      const res = await post(s.url, '/v1/models/unload', { id: 'm' });
      assert.deepEqual(res.json, { id: 'm', loaded: false });
      assert.equal((await modelStatus(s.url, 'm')).loaded, false);
      assert.deepEqual(
        s.fixture.record
          .of('m')
          .map((e) => e.type)
          .slice(-2),
        ['session-disposed', 'weights-disposed'],
      );
      assert.deepEqual((await post(s.url, '/v1/models/unload', { id: 'm' })).json, {
        id: 'm',
        loaded: false,
      });
      assert.equal(
        s.fixture.record.of('m', 'weights-disposed').length,
        1,
        'a second unload disposes nothing',
      );
      assert.equal(reportOf(await runTask(s, 'm')).generation, 2);
      assert.equal((await modelStatus(s.url, 'm')).loaded, true);
    });
  });

  test('unload waits for the request in flight, and a later request waits for the unload', async () => {
    await withServer(managed([fixtureModel('m')]), async (s) => {
      const gate = s.gate('run');
      const inFlight = runTask(s, 'm', { run_gate: gate.path });
      await waitUntil('the request runs', () => s.fixture.record.of('m', 'run-start').length === 1);
      const unload = post(s.url, '/v1/models/unload', { id: 'm' });
      const scheduler = s.voxd.runtime.get('m').scheduler;
      await whenRuntime(s.voxd.runtime, 'the unload waits', () => scheduler.snapshot().queuedManagers === 1);
      const later = runTask(s, 'm');
      await whenRuntime(
        s.voxd.runtime,
        'the later request queues behind it',
        () => scheduler.snapshot().queuedRequests === 1,
      );
      assert.equal((await modelStatus(s.url, 'm')).loaded, true, 'nothing unloaded yet');
      await gate.open();
      assert.equal((await inFlight).status, 200);
      assert.deepEqual((await unload).json, { id: 'm', loaded: false });
      assert.equal(reportOf(await later).generation, 2, 'the later request reloaded the model');
      const types = s.fixture.record.of('m').map((e) => e.type);
      assert.ok(types.indexOf('run-end') < types.indexOf('session-disposed'));
    });
  });

  test('a reconfiguration waits for earlier work and later requests see only the new config', async () => {
    await withServer(managed([fixtureModel('m', { load_options: { sample_rate: 16000 } })]), async (s) => {
      const gate = s.gate('run');
      const inFlight = runTask(s, 'm', { run_gate: gate.path });
      await waitUntil('the request runs', () => s.fixture.record.of('m', 'run-start').length === 1);
      const reconfigure = post(
        s.url,
        '/v1/models/load',
        fixtureModel('m', { load_options: { sample_rate: 8000 } }),
      );
      const scheduler = s.voxd.runtime.get('m').scheduler;
      await whenRuntime(
        s.voxd.runtime,
        'the reconfiguration waits',
        () => scheduler.snapshot().queuedManagers === 1,
      );
      const later = runTask(s, 'm');
      await whenRuntime(
        s.voxd.runtime,
        'the later request queues',
        () => scheduler.snapshot().queuedRequests === 1,
      );
      await gate.open();
      assert.deepEqual(reportOf(await inFlight).load_options, { sample_rate: '16000' });
      assert.equal((await reconfigure).json.reconfigured, true);
      assert.deepEqual(reportOf(await later).load_options, { sample_rate: '8000' });
    });
  });

  test('unload_models lists only models it actually unloaded (serial runtime), once each, and unknown ids apart', async () => {
    await withServer(
      managed([fixtureModel('a'), fixtureModel('b'), fixtureModel('lazy', { lazy: true })]),
      async (s) => {
        const res = await post(s.url, '/v1/tasks/unload_models', {
          model_ids: ['a', 'ghost', 'a', 'lazy', 'ghost'],
        });
        assert.equal(res.status, 200);
        assert.deepEqual(res.json, { unloaded: ['a'], not_found: ['ghost'] });
        assert.equal((await modelStatus(s.url, 'a')).loaded, false);
        assert.equal((await modelStatus(s.url, 'b')).loaded, true, 'not selected');
        assert.equal(s.fixture.record.of('a', 'weights-disposed').length, 1);
      },
    );
  });

  test('unload_models validates model_ids', async () => {
    await withServer(managed([fixtureModel('a')]), async (s) => {
      assert.match(
        errorOf(await post(s.url, '/v1/tasks/unload_models', {}), 400, 'invalid_request_error'),
        /'model_ids' string array/,
      );
      assert.match(
        errorOf(
          await post(s.url, '/v1/tasks/unload_models', { model_ids: 'a' }),
          400,
          'invalid_request_error',
        ),
        /'model_ids' string array/,
      );
      const element = await post(s.url, '/v1/tasks/unload_models', { model_ids: ['a', 3] });
      assert.equal(
        errorOf(element, 400, 'invalid_request_error'),
        'model_ids[1]: 3 is invalid; expected a string',
      );
      assert.equal(element.json.error.param, 'model_ids[1]');
      assert.equal((await modelStatus(s.url, 'a')).loaded, true);
    });
  });

  test('unload_all_models unloads every loaded model and waits for busy ones', async () => {
    await withServer(
      managed([fixtureModel('a'), fixtureModel('b'), fixtureModel('c', { lazy: true })]),
      async (s) => {
        const gate = s.gate('run');
        const busy = runTask(s, 'a', { run_gate: gate.path });
        await waitUntil('a runs', () => s.fixture.record.of('a', 'run-start').length === 1);
        const all = post(s.url, '/v1/tasks/unload_all_models', {});
        await waitUntil(
          'idle b is freed first',
          () => s.fixture.record.of('b', 'weights-disposed').length === 1,
        );
        assert.equal((await modelStatus(s.url, 'a')).loaded, true, 'busy a is still loaded');
        await gate.open();
        assert.equal((await busy).status, 200);
        assert.deepEqual((await all).json, { unloaded: ['a', 'b'] });
        for (const id of ['a', 'b', 'c']) assert.equal((await modelStatus(s.url, id)).loaded, false);
      },
    );
  });
});

describe('GET /v1/ui/models/config', () => {
  test('gives the body that registers each model again unchanged: options, slots, no path for an engine that ships its model, the package of a package model', async () => {
    const installed = { id: 'pkg-asr', family: 'fixture', task: 'asr', path: '.' };
    await withServer(
      {
        ui_management: true,
        models: [
          fixtureModel('opts', {
            slots: 2,
            busy_timeout_ms: 250,
            load_options: { capacity: 4 },
            session_options: { label: 'x' },
            default_request_options: { chunks: 2 },
          }),
          { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
          { id: 'by-package', package: 'pkg-asr', lazy: true },
        ],
      },
      {
        parallel: true,
        installerFor: async (root) => {
          const installer = new Installer({ root });
          installer.list = async () => [{ ...installed, size_bytes: 0, installed_at: null, manifest: false }];
          return installer;
        },
      },
      async (s) => {
        const bodies: Record<string, Record<string, unknown>> = {};
        for (const id of ['opts', 'flite', 'by-package']) {
          const res = await get(s.url, `/v1/ui/models/config?id=${id}`);
          assert.equal(res.status, 200, res.body.toString());
          bodies[id] = res.json;
        }
        assert.deepEqual(
          [bodies['opts']!['slots'], bodies['opts']!['busy_timeout_ms'], bodies['opts']!['load_options']],
          [2, 250, { capacity: '4' }],
        );
        assert.deepEqual(bodies['opts']!['session_options'], { label: 'x' });
        // Options are kept as audio.cpp keeps them: strings.
        assert.deepEqual(bodies['opts']!['default_request_options'], { chunks: '2' });
        assert.equal('path' in bodies['flite']!, false);
        assert.equal(bodies['by-package']!['package'], 'pkg-asr');
        assert.equal('path' in bodies['by-package']!, false);
        for (const [id, body] of Object.entries(bodies)) {
          const again = await post(s.url, '/v1/models/load', body);
          assert.equal(again.status, 200, `${id}: ${again.body.toString()}`);
          assert.equal(again.json.reconfigured, false, `${id} sent back unchanged is no reconfiguration`);
        }
        // Edited and sent back, it reconfigures: the UI's options editor.
        const edited = await post(s.url, '/v1/models/load', {
          ...bodies['opts'],
          load_options: { capacity: 3 },
        });
        assert.equal(edited.json.reconfigured, true);
        assert.deepEqual((await get(s.url, '/v1/ui/models/config?id=opts')).json.load_options, {
          capacity: '3',
        });
      },
    );
  });

  test('needs ui_management (403), an id (400) and a registered model (404)', async () => {
    await withServer({ models: [fixtureModel('a')] }, async (plain) => {
      errorOf(await get(plain.url, '/v1/ui/models/config?id=a'), 403, 'forbidden');
    });
    await withServer(managed([fixtureModel('a')]), async (s) => {
      const missing = await get(s.url, '/v1/ui/models/config');
      assert.match(errorOf(missing, 400, 'invalid_request_error'), /^'id' is required/);
      assert.equal(missing.json.error.param, 'id');
      assert.match(errorOf(await get(s.url, '/v1/ui/models/config?id=nope'), 404, 'not_found'), /nope/);
    });
  });
});
