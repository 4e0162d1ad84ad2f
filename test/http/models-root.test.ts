/**
 * The models root routes (audio.cpp's /v1/ui/models-root, /v1/ui/browse-directories,
 * /v1/ui/path-status): a new root is made, checked and given its installer before it replaces the
 * old pair, and any failure keeps the old pair whole; the folder picker is confined.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Installer, type InstallJob } from '../../src/models/installer.js';
import { errorOf, fixtureModel, get, post, tempDir, withDeadline, withServer } from '../helpers/voxd.js';

/**
 * Real installers, except that building one fails for a chosen root, and that a test can say a
 * download runs (its job list then holds one running job).
 */
function installers(failFor: (root: string) => boolean) {
  let downloading = false;
  const built: string[] = [];
  return {
    built,
    setDownloading: (on: boolean) => {
      downloading = on;
    },
    installerFor: async (root: string): Promise<Installer> => {
      if (failFor(root)) throw new Error('the package index cannot be read');
      built.push(root);
      const installer = new Installer({ root });
      const jobs = installer.activeJobs.bind(installer);
      installer.activeJobs = () =>
        downloading ? [{ ...(installer.status('whisper-base_en') as InstallJob), state: 'running' }] : jobs();
      return installer;
    },
  };
}

describe('models root', () => {
  test('[fail.models-root] a root that cannot be made, is no folder, or whose installer fails keeps the old pair; a download blocks any change', async () => {
    const pair = installers((root) => root.endsWith('broken-index'));
    await withServer({ ui_management: true, models: [] }, { installerFor: pair.installerFor }, async (s) => {
      const first = join(s.dir, 'models');
      const installerBefore = s.voxd.runtime.modelsRoot.installer;
      const status = async () => (await get(s.url, '/v1/ui/models-root')).json;
      assert.equal((await status()).models_root, first);
      const keptOld = async () => {
        assert.equal((await status()).models_root, first);
        assert.equal(s.voxd.runtime.modelsRoot.installer, installerBefore, 'the old installer is kept');
      };

      // Under a regular file: the folder cannot be made.
      writeFileSync(join(s.dir, 'a-file'), 'x');
      const unmade = errorOf(
        await post(s.url, '/v1/ui/models-root', { path: join(s.dir, 'a-file', 'models') }),
        400,
        'invalid_request_error',
      );
      assert.match(unmade, /^path: the models root .*a-file\/models cannot be created/);
      await keptOld();
      // A file is no folder.
      const notFolder = errorOf(
        await post(s.url, '/v1/ui/models-root', { path: join(s.dir, 'a-file') }),
        400,
        'invalid_request_error',
      );
      assert.match(notFolder, /cannot be created|is not a folder/);
      await keptOld();
      // The folder is fine, but its installer cannot be built: the staged pair is dropped.
      const broken = errorOf(
        await post(s.url, '/v1/ui/models-root', { path: join(s.dir, 'broken-index') }),
        400,
        'invalid_request_error',
      );
      assert.match(
        broken,
        /the installer for the models root .*broken-index could not be set up \(the package index cannot be read\)/,
      );
      await keptOld();
      // While a download runs: 409, nothing staged.
      pair.setDownloading(true);
      const busy = await post(s.url, '/v1/ui/models-root', { path: join(s.dir, 'second') });
      assert.equal(busy.status, 409);
      assert.equal(busy.json.error.code, 'model_install_active');
      await keptOld();
      assert.ok(!pair.built.includes(join(s.dir, 'second')), 'no installer was built while busy');
      pair.setDownloading(false);

      // A good change: relative to the config folder, made, swapped with its installer.
      const moved = await post(s.url, '/v1/ui/models-root', { path: 'second' });
      assert.equal(moved.status, 200);
      assert.deepEqual(moved.json, {
        models_root: join(s.dir, 'second'),
        default_models_root: s.voxd.runtime.modelsRoot.defaultRoot,
        is_default: false,
      });
      assert.notEqual(s.voxd.runtime.modelsRoot.installer, installerBefore);
      assert.deepEqual(await status(), moved.json);
    });
  });

  test('an empty path restores the default root ($VOXD_DATA_DIR/models)', async () => {
    const dataDir = tempDir('voxd-data-');
    const before = process.env['VOXD_DATA_DIR'];
    process.env['VOXD_DATA_DIR'] = dataDir;
    try {
      await withServer(
        { ui_management: true, models: [] },
        { overrides: { models_root: undefined } },
        async (s) => {
          const status = (await get(s.url, '/v1/ui/models-root')).json;
          assert.deepEqual(status, {
            models_root: join(dataDir, 'models'),
            default_models_root: join(dataDir, 'models'),
            is_default: true,
          });
          assert.ok(statSync(join(dataDir, 'models')).isDirectory(), 'made at startup');
          const moved = await post(s.url, '/v1/ui/models-root', { path: join(s.dir, 'elsewhere') });
          assert.equal(moved.json.is_default, false);
          const back = await post(s.url, '/v1/ui/models-root', { path: '' });
          assert.equal(back.status, 200);
          assert.deepEqual(back.json, status);
        },
      );
    } finally {
      if (before === undefined) delete process.env['VOXD_DATA_DIR'];
      else process.env['VOXD_DATA_DIR'] = before;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('roots in /proc, /sys and /dev answer 400 at once (no hanging mkdir), and later changes work', async () => {
    await withServer({ ui_management: true, models: [] }, async (s) => {
      const first = join(s.dir, 'models');
      for (const path of ['/proc/nope/x', '/sys/nope/x', '/dev/nope/x', '/proc/self']) {
        // A mkdir that never returns would hold this request (and every later change) for ever.
        const res = await withDeadline(
          post(s.url, '/v1/ui/models-root', { path }),
          `POST models-root ${path}`,
          5000,
        );
        const message = errorOf(res, 400, 'invalid_request_error');
        assert.match(
          message,
          /^path: the models root .* is refused: .* is inside \/(proc|sys|dev), a virtual file system/,
        );
        assert.equal((await get(s.url, '/v1/ui/models-root')).json.models_root, first);
      }
      assert.ok(!existsSync('/dev/nope'), 'nothing was made in /dev');
      const moved = await withDeadline(
        post(s.url, '/v1/ui/models-root', { path: join(s.dir, 'after') }),
        'a later change',
        5000,
      );
      assert.equal(moved.status, 200, moved.body.toString());
      assert.equal(moved.json.models_root, join(s.dir, 'after'));
    });
  });

  test('a root is judged by its real path: links to /etc or /proc/self are refused; a link to a folder becomes that folder', async () => {
    await withServer({ ui_management: true, models: [] }, async (s) => {
      const first = join(s.dir, 'models');
      symlinkSync('/etc', join(s.dir, 'to-etc'));
      symlinkSync('/proc/self', join(s.dir, 'to-self'));
      const cases: [string, RegExp][] = [
        [
          'to-etc',
          /is refused: \/etc is inside \/etc, an operating-system folder \(.*to-etc leads to \/etc\)/,
        ],
        ['to-self', /is refused: \/proc\/\d+ is inside \/proc, a virtual file system/],
        ['to-etc/voxd', /is refused: \/etc\/voxd is inside \/etc/],
        ['/etc', /is refused: \/etc is inside \/etc/],
        ['/usr/lib', /is inside \/usr, an operating-system folder/],
        ['/', /\/ is a top-level system folder/],
      ];
      for (const [path, why] of cases) {
        const message = errorOf(
          await post(s.url, '/v1/ui/models-root', { path }),
          400,
          'invalid_request_error',
        );
        assert.match(message, why, path);
        assert.equal((await get(s.url, '/v1/ui/models-root')).json.models_root, first);
      }
      assert.ok(!existsSync('/etc/voxd'), 'nothing was made under /etc');
      mkdirSync(join(s.dir, 'real-models'));
      symlinkSync(join(s.dir, 'real-models'), join(s.dir, 'linked'));
      const moved = await post(s.url, '/v1/ui/models-root', { path: 'linked' });
      assert.equal(moved.status, 200, moved.body.toString());
      assert.equal(moved.json.models_root, join(s.dir, 'real-models'));
    });
  });

  test('without ui_management every route is a 403 with its audio.cpp message', async () => {
    await withServer({ models: [fixtureModel('m')] }, async (s) => {
      const cases: [string, string, RegExp][] = [
        ['GET', '/v1/ui/models-root', /UI model management is disabled/],
        ['POST', '/v1/ui/models-root', /UI model management is disabled/],
        ['POST', '/v1/ui/browse-directories', /UI directory browsing is disabled/],
        ['POST', '/v1/ui/path-status', /UI path inspection is disabled/],
      ];
      for (const [method, path, message] of cases) {
        const res = method === 'GET' ? await get(s.url, path) : await post(s.url, path, { path: '/' });
        assert.match(errorOf(res, 403, 'forbidden'), message, path);
      }
    });
  });

  test('the folder picker lists sorted subfolders of its roots, no way above a root, and nothing outside', async () => {
    await withServer({ ui_management: true, models: [] }, async (s) => {
      const root = join(s.dir, 'models');
      for (const name of ['zeta', 'alpha', '.hidden', 'Mid']) mkdirSync(join(root, name));
      writeFileSync(join(root, 'file.txt'), 'not a folder');
      const res = await post(s.url, '/v1/ui/browse-directories', {});
      assert.equal(res.status, 200);
      assert.equal(res.json.current, root);
      assert.deepEqual(
        res.json.directories.map((d: { name: string }) => d.name),
        ['Mid', 'alpha', 'zeta'],
      );
      assert.equal(res.json.directories[1].path, join(root, 'alpha'));
      assert.ok(res.json.roots.includes(s.dir), 'the config folder (a file root) is a root');
      // The models root lies under the config folder, a root itself: its parent is shown.
      assert.equal(res.json.parent, s.dir);
      const top = await post(s.url, '/v1/ui/browse-directories', { path: s.dir });
      assert.equal(top.json.parent, '', 'nothing above a root');
      for (const outside of ['/etc', '/', join(s.dir, '..')]) {
        const refused = errorOf(
          await post(s.url, '/v1/ui/browse-directories', { path: outside }),
          403,
          'forbidden',
        );
        assert.ok(!refused.includes('passwd'), refused);
      }
      const missing = errorOf(
        await post(s.url, '/v1/ui/browse-directories', { path: join(root, 'nope') }),
        400,
        'invalid_request_error',
      );
      assert.match(missing, /folder is not accessible: .*nope \(ENOENT\)/);
      // A relative path resolves against the config folder, as path-status and models-root do.
      const relative = await post(s.url, '/v1/ui/browse-directories', { path: 'models' });
      assert.equal(relative.status, 200, relative.body.toString());
      assert.equal(relative.json.current, root);
      assert.deepEqual((await post(s.url, '/v1/ui/path-status', { path: 'models' })).json.path, root);
    });
  });

  test('path-status says whether a path exists and what it is, only under the picker roots', async () => {
    await withServer({ ui_management: true, models: [] }, async (s) => {
      writeFileSync(join(s.dir, 'f.txt'), 'x');
      const status = async (path: string) => (await post(s.url, '/v1/ui/path-status', { path })).json;
      assert.deepEqual(await status('f.txt'), {
        path: join(s.dir, 'f.txt'),
        exists: true,
        directory: false,
        file: true,
      });
      assert.deepEqual(await status(join(s.dir, 'models')), {
        path: join(s.dir, 'models'),
        exists: true,
        directory: true,
        file: false,
      });
      assert.deepEqual(await status('new/folder'), {
        path: join(s.dir, 'new', 'folder'),
        exists: false,
        directory: false,
        file: false,
      });
      errorOf(await post(s.url, '/v1/ui/path-status', { path: '/etc/shadow' }), 403, 'forbidden');
      errorOf(await post(s.url, '/v1/ui/path-status', {}), 400, 'invalid_request_error');
    });
  });
});

test('a request may name an installed package by its id: it is registered lazily, once, and served', async () => {
  const installed = { id: 'pkg-asr', family: 'fixture', task: 'asr', path: '.' };
  let listed = 0;
  await withServer(
    { models: [fixtureModel('m')] },
    {
      installerFor: async (root) => {
        const installer = new Installer({ root });
        // A package as list() reports one (this test is about the runtime, not the installer).
        installer.list = async () => {
          listed++;
          return [{ ...installed, size_bytes: 0, installed_at: null, manifest: false }];
        };
        return installer;
      },
    },
    async (s) => {
      // Not a folder in the root yet: unknown, and the root is not even listed.
      assert.equal(
        (await post(s.url, '/v1/tasks/run', { model: 'pkg-asr', request: { text: 'x' } })).status,
        404,
      );
      assert.equal(listed, 0, 'no scan of the root for a name with no folder');
      mkdirSync(join(s.dir, 'models', 'pkg-asr'));
      const ask = () => post(s.url, '/v1/tasks/run', { model: 'pkg-asr', request: { text: 'x' } });
      const [first, second] = await Promise.all([ask(), ask()]);
      assert.equal(first.status, 200, first.body.toString());
      assert.equal(second.status, 200);
      assert.equal(JSON.parse(first.json.text).task, 'asr');
      const listedOnce = listed;
      assert.equal((await ask()).status, 200);
      assert.equal(listed, listedOnce, 'a registered package is not looked up again');
      const models = (await get(s.url, '/v1/models')).json.data.map((m: { id: string }) => m.id);
      assert.deepEqual(models, ['m', 'pkg-asr']);
      assert.equal(s.fixture.record.of('pkg-asr', 'load').length, 1, 'loaded once');
      // An id neither registered nor installed is still a 404.
      const unknown = await post(s.url, '/v1/tasks/run', { model: 'nope', request: { text: 'x' } });
      assert.equal(unknown.status, 404);
    },
  );
});

test('a model entry may name an installed package: family, task and path come from it', async () => {
  const installed = { id: 'pkg-asr', family: 'fixture', task: 'vad', path: '.' };
  await withServer(
    { ui_management: true, models: [{ id: 'by-package', package: 'pkg-asr' }] },
    {
      installerFor: async (root) => {
        const installer = new Installer({ root });
        installer.list = async () => [{ ...installed, size_bytes: 0, installed_at: null, manifest: false }];
        return installer;
      },
    },
    async (s) => {
      const res = await post(s.url, '/v1/tasks/run', { model: 'by-package', request: { text: 'x' } });
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(JSON.parse(res.json.text).task, 'vad', 'the task came from the package');
      const status = (await get(s.url, '/v1/models')).json.data.find(
        (m: { id: string }) => m.id === 'by-package',
      );
      assert.deepEqual([status.family, status.task], ['fixture', 'vad']);
      // A registration names it too; an own task wins over the package's.
      const loaded = await post(s.url, '/v1/models/load', { id: 'second', package: 'pkg-asr', task: 'asr' });
      assert.equal(loaded.status, 200, loaded.body.toString());
      assert.equal(
        (await get(s.url, '/v1/models')).json.data.find((m: { id: string }) => m.id === 'second').task,
        'asr',
      );
      const missing = errorOf(
        await post(s.url, '/v1/models/load', { id: 'third', package: 'nope' }),
        400,
        'invalid_request_error',
      );
      assert.match(
        missing,
        /^package: "nope" is not installed in .*; install it with `voxd models pull nope`/,
      );
      const mismatch = errorOf(
        await post(s.url, '/v1/models/load', { id: 'fourth', package: 'pkg-asr', family: 'silero_vad' }),
        400,
        'invalid_request_error',
      );
      assert.match(
        mismatch,
        /family: "silero_vad" does not match package "pkg-asr", which is a fixture model/,
      );
      const both = errorOf(
        await post(s.url, '/v1/models/load', { id: 'fifth', package: 'pkg-asr', path: '.' }),
        400,
        'invalid_request_error',
      );
      assert.match(both, /package: "pkg-asr" is invalid; a model loads from its package or from a path/);
    },
  );
});
