/**
 * The web UI's Live tab in a real Chromium against a real voxd: Chromium's fake microphone plays a
 * flite sentence followed by silence (looped), the page streams it to /v1/realtime with server VAD
 * (silero), and pocketsphinx's words show while the sentence is spoken, then the finished turn as
 * one line. With API keys on, the key travels as the subprotocol `openai-insecure-api-key.<key>`.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { launchBrowser, WAIT_MS } from '../helpers/browser.js';
import { concat, speechBounds } from '../helpers/samples.js';
import { request, startServer, type TestServer, waitUntil } from '../helpers/voxd.js';

/** Waits that hold a model's load, a spoken turn and its transcript, on a machine busy with other tests. */
const TURN_MS = 6 * WAIT_MS;
const SENTENCE = 'Please call me tomorrow morning about the weather.';
const WORDS = ['please', 'call', 'tomorrow', 'morning', 'weather'];
const KEY = 'sk-live-tab-0a1b';

let s: TestServer;
const work = mkdtempSync(join(tmpdir(), 'voxd-live-'));

before(async () => {
  s = await startServer({
    ui: true,
    busy_timeout_ms: 0,
    api_keys: [{ key: KEY, scope: 'admin' }],
    models: [
      { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
      // Loaded before the page speaks: a lazy load under a busy CI machine took longer than the
      // sentence, and the VAD, catching up on the audio held meanwhile, said speech_started and
      // speech_stopped together, before any word could come. Words while speaking need a warm model.
      { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr' },
      { id: 'silero-vad', family: 'silero_vad', task: 'vad' },
    ],
  });
});
after(async () => {
  await s?.close();
  rmSync(work, { recursive: true, force: true });
});

/** The realtime sessions open now, from /metrics. */
async function sessions(): Promise<number> {
  const res = await fetch(`${s.url}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } });
  return Number((await res.text()).match(/^voxd_realtime_sessions (\S+)$/m)?.[1]);
}

test('Live: words while the sentence is spoken, then the turn as one line; Stop ends the session', async () => {
  const res = await request(s.url, 'POST', '/v1/audio/speech', {
    body: JSON.stringify({ model: 'flite', input: SENTENCE, voice: 'slt' }),
    headers: { 'content-type': 'application/json', Authorization: `Bearer ${KEY}` },
  });
  assert.equal(res.status, 200, res.body.toString());
  const audio = decodeWav(res.body);
  const spoken = floats(audio).slice(...speechBounds(floats(audio)));
  // Silence on both sides: each loop of the file is one turn, with 1.5 s for its silence window.
  const quiet = new Float32Array(Math.round(audio.sampleRate * 1.5));
  const mic = join(work, 'mic.wav');
  writeFileSync(
    mic,
    encodeWav({ samples: concat([quiet, spoken, quiet]), sampleRate: audio.sampleRate, channels: 1 }),
  );

  const browser = await launchBrowser(undefined, { extraArgs: [`--use-file-for-fake-audio-capture=${mic}`] });
  try {
    const { page } = await browser.openPage(`${s.url}/`);
    await page.locator('#api-key').fill(KEY);
    await page.locator('#api-key').press('Enter');
    await page.locator('button[data-tab="live"]').click();
    await page.locator('#live-model').fill('pocketsphinx');
    const upgrade = page.waitForEvent('websocket');
    await page.locator('#live-start').click();
    const ws = await upgrade;
    assert.match(ws.url(), /\/v1\/realtime\?model=pocketsphinx$/);
    await page.locator('#live-status[data-state="listening"]').waitFor({ timeout: TURN_MS });

    const final = page.locator('#live-turns li[data-state="final"]').first();
    await final.waitFor({ timeout: TURN_MS });
    const text = ((await final.textContent()) ?? '').toLowerCase();
    assert.ok(WORDS.filter((w) => text.includes(w)).length >= 2, `heard: ${text}`);
    // Words came while the sentence was still being spoken (before its speech_stopped).
    assert.ok(Number(await final.getAttribute('data-early')) >= 1, 'no word before the speech stopped');
    assert.equal(await page.locator('#live-error').textContent(), '');
    assert.equal(await sessions(), 1);

    await page.locator('#live-stop').click();
    await page.locator('#live-status[data-state="stopped"]').waitFor();
    await waitUntil('the session closes', async () => (await sessions()) === 0);
    browser.checkPageErrors();
  } finally {
    await browser.close();
  }
});

test('Live: a model that cannot stream a session is said so, and the page can start again', async () => {
  const browser = await launchBrowser();
  try {
    const { page } = await browser.openPage(`${s.url}/`);
    await page.locator('#api-key').fill(KEY);
    await page.locator('#api-key').press('Enter');
    await page.locator('button[data-tab="live"]').click();
    await page.locator('#live-model').fill('flite');
    await page.locator('#live-start').click();
    await page
      .locator('#live-status[data-state="stopped"]', { hasText: /Could not open a session on flite/ })
      .waitFor({
        timeout: TURN_MS,
      });
    assert.equal(await page.locator('#live-start').isDisabled(), false);
    assert.equal(await page.locator('#live-stop').isDisabled(), true);
  } finally {
    await browser.close();
  }
});
