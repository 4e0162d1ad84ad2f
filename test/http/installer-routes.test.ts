/**
 * The installer routes (audio.cpp's /v1/ui/models/*) end to end: a local HTTP server stands in for
 * the model hub (it serves archives of the fake model folders; no hub can be reached here), a
 * package installed through the API answers requests by its id, and a download that runs blocks a
 * models-root change and stops at once when asked.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { Installer } from '../../src/models/installer.js';
import { deferred } from '../../src/util/wait.js';
import { errorOf, fixtureModel, get, post, type TestServer, waitUntil, withServer } from '../helpers/voxd.js';
import { fakeNemoPackage, tarOf } from '../models/archives.js';
import { type FileServer, startFileServer } from '../models/file-server.js';

let hub: FileServer;
let work: string;
let archive: Buffer;

before(async () => {
  hub = await startFileServer();
  work = mkdtempSync(join(tmpdir(), 'voxd-install-routes-'));
  archive = tarOf('fake-nemo-ctc', join(work, 'nemo.tar.bz2'), 'bz2');
  hub.routes.set('/gh/asr-models/fake-nemo-ctc.tar.bz2', { body: archive });
});
after(async () => {
  await hub.close();
  rmSync(work, { recursive: true, force: true });
});

const pkg = (id: string, url: string) => fakeNemoPackage(id, url, archive.length);

/** voxd with real installers whose catalogue and hub are this test's, for the length of `body`. */
function withInstallers(
  options: { extra?: Record<string, unknown>; beforeClose?: (() => unknown)[] },
  body: (s: TestServer) => Promise<void>,
): Promise<void> {
  const packages = [pkg('nemo', 'asr-models/fake-nemo-ctc.tar.bz2'), pkg('slow', 'asr-models/slow.tar.bz2')];
  const env = { VOXD_GITHUB_BASE_URL: `${hub.base}/gh`, VOXD_HF_BASE_URL: `${hub.base}/hf` };
  return withServer(
    { ui_management: true, models: [fixtureModel('m')], ...options.extra },
    {
      installerFor: async (root) => new Installer({ root, packages, env }),
      beforeClose: options.beforeClose,
    },
    body,
  );
}

const loud = encodeWav({
  samples: Float32Array.from({ length: 16000 }, (_, i) => 0.3 * Math.sin(i / 7)),
  sampleRate: 16000,
  channels: 1,
}).toString('base64');

const status = async (s: TestServer, id: string) =>
  (await get(s.url, `/v1/ui/models/install-status?id=${id}`)).json;

test('a package installed through the API answers requests by its id; it can be removed once unloaded', async () => {
  await withInstallers({}, async (s) => {
    const started = await post(s.url, '/v1/ui/models/install', { id: 'nemo' });
    assert.equal(started.status, 200, started.body.toString());
    assert.equal(started.json.id, 'nemo');
    assert.ok(['queued', 'running'].includes(started.json.state));
    await waitUntil('the install completes', async () => (await status(s, 'nemo')).state === 'complete');
    const done = await status(s, 'nemo');
    assert.equal(done.progress_percent, 100);
    assert.equal(done.exit_code, 0);
    assert.equal(done.downloaded_bytes, archive.length);

    const listed = (await get(s.url, '/v1/ui/models/installed')).json;
    assert.equal(listed.models_root, join(s.dir, 'models'));
    assert.deepEqual(
      listed.data.map((p: { id: string; family: string; registered: boolean }) => [
        p.id,
        p.family,
        p.registered,
      ]),
      [['nemo', 'nemo_ctc_asr', false]],
    );
    const sizes = (await get(s.url, '/v1/ui/models/package-sizes')).json;
    assert.equal(sizes.state, 'complete');
    assert.deepEqual(
      sizes.data.map((r: { id: string; installed: boolean; size_bytes: number }) => [
        r.id,
        r.installed,
        r.size_bytes,
      ]),
      [
        ['nemo', true, archive.length],
        ['slow', false, archive.length],
      ],
    );

    // By its package id, with no registration: the fake says "hello world" for loud audio.
    const heard = await post(s.url, '/v1/tasks/run', { model: 'nemo', audio_base64: loud });
    assert.equal(heard.status, 200, heard.body.toString());
    assert.equal(heard.json.text, 'hello world');
    const after = (await get(s.url, '/v1/ui/models/installed')).json.data[0];
    assert.deepEqual([after.registered, after.model], [true, 'nemo']);

    // Loaded: its files are in use.
    const refused = errorOf(
      await post(s.url, '/v1/ui/models/delete', { id: 'nemo' }),
      400,
      'invalid_request_error',
    );
    assert.match(refused, /package nemo is loaded as model 'nemo'; unload it first/);
    assert.equal((await post(s.url, '/v1/models/unload', { id: 'nemo' })).status, 200);
    const removed = await post(s.url, '/v1/ui/models/delete', { id: 'nemo' });
    assert.deepEqual(removed.json, { id: 'nemo', removed: true, message: 'removed nemo' });
    assert.deepEqual((await get(s.url, '/v1/ui/models/installed')).json.data, []);
    assert.equal((await post(s.url, '/v1/ui/models/delete', { id: 'nemo' })).status, 404);
  });
});

