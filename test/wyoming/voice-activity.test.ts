/**
 * Voice activity over Wyoming (src/wyoming/vad-exchange.ts), with the real silero model finding
 * flite's speech: `transcribe {name: <VAD model>}` then audio gives `voice-started` and
 * `voice-stopped` at the speech's edges (ms of audio), a speech still going at audio-stop is
 * stopped at the end of the audio, a stream that changes its rate is refused and its connection
 * ended, and each exchange is counted under kind="vad".
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { speechBounds } from '../helpers/samples.js';
import { suiteServer } from '../helpers/suite-server.js';
import { fliteSpeech, get } from '../helpers/voxd.js';
import { WyomingClient } from '../helpers/wyoming.js';

const RATE = 16000;
const FORMAT = { rate: RATE, width: 2, channels: 1 };
const silence = (ms: number) => Buffer.alloc(Math.round((ms * RATE) / 1000) * 2);

describe('Wyoming voice activity', () => {
  const s = suiteServer({
    wyoming_port: 0,
    busy_timeout_ms: 0,
    models: [
      { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
      { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
    ],
  });

  const sentence = () => fliteSpeech(s.url, 'Please call me back tomorrow morning.', RATE);

  /** Streams `audio` in 100 ms chunks to the VAD model, then audio-stop and a ping; resolves at the pong. */
  async function watch(c: WyomingClient, audio: Buffer): Promise<void> {
    const seen = c.events.length;
    c.send('transcribe', { name: 'silero-vad' });
    c.send('audio-start', FORMAT);
    for (let at = 0; at < audio.length; at += RATE / 5)
      c.send('audio-chunk', FORMAT, audio.subarray(at, at + RATE / 5));
    c.send('audio-stop');
    c.send('ping', { text: 'done' });
    await c.next('pong', seen, 30_000);
  }

  test('a spoken sentence between silences: voice-started and voice-stopped at its edges', async () => {
    const speech = await sentence();
    const pcm = new Int16Array(speech.buffer, speech.byteOffset, speech.length / 2);
    const [a, b] = speechBounds(Float32Array.from(pcm, (v) => v / 32768)).map(
      (n) => 1000 + (n / RATE) * 1000,
    ) as [number, number];
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      await watch(c, Buffer.concat([silence(1000), speech, silence(1000)]));
      assert.deepEqual(c.types(), ['voice-started', 'voice-stopped', 'pong']);
      const [started, stopped] = [c.events[0]!, c.events[1]!];
      assert.ok(
        Math.abs(started.data.timestamp - a) <= 150,
        `started at ${started.data.timestamp}, speech at ${a}`,
      );
      assert.ok(
        stopped.data.timestamp >= b - 300 && stopped.data.timestamp <= b + 200,
        `stopped at ${stopped.data.timestamp}, speech ends at ${b}`,
      );
      const counted = (await get(s.url, '/metrics')).body
        .toString()
        .includes(
          'voxd_exchanges_total{protocol="wyoming",kind="vad",model="silero-vad",outcome="completed"} 1',
        );
      assert.ok(counted, 'one completed vad exchange');
    } finally {
      await c.close();
    }
  });

  test('speech still going at audio-stop is stopped at the end of the audio; the next stream starts afresh', async () => {
    const speech = await sentence();
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      const cut = Buffer.concat([silence(500), speech.subarray(0, RATE * 2 * 1)]);
      await watch(c, cut);
      assert.deepEqual(c.types(), ['voice-started', 'voice-stopped', 'pong']);
      const stopped = c.events[1]!.data.timestamp;
      assert.ok(stopped > c.events[0]!.data.timestamp && stopped <= 1500, `stopped at ${stopped}`);
      // Silence alone: no voice at all.
      const seen = c.events.length;
      await watch(c, silence(2000));
      assert.deepEqual(c.types().slice(seen), ['pong']);
    } finally {
      await c.close();
    }
  });

  test('a stream that changes its rate is refused, and its connection ends; so is a VAD exchange on a speech model', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      c.send('transcribe', { name: 'silero-vad' });
      c.send('audio-start', FORMAT);
      c.send('audio-chunk', FORMAT, silence(100));
      c.send('audio-chunk', { ...FORMAT, rate: 8000 }, silence(100));
      const error = await c.refusal();
      assert.equal(error.data.code, 'invalid_audio');
      assert.match(error.data.text, /rate 8000 differs from this stream's 16000/);
    } finally {
      c.socket.destroy();
    }
    const other = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      other.send('transcribe', { name: 'flite' });
      other.send('audio-start', FORMAT);
      assert.match((await other.refusal()).data.text, /flite/);
    } finally {
      other.socket.destroy();
    }
  });
});
