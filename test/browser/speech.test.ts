/**
 * The playground's speech form in a real Chromium against a real voxd: the voice list, speech in WAV
 * and MP3 played by the page's audio element, a stream played chunk by chunk from its first chunk
 * (proven with a fixture gate that holds the rest of the stream), then offered as a WAV, a stream's
 * error shown as the server worded it, and a phone-width layout.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { useBrowser } from '../helpers/browser.js';
import { sseEvents } from '../helpers/sse.js';
import { fixtureModel, post, startServer, type TestServer } from '../helpers/voxd.js';

const browser = useBrowser();
let s: TestServer;

before(async () => {
  s = await startServer(
    {
      ui: true,
      ui_management: true,
      models: [
        { id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming', lazy: true },
        fixtureModel('tone-fail', {
          task: 'tts',
          mode: 'streaming',
          default_request_options: { run_fail: true },
          max_input_chars: 20,
        }),
        fixtureModel('tone-offline', { task: 'tts' }),
      ],
    },
    { parallel: true },
  );
});
after(async () => {
  await s?.close();
});

/** The page's elements, typed by hand: the tests have no DOM types. The functions run in the page, so
 * each casts globalThis itself (a helper of this file would not exist there). */
type AudioElement = { hidden: boolean; duration: number };
type StatusElement = { dataset: Record<string, string | undefined> };
type Doc = { getElementById(id: string): unknown; documentElement: { scrollWidth: number } };

async function openPlayground(): Promise<Page> {
  const { page } = await browser.get().openPage(`${s.url}/`);
  await page.locator('button[data-tab="playground"]').click();
  return page;
}

/** Waits until the page's audio element shows and has decoded more than half a second. */
async function waitForPlayableAudio(page: Page): Promise<void> {
  await page.waitForFunction(() => {
    const audio = (globalThis as unknown as { document: Doc }).document.getElementById(
      'speech-audio',
    ) as AudioElement;
    return !audio.hidden && Number.isFinite(audio.duration) && audio.duration > 0.5;
  });
}

const downloadName = (page: Page) => page.locator('#speech-download a').getAttribute('download');

test('the voice list fills with flite voices and its OpenAI names', async () => {
  const page = await openPlayground();
  await page.locator('#speech-model').selectOption('flite');
  for (const voice of ['kal16', 'kal', 'slt', 'rms', 'awb', 'nova']) {
    await page.locator(`#speech-voice option[value="${voice}"]`).waitFor({ state: 'attached' });
  }
  assert.equal(await page.locator('#speech-voice option[value="nova"]').textContent(), 'nova → slt');
  // Only a streaming model can stream.
  assert.equal(await page.locator('#speech-stream').isEnabled(), true);
  await page.locator('#speech-model').selectOption('tone-offline');
  await page.locator('#speech-stream:disabled').waitFor();
});

for (const format of ['wav', 'mp3'] as const) {
  test(`flite speaks ${format}: the audio element plays it, the download is speech.${format}`, async () => {
    const page = await openPlayground();
    await page.locator('#speech-model').selectOption('flite');
    await page.locator('#speech-voice option[value="rms"]').waitFor({ state: 'attached' });
    await page.locator('#speech-voice').selectOption('rms');
    await page.locator('#speech-format').selectOption(format);
    await page.locator('#speech-speed').fill('0.9');
    await page.locator('#speech-text').fill('Hello from the browser, spoken by flite.');
    // By keyboard: the Speak button follows the text field.
    await page.locator('#speech-text').focus();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await waitForPlayableAudio(page);
    assert.equal(await downloadName(page), `speech.${format}`);
    assert.equal(await page.locator('#speech-status').getAttribute('data-state'), 'done');
  });
}

