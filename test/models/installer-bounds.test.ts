/**
 * The installer's bounds (issue 22, item 8): downloads without a length, a full disk, archive
 * bombs (expanded size and entry count, checked from the listing before extraction), job
 * retention, URLs in messages, private download targets, errors that do not tell ports apart, and
 * Python-written zips. A local HTTP server stands in for the hub; disk-full cases run on a real
 * small tmpfs.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Installer, type InstallerOptions, type InstallJob } from '../../src/models/installer.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { fakeNemoPackage, manyFilesTarGz, pythonZip, zerosTarGz } from './archives.js';
import { type FileServer, startFileServer } from './file-server.js';

const MiB = 1024 * 1024;
let hub: FileServer;
let work: string;
let roots = 0;

before(async () => {
  hub = await startFileServer();
  work = mkdtempSync(join(tmpdir(), 'voxd-installer-bounds-'));
});
after(async () => {
  await hub.close();
  rmSync(work, { recursive: true, force: true });
});

function installer(options: Partial<InstallerOptions> = {}, parent = work) {
  const root = join(parent, `root-${++roots}`);
  mkdirSync(root);
  const env = { VOXD_GITHUB_BASE_URL: `${hub.base}/gh`, VOXD_HF_BASE_URL: `${hub.base}/hf` };
  return { root, installer: new Installer({ root, env, allowPrivateHosts: true, ...options }) };
}

function assertFailed(job: InstallJob, message: RegExp) {
  assert.equal(job.state, 'failed', job.message);
  assert.match(job.message, message);
}

/** Nothing left but an empty partial folder. */
const leftNothing = (root: string) => {
  assert.deepEqual(readdirSync(root), ['.partial']);
  assert.deepEqual(readdirSync(join(root, '.partial')), [], 'no partial files of the job');
};

test('a download without Content-Length stops at max_download_bytes and deletes its .part', async () => {
  hub.routes.set('/any/endless.tar.gz', { body: Buffer.alloc(0), endless: true });
  const { root, installer: inst } = installer({ maxDownloadBytes: 4 * MiB });
  inst.install({ url: `${hub.base}/any/endless.tar.gz`, id: 'endless' });
  const job = await inst.whenDone('endless');
  assertFailed(
    job,
    /^download failed: .*sends more than max_download_bytes \(4194304\); the partial file is deleted/,
  );
  assert.ok(job.downloaded_bytes <= 4 * MiB, String(job.downloaded_bytes));
  leftNothing(root);
  // A declared length past the bound is refused before a byte is written.
  hub.routes.set('/any/big.tar.gz', { body: Buffer.alloc(5 * MiB) });
  inst.install({ url: `${hub.base}/any/big.tar.gz`, id: 'big' });
  assertFailed(await inst.whenDone('big'), /the server sends 5242880 bytes, past max_download_bytes/);
  leftNothing(root);
});

test('a disk that fills during a download (real ENOSPC on a 2 MiB tmpfs) is left empty again', async (t) => {
  const disk = mountTmpfs(2 * MiB);
  if (typeof disk === 'string') return t.skip(disk);
  try {
    hub.routes.set('/any/endless.tar.gz', { body: Buffer.alloc(0), endless: true });
    // The free space looks ample (as when another writer fills the disk meanwhile): only the
    // real ENOSPC stops the download.
    const ample = installer({ freeSpace: async () => 1024 * MiB }, disk.dir);
    ample.installer.install({ url: `${hub.base}/any/endless.tar.gz`, id: 'endless' });
    assertFailed(
      await ample.installer.whenDone('endless'),
      /the disk is full \(ENOSPC\); the partial file is deleted/,
    );
    leftNothing(ample.root);
    assert.ok(disk.free() > disk.size * 0.9, `the disk stays full: ${disk.free()} bytes free`);

    // With the real free space, a body of unknown length stops before the disk is full.
    const real = installer({}, disk.dir);
    real.installer.install({ url: `${hub.base}/any/endless.tar.gz`, id: 'endless' });
    assertFailed(await real.installer.whenDone('endless'), /sends more than the \d+ bytes free in/);
    leftNothing(real.root);
    assert.ok(disk.free() > disk.size * 0.9, `${disk.free()} bytes free`);
  } finally {
    disk.unmount();
  }
});

