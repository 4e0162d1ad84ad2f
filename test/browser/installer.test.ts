/**
 * The installer panel in Chromium against a real voxd whose catalogue and hub are this test's: a
 * local HTTP server stands in for the model hub (none can be reached here) and serves an archive of
 * a fake NeMo CTC folder. The download is held half-way by a gate, so the progress bar is seen
 * moving, not guessed at; then the package is listed as installed, loaded into the model table and
 * deleted. A second download is stopped from the page and its partial files cleaned. A third, from a
 * hub that cannot be reached, fails: its bar stops and its message reads as a person would say it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { Installer } from '../../src/models/installer.js';
import { deferred } from '../../src/util/wait.js';
import { screenshot, useBrowser } from '../helpers/browser.js';
import { fixtureModel, startServer, type TestServer } from '../helpers/voxd.js';
import { fakeNemoPackage, tarOf } from '../models/archives.js';
import { type FileServer, startFileServer } from '../models/file-server.js';

const browser = useBrowser();
let hub: FileServer;
let work: string;
let archive: Buffer;
let s: TestServer;

const pkg = (id: string) => fakeNemoPackage(id, `asr-models/${id}.tar.bz2`, archive.length);

before(async () => {
  hub = await startFileServer();
  work = mkdtempSync(join(tmpdir(), 'voxd-browser-install-'));
  archive = tarOf('fake-nemo-ctc', join(work, 'nemo.tar.bz2'), 'bz2');
  // One package from a Hugging Face mirror that does not resolve (a reserved name), its size unknown.
  const offline = fakeNemoPackage('fake-offline', 'x/resolve/main/model.tar.bz2', 0);
  offline.archive = {
    source: 'huggingface',
    url: 'x/resolve/main/model.tar.bz2',
    size_bytes: null,
    sha256: null,
  };
  const packages = [pkg('fake-nemo'), pkg('fake-stopped'), offline];
  const env = { VOXD_GITHUB_BASE_URL: `${hub.base}/gh`, VOXD_HF_BASE_URL: 'http://nohub.invalid/hf' };
  s = await startServer(
    { ui: true, ui_management: true, models: [fixtureModel('m')] },
    { installerFor: async (root) => new Installer({ root, packages, env }) },
  );
});
after(async () => {
  await s?.close();
  await hub?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const row = (page: Page, id: string) => page.locator(`tr[data-package="${id}"]`);
/** The State column of a package row (Package, Family, Task, Size, State). */
const stateOf = (page: Page, id: string) => row(page, id).locator('td:nth-child(5)');
const sizeOf = (page: Page, id: string) => row(page, id).locator('td:nth-child(4)');

async function openInstaller(): Promise<Page> {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await page.locator('button[data-tab="installer"]').click();
  await page.locator('#root-path').waitFor();
  return page;
}

test('install a package from the (local) hub: the progress bar moves, then it is listed, loads into the model table, and is deleted', async () => {
  const gate = deferred();
  const path = '/gh/asr-models/fake-nemo.tar.bz2';
  const half = Math.floor(archive.length / 2);
  hub.routes.set(path, { body: archive, stallAfter: half, gate: gate.promise });
  const page = await openInstaller();
  assert.equal(await page.locator('#root-path').inputValue(), join(s.dir, 'models'));
  await stateOf(page, 'fake-nemo')
    .filter({ hasText: /^not installed$/ })
    .waitFor();

  const sent = hub.sent(path);
  await row(page, 'fake-nemo')
    .locator('button', { hasText: /^Install$/ })
    .click();
  await sent;
  // Half of the archive is sent and the rest held: the page shows the job running part-way.
  await page.locator('#job[data-state="running"]').waitFor();
  type Progress = { document: { getElementById(id: string): { value: number } } };
  await page.waitForFunction(
    (expected) => {
      const value = (globalThis as unknown as Progress).document.getElementById('job-progress').value;
      return value >= expected - 1 && value < 100;
    },
    Math.floor((100 * half) / archive.length),
  );
  await screenshot(page, 'installer');
  gate.resolve();

  await page.locator('#job[data-state="complete"]').waitFor();
  await stateOf(page, 'fake-nemo')
    .filter({ hasText: /^installed$/ })
    .waitFor();
  assert.ok(existsSync(join(s.dir, 'models', 'fake-nemo')), 'the package folder is in the models root');

  // Load: registered under the package's id, it appears in the model table, ready.
  await row(page, 'fake-nemo')
    .locator('button', { hasText: /^Load$/ })
    .click();
  await page.locator('button[data-tab="dashboard"]').click();
  await page.locator('tr[data-model="fake-nemo"] td:nth-child(5)', { hasText: /^ready$/ }).waitFor();
  assert.equal(s.voxd.runtime.get('fake-nemo').config.package, 'fake-nemo');

  // Loaded, its files are in use: the server's refusal is shown as worded. Unloaded, it goes.
  await page.locator('button[data-tab="installer"]').click();
  await row(page, 'fake-nemo')
    .locator('button', { hasText: /^Delete$/ })
    .click();
  await page
    .locator('#error', { hasText: "package fake-nemo is loaded as model 'fake-nemo'; unload it first" })
    .waitFor();
  await page.locator('button[data-tab="dashboard"]').click();
  await page.locator('tr[data-model="fake-nemo"] button', { hasText: /^Unload$/ }).click();
  await page.locator('tr[data-model="fake-nemo"] td:nth-child(5)', { hasText: /^unloaded$/ }).waitFor();
  await page.locator('button[data-tab="installer"]').click();
  await row(page, 'fake-nemo')
    .locator('button', { hasText: /^Delete$/ })
    .click();
  await stateOf(page, 'fake-nemo')
    .filter({ hasText: /^not installed$/ })
    .waitFor();
  assert.equal(existsSync(join(s.dir, 'models', 'fake-nemo')), false);
});