test('a stream plays from its first chunk while the rest is held, then offers the whole as a WAV', async () => {
  const gate = s.gate('chunks');
  const load = await post(s.url, '/v1/models/load', {
    ...fixtureModel('tone-stream', { task: 'tts', mode: 'streaming' }),
    load_options: { sample_rate: 22050 },
    default_request_options: { chunks: 3, chunk_gate: gate.path },
  });
  assert.equal(load.status, 200, load.body.toString());
  const text = 'A tone streamed in three chunks.';
  const page = await openPlayground();
  await page.locator('#speech-model').selectOption('tone-stream');
  await page.locator('#speech-stream').check();
  await page.locator('#speech-text').fill(text);
  await page.locator('#speech-form button[type=submit]').click();

  // The gate holds chunks 2 and 3, so whatever plays now came from the first chunk alone.
  await page.waitForFunction(() => {
    const status = (globalThis as unknown as { document: Doc }).document.getElementById(
      'speech-status',
    ) as StatusElement;
    return status.dataset['state'] === 'playing' && Number(status.dataset['played'] ?? 0) >= 1;
  });
  assert.equal(await page.locator('#speech-status').getAttribute('data-chunks'), '1');
  assert.match(
    (await page.locator('#speech-status').textContent()) ?? '',
    /^Playing from the first chunk after \d+ ms/,
  );
  assert.equal(await page.locator('#speech-download a').count(), 0, 'no download before the end');

  await gate.open();
  await page.locator('#speech-status[data-state="done"]').waitFor();
  assert.equal(await downloadName(page), 'speech.wav');
  await waitForPlayableAudio(page);

  // The WAV holds every chunk the server streams for that request, at the rate the page asked for.
  // Downloaded as a user would: the page's CSP keeps even its own fetch away from blob: URLs.
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('#speech-download a').click(),
  ]);
  assert.equal(download.suggestedFilename(), 'speech.wav');
  const wav = Buffer.concat(await (await download.createReadStream()).toArray());
  const streamed = await post(s.url, '/v1/audio/speech', {
    model: 'tone-stream',
    input: text,
    stream: true,
    response_format: 'pcm',
    sample_rate: 24000,
  });
  const deltas = sseEvents(streamed.body).flatMap((e) =>
    e !== '[DONE]' && e.type === 'speech.audio.delta' ? [Buffer.from(e['audio'] as string, 'base64')] : [],
  );
  assert.equal(await page.locator('#speech-status').getAttribute('data-chunks'), String(deltas.length));
  assert.equal(wav.toString('latin1', 0, 4), 'RIFF');
  assert.equal(wav.readUInt16LE(22), 1);
  assert.equal(wav.readUInt32LE(24), 24000);
  assert.equal(wav.readUInt32LE(40), wav.length - 44);
  assert.deepEqual(wav.subarray(44), Buffer.concat(deltas));
});

test('flite streams sentence by sentence: the page plays each and offers the whole as a WAV', async () => {
  const page = await openPlayground();
  await page.locator('#speech-model').selectOption('flite');
  await page.locator('#speech-stream').check();
  await page.locator('#speech-format:disabled').waitFor();
  await page.locator('#speech-text').fill('The first sentence. The second sentence.');
  await page.locator('#speech-form button[type=submit]').click();
  await page.locator('#speech-status[data-state="done"]').waitFor();
  const chunks = Number(await page.locator('#speech-status').getAttribute('data-chunks'));
  assert.ok(chunks >= 2, `${chunks} chunks for two sentences`);
  assert.equal(await downloadName(page), 'speech.wav');
  await waitForPlayableAudio(page);
});

test("a stream's error shows as the server worded it", async () => {
  const direct = await post(s.url, '/v1/audio/speech', { model: 'tone-fail', input: 'x', stream: true });
  const error = sseEvents(direct.body).find((e) => e !== '[DONE]' && e.type === 'error');
  assert.ok(error && error !== '[DONE]', direct.body.toString());
  const message = (error.error as { message: string }).message;

  const page = await openPlayground();
  await page.locator('#speech-model').selectOption('tone-fail');
  await page.locator('#speech-stream').check();
  await page.locator('#speech-text').fill('This run fails.');
  await page.locator('#speech-form button[type=submit]').click();
  await page.locator('#error', { hasText: message }).waitFor();
  assert.equal(await page.locator('#error').textContent(), message);
  assert.equal(await page.locator('#speech-status').getAttribute('data-state'), 'failed');

  // Refused before the stream starts: a 400, whose message the page shows the same way.
  const long = 'This text is over twenty characters.';
  const refused = await post(s.url, '/v1/audio/speech', { model: 'tone-fail', input: long, stream: true });
  assert.equal(refused.status, 400);
  await page.locator('#speech-text').fill(long);
  await page.locator('#speech-form button[type=submit]').click();
  await page.locator('#error', { hasText: refused.json.error.message }).waitFor();
  assert.equal(await page.locator('#error').textContent(), refused.json.error.message);
});
test('at 375 px the speech form fits the width', async () => {
  const page = await openPlayground();
  await page.setViewportSize({ width: 375, height: 800 });
  await page.locator('#speech-model').selectOption('flite');
  const width = await page.evaluate(
    () => (globalThis as unknown as { document: Doc }).document.documentElement.scrollWidth,
  );
  assert.ok(width <= 375, `the page is ${width} px wide`);
  for (const id of ['speech-model', 'speech-voice', 'speech-speed', 'speech-format', 'speech-text']) {
    const box = (await page.locator(`#${id}`).boundingBox())!;
    assert.ok(box.x >= 0 && box.x + box.width <= 375, `#${id} spans ${box.x}..${box.x + box.width}`);
  }
});
