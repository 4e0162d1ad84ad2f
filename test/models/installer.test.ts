import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { CatalogPackage } from '../../src/models/catalog.js';
import {
  Installer,
  type InstallerOptions,
  type InstallJob,
  MANIFEST,
  type PackageManifest,
} from '../../src/models/installer.js';
import { deferred } from '../../src/util/wait.js';
import { FIXTURES, hasZip, rawTarGz, tarOf, zipOf } from './archives.js';
import { type FileServer, startFileServer } from './file-server.js';

let server: FileServer;
let work: string;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const archives: Record<string, Buffer> = {};

before(async () => {
  server = await startFileServer();
  work = mkdtempSync(join(tmpdir(), 'voxd-installer-'));
  archives.nemo = tarOf('fake-nemo-ctc', join(work, 'nemo.tar.bz2'), 'bz2');
  archives.whisper = tarOf('fake-whisper-en', join(work, 'whisper.tar.gz'), 'gz');
  archives.piper = tarOf('fake-piper', join(work, 'piper.tar.bz2'), 'bz2');
  archives.unknown = tarOf('fake-canary-fp32', join(work, 'unknown.tar.gz'), 'gz');
  server.routes.set('/gh/asr-models/fake-nemo-ctc.tar.bz2', { body: archives.nemo });
  server.routes.set('/gh/tts-models/fake-piper.tar.bz2', { body: archives.piper });
  server.routes.set('/hf/x/resolve/main/segmentation.onnx', {
    body: readFileSync(join(FIXTURES, 'fake-pyannote/segmentation.onnx')),
  });
  server.routes.set('/gh/speaker/embedding.onnx', {
    body: readFileSync(join(FIXTURES, 'fake-pyannote/embedding.onnx')),
  });
});
after(async () => {
  await server.close();
  rmSync(work, { recursive: true, force: true });
});

let roots = 0;
const artifact = (url: string, body?: Buffer, name?: string) => ({
  source: url.startsWith('hf:') ? ('huggingface' as const) : ('github' as const),
  url: url.replace(/^hf:/, ''),
  size_bytes: body ? body.length : null,
  sha256: body ? sha(body) : null,
  ...(name ? { name } : {}),
});
const pkg = (id: string, family: string, task: string, parts: Partial<CatalogPackage>): CatalogPackage => ({
  id,
  family,
  task,
  description: 'test package (unverified)',
  licence: 'test',
  homepage: 'http://example.invalid',
  ...parts,
});

function packages(): CatalogPackage[] {
  return [
    pkg('nemo', 'nemo_ctc_asr', 'asr', {
      archive: artifact('asr-models/fake-nemo-ctc.tar.bz2', archives.nemo),
    }),
    pkg('nemo-bad-sum', 'nemo_ctc_asr', 'asr', {
      archive: { ...artifact('asr-models/fake-nemo-ctc.tar.bz2', archives.nemo), sha256: '0'.repeat(64) },
    }),
    pkg('piper-as-whisper', 'whisper_asr', 'asr', { archive: artifact('tts-models/fake-piper.tar.bz2') }),
    pkg('diar', 'pyannote_diar', 'diar', {
      files: [
        artifact('hf:x/resolve/main/segmentation.onnx', undefined, 'segmentation.onnx'),
        artifact('speaker/embedding.onnx', undefined, 'embedding.onnx'),
      ],
    }),
    pkg('missing', 'nemo_ctc_asr', 'asr', { archive: artifact('asr-models/nowhere.tar.bz2') }),
  ];
}

function installer(options: Omit<InstallerOptions, 'root' | 'packages' | 'env'> = {}) {
  const root = join(work, `root-${++roots}`);
  mkdirSync(root);
  const env = { VOXD_GITHUB_BASE_URL: `${server.base}/gh`, VOXD_HF_BASE_URL: `${server.base}/hf` };
  // The test server is on loopback: URL installs need private hosts allowed (the hub's base is
  // a trusted mirror either way).
  return {
    root,
    installer: new Installer({ root, packages: packages(), env, allowPrivateHosts: true, ...options }),
  };
}

/** The root holds exactly these names (the partial folder included when given). */
const rootHolds = (root: string, names: string[]) => assert.deepEqual(readdirSync(root).sort(), names.sort());

