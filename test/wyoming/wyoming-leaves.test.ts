/**
 * A Wyoming client that leaves, stops, trickles or stops reading in the middle of an exchange frees
 * the model's slot (probe 2026-12: F2, F12, F13, F14), with the real engines: pocketsphinx hearing
 * flite's speech at speaking pace (a live transcription, which holds its slot while it waits for
 * audio) and flite speaking to a client that does not read. The slot is observed as a client sees
 * it, `active_slots` in GET /v1/models, polled within a bound.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { wavHeader } from '../../src/audio/wav-encode.js';
import { lazyModel } from '../helpers/models.js';
import { suiteServer } from '../helpers/suite-server.js';
import { fliteSpeech, get, type TestServer, transcribe, waitUntil, withServer } from '../helpers/voxd.js';
import { WyomingClient } from '../helpers/wyoming.js';

const RATE = 16000;
const FORMAT = { rate: RATE, width: 2, channels: 1 };
/** 100 ms of PCM16 at RATE. */
const PIECE = (RATE / 10) * 2;
const MODELS = [lazyModel('flite', 'flite_tts', 'tts'), lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr')];
const SPEECH = 'Please call me tomorrow morning about the weather.';

async function activeSlots(s: TestServer, id: string): Promise<number> {
  const models = (await get(s.url, '/v1/models')).json.data as { id: string; active_slots: number }[];
  return models.find((m) => m.id === id)!.active_slots;
}

/** flite's speech, and pocketsphinx loaded and warm (a cold model's load would take the abort). */
async function warm(s: TestServer): Promise<Buffer> {
  const pcm = await fliteSpeech(s.url, SPEECH, RATE);
  const warmed = await transcribe(
    s.url,
    'pocketsphinx',
    Buffer.concat([wavHeader(RATE, 1, pcm.length), pcm]),
  );
  assert.equal(warmed.status, 200, warmed.body.toString());
  return pcm;
}

/**
 * A transcription fed 1.2 s of speech at a microphone's pace, which makes it live (the pace is
 * what is tested, so it is kept with timers), until pocketsphinx holds its slot for it.
 */
async function goLive(s: TestServer, c: WyomingClient, pcm: Buffer): Promise<void> {
  c.send('transcribe', { name: 'pocketsphinx' });
  c.send('audio-start', FORMAT);
  for (let at = 0; at < PIECE * 12; at += PIECE) {
    c.send('audio-chunk', FORMAT, pcm.subarray(at, at + PIECE));
    await sleep(100);
  }
  await waitUntil(
    'the live transcription holds the slot',
    async () => (await activeSlots(s, 'pocketsphinx')) === 1,
  );
}

describe('Wyoming: a client that leaves or stalls mid-exchange frees the slot', () => {
  const s = suiteServer(
    {
      wyoming_port: 0,
      busy_timeout_ms: 0,
      wyoming_idle_timeout_ms: 1500,
      live_ingest: { total_timeout_ms: 5000, send_timeout_ms: 1000 },
      models: MODELS,
    },
    { parallel: true },
  );
  let pcm: Buffer;
  before(async () => {
    pcm = await warm(s);
  });

  test('[F2] [time.disconnect-stream] a second audio-start abandons the live transcription: its slot is free, also once the client leaves', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    await goLive(s, c, pcm);
    const seen = c.events.length;
    c.send('audio-start', FORMAT);
    // The new utterance has begun (a streaming engine's first answer) before the client leaves.
    await c.next('transcript-start', seen);
    c.socket.destroy();
    await waitUntil('the slot is free', async () => (await activeSlots(s, 'pocketsphinx')) === 0, 2000);
  });

  test('[F2] a second audio-start, then only pings: the slot is free while the connection stays open', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      await goLive(s, c, pcm);
      const seen = c.events.length;
      c.send('audio-start', FORMAT);
      let pongs = 0;
      await waitUntil(
        'the slot is free while the client pings',
        async () => {
          c.send('ping');
          await c.nth('pong', pongs++);
          return (await activeSlots(s, 'pocketsphinx')) === 0;
        },
        2000,
      );
      assert.equal(c.socket.destroyed, false);
      const answered = c.types().slice(seen);
      assert.deepEqual(
        answered.filter((t) => t !== 'pong'),
        ['transcript-start'],
        `the new utterance starts; the abandoned one is not answered: ${answered.join(' ')}`,
      );
    } finally {
      c.socket.destroy();
    }
  });

  test('[F12] a byte now and then is no activity: a begun event must be whole within the idle timeout', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    const started = Date.now();
    c.socket.write('{');
    // Each byte well inside the idle timeout: before, every byte restarted it.
    const trickle = setInterval(() => {
      if (!c.socket.destroyed) c.socket.write(' ');
    }, 300);
    try {
      assert.equal((await c.next('error', 0, 5000)).data.code, 'session_idle_timeout');
      await c.closed;
      assert.ok(Date.now() - started < 4000, `closed after ${Date.now() - started} ms`);
    } finally {
      clearInterval(trickle);
      c.socket.destroy();
    }
  });

  test('[F13] a synthesis to a client that stops reading ends at live_ingest.send_timeout_ms: the slot is free', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      c.socket.pause();
      // About 50 minutes of speech: far more than the socket buffers take.
      c.send('synthesize', {
        text: 'Please call me tomorrow morning, the weather is nice today. '.repeat(1000),
        voice: { name: 'flite' },
      });
      await waitUntil('flite speaks', async () => (await activeSlots(s, 'flite')) === 1, 10_000);
      await waitUntil('the slot is free', async () => (await activeSlots(s, 'flite')) === 0, 15_000);
    } finally {
      c.socket.destroy();
    }
  });

  test('[F14] a live transcription fed 10 ms per idle period ends at live_ingest.total_timeout_ms: the slot is free', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    const started = Date.now();
    let trickle: NodeJS.Timeout | undefined;
    try {
      await goLive(s, c, pcm);
      // 10 ms of silence every 500 ms: whole events, well inside the idle timeout.
      trickle = setInterval(() => c.send('audio-chunk', FORMAT, Buffer.alloc(PIECE / 10)), 500);
      // The error ends the connection, as every Wyoming error does.
      const error = await c.refusal();
      assert.equal(error.data.code, 'body_timeout');
      assert.match(error.data.text, /live_ingest\.total_timeout_ms \(5000 ms\)/);
      await waitUntil('the slot is free', async () => (await activeSlots(s, 'pocketsphinx')) === 0, 2000);
      assert.ok(Date.now() - started < 5000 + 2000, `freed ${Date.now() - started} ms after audio-start`);
    } finally {
      clearInterval(trickle);
      c.socket.destroy();
    }
  });
});

test('[time.shutdown-stalled-io] a shutdown with a live transcription waiting for audio ends well before shutdown_timeout_ms; the client hears shutting_down', async () => {
  await withServer(
    { wyoming_port: 0, busy_timeout_ms: 0, shutdown_timeout_ms: 20_000, models: MODELS },
    { parallel: true },
    async (s) => {
      const pcm = await warm(s);
      const c = await WyomingClient.open(s.voxd.wyoming!.port);
      try {
        await goLive(s, c, pcm);
        const started = Date.now();
        await s.voxd.close();
        assert.ok(Date.now() - started < 5000, `the shutdown took ${Date.now() - started} ms`);
        assert.equal((await c.next('error')).data.code, 'shutting_down');
        await c.closed;
      } finally {
        c.socket.destroy();
      }
    },
  );
});
