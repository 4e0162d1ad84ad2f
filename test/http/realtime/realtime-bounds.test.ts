/**
 * What one realtime session may hold (probe 2026-12, F5/F6): committed turns waiting behind the one
 * running are capped, and refused past the cap; the audio of the buffer, of waiting turns and of
 * events not yet handled counts against the server's byte budget (max_inflight_body_bytes), refused
 * past it with `body_budget` while the session goes on, and all of it given back when the session
 * ends; under server VAD an append flood is slowed to the detector's pace, so the audio not yet
 * examined stays bounded. Turns wait on a gate the test opens.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UNEXAMINED_SECONDS } from '../../../src/http/realtime/input-buffer.js';
import { INBOX_BYTES } from '../../../src/http/realtime/session.js';
import { MAX_WAITING_TURNS } from '../../../src/http/realtime/turns.js';
import { bodyBudgetOf } from '../../../src/http/transport/body-budget.js';
import type { ByteBudget } from '../../../src/session/byte-budget.js';
import { watchHighest } from '../../helpers/budget.js';
import { fixtureModel, post, type TestServer, waitUntil, withServer } from '../../helpers/voxd.js';
import { openSocket } from '../../helpers/websocket.js';

const RATE = 24000;
/** The rate a session keeps its audio at: the model's (16 kHz), below the client's 24 kHz. */
const KEPT_RATE = 16000;
/** `seconds` of silence at 24 kHz PCM16, as an append's base64. */
const silence = (seconds: number) => Buffer.alloc(Math.round(seconds * RATE) * 2).toString('base64');

/** Registers `asr`, whose runs wait on a gate (a session cannot send run options; defaults can). */
async function gatedAsr(s: TestServer) {
  const gate = s.gate('turns');
  const res = await post(
    s.url,
    '/v1/models/load',
    fixtureModel('asr', { task: 'asr', default_request_options: { run_gate: gate.path } }),
  );
  assert.equal(res.status, 200, res.body.toString());
  return gate;
}

async function session(s: TestServer, query = 'model=asr') {
  const socket = await openSocket(`${s.url}/v1/realtime?${query}`);
  await socket.messages.next('session.created');
  return socket;
}

const budgetOf = (s: TestServer): ByteBudget => bodyBudgetOf(s.voxd.server)!;

test(`a session's committed turns past ${MAX_WAITING_TURNS} waiting are refused (queue_full); the buffer keeps the refused audio`, async () => {
  await withServer({ ui_management: true }, async (s) => {
    const gate = await gatedAsr(s);
    const { ws, messages, send } = await session(s);
    const commit = (seconds: number) => {
      send({ type: 'input_audio_buffer.append', audio: silence(seconds) });
      send({ type: 'input_audio_buffer.commit' });
    };
    commit(0.1);
    await waitUntil('the first turn runs', () => s.fixture.record.of('asr', 'run-start').length === 1);
    for (let n = 0; n < MAX_WAITING_TURNS; n++) commit(0.1);
    commit(0.25);
    const error = (await messages.next('error')).error;
    assert.equal(error.code, 'queue_full');
    assert.match(error.message, new RegExp(`${MAX_WAITING_TURNS} committed turns`));
    assert.equal(messages.all.filter((e) => e.type === 'input_audio_buffer.committed').length, 5);
    await gate.open();
    await messages.nth('conversation.item.input_audio_transcription.completed', MAX_WAITING_TURNS);
    // The refused commit's audio is still there: committed now, it is one turn of 0.25 s.
    send({ type: 'input_audio_buffer.commit' });
    const last = await messages.nth('conversation.item.input_audio_transcription.completed', 5);
    assert.equal(JSON.parse(last.transcript).audio.samples, 4000);
    ws.close();
  });
});

