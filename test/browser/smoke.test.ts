/**
 * The browser-test chain end to end: a real voxd on loopback, Debian's headless chromium driven by
 * playwright-core, pages read back from the browser. Navigates to voxd's own URLs only (a page on
 * another origin calling the API would be a CORS test, not a smoke test).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser, pageJson, useBrowser, WAIT_MS, withBrowser } from '../helpers/browser.js';
import { fixtureModel, startServer, type TestServer, withDeadline } from '../helpers/voxd.js';

const browser = useBrowser();
let server: TestServer;

before(async () => {
  server = await startServer({ models: [fixtureModel('asr-a'), fixtureModel('tts-b', { task: 'tts' })] });
});
after(async () => {
  await server?.close();
});

test('chromium reads GET /health from voxd: status ok', async (t) => {
  t.diagnostic(`chromium launched and connected in ${browser.get().launchMs} ms`);
  const { page, consoleErrors, pageErrors } = await browser.get().openPage(`${server.url}/health`);
  const health = (await pageJson(page)) as Record<string, unknown>;
  assert.equal(health['status'], 'ok');
  assert.equal(health['models'], 2);
  assert.deepEqual(consoleErrors, []);
  assert.deepEqual(pageErrors, []);
  // Taken in memory: a JSON page is no picture for docs/images (VOXD_SCREENSHOTS=1 writes there).
  const png = await page.screenshot({ timeout: WAIT_MS });
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
});

test('chromium reads GET /v1/models from voxd: both fixture models', async () => {
  const { page, consoleErrors } = await browser.get().openPage(`${server.url}/v1/models`);
  const models = (await pageJson(page)) as { data: { id: string }[] };
  assert.deepEqual(models.data.map((m) => m.id).sort(), ['asr-a', 'tts-b']);
  assert.deepEqual(consoleErrors, []);
});

test('a page error is collected, and one nobody accepted fails the test when the browser closes', async (t) => {
  const throwLater = 'setTimeout(() => { throw new Error("boom from the page") }, 0)';
  // Accepted: the helper collects it, the test takes it, the close succeeds.
  const opened = await browser.get().openPage(`${server.url}/health`);
  const seen = opened.page.waitForEvent('pageerror');
  await opened.page.evaluate(throwLater);
  assert.match((await seen).message, /boom from the page/);
  assert.equal(opened.acceptPageErrors().length, 1);
  // Not accepted, in a browser of its own: withBrowser rejects after closing it.
  const started = performance.now();
  await assert.rejects(
    withBrowser(async (own) => {
      const { page } = await own.openPage(`${server.url}/health`);
      const error = page.waitForEvent('pageerror');
      await page.evaluate(throwLater);
      await error;
    }),
    /uncaught page error: Error: boom from the page/,
  );
  t.diagnostic(`a second browser launched, used and closed in ${Math.round(performance.now() - started)} ms`);
});

test('a browser that hangs on close is killed by pid, within the close deadline', async (t) => {
  const own = await launchBrowser();
  const pid = own.pid;
  assert.ok(pid !== undefined);
  await own.openPage(`${server.url}/health`);
  // Freeze chromium and its renderers: it can no longer answer the close.
  process.kill(-pid, 'SIGSTOP');
  const started = performance.now();
  await withDeadline(own.close(), 'the hung browser to be killed', 20_000);
  t.diagnostic(`a hung browser was killed in ${Math.round(performance.now() - started)} ms`);
  assert.equal(own.closedBy, 'killed');
  assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
});

test('a missing chromium fails with the fix, it is never skipped', async () => {
  await assert.rejects(
    launchBrowser('/nonexistent/chromium'),
    /run `npm test` \(or `node scripts\/setup.mjs --for-tests`\) as root/,
  );
});