/** A failed job: its message, and its error code (any catalogued one unless `code` is given). */
function assertFailed(job: InstallJob, message: RegExp, code?: string) {
  assert.equal(job.state, 'failed', job.message);
  assert.equal(job.exit_code, 1);
  assert.match(job.message, message);
  assert.ok(job.finished_at_ms >= job.started_at_ms);
  if (code) assert.equal(job.error_code, code, job.message);
  else assert.match(job.error_code ?? '', /^[a-z_]+$/, job.message);
  assert.notEqual(job.error_code, 'internal_error', `a failure voxd catalogues: ${job.message}`);
}

test('a catalogue install (tar.bz2): one folder, recognised, with its manifest; the partial folder is gone', async () => {
  const { root, installer: inst } = installer();
  const first = inst.install('nemo');
  assert.deepEqual([first.state, first.progress_percent, first.exit_code], ['queued', 0, null]);
  const job = await inst.whenDone('nemo');
  assert.equal(job.state, 'complete', job.message);
  assert.equal(job.error_code, null);
  assert.deepEqual(
    [job.progress_percent, job.exit_code, job.downloaded_bytes],
    [100, 0, archives.nemo!.length],
  );
  rootHolds(root, ['.partial', 'nemo']);
  assert.deepEqual(readdirSync(join(root, '.partial')), []);
  assert.deepEqual(readdirSync(join(root, 'nemo')).sort(), [
    MANIFEST,
    'model.int8.onnx',
    'model.onnx',
    'tokens.txt',
  ]);
  const manifest = JSON.parse(readFileSync(join(root, 'nemo', MANIFEST), 'utf8')) as PackageManifest;
  assert.deepEqual(
    [manifest.id, manifest.family, manifest.task, manifest.path, manifest.source_urls],
    ['nemo', 'nemo_ctc_asr', 'asr', '.', [`${server.base}/gh/asr-models/fake-nemo-ctc.tar.bz2`]],
  );
  assert.deepEqual(manifest.files, [
    {
      url: `${server.base}/gh/asr-models/fake-nemo-ctc.tar.bz2`,
      sha256: sha(archives.nemo!),
      size_bytes: archives.nemo!.length,
    },
  ]);
  assert.ok(manifest.size_bytes > 0 && !Number.isNaN(Date.parse(manifest.installed_at)));
  const listed = await inst.list();
  assert.deepEqual(
    listed.map((p) => [p.id, p.family, p.task, p.path, p.manifest]),
    [['nemo', 'nemo_ctc_asr', 'asr', join(root, 'nemo'), true]],
  );
  const sizes = await inst.packageSizes();
  assert.deepEqual(
    sizes.find((r) => r.id === 'nemo'),
    {
      id: 'nemo',
      family: 'nemo_ctc_asr',
      task: 'asr',
      size_bytes: archives.nemo!.length,
      installed: true,
    },
  );
  assert.equal(sizes.find((r) => r.id === 'diar')?.size_bytes, null);
  // A second install of an installed package fails without touching it.
  inst.install('nemo');
  assertFailed(await inst.whenDone('nemo'), /^prepare failed: .*already installed/, 'invalid_request');
  assert.ok(existsSync(join(root, 'nemo', 'model.onnx')));
  const removed = await inst.remove('nemo');
  assert.equal(removed.removed, true);
  assert.deepEqual((await inst.list()).length, 0);
  await assert.rejects(inst.remove('nemo'), { code: 'E_NOT_FOUND' });
});

test('single files from two sources (Hugging Face and GitHub bases) make a pyannote folder', async () => {
  const { root, installer: inst } = installer();
  inst.install('diar');
  const job = await inst.whenDone('diar');
  assert.equal(job.state, 'complete', job.message);
  assert.deepEqual(readdirSync(join(root, 'diar')).sort(), [MANIFEST, 'embedding.onnx', 'segmentation.onnx']);
  const manifest = JSON.parse(readFileSync(join(root, 'diar', MANIFEST), 'utf8')) as PackageManifest;
  assert.equal(manifest.family, 'pyannote_diar');
  assert.equal(manifest.files.length, 2);
});

