/**
 * Deepgram's sockets under the behaviour contract, each the Deepgram variant of a request's cell.
 * On `/v1/speak` every piece of text is one request to its model's FIFO like any other; on
 * `/v1/listen` every utterance is. So they queue in arrival order, wait behind a manager that came
 * first, give up at the busy timeout, leave the queue when their client does, hold their slot
 * against eviction while they run, and a shutdown lets the work in progress finish before it closes
 * the socket with 1001. The fixture engine's runs are held by gates set as the model's default
 * request options (a socket sends no engine options); orderings are forced with gates, never sleeps.
 * The listen sessions' utterances are found by the real silero VAD in flite's speech.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { type DeepgramClient, openDeepgram } from '../../helpers/deepgram-socket.js';
import { FLITE, lazyModel } from '../../helpers/models.js';
import {
  fixtureModel,
  fliteSpeech,
  post,
  startServer,
  type TestServer,
  waitUntil,
  whenRuntime,
  withServer,
} from '../../helpers/voxd.js';

const snapshot = (s: TestServer, id: string) => s.voxd.runtime.get(id).scheduler.snapshot();

/**
 * Registers `id` with default request options (a socket cannot send any), and `slots` (the parallel
 * runtime's only).
 */
async function register(
  s: TestServer,
  id: string,
  task: 'tts' | 'asr',
  options: Record<string, unknown>,
  slots?: number,
) {
  const res = await post(
    s.url,
    '/v1/models/load',
    fixtureModel(id, { task, ...(slots ? { slots } : {}), default_request_options: options }),
  );
  assert.equal(res.status, 200, res.body.toString());
}

/** An HTTP request that holds `model`'s one slot until its gate opens. */
async function holdSlot(s: TestServer, model: string) {
  const gate = s.gate(`hold-${model}`);
  const answer = post(s.url, '/v1/tasks/run', { model, text: 'hold', options: { run_gate: gate.path } });
  await waitUntil('the holder runs', () => s.fixture.record.of(model, 'run-start').length === 1);
  return { gate, answer };
}

/** A `/v1/speak` session on `model` at 16 kHz PCM (the fixture's own rate), open and past its Metadata. */
async function speaker(s: TestServer, model: string): Promise<DeepgramClient> {
  const c = await openDeepgram(`${s.url}/v1/speak?model=${model}&encoding=linear16&sample_rate=16000`);
  await c.messages.next('Metadata');
  return c;
}

/** One sentence and a Flush: one piece of text, one request. */
function say(c: DeepgramClient, text = 'Hello there.') {
  c.send({ type: 'Speak', text });
  c.send({ type: 'Flush' });
}

