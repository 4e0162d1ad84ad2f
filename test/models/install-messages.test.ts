/**
 * Installer failures read as a person would write them (issue 23, item 5): a hub that cannot be
 * reached (a name that does not resolve, a refused connection, a silent one) is told apart from an
 * HTTP error (404, 403, 5xx), the step says "failed" once, and an unreachable catalogue source
 * names the mirror variable. `nohub.invalid` is a reserved name that never resolves; the other
 * hosts are local servers of this test (a closed port, a silent one, a file server).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { mirrorHint } from '../../src/models/catalog.js';
import { download } from '../../src/models/download.js';
import { Installer, type InstallJob } from '../../src/models/installer.js';
import { fakeNemoPackage } from './archives.js';
import { type FileServer, startFileServer } from './file-server.js';

const UNRESOLVABLE = 'nohub.invalid';
let hub: FileServer;
let work: string;
let roots = 0;
let closedPort: number;
let silent: Server;
const held: Socket[] = [];

before(async () => {
  hub = await startFileServer();
  work = mkdtempSync(join(tmpdir(), 'voxd-install-messages-'));
  const closed = await listen(() => {});
  closedPort = port(closed);
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  // Takes the connection and never answers: the request's timeout ends it.
  silent = await listen((socket) => held.push(socket));
});
after(async () => {
  for (const socket of held) socket.destroy();
  silent?.close();
  await hub?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

function listen(onConnect: (socket: Socket) => void): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer(onConnect);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}
const port = (server: Server) => (server.address() as import('node:net').AddressInfo).port;

/** Installs catalogue package `gone` (one archive from the github source) through mirror `base`. */
async function installThrough(base: string, options: { stallTimeoutMs?: number } = {}): Promise<InstallJob> {
  const root = join(work, `root-${++roots}`);
  mkdirSync(root);
  const installer = new Installer({
    root,
    env: { VOXD_GITHUB_BASE_URL: base },
    packages: [fakeNemoPackage('gone', 'asr-models/gone.tar.bz2', 100)],
    ...options,
  });
  installer.install('gone');
  return installer.whenDone('gone');
}

function assertReadsWell(job: InstallJob, expected: string) {
  assert.equal(job.state, 'failed', job.message);
  assert.equal(job.message, expected);
  assert.equal(job.message.match(/failed/g)?.length, 1, `"failed" once: ${job.message}`);
  assert.doesNotMatch(job.message, /getaddrinfo|ENOTFOUND|ECONNREFUSED|EAI_AGAIN|\d+ B of/);
}

test('a hub whose name does not resolve: "could not reach", offline asked, the mirror variable named', async () => {
  const job = await installThrough(`http://${UNRESOLVABLE}/gh`);
  assertReadsWell(
    job,
    `download failed: could not reach ${UNRESOLVABLE}: its name does not resolve (is this machine offline?); the download goes through the mirror VOXD_GITHUB_BASE_URL names`,
  );
});

test('a refused connection and a silent one read the same: no HTTP answer', async () => {
  const refused = await installThrough(`http://127.0.0.1:${closedPort}/gh`);
  const timedOut = await installThrough(`http://127.0.0.1:${port(silent)}/gh`, { stallTimeoutMs: 200 });
  const tail =
    'no HTTP answer (is this machine offline, or is the host down?); the download goes through the mirror VOXD_GITHUB_BASE_URL names';
  assertReadsWell(refused, `download failed: could not reach 127.0.0.1:${closedPort}: ${tail}`);
  assertReadsWell(timedOut, `download failed: could not reach 127.0.0.1:${port(silent)}: ${tail}`);
});

test('without a mirror, the hint says which variable installs from one', () => {
  assert.equal(
    mirrorHint('github', {}),
    'to install from a mirror, set VOXD_GITHUB_BASE_URL to its base URL',
  );
  assert.equal(
    mirrorHint('huggingface', {}),
    'to install from a mirror, set VOXD_HF_BASE_URL to its base URL',
  );
  assert.equal(
    mirrorHint('huggingface', { VOXD_HF_BASE_URL: 'http://mirror.lan/hf' }),
    'the download goes through the mirror VOXD_HF_BASE_URL names',
  );
});

test('a URL install from a host that does not resolve: no mirror hint (no catalogue source is involved)', async () => {
  const root = join(work, `root-${++roots}`);
  mkdirSync(root);
  const installer = new Installer({ root, env: {} });
  installer.install({ url: `http://${UNRESOLVABLE}/models/m.tar.gz`, id: 'm' });
  assertReadsWell(
    await installer.whenDone('m'),
    `download failed: could not reach ${UNRESOLVABLE}: its name does not resolve (is this machine offline?)`,
  );
});

test('HTTP errors are not "unreachable": a 404 is no such file, a 403 a refusal, a 5xx the server failing', async () => {
  const cases: [number, string][] = [
    [404, 'there is no such file on HOST: HTTP 404 Not Found'],
    [410, 'there is no such file on HOST: HTTP 410 Gone'],
    [403, 'HOST refused to send it: HTTP 403 Forbidden'],
    [503, 'HOST could not send it: HTTP 503 Service Unavailable; try again later'],
    [500, 'HOST could not send it: HTTP 500 Internal Server Error; try again later'],
    [418, "HOST answered HTTP 418 I'm a Teapot"],
  ];
  const host = new URL(hub.base).host;
  for (const [status, what] of cases) {
    hub.routes.set('/gh/asr-models/gone.tar.bz2', { body: Buffer.alloc(0), status });
    const job = await installThrough(`${hub.base}/gh`);
    assertReadsWell(
      job,
      `download failed: ${hub.base}/gh/asr-models/gone.tar.bz2: ${what.replace('HOST', host)}`,
    );
  }
  // Redirected elsewhere, the message says where the answer came from.
  hub.routes.set('/gh/asr-models/gone.tar.bz2', { body: Buffer.alloc(0), redirectTo: '/cdn/gone.tar.bz2' });
  assertReadsWell(
    await installThrough(`${hub.base}/gh`),
    `download failed: ${hub.base}/gh/asr-models/gone.tar.bz2: there is no such file on ${host} (redirected to ${hub.base}/cdn/gone.tar.bz2): HTTP 404 Not Found`,
  );
});

test('download() tells the two apart by code: E_HOST_UNREACHABLE, E_DOWNLOAD', async () => {
  const dest = join(work, 'one.bin');
  const hosts = { allowPrivate: true, trustedOrigins: [] };
  await assert.rejects(download({ url: `http://${UNRESOLVABLE}/x.bin`, dest, hosts }), {
    code: 'E_HOST_UNREACHABLE',
  });
  await assert.rejects(download({ url: `http://127.0.0.1:${closedPort}/x.bin`, dest, hosts }), {
    code: 'E_HOST_UNREACHABLE',
  });
  hub.routes.set('/x.bin', { body: Buffer.alloc(0), status: 404 });
  await assert.rejects(download({ url: `${hub.base}/x.bin`, dest, hosts }), { code: 'E_DOWNLOAD' });
});