test('a bare URL (tar.gz): the id comes from the file name and the family is detected', async () => {
  server.routes.set('/any/sherpa-onnx-whisper-tiny.en.tar.gz', { body: archives.whisper! });
  const { root, installer: inst } = installer();
  const job = inst.install({ url: `${server.base}/any/sherpa-onnx-whisper-tiny.en.tar.gz` });
  assert.equal(job.id, 'sherpa-onnx-whisper-tiny.en');
  const done = await inst.whenDone(job.id);
  assert.equal(done.state, 'complete', done.message);
  const [listed] = await inst.list();
  assert.deepEqual([listed?.id, listed?.family, listed?.task], [job.id, 'whisper_asr', 'asr']);
  rootHolds(root, ['.partial', job.id]);
});

test('a bare URL (zip, files at the top level) is unpacked and detected', async (t) => {
  if (!hasZip()) return t.skip('zip not installed');
  server.routes.set('/any/voice.zip', { body: zipOf('fake-piper', join(work, 'voice.zip')) });
  const { installer: inst } = installer();
  inst.install({ url: `${server.base}/any/voice.zip`, id: 'voice' });
  const done = await inst.whenDone('voice');
  assert.equal(done.state, 'complete', done.message);
  assert.equal((await inst.list())[0]?.family, 'piper_tts');
});

test('a cut download fails keeping its bytes; the next install resumes with Range and completes', async () => {
  server.routes.set('/any/cut.tar.bz2', { body: archives.nemo!, cutAfter: 300 });
  const { root, installer: inst } = installer();
  inst.install({ url: `${server.base}/any/cut.tar.bz2`, id: 'cut', sha256: sha(archives.nemo!) });
  assertFailed(await inst.whenDone('cut'), /^download failed: .*connection/, 'download_failed');
  rootHolds(root, ['.partial']);
  const [part] = readdirSync(join(root, '.partial/cut/downloads'));
  const kept = statSync(join(root, '.partial/cut/downloads', part!)).size;
  assert.ok(kept > 0, 'bytes kept');
  server.routes.set('/any/cut.tar.bz2', { body: archives.nemo! });
  inst.install({ url: `${server.base}/any/cut.tar.bz2`, id: 'cut', sha256: sha(archives.nemo!) });
  const job = await inst.whenDone('cut');
  assert.equal(job.state, 'complete', job.message);
  assert.deepEqual(
    server.requests.filter((r) => r.path === '/any/cut.tar.bz2').map((r) => r.range),
    [undefined, `bytes=${kept}-`],
  );
  rootHolds(root, ['.partial', 'cut']);
  assert.deepEqual(readdirSync(join(root, '.partial')), []);
});

test('a server that ignores Range: the download restarts from byte 0 and completes', async () => {
  server.routes.set('/any/norange.tar.bz2', { body: archives.nemo!, cutAfter: 300 });
  const { root, installer: inst } = installer();
  inst.install({ url: `${server.base}/any/norange.tar.bz2`, id: 'norange' });
  assertFailed(await inst.whenDone('norange'), /^download failed/);
  server.routes.set('/any/norange.tar.bz2', { body: archives.nemo!, ignoreRange: true });
  inst.install({ url: `${server.base}/any/norange.tar.bz2`, id: 'norange' });
  const job = await inst.whenDone('norange');
  assert.equal(job.state, 'complete', job.message);
  const manifest = JSON.parse(readFileSync(join(root, 'norange', MANIFEST), 'utf8')) as PackageManifest;
  assert.equal(manifest.files[0]?.sha256, sha(archives.nemo!));
});

test('a stalled server fails the job after the stall timeout, naming it', async () => {
  const gate = deferred();
  server.routes.set('/any/slow.tar.bz2', { body: archives.nemo!, stallAfter: 100, gate: gate.promise });
  const { installer: inst } = installer({ stallTimeoutMs: 150 });
  inst.install({ url: `${server.base}/any/slow.tar.bz2`, id: 'slow' });
  assertFailed(await inst.whenDone('slow'), /^download failed: .*stalled: no data for 150 ms/);
  gate.resolve();
});

test('a 404: the job fails naming the HTTP status, and nothing is left', async () => {
  const { root, installer: inst } = installer();
  inst.install('missing');
  assertFailed(await inst.whenDone('missing'), /^download failed: .*HTTP 404/);
  rootHolds(root, ['.partial']);
  assert.deepEqual(readdirSync(join(root, '.partial')), []);
});