test('a running download blocks a models-root change (409), stops at once when asked, and its partial files can be cleaned', async () => {
  const gate = deferred();
  hub.routes.set('/gh/asr-models/slow.tar.bz2', { body: archive, stallAfter: 1000, gate: gate.promise });
  await withInstallers({ beforeClose: [() => gate.resolve()] }, async (s) => {
    const sent = hub.sent('/gh/asr-models/slow.tar.bz2');
    assert.equal((await post(s.url, '/v1/ui/models/install', { id: 'slow' })).status, 200);
    await sent;
    await waitUntil('the download runs', async () => (await status(s, 'slow')).state === 'running');
    const again = await post(s.url, '/v1/ui/models/install', { id: 'slow' });
    assert.equal(again.status, 409);
    assert.equal(again.json.error.code, 'model_install_active');
    const moved = await post(s.url, '/v1/ui/models-root', { path: join(s.dir, 'elsewhere') });
    assert.equal(moved.status, 409);
    assert.equal((await get(s.url, '/v1/ui/models-root')).json.models_root, join(s.dir, 'models'));
    errorOf(await post(s.url, '/v1/ui/models/clean-partial', { id: 'slow' }), 409, 'invalid_request_error');

    const stopping = await post(s.url, '/v1/ui/models/install/stop', { id: 'slow' });
    assert.equal(stopping.status, 200);
    assert.ok(['cancelling', 'cancelled'].includes(stopping.json.state));
    await waitUntil('the job is cancelled', async () => (await status(s, 'slow')).state === 'cancelled');
    const all = (await get(s.url, '/v1/ui/models/install-status')).json.data;
    assert.deepEqual(
      all.map((j: { id: string; state: string }) => [j.id, j.state]),
      [['slow', 'cancelled']],
    );
    const cleaned = await post(s.url, '/v1/ui/models/clean-partial', { id: 'slow' });
    assert.deepEqual(cleaned.json, { id: 'slow', cleaned: true, message: 'removed partial files of slow' });
    assert.equal((await post(s.url, '/v1/ui/models-root', { path: join(s.dir, 'elsewhere') })).status, 200);
    assert.equal(
      errorOf(await post(s.url, '/v1/ui/models/install/stop', { id: 'slow' }), 404, 'not_found'),
      'no install job for slow',
    );
  });
});

test('an unknown package id is a 4xx naming it, and an id that is not a package id a 400', async () => {
  await withInstallers({}, async (s) => {
    const unknown = await post(s.url, '/v1/ui/models/install', { id: 'no-such-model' });
    assert.ok(unknown.status >= 400 && unknown.status < 500, String(unknown.status));
    assert.match(unknown.json.error.message, /no-such-model/);
    const bad = await post(s.url, '/v1/ui/models/install', { id: '../../etc' });
    assert.equal(bad.status, 400);
    assert.equal((await status(s, 'nemo')).state, 'idle');
  });
});

test('without ui_management every installer route is a 403 with its audio.cpp message', async () => {
  await withInstallers({ extra: { ui_management: false } }, async (s) => {
    const cases: [string, string, RegExp][] = [
      ['POST', '/v1/ui/models/install', /UI model installation is disabled/],
      ['POST', '/v1/ui/models/install/stop', /UI model installation is disabled/],
      ['GET', '/v1/ui/models/install-status', /UI model installation is disabled/],
      ['GET', '/v1/ui/models/package-sizes', /UI model installation is disabled/],
      ['GET', '/v1/ui/models/installed', /UI model installation is disabled/],
      ['POST', '/v1/ui/models/delete', /UI model removal is disabled/],
      ['POST', '/v1/ui/models/clean-partial', /UI model cleanup is disabled/],
    ];
    for (const [method, path, message] of cases) {
      const res = method === 'GET' ? await get(s.url, path) : await post(s.url, path, { id: 'nemo' });
      assert.match(errorOf(res, 403, 'forbidden'), message, path);
    }
  });
});

test('delete removes only packages: a folder that installed does not list is a 404, untouched', async () => {
  await withInstallers({}, async (s) => {
    const root = join(s.dir, 'models');
    mkdirSync(join(root, 'important'));
    writeFileSync(join(root, 'important', 'data.txt'), 'keep me');
    assert.deepEqual((await get(s.url, '/v1/ui/models/installed')).json.data, []);
    const refused = errorOf(await post(s.url, '/v1/ui/models/delete', { id: 'important' }), 404, 'not_found');
    assert.match(refused, /package important is not a package \(no manifest, no family recognises it\)/);
    assert.equal(readFileSync(join(root, 'important', 'data.txt'), 'utf8'), 'keep me');
    errorOf(await post(s.url, '/v1/ui/models/delete', { id: 'absent' }), 404, 'not_found');
    assert.ok(!existsSync(join(root, 'absent')));
  });
});