test('a download stopped from the page ends cancelled, and its partial files are cleaned from it', async () => {
  const gate = deferred();
  const path = '/gh/asr-models/fake-stopped.tar.bz2';
  hub.routes.set(path, { body: archive, stallAfter: 1000, gate: gate.promise });
  const page = await openInstaller();
  const sent = hub.sent(path);
  await row(page, 'fake-stopped')
    .locator('button', { hasText: /^Install$/ })
    .click();
  await sent;
  await page.locator('#job[data-state="running"]').waitFor();
  await page.locator('#job-stop').click();
  await page.locator('#job[data-state="cancelled"]').waitFor();
  gate.resolve();
  const partial = join(s.dir, 'models', '.partial', 'fake-stopped');
  assert.ok(existsSync(partial), `the stopped download left ${partial}`);
  await page.locator('#job-clean').click();
  await page.locator('#job').waitFor({ state: 'hidden' });
  assert.equal(existsSync(partial), false, 'cleaned');
  assert.equal(await stateOf(page, 'fake-stopped').textContent(), 'not installed');
});

test('the folder browser walks the models root and sets a folder it shows as the new root', async () => {
  const alt = join(s.dir, 'models', 'alt');
  mkdirSync(alt, { recursive: true });
  const page = await openInstaller();
  await page.locator('#browse').click();
  await page.locator('#browse-current', { hasText: join(s.dir, 'models') }).waitFor();
  const entry = page.locator('#browse-list li', { has: page.locator('button', { hasText: /^alt$/ }) });
  await entry.locator('button', { hasText: /^alt$/ }).click();
  await page.locator('#browse-current', { hasText: alt }).waitFor();
  await page.locator('#browse-list button', { hasText: /^\.\.$/ }).click();
  await page.locator('#browse-current', { hasText: /models$/ }).waitFor();
  await entry.locator('button', { hasText: /^Use$/ }).click();
  assert.equal(await page.locator('#root-path').inputValue(), alt);
  const reread = page.waitForResponse(
    (res) => res.url().endsWith('/v1/ui/models-root') && res.request().method() === 'GET',
  );
  await page.locator('#root-form button[type=submit]').click();
  assert.equal((await reread).status(), 200);
  assert.equal(s.voxd.runtime.modelsRoot.root, alt);
  assert.equal(await page.locator('#error').isVisible(), false);
});

test('a hub that cannot be reached: the job fails in plain words, its bar stops, its size reads "unknown"', async () => {
  const page = await openInstaller();
  await stateOf(page, 'fake-offline')
    .filter({ hasText: /^not installed$/ })
    .waitFor();
  assert.equal(await sizeOf(page, 'fake-offline').textContent(), 'unknown');
  await row(page, 'fake-offline')
    .locator('button', { hasText: /^Install$/ })
    .click();
  await page.locator('#job[data-state="failed"]').waitFor();
  // The name does not resolve; on a loaded machine whose resolver is slow, the stall timeout may
  // come first, and the host then gave no HTTP answer: either is the plain, exact sentence.
  assert.match(
    (await page.locator('#job-text').textContent()) ?? '',
    /^fake-offline: download failed: could not reach nohub\.invalid: (its name does not resolve \(is this machine offline\?\)|no HTTP answer \(is this machine offline, or is the host down\?\)); the download goes through the mirror VOXD_HF_BASE_URL names$/,
  );
  // A progress element without a value is the browser's endless "working" animation.
  const bar = await page.evaluate(
    "(({ position, value, max }) => ({ position, value, max }))(document.getElementById('job-progress'))",
  );
  assert.deepEqual(bar, { position: 0, value: 0, max: 100 }, 'the bar stands still at the failure');
  assert.equal(await page.locator('#job-stop').isVisible(), false, 'nothing left to stop');
  assert.equal(
    await page.locator('#job-clean').isVisible(),
    false,
    'nothing was downloaded, nothing to clean',
  );
});
