/**
 * The playground's listening form in a real Chromium against a real voxd with its embedded engines
 * (no downloads): flite speaks the test audio, pocketsphinx transcribes it word by word, classic_diar
 * finds who spoke when, silero finds the speech, and a fake microphone (Chromium playing a flite WAV
 * as its capture device) is recorded and transcribed. With VOXD_SCREENSHOTS=1 the diarization's
 * screenshot refreshes docs/images/diarization.png.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { launchBrowser, screenshot, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { concat, GAPS, SENTENCES, speechBounds } from '../helpers/samples.js';
import { post, startServer, type TestServer } from '../helpers/voxd.js';

const RATE = 16000;
/**
 * Waits that hold a model's load and run, not just the page: the diarizer takes seconds over half a
 * minute of audio, and the machine may be busy with other tests.
 */
const INFERENCE_MS = 6 * WAIT_MS;

const SENTENCE = 'Please bring the blue umbrella when you leave the house.';

const browser = useBrowser();
let s: TestServer;
const work = mkdtempSync(join(tmpdir(), 'voxd-listen-'));

before(async () => {
  s = await startServer({
    ui: true,
    busy_timeout_ms: 0,
    models: [
      { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
      { id: 'asr', family: 'pocketsphinx_asr', task: 'asr', lazy: true },
      { id: 'diar', family: 'classic_diar', task: 'diar', lazy: true },
      { id: 'vad', family: 'silero_vad', task: 'vad', lazy: true },
    ],
  });
});
after(async () => {
  await s?.close();
  rmSync(work, { recursive: true, force: true });
});

async function speak(input: string, voice: string): Promise<Buffer> {
  const res = await post(s.url, '/v1/audio/speech', { model: 'flite', input, voice });
  assert.equal(res.status, 200, res.body.toString());
  return res.body;
}

async function speech(input: string, voice: string): Promise<Float32Array> {
  const samples = floats(decodeWav(await speak(input, voice)));
  return samples.slice(...speechBounds(samples));
}

function writeWav(name: string, samples: Float32Array): string {
  const path = join(work, name);
  writeFileSync(path, encodeWav({ samples, sampleRate: RATE, channels: 1 }));
  return path;
}

const silence = (seconds: number) => new Float32Array(Math.round(seconds * RATE));

/** Turn i spoken by voices[i % 2], the pauses between them trimmed to GAPS. */
async function conversation(pair: [string, string]): Promise<Float32Array> {
  const parts: Float32Array[] = [silence(0.5)];
  for (const [i, sentence] of SENTENCES.entries())
    parts.push(await speech(sentence, pair[i % 2]!), silence(GAPS[i]!));
  return concat(parts);
}

/** Opens the playground, picks `model` and uploads `file`; resolves once the page has decoded it. */
async function chooseAudio(model: string, file: string, url = s.url, page?: Page): Promise<Page> {
  const target = page ?? (await browser.get().openPage(`${url}/`)).page;
  await target.locator('button[data-tab="playground"]').click();
  await target.locator('#asr-model').fill(model);
  await target.locator('#asr-file').setInputFiles(file);
  // The page names the file and its length once decodeAudioData has the samples for the waveform.
  await target.locator('#asr-source', { hasText: /^File: .*\d\.\d s$/ }).waitFor();
  return target;
}

// The tests have no DOM types: what they touch in the page, typed by hand.
interface Box {
  left: number;
  right: number;
  width: number;
}
interface Element {
  getBoundingClientRect(): Box;
  dataset: Record<string, string>;
  scrollWidth: number;
  clientWidth: number;
}
interface AudioElement {
  currentTime: number;
  play(): Promise<void>;
  pause(): void;
}
interface Doc {
  getElementById(id: string): Element & AudioElement;
  querySelector(selector: string): Element | null;
  querySelectorAll(selector: string): ArrayLike<Element>;
}

test('a file transcribed by pocketsphinx: a span per word, and the word being played is highlighted', async () => {
  const wav = writeWav('sentence.wav', concat([silence(0.3), await speech(SENTENCE, 'kal16'), silence(0.3)]));
  const page = await chooseAudio('asr', wav);
  assert.equal(await page.locator('#asr-submit').textContent(), 'Transcribe');
  await page.locator('#asr-submit').click();
  await page.locator('#asr-words span.word').first().waitFor({ timeout: INFERENCE_MS });

  const words = (await page.locator('#asr-words span.word').allTextContents()).map((w) => w.toLowerCase());
  const said = new Set(
    SENTENCE.toLowerCase()
      .replace(/[^a-z ]/g, '')
      .split(' '),
  );
  assert.ok(
    words.some((w) => said.has(w)),
    `no word of "${SENTENCE}" in ${JSON.stringify(words)}`,
  );
  const times = await page.locator('#asr-words span.word').evaluateAll((spans) =>
    spans.map((span) => {
      const { dataset } = span as unknown as Element;
      return [Number(dataset['start']), Number(dataset['end'])];
    }),
  );
  for (const [start, end] of times) assert.ok(start! >= 0 && end! > start!, JSON.stringify(times));

  await page.evaluate(() =>
    (globalThis as unknown as { document: Doc }).document.getElementById('asr-audio').play(),
  );
  // Highlighted because the audio moved on, not because a word happened to start at 0.
  await page.waitForFunction(() => {
    const document = (globalThis as unknown as { document: Doc }).document;
    return (
      document.getElementById('asr-audio').currentTime > 0.3 &&
      document.querySelector('#asr-words span.word.current') !== null
    );
  });

  // Clicking a word plays from its start: paused at 0 first, so only the click can get it there.
  await page.evaluate(() => {
    const audio = (globalThis as unknown as { document: Doc }).document.getElementById('asr-audio');
    audio.pause();
    audio.currentTime = 0;
  });
  const last = page.locator('#asr-words span.word').last();
  const lastStart = Number(await last.getAttribute('data-start'));
  assert.ok(lastStart > 0.3, `the last word starts at ${lastStart}`);
  const reachedLast = () =>
    page.waitForFunction(
      (start) =>
        (globalThis as unknown as { document: Doc }).document.getElementById('asr-audio').currentTime >=
        start,
      lastStart,
    );
  await last.click();
  await reachedLast();
  // And from the keyboard: a word takes the focus, and Enter plays from it.
  await page.evaluate(() => {
    const audio = (globalThis as unknown as { document: Doc }).document.getElementById('asr-audio');
    audio.pause();
    audio.currentTime = 0;
  });
  await last.press('Enter');
  await reachedLast();
});

test('a two-voice conversation diarized: turns of exactly two speakers over the waveform, with a legend', async () => {
  const wav = writeWav('conversation.wav', await conversation(['rms', 'slt']));
  const page = await chooseAudio('diar', wav);
  assert.equal(await page.locator('#asr-submit').textContent(), 'Find speakers');
  await page.locator('#asr-submit').click();
  await page.locator('#asr-overlay .turn').first().waitFor({ timeout: INFERENCE_MS });

  const speakers = await page
    .locator('#asr-overlay .turn')
    .evaluateAll((turns) => turns.map((turn) => (turn as unknown as Element).dataset['speaker']));
  assert.ok(speakers.length >= 4, `only ${speakers.length} turns`);
  assert.deepEqual([...new Set(speakers)].sort(), ['A', 'B']);
  assert.equal(await page.locator('#asr-legend li').count(), 2);
  await page.locator('#asr-legend li[data-speaker="A"]').waitFor();
  await page.locator('#asr-legend li[data-speaker="B"]').waitFor();
  await screenshot(page, 'diarization');
});

test('speech segments found by silero are drawn inside the waveform; the form fits 375 px', async () => {
  const wav = writeWav(
    'two-sentences.wav',
    concat([
      silence(0.6),
      await speech('The weather is lovely today in the park.', 'rms'),
      silence(1.2),
      await speech('Please call me back tomorrow morning.', 'slt'),
      silence(0.8),
    ]),
  );
  const page = await chooseAudio('vad', wav);
  await page.setViewportSize({ width: 375, height: 800 });
  await page.locator('#asr-submit').click();
  await page.locator('#asr-overlay .vad-segment').first().waitFor({ timeout: INFERENCE_MS });

  const layout = await page.evaluate(() => {
    const document = (globalThis as unknown as { document: Doc }).document;
    const wave = document.getElementById('asr-wave').getBoundingClientRect();
    const form = document.getElementById('asr-form');
    return {
      wave: { left: wave.left, right: wave.right },
      segments: Array.from(document.querySelectorAll('#asr-overlay .vad-segment'), (el) => {
        const box = el.getBoundingClientRect();
        return { left: box.left, right: box.right, width: box.width };
      }),
      form: {
        scrollWidth: form.scrollWidth,
        clientWidth: form.clientWidth,
        right: form.getBoundingClientRect().right,
      },
    };
  });
  assert.ok(layout.segments.length > 0);
  for (const box of layout.segments) {
    assert.ok(box.width > 0, JSON.stringify(box));
    assert.ok(
      box.left >= layout.wave.left - 0.5 && box.right <= layout.wave.right + 0.5,
      JSON.stringify(layout),
    );
  }
  assert.ok(
    layout.form.scrollWidth <= layout.form.clientWidth && layout.form.right <= 375,
    JSON.stringify(layout.form),
  );
});

test('the microphone: a recording is drawn, sent and transcribed', async () => {
  // Chromium loops this file as its fake microphone.
  const mic = join(work, 'mic.wav');
  writeFileSync(mic, await speak(SENTENCE, 'kal16'));
  const own = await launchBrowser(undefined, { extraArgs: [`--use-file-for-fake-audio-capture=${mic}`] });
  try {
    const { page } = await own.openPage(`${s.url}/`);
    await page.locator('button[data-tab="playground"]').click();
    await page.locator('#asr-model').fill('asr');
    await page.locator('#asr-record').click();
    await page.waitForFunction(() => {
      const document = (globalThis as unknown as { document: Doc }).document;
      return Number(document.getElementById('asr-elapsed').dataset['seconds']) >= 2;
    });
    await page.locator('#asr-stop').click();
    await page.locator('#asr-source', { hasText: /^Recording: recording\.\w+/ }).waitFor();

    const answer = page.waitForResponse((res) => res.url().endsWith('/v1/audio/transcriptions'), {
      timeout: INFERENCE_MS,
    });
    await page.locator('#asr-submit').click();
    const res = await answer;
    assert.equal(res.status(), 200, await res.text());
    const body = (await res.json()) as { text: string; duration: number };
    assert.ok(body.duration >= 1.5, `the server heard ${body.duration} s`);
    assert.notEqual(body.text.trim(), '', 'pocketsphinx heard nothing in the recording');
    await page.locator('#asr-words span.word').first().waitFor();
  } finally {
    await own.close();
  }
});

test('a server error is shown as the server worded it', async () => {
  const wav = writeWav('short.wav', await speech('Hello there.', 'kal16'));
  const page = await chooseAudio('nope', wav);
  await page.locator('#asr-submit').click();
  await page.locator('#error', { hasText: 'unknown model id: "nope"' }).waitFor({ timeout: INFERENCE_MS });
  assert.equal(await page.locator('#asr-status').textContent(), '');
});
