/**
 * Issue 39, item 7: a realtime session that commits by hand has pocketsphinx hear its buffer as it
 * is appended (a live turn, its slot taken at the first append while one is free), so the commit
 * waits only for the last step. Its words are held until the commit events name the item; a clear
 * or a change of turn detection drops the live turn and frees its slot; with no slot free the
 * buffer waits, holding nothing, and is searched whole at its commit.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bodyBudgetOf } from '../../../src/http/transport/body-budget.js';
import { LIBRIVOX_RATE, librivoxWav } from '../../helpers/librivox.js';
import { lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { get, type TestServer, waitUntil } from '../../helpers/voxd.js';
import { openSocket, type Socket } from '../../helpers/websocket.js';

/** 100 ms of PCM16 at 16 kHz. */
const PIECE = (LIBRIVOX_RATE / 10) * 2;
/** "he was not an ill disposed young man", 3.0 s. */
const SPEECH = librivoxWav('0880').subarray(44);

async function activeSlots(s: TestServer): Promise<number> {
  const models = (await get(s.url, '/v1/models')).json.data as { id: string; active_slots?: number }[];
  return models.find((m) => m.id === 'pocketsphinx')?.active_slots ?? 0;
}

async function manualSession(s: TestServer): Promise<Socket> {
  const socket = await openSocket(`${s.url}/v1/realtime?model=pocketsphinx`);
  socket.send({
    type: 'session.update',
    session: {
      type: 'transcription',
      audio: { input: { format: { type: 'audio/pcm', rate: LIBRIVOX_RATE }, turn_detection: null } },
    },
  });
  await socket.messages.next('session.updated');
  return socket;
}

function append(socket: Socket, pcm: Buffer): void {
  for (let at = 0; at < pcm.length; at += PIECE)
    socket.send({
      type: 'input_audio_buffer.append',
      audio: pcm.subarray(at, at + PIECE).toString('base64'),
    });
}

async function close(socket: Socket): Promise<void> {
  socket.ws.close();
  await socket.closed;
}

describe('pocketsphinx: a manual-commit realtime buffer is heard as it is appended', () => {
  // The parallel runtime reports its slots (GET /v1/models active_slots, queued_requests); one slot.
  const s = suiteServer(
    { busy_timeout_ms: 0, models: [lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr')] },
    { parallel: true },
  );

  test('the slot is taken at the first append; the words follow the commit events and join into the transcript', async () => {
    const rt = await manualSession(s);
    try {
      append(rt, SPEECH);
      // Before any commit, the engine holds its slot: it is hearing the buffer.
      await waitUntil('the live turn takes its slot', async () => (await activeSlots(s)) === 1);
      // The session holds no byte of the audio once the engine has taken every piece: by then it
      // has decoded all but the last, and settled words of "he was not..." exist, held.
      const budget = bodyBudgetOf(s.voxd.server)!;
      await waitUntil('the engine takes the whole buffer', () => budget.inUse === 0, 30_000);
      assert.deepEqual(
        rt.messages.types().filter((t) => t.startsWith('conversation.')),
        [],
        'nothing of the item before its commit',
      );
      rt.send({ type: 'input_audio_buffer.commit' });
      const completed = await rt.messages.next(
        'conversation.item.input_audio_transcription.completed',
        0,
        30_000,
      );
      const types = rt.messages.types();
      const firstDelta = types.indexOf('conversation.item.input_audio_transcription.delta');
      assert.ok(firstDelta > types.indexOf('input_audio_buffer.committed'), types.join(', '));
      const deltas = rt.messages.all
        .filter((m) => m.type === 'conversation.item.input_audio_transcription.delta')
        .map((m) => m.delta);
      assert.equal(deltas.join(''), completed.transcript);
      assert.ok(
        deltas.length >= 2,
        `the words settled before the commit, then the rest: ${JSON.stringify(deltas)}`,
      );
      assert.ok(
        /\bman\b/.test(completed.transcript) && /\bwas\b/.test(completed.transcript),
        completed.transcript,
      );
      await waitUntil('the slot is free after the turn', async () => (await activeSlots(s)) === 0);
    } finally {
      await close(rt);
    }
  });

  test('a clear drops the live turn and frees its slot; the next buffer is heard afresh', async () => {
    const rt = await manualSession(s);
    try {
      append(rt, SPEECH.subarray(0, PIECE * 10));
      await waitUntil('the live turn takes its slot', async () => (await activeSlots(s)) === 1);
      rt.send({ type: 'input_audio_buffer.clear' });
      await rt.messages.next('input_audio_buffer.cleared');
      await waitUntil('the cleared turn frees its slot', async () => (await activeSlots(s)) === 0);
      append(rt, SPEECH);
      rt.send({ type: 'input_audio_buffer.commit' });
      const completed = await rt.messages.next(
        'conversation.item.input_audio_transcription.completed',
        0,
        30_000,
      );
      assert.ok(/\bman\b/.test(completed.transcript), completed.transcript);
      assert.equal(
        rt.messages.types().filter((t) => t === 'conversation.item.input_audio_transcription.completed')
          .length,
        1,
        'the cleared buffer was never transcribed',
      );
      // A change of turn detection drops a buffer that was not committed, its live turn with it.
      append(rt, SPEECH.subarray(0, PIECE * 10));
      await waitUntil('a live turn again', async () => (await activeSlots(s)) === 1);
      rt.send({
        type: 'session.update',
        session: { type: 'transcription', audio: { input: { turn_detection: null } } },
      });
      await rt.messages.nth('session.updated', 1);
      await waitUntil('the dropped turn frees its slot', async () => (await activeSlots(s)) === 0);
    } finally {
      await close(rt);
    }
  });

  test('with the slot taken, another session appends without queueing for it and is searched whole at its commit', async () => {
    const first = await manualSession(s);
    const second = await manualSession(s);
    try {
      append(first, SPEECH.subarray(0, PIECE * 10));
      await waitUntil('the first session holds the slot', async () => (await activeSlots(s)) === 1);
      append(second, SPEECH);
      // An update that leaves the buffer as it is: once it is answered, the appends before it were taken.
      second.send({ type: 'session.update', session: { type: 'transcription', include: [] } });
      await second.messages.nth('session.updated', 1);
      // The second session's buffer waits without a place in the model's queue.
      const status = (await get(s.url, '/v1/models/pocketsphinx')).json;
      assert.equal(status.queued_requests, 0, JSON.stringify(status));
      second.send({ type: 'input_audio_buffer.commit' });
      // Its whole search waits for the slot: the first session's commit frees it.
      append(first, SPEECH.subarray(PIECE * 10));
      first.send({ type: 'input_audio_buffer.commit' });
      const heard = await Promise.all(
        [first, second].map((rt) =>
          rt.messages.next('conversation.item.input_audio_transcription.completed', 0, 30_000),
        ),
      );
      for (const completed of heard) assert.ok(/\bman\b/.test(completed.transcript), completed.transcript);
    } finally {
      await close(first);
      await close(second);
    }
  });
});
