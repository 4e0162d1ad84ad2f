/**
 * Server VAD in a session, with the real silero model finding flite's speech and the fixture ASR
 * reporting the audio each turn brought (its length at 16 kHz): the server commits a turn that
 * holds the speech, its prefix padding and its silence window; `clear` mid-speech drops the turn;
 * idle_timeout_ms commits the quiet audio with `timeout_triggered`; the session shows its
 * detection; turning it off goes back to manual commits. The whole conversation with a streaming
 * engine and the openai SDK is in test/engines/pocketsphinx/realtime.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { speechBounds } from '../../helpers/samples.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { fixtureModel, fliteSpeech, withServer } from '../../helpers/voxd.js';
import { type Message, openSocket } from '../../helpers/websocket.js';

type Event = Message;

const RATE = 24000;
const silence = (ms: number) => Buffer.alloc(Math.round((ms * RATE) / 1000) * 2);

describe('server VAD in a realtime session', () => {
  const s = suiteServer({
    busy_timeout_ms: 0,
    models: [
      fixtureModel('asr', { task: 'asr' }),
      { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
      { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
    ],
  });

  const sentence = () => fliteSpeech(s.url, 'Please call me back tomorrow morning.', RATE);

  async function session(turnDetection: unknown) {
    const { ws, messages, send } = await openSocket(`${s.url}/v1/realtime?model=asr`);
    /** The `n`th event of a type (0 first), waiting for it: speech and its turn take seconds. */
    const next = (type: string, n = 0): Promise<Event> => messages.nth(type, n, 20_000);
    const append = (audio: Buffer) => {
      for (let at = 0; at < audio.length; at += 4800)
        send({ type: 'input_audio_buffer.append', audio: audio.subarray(at, at + 4800).toString('base64') });
    };
    send({ type: 'session.update', session: { audio: { input: { turn_detection: turnDetection } } } });
    const updated = await next('session.updated');
    return { ws, events: messages.all, next, send, append, updated };
  }

  test('a spoken sentence is one turn: its speech, its prefix padding and its silence window', async () => {
    const speech = await sentence();
    const rt = await session({ type: 'server_vad', prefix_padding_ms: 300, silence_duration_ms: 500 });
    try {
      assert.deepEqual(rt.updated.session.audio.input.turn_detection, {
        type: 'server_vad',
        threshold: 0.5,
        prefix_padding_ms: 300,
        silence_duration_ms: 500,
        idle_timeout_ms: null,
        create_response: false,
        interrupt_response: false,
      });
      rt.append(Buffer.concat([silence(1000), speech, silence(1000)]));
      const started = await rt.next('input_audio_buffer.speech_started');
      const stopped = await rt.next('input_audio_buffer.speech_stopped');
      const committed = await rt.next('input_audio_buffer.committed');
      const completed = await rt.next('conversation.item.input_audio_transcription.completed');
      assert.equal(started.item_id, committed.item_id);
      assert.equal(stopped.item_id, committed.item_id);
      assert.equal(completed.item_id, committed.item_id);
      // Where flite's speech is (ms into the stream): the turn starts 300 ms before it.
      const pcm = new Int16Array(speech.buffer, speech.byteOffset, speech.length / 2);
      const [a, b] = speechBounds(Float32Array.from(pcm, (v) => v / 32768)).map(
        (n) => 1000 + (n / RATE) * 1000,
      ) as [number, number];
      assert.ok(
        Math.abs(started.audio_start_ms - (a - 300)) <= 150,
        `start ${started.audio_start_ms}, speech at ${a}`,
      );
      assert.ok(
        stopped.audio_end_ms >= b - 300 && stopped.audio_end_ms <= b + 200,
        `end ${stopped.audio_end_ms} of speech ending at ${b}`,
      );
      // The turn's audio runs from its start to the end of its 500 ms silence window.
      const samples = JSON.parse(completed.transcript).audio.samples / 16;
      const expected = stopped.audio_end_ms + 500 - started.audio_start_ms;
      assert.ok(Math.abs(samples - expected) <= 2, `${samples} ms of audio, expected ${expected}`);
      assert.equal(rt.events.filter((e) => e.type === 'error').length, 0);
    } finally {
      rt.ws.close();
    }
  });

  test("turns never share audio: with LiveKit's and OpenAI's defaults, the next turn's padding stops where the last turn ended", async () => {
    // flite's sentence without its own quiet start and end, so that the pause is the one between.
    const spoken = await sentence();
    const pcm = new Int16Array(spoken.buffer, spoken.byteOffset, spoken.length / 2);
    const [a, b] = speechBounds(Float32Array.from(pcm, (v) => v / 32768)) as [number, number];
    const speech = spoken.subarray(a * 2, b * 2);
    // [prefix_padding_ms, silence_duration_ms]: LiveKit Agents' defaults, then OpenAI's.
    for (const [prefix, quiet] of [
      [600, 350],
      [300, 500],
    ] as const)
      for (const pause of [650, 900]) {
        const rt = await session({
          type: 'server_vad',
          prefix_padding_ms: prefix,
          silence_duration_ms: quiet,
        });
        try {
          rt.append(Buffer.concat([silence(500), speech, silence(pause), speech, silence(1500)]));
          const started = [
            await rt.next('input_audio_buffer.speech_started', 0),
            await rt.next('input_audio_buffer.speech_started', 1),
          ];
          const stopped = [
            await rt.next('input_audio_buffer.speech_stopped', 0),
            await rt.next('input_audio_buffer.speech_stopped', 1),
          ];
          const completed = [
            await rt.next('conversation.item.input_audio_transcription.completed', 0),
            await rt.next('conversation.item.input_audio_transcription.completed', 1),
          ];
          const what = `prefix ${prefix} ms, silence ${quiet} ms, pause ${pause} ms`;
          // The first turn's audio ends with its silence window; the second starts no earlier.
          const firstEnd = stopped[0].audio_end_ms + quiet;
          assert.ok(
            started[1].audio_start_ms >= firstEnd - 1,
            `${what}: turn 2 starts at ${started[1].audio_start_ms} ms, turn 1 ends at ${firstEnd} ms`,
          );
          // And each turn's audio is exactly its range.
          for (const n of [0, 1]) {
            const samples = JSON.parse(completed[n].transcript).audio.samples / 16;
            const expected = stopped[n].audio_end_ms + quiet - started[n].audio_start_ms;
            assert.ok(
              Math.abs(samples - expected) <= 2,
              `${what}: turn ${n + 1} holds ${samples} ms, expected ${expected}`,
            );
          }
        } finally {
          rt.ws.close();
        }
      }
  });

  test('clear while speech goes on drops its turn; the next speech is a turn of its own', async () => {
    const speech = await sentence();
    const rt = await session({ type: 'server_vad' });
    try {
      rt.append(Buffer.concat([silence(500), speech.subarray(0, RATE * 2)]));
      const started = await rt.next('input_audio_buffer.speech_started');
      rt.send({ type: 'input_audio_buffer.clear' });
      await rt.next('input_audio_buffer.cleared');
      rt.append(Buffer.concat([silence(500), speech, silence(800)]));
      const committed = await rt.next('input_audio_buffer.committed');
      await rt.next('conversation.item.input_audio_transcription.completed');
      assert.notEqual(committed.item_id, started.item_id);
      assert.equal(
        rt.events.filter(
          (e) => e.item_id === started.item_id && e.type !== 'input_audio_buffer.speech_started',
        ).length,
        0,
      );
      assert.equal(rt.events.filter((e) => e.type === 'input_audio_buffer.committed').length, 1);
    } finally {
      rt.ws.close();
    }
  });

  test('idle_timeout_ms: quiet audio is committed with timeout_triggered; null turns detection off', async () => {
    const rt = await session({ type: 'server_vad', idle_timeout_ms: 1000 });
    try {
      rt.append(silence(1500));
      const timeout = await rt.next('input_audio_buffer.timeout_triggered');
      assert.equal(timeout.audio_start_ms, 0);
      assert.equal(timeout.audio_end_ms, 1000);
      const completed = await rt.next('conversation.item.input_audio_transcription.completed');
      assert.equal(completed.item_id, timeout.item_id);
      assert.equal(JSON.parse(completed.transcript).audio.samples, 16000);
      // Off again: audio waits for the client's commit.
      rt.send({ type: 'session.update', session: { audio: { input: { turn_detection: null } } } });
      await rt.next('session.updated', 1);
      rt.append(silence(200));
      rt.send({ type: 'input_audio_buffer.commit' });
      const second = await rt.next('conversation.item.input_audio_transcription.completed', 1);
      assert.equal(JSON.parse(second.transcript).audio.samples, 3200);
    } finally {
      rt.ws.close();
    }
  });
});

test('server VAD finds the one silero_vad model registered under another id than chunking_vad_model; with none it names the setting', async () => {
  await withServer(
    {
      models: [
        fixtureModel('asr', { task: 'asr' }),
        { id: 'my-vad', family: 'silero_vad', task: 'vad', lazy: true },
        { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
      ],
    },
    async (s) => {
      const { ws, messages, send } = await openSocket(`${s.url}/v1/realtime?model=asr`);
      try {
        send({
          type: 'session.update',
          session: { audio: { input: { turn_detection: { type: 'server_vad' } } } },
        });
        await messages.nth('session.updated', 0, 20_000);
        const speech = await fliteSpeech(s.url, 'Please call me back tomorrow morning.', 24000);
        const audio = Buffer.concat([Buffer.alloc(24000), speech, Buffer.alloc(48000)]);
        for (let at = 0; at < audio.length; at += 4800)
          send({
            type: 'input_audio_buffer.append',
            audio: audio.subarray(at, at + 4800).toString('base64'),
          });
        await messages.nth('input_audio_buffer.committed', 0, 20_000);
        assert.equal(messages.all.filter((e) => e.type === 'error').length, 0);
      } finally {
        ws.close();
      }
    },
  );
});
