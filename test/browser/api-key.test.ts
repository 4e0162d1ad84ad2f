/**
 * The web UI on a server with API keys, in a real Chromium: without a key the banner tells a person
 * where to type one (not which header to send); a wrong key says it is not valid; the right key,
 * typed into the field, applies at once: the model table goes live, the playground lists its models
 * and the banner goes, all without a reload.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { useBrowser } from '../helpers/browser.js';
import { fixtureModel, startServer, type TestServer } from '../helpers/voxd.js';

const ADMIN_KEY = 'ui-admin-3c7e19a4d2';
const browser = useBrowser();
let s: TestServer;

before(async () => {
  s = await startServer({
    ui: true,
    ui_management: true,
    api_keys: [{ key: ADMIN_KEY, scope: 'admin' }],
    models: [fixtureModel('asr-keyed'), fixtureModel('tts-keyed', { task: 'tts' })],
  });
});
after(async () => {
  await s?.close();
});

const NEEDS_KEY = 'This server needs an API key: type it into the "API key" field at the top of the page.';
const WRONG_KEY =
  'The API key is not valid on this server: type a valid key into the "API key" field at the top of the page.';

test('without a key the banner says where to type one, not which header to send; a wrong key says it is not valid', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  const banner = page.locator('#error');
  await banner.filter({ hasText: NEEDS_KEY }).waitFor();
  assert.equal(await banner.textContent(), NEEDS_KEY);
  assert.equal(await page.locator('#api-key').getAttribute('aria-invalid'), 'true');
  // A wrong key, confirmed with Enter: refused, in words a person at the page can act on.
  await page.locator('#api-key').fill('not-the-key');
  await page.locator('#api-key').press('Enter');
  await banner.filter({ hasText: WRONG_KEY }).waitFor();
  assert.doesNotMatch((await banner.textContent()) ?? '', /Authorization|Bearer/);
});

test('a key typed into the field applies at once: the table goes live, the lists load, no reload', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  const banner = page.locator('#error');
  await banner.waitFor();
  await page
    .locator('#stream-state', { hasText: 'not connected: check the API key' })
    .or(page.locator('#stream-state', { hasText: 'reconnecting' }))
    .waitFor();
  assert.equal(await page.locator('#models tr').count(), 0);
  // A marker on the page's global object: it survives only if the page is not reloaded.
  await page.evaluate('window.voxdNotReloaded = true');

  // Typed and left alone (no Enter, no reload): the page uses it.
  await page.locator('#api-key').fill(ADMIN_KEY);
  await page.locator('#stream-state', { hasText: /^live$/ }).waitFor();
  await page.locator('tr[data-model="asr-keyed"]').waitFor();
  await page.locator('tr[data-model="tts-keyed"]').waitFor();
  await page.locator('#speech-model option[value="tts-keyed"]').waitFor({ state: 'attached' });
  // The installer panel (management, an admin key) reads the models root.
  await page.waitForFunction("document.getElementById('root-path').value !== ''");
  await banner.waitFor({ state: 'hidden' });
  assert.equal(await page.locator('#api-key').getAttribute('aria-invalid'), null);
  assert.equal(await page.evaluate('window.voxdNotReloaded'), true, 'the page was not reloaded');
  // Kept for the next visit, as before.
  assert.equal(await page.evaluate("localStorage.getItem('voxd.apiKey')"), ADMIN_KEY);
});
