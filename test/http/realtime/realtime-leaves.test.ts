/**
 * A live realtime turn (server VAD on the real pocketsphinx, silero finding flite's speech) frees
 * its model's slot however its client leaves it mid-speech: closing, terminating, clearing the
 * buffer, or just no longer sending (the idle timeout, the turn's total deadline), and when the
 * session reaches its longest life. Each time `active_slots` of GET /v1/models is back to 0 within
 * 2 s and an HTTP transcription on the same model works. Before, each of these held the slot until
 * restart (probe 2026-12, F1, F14). The timers run on a manual clock, moved by the tests. Last, a
 * shutdown with such turns open ends well within its deadline.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { wavOf } from '../../helpers/samples.js';
import { suiteServer } from '../../helpers/suite-server.js';
import {
  fliteSpeech,
  get,
  ManualClock,
  startServer,
  type TestServer,
  transcribe,
  waitUntil,
} from '../../helpers/voxd.js';
import { type Messages, openSocket, type Socket } from '../../helpers/websocket.js';

const RATE = 24000;
const SENTENCE = 'Please call me tomorrow morning. The weather is nice today.';
const IDLE_MS = 10_000;
const DEADLINE_MS = 20_000;
const LIFETIME_MS = 30_000;
/** How soon after its client left (or its timer fired) a slot must be free. */
const FREED_MS = 2000;

const MODELS = [
  FLITE,
  lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr'),
  lazyModel('silero-vad', 'silero_vad', 'vad'),
];

const silence = (ms: number) => Buffer.alloc(Math.round((ms * RATE) / 1000) * 2);

async function activeSlots(s: TestServer): Promise<number> {
  const models = (await get(s.url, '/v1/models')).json.data as { id: string; active_slots: number }[];
  return models.find((m) => m.id === 'pocketsphinx')!.active_slots;
}

/** Waits until pocketsphinx holds no slot, FREED_MS at most. */
const freed = (s: TestServer) =>
  waitUntil('pocketsphinx holds no slot', async () => (await activeSlots(s)) === 0, FREED_MS);

/** PCM16 as a 16 kHz WAV file (flite speaks it at 16 kHz for the HTTP transcriptions). */
const wavOfPcm = (pcm: Buffer) =>
  wavOf(Float32Array.from(new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2), (v) => v / 32768));

/** An HTTP transcription of the sentence on pocketsphinx: the model serves again. */
async function transcribes(s: TestServer, wav: Buffer): Promise<void> {
  const res = await transcribe(s.url, 'pocketsphinx', wav);
  assert.equal(res.status, 200, res.body.toString());
  assert.match(String(res.json.text).toLowerCase(), /tomorrow|morning|weather/);
}

/**
 * A session under server VAD whose speech has started and goes on: half a second of silence, then
 * the first 1.5 s of the sentence (`first` runs before). Resolves once its live turn holds
 * pocketsphinx's slot.
 */