test('a wrong checksum: the job fails and nothing is installed or kept', async () => {
  const { root, installer: inst } = installer();
  inst.install('nemo-bad-sum');
  assertFailed(await inst.whenDone('nemo-bad-sum'), /^download failed: .*sha256 mismatch/);
  assert.deepEqual(readdirSync(join(root, '.partial')), []);
  rootHolds(root, ['.partial']);
});

const hostile: [string, Parameters<typeof rawTarGz>[0], RegExp][] = [
  [
    '../escape',
    [
      { name: 'pkg/tokens.txt', content: 'a 0' },
      { name: '../escape', content: 'x' },
    ],
    /"\.\.\/escape"/,
  ],
  [
    'an absolute path',
    [{ name: '/tmp/voxd-installer-escape', content: 'x' }],
    /"\/tmp\/voxd-installer-escape"/,
  ],
  [
    'a symlink pointing outside',
    [{ name: 'pkg/model.onnx', type: '2', link: '../../../outside' }],
    /"pkg\/model\.onnx"/,
  ],
];
for (const [what, entries, named] of hostile) {
  test(`an archive with ${what}: the job fails naming the entry; nothing is written outside or left`, async () => {
    const path = `/any/hostile-${roots}.tar.gz`;
    server.routes.set(path, { body: rawTarGz(entries) });
    const { root, installer: inst } = installer();
    inst.install({ url: `${server.base}${path}`, id: 'hostile' });
    const job = await inst.whenDone('hostile');
    assertFailed(job, /^unpack failed: archive .* entry /);
    assert.match(job.message, named);
    assert.deepEqual(readdirSync(join(root, '.partial')), []);
    rootHolds(root, ['.partial']);
    assert.ok(!existsSync('/tmp/voxd-installer-escape'));
    assert.ok(!existsSync(join(root, '..', 'escape')) && !existsSync(join(root, 'escape')));
  });
}

test('a folder no family recognises is refused and removed; so is one its catalogue family does not', async () => {
  server.routes.set('/any/unknown.tar.gz', { body: archives.unknown! });
  const { root, installer: inst } = installer();
  inst.install({ url: `${server.base}/any/unknown.tar.gz`, id: 'unknown' });
  assertFailed(await inst.whenDone('unknown'), /^validate failed: no engine family recognises/);
  inst.install('piper-as-whisper');
  assertFailed(
    await inst.whenDone('piper-as-whisper'),
    /^validate failed: whisper_asr does not recognise .*missing/,
  );
  assert.deepEqual(readdirSync(join(root, '.partial')), []);
  rootHolds(root, ['.partial']);
});

test('not enough disk space: refused before the download, nothing left', async () => {
  const { root, installer: inst } = installer({ freeSpace: async () => 100 });
  inst.install('nemo');
  assertFailed(await inst.whenDone('nemo'), /^download failed: .*needs \d+ bytes; .* has 100 free/);
  rootHolds(root, ['.partial']);
  assert.deepEqual(readdirSync(join(root, '.partial')), []);
  server.routes.set('/any/huge.tar.bz2', { body: archives.nemo!, contentLength: 2 ** 52 });
  const real = installer();
  real.installer.install({ url: `${server.base}/any/huge.tar.bz2`, id: 'huge' });
  assertFailed(await real.installer.whenDone('huge'), /needs 4503599627370496 bytes/);
});