describe('/v1/speak under the admission contract', () => {
  test('[order.request-request] ten speak sessions at once on two slots are served in arrival order', async () => {
    await withServer({ ui_management: true, models: [] }, { parallel: true }, async (s) => {
      // Each run sends its first audio and then waits on the gate: the sessions with audio are the
      // ones holding a slot; a Clear gives the slot up and the next in line starts.
      const gate = s.gate('chunks');
      await register(s, 'tts', 'tts', { chunks: '4', chunk_gate: gate.path }, 2);
      const clients: DeepgramClient[] = [];
      for (let i = 0; i < 10; i++) {
        const c = await speaker(s, 'tts');
        say(c);
        clients.push(c);
        await whenRuntime(s.voxd.runtime, `session ${i}'s piece is admitted or queued`, () => {
          const { activeRequests, queuedRequests } = snapshot(s, 'tts');
          return activeRequests + queuedRequests === i + 1;
        });
      }
      const speaking = () => clients.flatMap((c, i) => (c.audioBytes() > 0 ? [i] : []));
      await waitUntil('the first two speak', () => speaking().length === 2);
      assert.deepEqual(speaking(), [0, 1]);
      for (let i = 0; i < 8; i++) {
        clients[i]!.send({ type: 'Clear' });
        await clients[i]!.messages.next('Cleared');
        await waitUntil(`session ${i + 2} speaks`, () => clients[i + 2]!.audioBytes() > 0);
        assert.deepEqual(
          speaking().filter((k) => k > i),
          i + 2 === 9 ? [i + 1, 9] : [i + 1, i + 2],
          'only the next in line took the freed slot',
        );
      }
      await gate.open();
      for (const c of clients.slice(8)) await c.messages.next('Flushed');
      await Promise.all(clients.map((c) => c.ws.close()));
    });
  });

  test('[order.manager-request] a Flush after a queued unload waits for it, then speaks on a fresh load', async () => {
    await withServer({ ui_management: true, models: [fixtureModel('tts', { task: 'tts' })] }, async (s) => {
      const holder = await holdSlot(s, 'tts');
      const unload = post(s.url, '/v1/models/unload', { id: 'tts' });
      await whenRuntime(s.voxd.runtime, 'the unload queues', () => snapshot(s, 'tts').queuedManagers === 1);
      const c = await speaker(s, 'tts');
      say(c);
      await whenRuntime(
        s.voxd.runtime,
        'the piece queues behind it',
        () => snapshot(s, 'tts').queuedRequests === 1,
      );
      assert.equal(c.audioBytes(), 0);
      await holder.gate.open();
      assert.equal((await unload).status, 200);
      await c.messages.next('Flushed');
      assert.ok(c.audioBytes() > 0);
      const starts = s.fixture.record.of('tts', 'run-start') as { generation: number }[];
      assert.deepEqual(
        starts.map((e) => e.generation),
        [1, 2],
        'the holder ran on the first load, the piece on the load after the unload',
      );
      c.ws.close();
    });
  });

  test('[time.disconnect-queued] a piece queued behind a running request leaves the queue with its client, and never runs', async () => {
    await withServer({ models: [fixtureModel('tts', { task: 'tts' })] }, async (s) => {
      const holder = await holdSlot(s, 'tts');
      const c = await speaker(s, 'tts');
      say(c);
      await whenRuntime(s.voxd.runtime, 'the piece queues', () => snapshot(s, 'tts').queuedRequests === 1);
      c.ws.terminate();
      await whenRuntime(s.voxd.runtime, 'the queue empties', () => snapshot(s, 'tts').queuedRequests === 0);
      await holder.gate.open();
      assert.equal((await holder.answer).status, 200);
      assert.equal(s.fixture.record.of('tts', 'run-start').length, 1, 'the piece never ran');
      await whenRuntime(s.voxd.runtime, 'the slot is free', () => snapshot(s, 'tts').activeRequests === 0);
    });
  });

  test('[time.disconnect-executing] a client that leaves mid-synthesis cancels it and frees the slot at once', async () => {
    await withServer({ ui_management: true, models: [] }, async (s) => {
      const gate = s.gate('chunks');
      await register(s, 'tts', 'tts', { chunks: '4', chunk_gate: gate.path });
      const c = await speaker(s, 'tts');
      say(c);
      await waitUntil('the first audio comes', () => c.audioBytes() > 0);
      assert.equal(snapshot(s, 'tts').activeRequests, 1);
      c.ws.terminate();
      await whenRuntime(s.voxd.runtime, 'the slot is free', () => snapshot(s, 'tts').activeRequests === 0);
      const ends = s.fixture.record.of('tts', 'run-end') as { outcome: string }[];
      assert.deepEqual(
        ends.map((e) => e.outcome),
        ['aborted'],
      );
    });
  });

  test('[time.admission-timeout] a piece that waits past the busy timeout is told (Warning) and the socket closes 1011, as Deepgram ends a failed synthesis', async () => {
    await withServer({ models: [fixtureModel('tts', { task: 'tts', busy_timeout_ms: 50 })] }, async (s) => {
      const holder = await holdSlot(s, 'tts');
      const c = await speaker(s, 'tts');
      say(c);
      const warning = await c.messages.next('Warning');
      assert.equal(warning.code, 'SESSION_ENDING');
      assert.match(warning.description, /busy_timeout_ms/);
      assert.equal((await c.closed).code, 1011);
      assert.equal(c.audioBytes(), 0);
      await holder.gate.open();
      assert.equal((await holder.answer).status, 200);
      assert.equal(s.fixture.record.of('tts', 'run-start').length, 1, 'the piece never ran');
      await whenRuntime(s.voxd.runtime, 'nothing is held', () => {
        const { activeRequests, queuedRequests } = snapshot(s, 'tts');
        return activeRequests === 0 && queuedRequests === 0;
      });
    });
  });

  test('[state.ready.evict] eviction skips a model whose speech is being made (503 for the other load), then takes it once it is done', async () => {
    await withServer(
      { max_loaded_models: 1, ui_management: true, models: [fixtureModel('other', { task: 'asr' })] },
      async (s) => {
        const gate = s.gate('speech');
        await register(s, 'tts', 'tts', { run_gate: gate.path });
        const c = await speaker(s, 'tts');
        say(c);
        await waitUntil('the piece runs', () => s.fixture.record.of('tts', 'run-start').length === 1);
        const other = await post(s.url, '/v1/tasks/run', { model: 'other', text: 'x' });
        assert.equal(other.status, 503, other.body.toString());
        assert.match(other.body.toString(), /every loaded model is busy/);
        assert.equal(snapshot(s, 'tts').activeRequests, 1, 'the piece still holds its slot');
        await gate.open();
        await c.messages.next('Flushed');
        assert.equal((await post(s.url, '/v1/tasks/run', { model: 'other', text: 'x' })).status, 200);
        assert.match(s.logs.join('\n'), /evicted model 'tts' to load 'other'/);
        c.ws.close();
      },
    );
  });

  test('[time.custom-listener] a shutdown lets the speech in progress finish, then closes the socket with 1001; new sockets are refused', async () => {
    await withServer({ ui_management: true, models: [] }, async (s) => {
      const gate = s.gate('speech');
      await register(s, 'tts', 'tts', { run_gate: gate.path });
      const c = await speaker(s, 'tts');
      say(c);
      await waitUntil('the piece runs', () => s.fixture.record.of('tts', 'run-start').length === 1);
      const closing = s.voxd.close();
      await waitUntil('the shutdown begins', () => s.voxd.runtime.closing);
      assert.equal(c.audioBytes(), 0);
      await gate.open();
      const closed = await c.closed;
      assert.equal(closed.code, 1001);
      // The whole piece was sent before the close: 120 ms + 40 ms a character at 16 kHz, PCM16.
      assert.equal(c.audioBytes(), ((120 + 40 * 'Hello there.'.length) * 16000 * 2) / 1000);
      assert.deepEqual(
        (s.fixture.record.of('tts', 'run-end') as { outcome: string }[]).map((e) => e.outcome),
        ['ok'],
      );
      await closing;
      await assert.rejects(openDeepgram(`${s.url}/v1/speak?model=tts`));
    });
  });

  test('[time.shutdown-stalled-io] a shutdown with a speak client that stopped reading ends within its deadline', async () => {
    await withServer(
      {
        shutdown_timeout_ms: 1000,
        // The send timeout is longer than the shutdown's deadline: only the deadline can end it.
        live_ingest: { send_timeout_ms: 60_000 },
        models: [
          fixtureModel('tts', { task: 'tts', default_request_options: { chunks: '50', repeat: '200' } }),
        ],
      },
      async (s) => {
        const c = await speaker(s, 'tts');
        c.ws.pause();
        say(c, 'A long sentence that the client will never read to its end.');
        await waitUntil('the piece runs', () => s.fixture.record.of('tts', 'run-start').length === 1);
        const started = performance.now();
        await s.voxd.close();
        const ms = performance.now() - started;
        assert.ok(ms < 4000, `the shutdown took ${ms.toFixed(0)} ms`);
        assert.equal(snapshot(s, 'tts').activeRequests, 0);
        c.ws.terminate();
      },
    );
  });
});

