/**
 * Realtime turns under the behaviour contract, each the realtime variant of a request's cell: a turn
 * is a request to its model's FIFO like any other, so it waits behind a manager that came first,
 * gives up at the busy timeout, and leaves the queue when its client does. The slot is held by an
 * HTTP request waiting on a gate; the orderings are forced with gates, never sleeps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  fixtureModel,
  post,
  type TestServer,
  waitUntil,
  whenRuntime,
  withServer,
} from '../../helpers/voxd.js';
import { type Message, openSocket } from '../../helpers/websocket.js';

/** A session on `model` whose events are kept; `next(type)` waits for the first of a type. */
async function session(s: TestServer, model: string) {
  const { ws, messages, send } = await openSocket(`${s.url}/v1/realtime?model=${model}`);
  const next = (type: string): Promise<Message> => messages.next(type);
  const commit = () => {
    send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(4800).toString('base64') });
    send({ type: 'input_audio_buffer.commit' });
  };
  await next('session.created');
  return { ws, events: messages.all, next, commit };
}

/** An HTTP request that holds `model`'s one slot until its gate opens. */
async function holdSlot(s: TestServer, model: string) {
  const gate = s.gate(`hold-${model}`);
  const answer = post(s.url, '/v1/tasks/run', { model, text: 'hold', options: { run_gate: gate.path } });
  await waitUntil('the holder runs', () => s.fixture.record.of(model, 'run-start').length === 1);
  return { gate, answer };
}

const snapshot = (s: TestServer, id: string) => s.voxd.runtime.get(id).scheduler.snapshot();

test('[time.disconnect-queued] a realtime turn queued behind a running request leaves the queue with its client, and never runs', async () => {
  await withServer({ models: [fixtureModel('asr', { task: 'asr' })] }, async (s) => {
    const holder = await holdSlot(s, 'asr');
    const rt = await session(s, 'asr');
    rt.commit();
    await whenRuntime(s.voxd.runtime, 'the turn queues', () => snapshot(s, 'asr').queuedRequests === 1);
    rt.ws.terminate();
    await whenRuntime(s.voxd.runtime, 'the queue empties', () => snapshot(s, 'asr').queuedRequests === 0);
    await holder.gate.open();
    assert.equal((await holder.answer).status, 200);
    assert.equal(s.fixture.record.of('asr', 'run-start').length, 1, 'the turn never ran');
    await whenRuntime(s.voxd.runtime, 'the slot is free', () => snapshot(s, 'asr').activeRequests === 0);
  });
});

test('[time.admission-timeout] a realtime turn that waits past the busy timeout fails server_busy, and the session goes on', async () => {
  await withServer({ models: [fixtureModel('asr', { task: 'asr', busy_timeout_ms: 50 })] }, async (s) => {
    const holder = await holdSlot(s, 'asr');
    const rt = await session(s, 'asr');
    rt.commit();
    const failed = await rt.next('conversation.item.input_audio_transcription.failed');
    assert.equal(failed.error.type, 'server_busy');
    assert.equal(failed.error.code, 'server_busy');
    await holder.gate.open();
    assert.equal((await holder.answer).status, 200);
    rt.commit();
    await rt.next('conversation.item.input_audio_transcription.completed');
    rt.ws.close();
  });
});

test('[order.manager-request] a realtime turn committed after a queued unload waits for it, then runs on a fresh load', async () => {
  await withServer({ ui_management: true, models: [fixtureModel('asr', { task: 'asr' })] }, async (s) => {
    const holder = await holdSlot(s, 'asr');
    const unload = post(s.url, '/v1/models/unload', { id: 'asr' });
    await whenRuntime(s.voxd.runtime, 'the unload queues', () => snapshot(s, 'asr').queuedManagers === 1);
    const rt = await session(s, 'asr');
    rt.commit();
    await whenRuntime(
      s.voxd.runtime,
      'the turn queues behind it',
      () => snapshot(s, 'asr').queuedRequests === 1,
    );
    await holder.gate.open();
    assert.equal((await unload).status, 200);
    await rt.next('conversation.item.input_audio_transcription.completed');
    const starts = s.fixture.record.of('asr', 'run-start') as { generation: number }[];
    assert.deepEqual(
      starts.map((e) => e.generation),
      [1, 2],
      'the holder ran on the first load, the turn on the load after the unload',
    );
    rt.ws.close();
  });
});

test('[state.ready.evict] eviction skips a model whose realtime turn is running (503 for the other load), then takes it once the turn is done', async () => {
  await withServer(
    { max_loaded_models: 1, ui_management: true, models: [fixtureModel('other', { task: 'asr' })] },
    async (s) => {
      const gate = s.gate('turn');
      // `asr`'s runs wait on the gate: a session cannot send run options, its model's defaults can.
      const load = await post(
        s.url,
        '/v1/models/load',
        fixtureModel('asr', { task: 'asr', default_request_options: { run_gate: gate.path } }),
      );
      assert.equal(load.status, 200, load.body.toString());
      const rt = await session(s, 'asr');
      rt.commit();
      await waitUntil('the turn runs', () => s.fixture.record.of('asr', 'run-start').length === 1);
      const other = await post(s.url, '/v1/tasks/run', { model: 'other', text: 'x' });
      assert.equal(other.status, 503, other.body.toString());
      assert.match(other.body.toString(), /every loaded model is busy/);
      assert.equal(snapshot(s, 'asr').activeRequests, 1, 'the turn still holds its slot');
      await gate.open();
      await rt.next('conversation.item.input_audio_transcription.completed');
      assert.equal((await post(s.url, '/v1/tasks/run', { model: 'other', text: 'x' })).status, 200);
      assert.match(s.logs.join('\n'), /evicted model 'asr' to load 'other'/);
      rt.ws.close();
    },
  );
});