test('stop mid-download: cancelling at once, then cancelled with the partial kept; cleanPartial removes it', async () => {
  const gate = deferred();
  server.routes.set('/any/stop.tar.bz2', { body: archives.nemo!, stallAfter: 200, gate: gate.promise });
  const received = deferred();
  const { root, installer: inst } = installer({
    onJobUpdate: (j) => j.downloaded_bytes > 0 && received.resolve(),
  });
  inst.install({ url: `${server.base}/any/stop.tar.bz2`, id: 'stop' });
  await received.promise;
  // While it runs: a second install of the id, a clean-up and a removal are refused.
  assert.throws(() => inst.install({ url: `${server.base}/any/stop.tar.bz2`, id: 'stop' }), {
    code: 'E_INSTALL_ACTIVE',
  });
  assert.deepEqual(
    inst.activeJobs().map((j) => j.id),
    ['stop'],
  );
  assert.throws(() => inst.checkIdle(), { code: 'E_INSTALL_ACTIVE', message: /\(stop\)/ });
  const stopping = inst.stop('stop');
  assert.equal(stopping.state, 'cancelling');
  await assert.rejects(inst.cleanPartial('stop'), { code: 'E_INSTALL_ACTIVE' });
  const job = await inst.whenDone('stop');
  assert.equal(job.state, 'cancelled', job.message);
  assert.equal(job.exit_code, 2);
  assert.deepEqual(inst.activeJobs(), []);
  inst.checkIdle();
  assert.throws(() => inst.stop('stop'), { code: 'E_INVALID_REQUEST' });
  assert.ok(existsSync(join(root, '.partial/stop/downloads')), 'partial kept for a resume');
  assert.equal(job.partial_files, true, 'the job says it left partial files');
  gate.resolve();
  const cleaned = await inst.cleanPartial('stop');
  assert.equal(cleaned.cleaned, true);
  assert.ok(!existsSync(join(root, '.partial/stop')));
  assert.equal(inst.status('stop').partial_files, false, 'and that they are gone');
  rootHolds(root, ['.partial']);
});

test('status: a synthetic idle job for an id without one; every job without an id', async () => {
  const { installer: inst } = installer();
  assert.deepEqual(inst.status('nothing'), {
    id: 'nothing',
    state: 'idle',
    message: 'Not started',
    exit_code: null,
    error_code: null,
    downloaded_bytes: 0,
    total_bytes: 0,
    progress_percent: 0,
    started_at_ms: 0,
    finished_at_ms: 0,
    partial_files: false,
  });
  assert.throws(() => inst.install('no-such-package'), { code: 'E_NOT_FOUND' });
  assert.throws(() => inst.install('../etc'), { code: 'E_INVALID_REQUEST' });
  assert.throws(() => inst.install({ url: 'file:///etc/passwd' }), { code: 'E_INVALID_REQUEST' });
  inst.install('diar');
  await inst.whenDone('diar');
  assert.deepEqual(
    inst.status().map((j) => [j.id, j.state]),
    [['diar', 'complete']],
  );
});

test('list: a folder put there by hand is listed when a family recognises it, other folders are not', async () => {
  const { root, installer: inst } = installer();
  const { execFileSync } = await import('node:child_process');
  execFileSync('cp', ['-r', join(FIXTURES, 'fake-kokoro'), join(root, 'hand-kokoro')]);
  mkdirSync(join(root, 'not-a-model'));
  const listed = await inst.list();
  assert.deepEqual(
    listed.map((p) => [p.id, p.family, p.task, p.installed_at, p.manifest]),
    [['hand-kokoro', 'kokoro_tts', 'tts', null, false]],
  );
  assert.ok(listed[0]!.size_bytes > 0);
});

test('stopAll stops every running job and waits for them', async () => {
  const gate = deferred();
  server.routes.set('/any/all-1.tar.bz2', { body: archives.nemo!, stallAfter: 100, gate: gate.promise });
  server.routes.set('/any/all-2.tar.bz2', { body: archives.nemo!, stallAfter: 100, gate: gate.promise });
  const started = new Set<string>();
  const both = deferred();
  const { installer: inst } = installer({
    onJobUpdate: (j) => {
      if (j.downloaded_bytes > 0) started.add(j.id);
      if (started.size === 2) both.resolve();
    },
  });
  inst.install({ url: `${server.base}/any/all-1.tar.bz2`, id: 'all-1' });
  inst.install({ url: `${server.base}/any/all-2.tar.bz2`, id: 'all-2' });
  await both.promise;
  await inst.stopAll();
  assert.deepEqual(
    inst.status().map((j) => [j.id, j.state]),
    [
      ['all-1', 'cancelled'],
      ['all-2', 'cancelled'],
    ],
  );
  gate.resolve();
});

test('a manifest whose path leaves the folder is ignored', async () => {
  const { root, installer: inst } = installer();
  mkdirSync(join(root, 'odd'));
  writeFileSync(
    join(root, 'odd', MANIFEST),
    JSON.stringify({ family: 'whisper_asr', task: 'asr', path: '../..' }),
  );
  assert.deepEqual(await inst.list(), []);
});
