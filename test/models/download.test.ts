import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type DownloadOptions, download as downloadAny, partialPath } from '../../src/models/download.js';
import { deferred } from '../../src/util/wait.js';
import { type FileServer, startFileServer } from './file-server.js';

const body = randomBytes(64 * 1024);
const sha = createHash('sha256').update(body).digest('hex');
let server: FileServer;
let dir: string;

before(async () => {
  server = await startFileServer();
  dir = mkdtempSync(join(tmpdir(), 'voxd-download-'));
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The test server is on loopback, which the installer refuses by default (see the host tests). */
const download = (options: DownloadOptions) =>
  downloadAny({ hosts: { allowPrivate: true, trustedOrigins: [] }, ...options });

const fresh = (name: string) => join(dir, name);
const rangesOf = (path: string) => server.requests.filter((r) => r.path === path).map((r) => r.range);

test('a whole download: size and sha256 checked, progress reported, the .part renamed away', async () => {
  server.routes.set('/a.bin', { body });
  const seen: [number, number | null][] = [];
  const dest = fresh('a.bin');
  const result = await download({
    url: `${server.base}/a.bin`,
    dest,
    expectedSize: body.length,
    sha256: sha,
    onProgress: (n, total) => seen.push([n, total]),
  });
  assert.deepEqual([result.size, result.sha256, result.resumedFrom], [body.length, sha, 0]);
  assert.deepEqual(readFileSync(dest), body);
  assert.ok(!existsSync(partialPath(dest)));
  assert.deepEqual(seen.at(-1), [body.length, body.length]);
});

test('redirects are followed (relative Location)', async () => {
  server.routes.set('/moved', { body, redirectTo: '/a.bin' });
  const result = await download({ url: `${server.base}/moved`, dest: fresh('moved.bin'), sha256: sha });
  assert.equal(result.size, body.length);
});

test('a connection cut mid-download keeps the .part; the next attempt sends Range and completes', async () => {
  server.routes.set('/cut.bin', { body, cutAfter: 10_000 });
  const dest = fresh('cut.bin');
  await assert.rejects(download({ url: `${server.base}/cut.bin`, dest, sha256: sha }), {
    code: 'E_DOWNLOAD',
  });
  const kept = statSync(partialPath(dest)).size;
  assert.ok(kept > 0 && kept <= 10_000, `kept ${kept}`);
  server.routes.set('/cut.bin', { body });
  const result = await download({ url: `${server.base}/cut.bin`, dest, sha256: sha });
  assert.deepEqual([result.resumedFrom, result.sha256], [kept, sha]);
  assert.deepEqual(rangesOf('/cut.bin'), [undefined, `bytes=${kept}-`]);
  assert.deepEqual(readFileSync(dest), body);
});

test('a server that ignores Range (200) restarts the file from byte 0', async () => {
  server.routes.set('/norange.bin', { body, cutAfter: 5000 });
  const dest = fresh('norange.bin');
  await assert.rejects(download({ url: `${server.base}/norange.bin`, dest }), { code: 'E_DOWNLOAD' });
  server.routes.set('/norange.bin', { body, ignoreRange: true });
  const result = await download({ url: `${server.base}/norange.bin`, dest, sha256: sha });
  assert.equal(result.resumedFrom, 0);
  assert.equal(rangesOf('/norange.bin')[1]?.startsWith('bytes='), true);
  assert.deepEqual(readFileSync(dest), body);
});

test('a stalled response fails with E_DOWNLOAD_STALLED after the stall timeout', async () => {
  const gate = deferred();
  server.routes.set('/slow.bin', { body, stallAfter: 1000, gate: gate.promise });
  const dest = fresh('slow.bin');
  await assert.rejects(download({ url: `${server.base}/slow.bin`, dest, stallTimeoutMs: 150 }), {
    code: 'E_DOWNLOAD_STALLED',
  });
  gate.resolve();
  assert.ok(existsSync(partialPath(dest)), 'kept for a resume');
});

test('an HTTP error names the status and leaves no file', async () => {
  const dest = fresh('missing.bin');
  await assert.rejects(download({ url: `${server.base}/missing.bin`, dest }), (err: Error) => {
    assert.equal((err as { code?: string }).code, 'E_DOWNLOAD');
    assert.match(err.message, /HTTP 404/);
    return true;
  });
  assert.ok(!existsSync(dest) && !existsSync(partialPath(dest)));
});

test('a wrong sha256 or size fails and deletes the bytes', async () => {
  const dest = fresh('bad.bin');
  await assert.rejects(download({ url: `${server.base}/a.bin`, dest, sha256: '0'.repeat(64) }), {
    code: 'E_DOWNLOAD',
  });
  await assert.rejects(download({ url: `${server.base}/a.bin`, dest, expectedSize: body.length + 1 }), {
    code: 'E_DOWNLOAD',
  });
  assert.ok(!existsSync(dest) && !existsSync(partialPath(dest)));
});

test('an abort stops the download at once with the signal reason and keeps the .part', async () => {
  const gate = deferred();
  server.routes.set('/abort.bin', { body, stallAfter: 2000, gate: gate.promise });
  const dest = fresh('abort.bin');
  const controller = new AbortController();
  const sent = server.sent('/abort.bin');
  const reached = deferred();
  const running = download({
    url: `${server.base}/abort.bin`,
    dest,
    signal: controller.signal,
    onProgress: (n) => n > 0 && reached.resolve(),
  });
  await sent;
  await reached.promise;
  const reason = new Error('stop');
  controller.abort(reason);
  await assert.rejects(running, (err) => err === reason);
  gate.resolve();
  assert.ok(statSync(partialPath(dest)).size > 0);
});

test('a download larger than the free space is refused before any byte is written', async () => {
  server.routes.set('/huge.bin', { body, contentLength: 2 ** 52 });
  const dest = fresh('huge.bin');
  await assert.rejects(download({ url: `${server.base}/huge.bin`, dest }), {
    code: 'E_INSUFFICIENT_STORAGE',
  });
  await assert.rejects(
    download({ url: `${server.base}/a.bin`, dest: fresh('small.bin'), freeSpace: async () => 10 }),
    { code: 'E_INSUFFICIENT_STORAGE' },
  );
  assert.ok(!existsSync(partialPath(dest)));
});

test('a file finished by an earlier attempt is reused when it checks out, fetched again when not', async () => {
  server.routes.set('/reuse.bin', { body });
  const dest = fresh('reuse.bin');
  await download({ url: `${server.base}/reuse.bin`, dest, sha256: sha });
  const before = rangesOf('/reuse.bin').length;
  const again = await download({ url: `${server.base}/reuse.bin`, dest, sha256: sha });
  assert.deepEqual(
    [again.resumedFrom, again.sha256, rangesOf('/reuse.bin').length],
    [body.length, sha, before],
  );
  writeFileSync(dest, 'tampered');
  const fetched = await download({ url: `${server.base}/reuse.bin`, dest, sha256: sha });
  assert.deepEqual([fetched.resumedFrom, rangesOf('/reuse.bin').length], [0, before + 1]);
  assert.deepEqual(readFileSync(dest), body);
});

test('an abort before the body arrives still stops the download', async () => {
  const controller = new AbortController();
  const reason = new Error('early stop');
  server.routes.set('/early.bin', { body });
  const running = download({
    url: `${server.base}/early.bin`,
    dest: fresh('early.bin'),
    signal: controller.signal,
    freeSpace: async () => {
      controller.abort(reason);
      return 2 ** 40;
    },
  });
  await assert.rejects(running, (err) => err === reason);
});

test('a full disk during the download (ENOSPC) is E_INSUFFICIENT_STORAGE', async (t) => {
  if (!existsSync('/dev/full')) return t.skip('no /dev/full');
  const dest = fresh('full.bin');
  // Writes to /dev/full fail with ENOSPC: the partial file is made a link to it.
  symlinkSync('/dev/full', partialPath(dest));
  await assert.rejects(download({ url: `${server.base}/a.bin`, dest }), {
    code: 'E_INSUFFICIENT_STORAGE',
    message: /ENOSPC/,
  });
});
