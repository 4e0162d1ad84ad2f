/**
 * Each Wyoming refusal read the way Home Assistant's integration reads (issue 39, item 4): its TTS
 * loop reads until an `audio-stop` or the end of the connection, its STT loop until a `transcript`
 * or the end (home-assistant/core, components/wyoming/tts.py and stt.py). voxd ends the connection
 * at an error, as wyoming-piper and wyoming-faster-whisper do, so each read ends within 1 s of the
 * refusal rather than at wyoming_idle_timeout_ms (5 minutes by default) with the socket still open.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FLITE } from '../helpers/models.js';
import { suiteServer } from '../helpers/suite-server.js';
import { fixtureModel, post, waitUntil } from '../helpers/voxd.js';
import { type ClientEvent, WyomingClient } from '../helpers/wyoming.js';

const FORMAT = { rate: 16000, width: 2, channels: 1 };

describe('Home Assistant reads every Wyoming refusal to its end within 1 s', () => {
  const s = suiteServer({
    wyoming_port: 0,
    models: [FLITE, fixtureModel('asr', { task: 'asr', busy_timeout_ms: 50 })],
  });

  /** Sends what `send` sends, reads as HA does until one of `until` or the end, and checks the end. */
  async function readAsHomeAssistant(
    send: (c: WyomingClient) => void,
    until: string[],
  ): Promise<ClientEvent> {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      send(c);
      const read = await c.readUntil(until, 0, 10_000);
      assert.equal(read.ended, true, `the read ended on ${read.events.map((e) => e.type).join(' ')}`);
      const error = read.events.find((e) => e.type === 'error');
      assert.ok(error, `no error before the end: ${read.events.map((e) => e.type).join(' ')}`);
      // The end came with the error: the refusal itself is what `refusal` times.
      return error;
    } finally {
      c.socket.destroy();
    }
  }

  /** A synthesis as HA's tts.py sends it, read until audio-stop or the end. */
  const speak = (data: Record<string, unknown>) =>
    readAsHomeAssistant((c) => c.send('synthesize', data), ['audio-stop']);

  test('a voice HA remembers from wyoming-piper', async () => {
    const error = await speak({ text: 'Hello.', voice: { name: 'piper:en_US-lessac-medium' } });
    assert.equal(error.data.code, 'model_not_found');
  });

  test('an unknown speaker', async () => {
    const error = await speak({ text: 'Hello.', voice: { name: 'flite', speaker: 'nope' } });
    assert.match(error.data.text, /not a flite voice/);
  });

  test('empty text', async () => {
    const error = await speak({ text: '', voice: { name: 'flite' } });
    assert.equal(error.data.code, 'invalid_event');
  });

  test('a busy model, refused after transcript-start', async () => {
    const gate = s.gate('hold');
    const held = post(s.url, '/v1/tasks/run', { model: 'asr', text: 'x', options: { run_gate: gate.path } });
    try {
      await waitUntil('the holder runs', () => s.fixture.record.of('asr', 'run-start').length === 1);
      const error = await readAsHomeAssistant(
        (c) => {
          c.send('transcribe', { name: 'asr' });
          c.send('audio-start', FORMAT);
          c.send('audio-chunk', FORMAT, Buffer.alloc(3200));
          c.send('audio-stop');
        },
        ['transcript'],
      );
      assert.equal(error.data.code, 'server_busy');
    } finally {
      await gate.open();
      await held;
    }
  });

  test('each refusal is the last event, and the connection ends within 1 s of it', async () => {
    for (const data of [
      { text: 'Hello.', voice: { name: 'piper:en_US-lessac-medium' } },
      { text: '', voice: { name: 'flite' } },
    ]) {
      const c = await WyomingClient.open(s.voxd.wyoming!.port);
      try {
        c.send('synthesize', data);
        await c.refusal(0, 1000);
      } finally {
        c.socket.destroy();
      }
    }
  });
});