test('a tar.gz bomb (256 MiB of zeros in a few hundred KB) is refused from its listing, before extraction', async (t) => {
  const bomb = await zerosTarGz(join(work, 'bomb.tar.gz'), [{ name: 'bomb/zeros.bin', size: 256 * MiB }]);
  assert.ok(bomb.length < 2 * MiB, `${bomb.length} bytes`);
  hub.routes.set('/any/bomb.tar.gz', { body: bomb });
  const { root, installer: inst } = installer({ maxPackageBytes: 64 * MiB });
  inst.install({ url: `${hub.base}/any/bomb.tar.gz`, id: 'bomb' });
  assertFailed(
    await inst.whenDone('bomb'),
    /^unpack failed: archive .* refused before extraction: it expands to at least \d+ bytes, past max_package_bytes \(67108864\)/,
  );
  leftNothing(root);

  // Within max_package_bytes, but more than the models root has free (a 16 MiB tmpfs).
  const disk = mountTmpfs(16 * MiB);
  if (typeof disk === 'string') return t.skip(disk);
  try {
    const small = installer({}, disk.dir);
    small.installer.install({ url: `${hub.base}/any/bomb.tar.gz`, id: 'bomb' });
    assertFailed(
      await small.installer.whenDone('bomb'),
      /refused before extraction: it expands to 268435456 bytes; .* has \d+ free/,
    );
    leftNothing(small.root);
  } finally {
    disk.unmount();
  }
});

test('archives of more than 20,000 entries (tar.gz and zip) are refused before extraction', async () => {
  hub.routes.set('/any/many.tar.gz', { body: manyFilesTarGz(25_000) });
  const { root, installer: inst } = installer();
  inst.install({ url: `${hub.base}/any/many.tar.gz`, id: 'many' });
  assertFailed(await inst.whenDone('many'), /refused before extraction: more than 20000 entries/);
  leftNothing(root);
  hub.routes.set('/any/many.zip', { body: pythonZip(join(work, 'many.zip'), { count: 25_000 }) });
  inst.install({ url: `${hub.base}/any/many.zip`, id: 'many-zip' });
  assertFailed(await inst.whenDone('many-zip'), /refused before extraction: more than 20000 entries/);
  hub.routes.set('/any/zeros.zip', { body: pythonZip(join(work, 'zeros.zip'), { zeros: 128 * MiB }) });
  const bounded = installer({ maxPackageBytes: 16 * MiB });
  bounded.installer.install({ url: `${hub.base}/any/zeros.zip`, id: 'zeros' });
  assertFailed(
    await bounded.installer.whenDone('zeros'),
    /refused before extraction: it expands to 134217728 bytes, past max_package_bytes/,
  );
  leftNothing(bounded.root);
});

test('a zip written by Python (modes without file-type bits) installs', async () => {
  hub.routes.set('/any/py-voice.zip', { body: pythonZip(join(work, 'py.zip'), { fixture: 'fake-piper' }) });
  const { installer: inst } = installer();
  inst.install({ url: `${hub.base}/any/py-voice.zip`, id: 'py-voice' });
  const done = await inst.whenDone('py-voice');
  assert.equal(done.state, 'complete', done.message);
  assert.equal((await inst.list())[0]?.family, 'piper_tts');
});

test('finished jobs are kept for the last 50 and for an hour at most', async () => {
  let now = 1_000_000;
  const { installer: inst } = installer({ now: () => now });
  for (let i = 0; i < 51; i++) {
    inst.install({ url: `${hub.base}/any/missing-${i}.tar.gz`, id: `job-${i}` });
    assertFailed(await inst.whenDone(`job-${i}`), /HTTP 404/);
    now += 1000;
  }
  const kept = inst.status();
  assert.equal(kept.length, 50);
  assert.equal(inst.status('job-0').state, 'idle', 'the oldest is forgotten');
  assert.equal(inst.status('job-50').state, 'failed');
  now += 60 * 60 * 1000 - 1000;
  assert.equal(inst.status().length, 1, 'only the last, finished an hour ago, is left');
  now += 1001;
  assert.deepEqual(inst.status(), []);
});

