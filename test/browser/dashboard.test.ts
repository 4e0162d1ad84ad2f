/**
 * The web UI in a real Chromium (Debian's, through playwright-core) against a real voxd: the model
 * table follows a load, busy slots and a queue as they happen (forced with fixture gates), the
 * management controls load and unload or are absent, and the playground speaks. With
 * VOXD_SCREENSHOTS=1 the dashboard's screenshot refreshes docs/images/dashboard.png for the README.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { screenshot, useBrowser } from '../helpers/browser.js';
import { fixtureModel, runTask, startServer, type TestServer } from '../helpers/voxd.js';

const browser = useBrowser();
let s: TestServer;

before(async () => {
  s = await startServer(
    {
      ui: true,
      ui_management: true,
      busy_timeout_ms: 0,
      models: [
        fixtureModel('asr-fixture', { lazy: true, slots: 1 }),
        fixtureModel('tts-fixture', { task: 'tts', slots: 2 }),
        { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
      ],
    },
    { parallel: true },
  );
});
after(async () => {
  await s?.close();
});

/** The columns of a model's row, in order (Id, Family, Task, Mode, State, Slots, Active, Queued). */
const COLUMNS = ['id', 'family', 'task', 'mode', 'state', 'slots', 'active', 'queued'] as const;
type Column = (typeof COLUMNS)[number];
const cellSelector = (model: string, column: Column) =>
  `tr[data-model="${model}"] td:nth-child(${COLUMNS.indexOf(column) + 1})`;
const exactly = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
/** Waits (with the page's deadline) until the cell shows exactly `text`. */
async function waitForCell(page: Page, model: string, column: Column, text: string) {
  await page.locator(cellSelector(model, column), { hasText: exactly(text) }).waitFor();
}

test('the model table follows a load, a busy slot and a queued request as they happen', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await page.locator('#stream-state', { hasText: 'live' }).waitFor();
  await waitForCell(page, 'asr-fixture', 'state', 'unloaded');
  assert.equal(await page.locator(cellSelector('tts-fixture', 'state')).textContent(), 'ready');

  const gate = s.gate('run');
  const first = runTask(s, 'asr-fixture', { run_gate: gate.path });
  await waitForCell(page, 'asr-fixture', 'active', '1');
  await waitForCell(page, 'asr-fixture', 'state', 'ready');
  const second = runTask(s, 'asr-fixture', { run_gate: gate.path });
  await waitForCell(page, 'asr-fixture', 'queued', '1');
  await screenshot(page, 'dashboard');
  await gate.open();
  assert.equal((await first).status, 200);
  assert.equal((await second).status, 200);
  await waitForCell(page, 'asr-fixture', 'active', '0');
  await waitForCell(page, 'asr-fixture', 'queued', '0');
});

test('with ui_management the page unloads and loads a model; the server sees it', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await waitForCell(page, 'tts-fixture', 'state', 'ready');
  await page.locator('tr[data-model="tts-fixture"] button', { hasText: /^Unload$/ }).click();
  await waitForCell(page, 'tts-fixture', 'state', 'unloaded');
  const status = s.voxd.runtime.status().find((m) => m.id === 'tts-fixture')!;
  assert.equal(status.loaded, false);
  await page.locator('tr[data-model="tts-fixture"] button', { hasText: /^Load$/ }).click();
  await waitForCell(page, 'tts-fixture', 'state', 'ready');
  assert.equal(s.voxd.runtime.status().find((m) => m.id === 'tts-fixture')!.loaded, true);
});

test('the page shows an error as the server worded it', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await waitForCell(page, 'tts-fixture', 'state', 'ready');
  await page.locator('tr[data-model="tts-fixture"] input[type=number]').fill('0');
  await page.locator('tr[data-model="tts-fixture"] button', { hasText: 'Apply' }).click();
  await page
    .locator('#error', { hasText: 'slots: 0 is invalid; model slots must be an integer between 1 and 16' })
    .waitFor();
});

test('the playground speaks with flite and plays it: the audio element has a duration', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await page.locator('button[data-tab="playground"]').click();
  await page.locator('#speech-model').selectOption('flite');
  await page.locator('#speech-text').fill('Hello from the browser.');
  await page.locator('#speech-form button[type=submit]').click();
  // The page's own audio element has decoded the WAV (typed by hand: the tests have no DOM types).
  type AudioElement = { hidden: boolean; duration: number };
  await page.waitForFunction(() => {
    const { document } = globalThis as unknown as { document: { getElementById(id: string): AudioElement } };
    const audio = document.getElementById('speech-audio');
    return !audio.hidden && Number.isFinite(audio.duration) && audio.duration > 0.5;
  });
  assert.equal(await page.locator('#speech-download a').getAttribute('download'), 'speech.wav');
});

test('without ui_management the page has no management controls, and the routes stay 403', async () => {
  const plain = await startServer({ ui: true, models: [fixtureModel('m')] });
  try {
    const { page } = await browser.get().openPage(`${plain.url}/`);
    await waitForCell(page, 'm', 'state', 'ready');
    assert.equal(await page.locator('tr[data-model="m"] button').count(), 0);
    assert.equal(await page.locator('#unload-all').isVisible(), false);
    const status = await page.evaluate(
      async () => (await fetch('/v1/models/unload', { method: 'POST', body: '{"id":"m"}' })).status,
    );
    assert.equal(status, 403);
  } finally {
    await plain.close();
  }
});