// ---------------------------------------------------------------- /v1/listen

/** `/v1/listen` finds utterances with the server's VAD (chunking_vad_model `silero-vad`). */
const VAD = lazyModel('silero-vad', 'silero_vad', 'vad');
/** A live engine: an utterance holds its slot from its speech start, heard as it is spoken. */
const POCKETSPHINX = lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr', { mode: 'streaming' });
const RATE = 16000;
const silence = (ms: number) => Buffer.alloc((RATE * 2 * ms) / 1000);

/**
 * A `/v1/listen` session on `model`, 16 kHz PCM16, an utterance ended by 500 ms of silence,
 * SpeechStarted sent.
 */
function listener(s: TestServer, model = 'asr'): Promise<DeepgramClient> {
  return openDeepgram(
    `${s.url}/v1/listen?model=${model}&encoding=linear16&sample_rate=${RATE}&endpointing=500&vad_events=true`,
  );
}

describe('/v1/listen under the admission contract', () => {
  /** flite's speech, made once: every session speaks it as one utterance with silence around it. */
  let speech: Buffer;
  before(async () => {
    const flite = await startServer({ models: [FLITE] });
    try {
      speech = await fliteSpeech(flite.url, 'Please call me tomorrow morning.', RATE);
    } finally {
      await flite.close();
    }
  });
  /** One utterance, all at once: the VAD ends it at its silence and it goes to the model's FIFO. */
  const utterance = (c: DeepgramClient) => c.sendAudio(Buffer.concat([silence(500), speech, silence(1500)]));

  test('[order.request-request] utterances of four sessions at once on one slot run in arrival order', async () => {
    await withServer({ ui_management: true, models: [VAD] }, { parallel: true }, async (s) => {
      // Every run hangs until its client leaves: which one runs shows by what a leave starts.
      await register(s, 'asr', 'asr', { hang: 'true' }, 1);
      const clients: DeepgramClient[] = [];
      for (let i = 0; i < 4; i++) {
        const c = await listener(s);
        utterance(c);
        clients.push(c);
        await whenRuntime(
          s.voxd.runtime,
          `session ${i}'s utterance is admitted or queued`,
          () => {
            const { activeRequests, queuedRequests } = snapshot(s, 'asr');
            return activeRequests + queuedRequests === i + 1;
          },
          15_000,
        );
      }
      const starts = () => s.fixture.record.of('asr', 'run-start').length;
      assert.equal(starts(), 1);
      // Each leave of the one running starts the next; had another been running, the leave would
      // only have taken a queued one out and started nothing.
      for (let i = 0; i < 3; i++) {
        clients[i]!.ws.terminate();
        await waitUntil(`session ${i + 1}'s utterance starts`, () => starts() === i + 2);
        assert.equal(snapshot(s, 'asr').queuedRequests, 2 - i);
      }
      clients[3]!.ws.terminate();
      await whenRuntime(s.voxd.runtime, 'the slot is free', () => snapshot(s, 'asr').activeRequests === 0);
      assert.equal(starts(), 4);
    });
  });

  test('[order.manager-request] an utterance ended after a queued unload waits for it, then runs on a fresh load', async () => {
    await withServer({ ui_management: true, models: [VAD, fixtureModel('asr')] }, async (s) => {
      const holder = await holdSlot(s, 'asr');
      const unload = post(s.url, '/v1/models/unload', { id: 'asr' });
      await whenRuntime(s.voxd.runtime, 'the unload queues', () => snapshot(s, 'asr').queuedManagers === 1);
      const c = await listener(s);
      utterance(c);
      await whenRuntime(
        s.voxd.runtime,
        'the utterance queues behind it',
        () => snapshot(s, 'asr').queuedRequests === 1,
        15_000,
      );
      await holder.gate.open();
      assert.equal((await unload).status, 200);
      const final = await c.messages.next((m) => m.type === 'Results' && m.is_final, 0, 15_000);
      assert.equal(final.speech_final, true);
      const starts = s.fixture.record.of('asr', 'run-start') as { generation: number }[];
      assert.deepEqual(
        starts.map((e) => e.generation),
        [1, 2],
        'the holder ran on the first load, the utterance on the load after the unload',
      );
      c.ws.close();
    });
  });

  test('[time.disconnect-queued] an utterance queued behind a running request leaves the queue with its client, and never runs', async () => {
    await withServer({ models: [VAD, fixtureModel('asr')] }, async (s) => {
      const holder = await holdSlot(s, 'asr');
      const c = await listener(s);
      utterance(c);
      await whenRuntime(
        s.voxd.runtime,
        'the utterance queues',
        () => snapshot(s, 'asr').queuedRequests === 1,
        15_000,
      );
      c.ws.terminate();
      await whenRuntime(s.voxd.runtime, 'the queue empties', () => snapshot(s, 'asr').queuedRequests === 0);
      await holder.gate.open();
      assert.equal((await holder.answer).status, 200);
      assert.equal(s.fixture.record.of('asr', 'run-start').length, 1, 'the utterance never ran');
      await whenRuntime(s.voxd.runtime, 'the slot is free', () => snapshot(s, 'asr').activeRequests === 0);
    });
  });

  test('[time.disconnect-executing] a client that leaves while its utterance is transcribed cancels the run and frees the slot at once', async () => {
    await withServer({ ui_management: true, models: [VAD] }, async (s) => {
      const gate = s.gate('utterance');
      await register(s, 'asr', 'asr', { run_gate: gate.path });
      const c = await listener(s);
      utterance(c);
      await waitUntil(
        'the utterance runs',
        () => s.fixture.record.of('asr', 'run-start').length === 1,
        15_000,
      );
      assert.equal(snapshot(s, 'asr').activeRequests, 1);
      c.ws.terminate();
      await whenRuntime(s.voxd.runtime, 'the slot is free', () => snapshot(s, 'asr').activeRequests === 0);
      assert.deepEqual(
        (s.fixture.record.of('asr', 'run-end') as { outcome: string }[]).map((e) => e.outcome),
        ['aborted'],
      );
    });
  });

  test('[time.admission-timeout] an utterance that waits past the busy timeout ends the session as Deepgram ends one (1011 NET-0000 with the reason); nothing is held', async () => {
    await withServer({ models: [VAD, fixtureModel('asr', { busy_timeout_ms: 50 })] }, async (s) => {
      const holder = await holdSlot(s, 'asr');
      const c = await listener(s);
      utterance(c);
      const closed = await c.closed;
      assert.equal(closed.code, 1011);
      assert.match(closed.reason, /^NET-0000 .*busy/);
      await holder.gate.open();
      assert.equal((await holder.answer).status, 200);
      assert.equal(s.fixture.record.of('asr', 'run-start').length, 1, 'the utterance never ran');
      await whenRuntime(s.voxd.runtime, 'nothing is held', () => {
        const { activeRequests, queuedRequests } = snapshot(s, 'asr');
        return activeRequests === 0 && queuedRequests === 0;
      });
    });
  });

  test('[state.ready.evict] eviction passes over a model whose utterance is being transcribed and takes an idle one', async () => {
    await withServer(
      { max_loaded_models: 2, ui_management: true, models: [VAD, fixtureModel('other')] },
      async (s) => {
        const gate = s.gate('utterance');
        await register(s, 'asr', 'asr', { run_gate: gate.path });
        const c = await listener(s);
        utterance(c);
        await waitUntil(
          'the utterance runs',
          () => s.fixture.record.of('asr', 'run-start').length === 1,
          15_000,
        );
        // Loaded: the VAD (idle now) and asr (running). `other` needs one of their places.
        const other = await post(s.url, '/v1/tasks/run', { model: 'other', text: 'x' });
        assert.equal(other.status, 200, other.body.toString());
        const logs = s.logs.join('\n');
        assert.match(logs, /evicted model 'silero-vad' to load 'other'/);
        assert.doesNotMatch(logs, /evicted model 'asr'/);
        assert.equal(snapshot(s, 'asr').activeRequests, 1, 'the utterance still holds its slot');
        await gate.open();
        await c.messages.next((m) => m.type === 'Results' && m.is_final, 0, 15_000);
        c.ws.close();
      },
    );
  });

  test('[time.custom-listener] a shutdown lets the utterance in progress finish (its final Results, then Metadata), then closes with 1001', async () => {
    await withServer({ ui_management: true, models: [VAD] }, async (s) => {
      const gate = s.gate('utterance');
      await register(s, 'asr', 'asr', { run_gate: gate.path });
      const c = await listener(s);
      utterance(c);
      await waitUntil(
        'the utterance runs',
        () => s.fixture.record.of('asr', 'run-start').length === 1,
        15_000,
      );
      const closing = s.voxd.close();
      await waitUntil('the shutdown begins', () => s.voxd.runtime.closing);
      await gate.open();
      assert.equal((await c.closed).code, 1001);
      const types = c.messages.types();
      assert.deepEqual(types.slice(-2), ['Results', 'Metadata'], types.join(' '));
      assert.equal(c.messages.all.at(-2).is_final, true);
      assert.deepEqual(
        (s.fixture.record.of('asr', 'run-end') as { outcome: string }[]).map((e) => e.outcome),
        ['ok'],
      );
      await closing;
      await assert.rejects(listener(s));
    });
  });

  test('[time.shutdown-stalled-io] a shutdown with a client silent mid-speech on an engine that hears utterances only at their end: Metadata and 1001, not an error', async () => {
    await withServer({ models: [VAD, fixtureModel('asr')] }, async (s) => {
      const silent = await listener(s);
      silent.sendAudio(Buffer.concat([silence(500), speech.subarray(0, speech.length / 2)]));
      await silent.messages.next('SpeechStarted', 0, 15_000);
      await s.voxd.close();
      // The runtime takes no new work: the speech going on cannot be transcribed now, and is dropped.
      assert.deepEqual(await silent.closed, {
        code: 1001,
        reason: 'voxd is shutting down; reconnect to another instance',
      });
      assert.deepEqual(silent.messages.types(), ['SpeechStarted', 'Metadata']);
      assert.equal(s.fixture.record.of('asr', 'run-start').length, 0);
    });
  });

  test('[time.shutdown-stalled-io] a shutdown with live utterances mid-speech (one client gone, one silent) ends well within its deadline; the silent one gets its final', async () => {
    await withServer({ shutdown_timeout_ms: 20_000, models: [VAD, POCKETSPHINX] }, async (s) => {
      const midSpeech = Buffer.concat([silence(500), speech.subarray(0, speech.length / 2)]);
      const gone = await listener(s, 'pocketsphinx');
      gone.sendAudio(midSpeech);
      await gone.messages.next('SpeechStarted', 0, 15_000);
      gone.ws.terminate();
      const silent = await listener(s, 'pocketsphinx');
      silent.sendAudio(midSpeech);
      await silent.messages.next('SpeechStarted', 0, 15_000);
      await whenRuntime(
        s.voxd.runtime,
        'its live utterance holds the slot',
        () => {
          return snapshot(s, 'pocketsphinx').activeRequests === 1;
        },
        15_000,
      );
      const started = performance.now();
      await s.voxd.close();
      const ms = performance.now() - started;
      assert.ok(ms < 5000, `the shutdown took ${ms.toFixed(0)} ms`);
      assert.deepEqual(await silent.closed, {
        code: 1001,
        reason: 'voxd is shutting down; reconnect to another instance',
      });
      const types = silent.messages.types();
      assert.ok(types.includes('Results'), types.join(' '));
      assert.equal(types.at(-1), 'Metadata');
    });
  });
});
