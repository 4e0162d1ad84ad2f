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
import { fixtureModel, post, runTask, startServer, type TestServer } from '../helpers/voxd.js';

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
        fixtureModel('opts-fixture', {
          slots: 1,
          load_options: { capacity: 4 },
          default_request_options: { chunks: 2 },
        }),
        fixtureModel('kb-fixture'),
        fixtureModel('redraw-fixture'),
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
  const status = s.voxd.runtime.snapshots().find((m) => m.id === 'tts-fixture')!;
  assert.equal(status.loaded, false);
  await page.locator('tr[data-model="tts-fixture"] button', { hasText: /^Load$/ }).click();
  await waitForCell(page, 'tts-fixture', 'state', 'ready');
  assert.equal(s.voxd.runtime.snapshots().find((m) => m.id === 'tts-fixture')!.loaded, true);
});

test('Apply changes the slots and keeps the rest of the configuration; the editor reconfigures options', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await waitForCell(page, 'opts-fixture', 'slots', '1');
  const config = () => s.voxd.runtime.get('opts-fixture').config;
  await page.locator('tr[data-model="opts-fixture"] input[type=number]').fill('2');
  await page.locator('tr[data-model="opts-fixture"] button', { hasText: 'Apply' }).click();
  await waitForCell(page, 'opts-fixture', 'slots', '2');
  assert.deepEqual(config().load_options, { capacity: '4' }, 'load_options survive a slots change');
  assert.deepEqual(config().default_request_options, { chunks: '2' });

  await page.locator('tr[data-model="opts-fixture"] button', { hasText: 'Configure' }).click();
  const editor = page.locator('#config-json');
  await editor.waitFor();
  const shown = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
  assert.deepEqual(
    [shown['id'], shown['slots'], shown['load_options']],
    ['opts-fixture', 2, { capacity: '4' }],
  );
  const loads = s.fixture.record.of('opts-fixture', 'load').length;
  await editor.fill(JSON.stringify({ ...shown, load_options: { capacity: '3' } }));
  await page.locator('#config-form button[type=submit]').click();
  await page.locator('#config-editor').waitFor({ state: 'hidden' });
  assert.deepEqual(config().load_options, { capacity: '3' });
  assert.ok(s.fixture.record.of('opts-fixture', 'load').length > loads, 'a load option change reloads');

  // A bad body is refused in the server's words and the editor stays open with the text.
  await page.locator('#add-model').click();
  await editor.fill('{"id":"added","family":"fixture","path":".","task":"asr","slots":99}');
  await page.locator('#config-form button[type=submit]').click();
  await page.locator('#error', { hasText: 'slots: 99 is invalid' }).waitFor();
  assert.equal(await page.locator('#config-editor').isVisible(), true);
  await editor.fill('{"id":"added","family":"fixture","path":".","task":"asr"}');
  await page.locator('#config-form button[type=submit]').click();
  await waitForCell(page, 'added', 'state', 'ready');
});

test('"Register a model" opens a template the server takes as it is: Save unchanged registers it', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await waitForCell(page, 'tts-fixture', 'state', 'ready');
  await page.locator('#add-model').click();
  const template = JSON.parse(await page.locator('#config-json').inputValue()) as Record<string, unknown>;
  assert.equal(typeof template['id'], 'string');
  const id = template['id'] as string;
  assert.equal(
    s.voxd.runtime.snapshots().find((m) => m.id === id),
    undefined,
    'a new id, not a registered one',
  );
  await page.locator('#config-form button[type=submit]').click();
  await page.locator('#config-editor').waitFor({ state: 'hidden' });
  await waitForCell(page, id, 'state', 'ready');
  assert.equal(await page.locator('#error').isVisible(), false);
  const { config } = s.voxd.runtime.get(id);
  assert.deepEqual([config.family, config.task], [template['family'], template['task']]);
  // Opened again, the template names another new id, so saving it does not reconfigure the first.
  await page.locator('#add-model').click();
  const again = JSON.parse(await page.locator('#config-json').inputValue()) as Record<string, unknown>;
  assert.notEqual(again['id'], id);
  await page.locator('#config-cancel').click();
  assert.equal((await post(s.url, '/v1/models/unload', { id })).status, 200);
});

test('a slots value being typed, and its focus, survive the table being redrawn by the stream', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await waitForCell(page, 'redraw-fixture', 'state', 'ready');
  const input = page.locator('tr[data-model="tts-fixture"] input[type=number]');
  await input.fill('3');
  // Another model's change redraws every row.
  assert.equal((await post(s.url, '/v1/models/unload', { id: 'redraw-fixture' })).status, 200);
  await waitForCell(page, 'redraw-fixture', 'state', 'unloaded');
  assert.equal(await input.inputValue(), '3', 'the typed value is kept');
  type Focus = {
    document: {
      activeElement: { closest(s: string): { dataset: { model: string } } | null; type?: string } | null;
    };
  };
  const focused = await page.evaluate(() => {
    const active = (globalThis as unknown as Focus).document.activeElement;
    return `${active?.closest('tr')?.dataset.model}:${active?.type}`;
  });
  assert.equal(focused, 'tts-fixture:number', 'the focus stays in the field');
});

test("usable with the keyboard alone: Tab reaches a row's Unload, Enter presses it", async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await waitForCell(page, 'kb-fixture', 'state', 'ready');
  const unload = page.locator('tr[data-model="kb-fixture"] button', { hasText: /^Unload$/ });
  await unload.waitFor();
  // Tab from the top of the page until the focus is on that button (each press moves one control).
  type Focus = {
    document: {
      activeElement: {
        textContent: string;
        closest(s: string): { dataset: { model: string } } | null;
      } | null;
    };
  };
  let reached = false;
  for (let i = 0; i < 200 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => {
      const active = (globalThis as unknown as Focus).document.activeElement;
      return active?.textContent === 'Unload' && active.closest('tr')?.dataset.model === 'kb-fixture';
    });
  }
  assert.ok(reached, 'Tab never reached the Unload button');
  await page.keyboard.press('Enter');
  await waitForCell(page, 'kb-fixture', 'state', 'unloaded');
});

test('readable at phone width: no tab is wider than a 375 px screen, and each model row is a card', async () => {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await page.setViewportSize({ width: 375, height: 740 });
  await waitForCell(page, 'tts-fixture', 'state', 'ready');
  for (const tab of ['dashboard', 'installer', 'playground']) {
    await page.locator(`button[data-tab="${tab}"]`).click();
    type Doc = { document: { documentElement: { scrollWidth: number; clientWidth: number } } };
    const [scroll, client] = await page.evaluate(() => {
      const root = (globalThis as unknown as Doc).document.documentElement;
      return [root.scrollWidth, root.clientWidth];
    });
    assert.ok(scroll <= client, `${tab}: the page is ${scroll} px wide on a ${client} px screen`);
  }
  await page.locator('button[data-tab="dashboard"]').click();
  // A card: no header row; each cell names its column.
  assert.equal(await page.locator('#dashboard thead').isVisible(), false);
  assert.equal(await page.locator(cellSelector('tts-fixture', 'state')).getAttribute('data-label'), 'State');
  await screenshot(page, 'dashboard-phone');
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
      async () =>
        (
          await fetch('/v1/models/unload', {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: '{"id":"m"}',
          })
        ).status,
    );
    assert.equal(status, 403);
  } finally {
    await plain.close();
  }
});