test('job messages never carry a URL user, password or query, and stay short', async () => {
  const { installer: inst } = installer();
  const secret = hub.base.replace('http://', 'http://alice:s3cret-pass@');
  inst.install({ url: `${secret}/any/missing.tar.gz?token=hf_s3cret`, id: 'secret' });
  const job = await inst.whenDone('secret');
  assertFailed(job, /HTTP 404/);
  assert.ok(!/alice|s3cret/.test(job.message), job.message);
  inst.install({ url: `${hub.base}/any/${'x'.repeat(10_000)}.tar.gz`, id: 'long' });
  const long = await inst.whenDone('long');
  assertFailed(long, /HTTP 404/);
  assert.ok(long.message.length <= 500, `${long.message.length} characters`);
});

test('private targets are refused without installer_allow_private_hosts, by address, by name and after a redirect', async () => {
  const port = new URL(hub.base).port;
  hub.routes.set('/any/ok.tar.bz2', { body: Buffer.from('x') });
  const before = hub.requests.length;
  const { root, installer: inst } = installer({ allowPrivateHosts: false });
  for (const url of [
    `${hub.base}/any/ok.tar.bz2`,
    `http://[::1]:${port}/any/ok.tar.bz2`,
    `http://[::ffff:127.0.0.1]:${port}/x.tar.gz`,
    'http://169.254.169.254/latest/meta-data.tar.gz',
    'http://10.1.2.3/x.tar.gz',
    'http://192.168.1.1/x.tar.gz',
    'http://0.0.0.0/x.tar.gz',
  ])
    assert.throws(
      () => inst.install({ url, id: 'private' }),
      (err: Error & { code?: string }) =>
        err.code === 'E_INVALID_REQUEST' &&
        /loopback, link-local or private address; set installer_allow_private_hosts/.test(err.message),
      url,
    );
  // A name that resolves to loopback is refused when the connection looks it up.
  inst.install({ url: `http://localhost:${port}/any/ok.tar.bz2`, id: 'by-name' });
  assertFailed(await inst.whenDone('by-name'), /refused: localhost \((127\.0\.0\.1|::1)\) is a loopback/);
  assert.equal(hub.requests.length, before, 'nothing reached the server');
  // The operator's mirror (VOXD_GITHUB_BASE_URL) is trusted; its redirect to another origin is not.
  hub.routes.set('/gh/asr-models/moved.tar.bz2', {
    body: Buffer.alloc(0),
    redirectTo: `http://localhost:${port}/any/ok.tar.bz2`,
  });
  const mirrored = new Installer({
    root,
    env: { VOXD_GITHUB_BASE_URL: `${hub.base}/gh` },
    packages: [fakeNemoPackage('moved', 'asr-models/moved.tar.bz2', 0)],
  });
  mirrored.install('moved');
  assertFailed(await mirrored.whenDone('moved'), /refused: localhost \((127\.0\.0\.1|::1)\)/);
  assert.deepEqual(
    hub.requests.slice(before).map((r) => r.path),
    ['/gh/asr-models/moved.tar.bz2'],
    'the mirror was asked, the redirect target was not',
  );
});

test('a closed port, a port that speaks no HTTP and one that hangs up read the same', async () => {
  const listen = (onConnect: (s: import('node:net').Socket) => void) =>
    new Promise<Server>((resolve) => {
      const server = createServer(onConnect);
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
  const garbage = await listen((s) => s.end('SSH-2.0-OpenSSH_9.6\r\n'));
  const hangup = await listen((s) => s.destroy());
  const closed = await listen(() => {});
  const closedPort = (closed.address() as import('node:net').AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  try {
    const { installer: inst } = installer();
    const ports = [
      closedPort,
      (garbage.address() as import('node:net').AddressInfo).port,
      (hangup.address() as import('node:net').AddressInfo).port,
    ];
    const messages: string[] = [];
    for (const [i, port] of ports.entries()) {
      inst.install({ url: `http://127.0.0.1:${port}/x.tar.gz`, id: `port-${i}` });
      const job = await inst.whenDone(`port-${i}`);
      assert.equal(job.state, 'failed');
      messages.push(job.message.replaceAll(String(port), 'PORT'));
    }
    assert.deepEqual(messages, Array(3).fill(messages[0]), messages.join('\n'));
    assert.match(
      messages[0]!,
      /could not reach 127\.0\.0\.1:PORT: no HTTP answer \(is this machine offline, or is the host down\?\)$/,
    );
  } finally {
    garbage.close();
    hangup.close();
  }
});