test('audio held by a session counts against max_inflight_body_bytes: past it body_budget, the session goes on, all given back at its end', async () => {
  // Three turns of 3 s (192,000 bytes each as samples kept at 16 kHz) fit; the fourth append does not.
  await withServer({ ui_management: true, max_inflight_body_bytes: 700_000 }, async (s) => {
    const gate = await gatedAsr(s);
    const budget = budgetOf(s);
    const { ws, messages, send, closed } = await session(s);
    const commit = () => {
      send({ type: 'input_audio_buffer.append', audio: silence(3) });
      send({ type: 'input_audio_buffer.commit' });
    };
    for (let n = 0; n < 3; n++) commit();
    await messages.nth('input_audio_buffer.committed', 2);
    assert.equal(budget.inUse, 3 * 3 * KEPT_RATE * 4, 'three turns of samples held');
    commit();
    const error = (await messages.next('error')).error;
    assert.equal(error.code, 'body_budget');
    assert.equal(error.type, 'server_busy');
    // The refused append left nothing: the commit after it found the buffer empty.
    assert.equal((await messages.nth('error', 1)).error.code, 'input_audio_buffer_commit_empty');
    await gate.open();
    await messages.nth('conversation.item.input_audio_transcription.completed', 2);
    await waitUntil('the turns gave their audio back', () => budget.inUse === 0);
    commit();
    await messages.nth('conversation.item.input_audio_transcription.completed', 3);
    // A turn held when the client leaves is given back with everything else.
    send({ type: 'input_audio_buffer.append', audio: silence(3) });
    await waitUntil('the buffer holds the append', () => budget.inUse >= 3 * KEPT_RATE * 4);
    ws.close();
    await closed;
    await waitUntil('the session gave everything back', () => budget.inUse === 0);
  });
});

test('server VAD: an append flood waits for the detector, so the audio held stays bounded, and is given back', async () => {
  await withServer(
    {
      models: [
        fixtureModel('asr', { task: 'asr' }),
        { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
      ],
    },
    async (s) => {
      const budget = budgetOf(s);
      const watch = watchHighest(budget);
      const { ws, messages, send, closed } = await session(s);
      send({
        type: 'session.update',
        session: { audio: { input: { turn_detection: { type: 'server_vad' } } } },
      });
      await messages.next('session.updated');
      // 240 s of silence in 12 appends, as fast as the socket takes them.
      const append = silence(20);
      for (let n = 0; n < 12; n++) send({ type: 'input_audio_buffer.append', audio: append });
      send({ type: 'input_audio_buffer.clear' });
      await messages.next('input_audio_buffer.cleared', 0, 60_000);
      assert.deepEqual(
        messages.all.filter((e) => e.type === 'error'),
        [],
      );
      // At most the unexamined bound, one append and its context as samples, plus the events waiting.
      const bound = (UNEXAMINED_SECONDS + 20 + 1) * KEPT_RATE * 4 + INBOX_BYTES + 2 * append.length;
      assert.ok(watch.highest > 0, 'the buffer counts against the budget');
      assert.ok(
        watch.highest <= bound,
        `held at most ${watch.highest} bytes, bound ${bound} (240 s: ${240 * KEPT_RATE * 4})`,
      );
      ws.close();
      await closed;
      await waitUntil('the session gave everything back', () => budget.inUse === 0);
    },
  );
});

test('server VAD: appends as long as the buffer takes follow each other, each waiting until it fits', async () => {
  await withServer(
    {
      models: [
        fixtureModel('asr', { task: 'asr' }),
        { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
      ],
    },
    async (s) => {
      const { ws, messages, send } = await session(s);
      send({
        type: 'session.update',
        session: { audio: { input: { turn_detection: { type: 'server_vad' } } } },
      });
      await messages.next('session.updated');
      // Two of 115 s: the second fits under the 120 s limit only once the first has been examined.
      const append = silence(115);
      send({ type: 'input_audio_buffer.append', audio: append });
      send({ type: 'input_audio_buffer.append', audio: append });
      send({ type: 'input_audio_buffer.clear' });
      await messages.next('input_audio_buffer.cleared', 0, 60_000);
      assert.deepEqual(
        messages.all.filter((e) => e.type === 'error'),
        [],
      );
      ws.close();
    },
  );
});