async function speaking(s: TestServer, speech: Buffer, first?: (socket: Socket) => Promise<void>) {
  const socket = await openSocket(`${s.url}/v1/realtime?model=pocketsphinx`);
  const { messages, send } = socket;
  send({
    type: 'session.update',
    session: { type: 'transcription', audio: { input: { turn_detection: { type: 'server_vad' } } } },
  });
  await messages.next('session.updated');
  await first?.(socket);
  const audio = Buffer.concat([silence(500), speech.subarray(0, RATE * 3)]);
  for (let at = 0; at < audio.length; at += 4800) {
    send({ type: 'input_audio_buffer.append', audio: audio.subarray(at, at + 4800).toString('base64') });
    // The microphone's pace, not an ordering: the engine then waits for audio most of the time, as
    // it does when a real client leaves (the state in which the turn used to stay for good).
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const started = await messages.next('input_audio_buffer.speech_started', 0, 20_000);
  await waitUntil('the live turn holds its slot', async () => (await activeSlots(s)) === 1, 20_000);
  return { ...socket, started };
}

/** An event that is not audio (so speech goes on as it was), answered: the client is not idle. */
async function stillHere(send: Socket['send'], messages: Messages) {
  const seen = messages.all.length;
  send({ type: 'session.update', session: {} });
  await messages.next('session.updated', seen);
}

describe('a live realtime turn frees its slot however its client leaves', () => {
  const clock = new ManualClock();
  const s = suiteServer(
    {
      busy_timeout_ms: 0,
      realtime_idle_timeout_ms: IDLE_MS,
      realtime_max_session_ms: LIFETIME_MS,
      live_ingest: { total_timeout_ms: DEADLINE_MS },
      models: MODELS,
    },
    { parallel: true, clock },
  );
  let speech: Buffer;
  let wav: Buffer;
  before(async () => {
    speech = await fliteSpeech(s.url, SENTENCE, RATE);
    wav = wavOfPcm(await fliteSpeech(s.url, SENTENCE, 16000));
    // Warm: a cold model's load would take the abort instead of the run.
    await transcribes(s, wav);
  });

  test('[time.disconnect-stream] the client closes mid-speech', async () => {
    const rt = await speaking(s, speech);
    rt.ws.close();
    await freed(s);
    await transcribes(s, wav);
  });

  test('[time.disconnect-stream] the client terminates mid-speech', async () => {
    const rt = await speaking(s, speech);
    rt.ws.terminate();
    await freed(s);
    await transcribes(s, wav);
  });

  test('the client clears the buffer mid-speech; the session goes on', async () => {
    const rt = await speaking(s, speech);
    rt.send({ type: 'input_audio_buffer.clear' });
    await rt.messages.next('input_audio_buffer.cleared');
    await freed(s);
    await transcribes(s, wav);
    await stillHere(rt.send, rt.messages);
    // Its words so far may have come as deltas; it is never committed, completed or failed.
    const item = rt.started.item_id;
    assert.deepEqual(
      rt.messages.all.filter((e) => e.item_id === item && !e.type.endsWith('.delta')).map((e) => e.type),
      ['input_audio_buffer.speech_started'],
    );
    rt.ws.close();
  });

  test('the client stops sending: a turn waiting for its audio is idle, and the idle timeout ends the session', async () => {
    const rt = await speaking(s, speech);
    clock.advance(IDLE_MS);
    const error = await rt.messages.next('error');
    assert.equal(error.error.code, 'session_idle_timeout');
    assert.equal(await rt.closed, 1000);
    await freed(s);
    await transcribes(s, wav);
  });

  test("the client sends no audio but stays: the turn's total deadline (live_ingest.total_timeout_ms) fails it", async () => {
    const rt = await speaking(s, speech);
    // Never idle (an event every 9 s), the turn still ends at its deadline.
    for (let t = 0; t < 2; t++) {
      clock.advance(IDLE_MS - 1000);
      await stillHere(rt.send, rt.messages);
    }
    clock.advance(DEADLINE_MS - 2 * (IDLE_MS - 1000));
    const failed = await rt.messages.next('conversation.item.input_audio_transcription.failed');
    assert.equal(failed.item_id, rt.started.item_id);
    assert.equal(failed.error.code, 'invalid_request');
    assert.match(failed.error.message, /live_ingest\.total_timeout_ms/);
    const types = rt.messages.types();
    assert.ok(
      types.indexOf('input_audio_buffer.committed') < types.indexOf(failed.type),
      `the turn is committed before it fails: ${types.join(' ')}`,
    );
    await freed(s);
    await transcribes(s, wav);
    await stillHere(rt.send, rt.messages);
    rt.ws.close();
  });

  test('realtime_max_session_ms passes mid-turn: the session ends now, cancelling its turn', async () => {
    // Most of the session's life goes before the speech (never idle: an event every 9 s).
    const rt = await speaking(s, speech, async ({ send, messages }) => {
      for (let t = 0; t < 3; t++) {
        clock.advance(IDLE_MS - 1000);
        await stillHere(send, messages);
      }
    });
    clock.advance(LIFETIME_MS - 3 * (IDLE_MS - 1000));
    const error = await rt.messages.next('error');
    assert.equal(error.error.code, 'session_expired');
    assert.equal(await rt.closed, 1000);
    await freed(s);
    await transcribes(s, wav);
  });
});

test('[time.shutdown-stalled-io] a shutdown with live turns mid-speech (one client gone, one silent) ends well within its deadline', async () => {
  const s = await startServer(
    { busy_timeout_ms: 0, shutdown_timeout_ms: 20_000, models: MODELS },
    { parallel: true },
  );
  let closing: Promise<void> | undefined;
  try {
    const speech = await fliteSpeech(s.url, SENTENCE, RATE);
    await transcribes(s, wavOfPcm(await fliteSpeech(s.url, SENTENCE, 16000)));
    const gone = await speaking(s, speech);
    gone.ws.terminate();
    const silent = await speaking(s, speech);
    const started = performance.now();
    closing = s.close();
    await closing;
    const ms = performance.now() - started;
    assert.ok(ms < 5000, `the shutdown took ${ms.toFixed(0)} ms`);
    // The silent client's speech was committed and transcribed before its session closed.
    assert.equal(await silent.closed, 1001);
    const types = silent.messages.types();
    assert.ok(types.includes('conversation.item.input_audio_transcription.completed'), types.join(' '));
    assert.equal(silent.messages.all.at(-1).error?.code, 'shutting_down');
  } finally {
    if (!closing) await s.close();
  }
});
