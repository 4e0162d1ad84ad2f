/**
 * The realtime transcription WebSocket (/v1/realtime) with the fixture engine: the official openai
 * SDK's OpenAIRealtimeWS (it always connects over wss, so the server serves the committed test
 * certificate) in the GA and beta session shapes, a raw `ws` client for the edges (errors that leave
 * the session open, refusals at the upgrade), and the admission contract for turns (a turn holds one
 * slot; a client that leaves frees it; a shutdown ends sessions with 1001).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { WebSocket } from 'ws';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { ManualClock } from '../../helpers/manual-clock.js';
import { muLaw } from '../../helpers/samples.js';
import { suiteServer } from '../../helpers/suite-server.js';
import {
  fixtureModel,
  get,
  post,
  request,
  type TestServer,
  waitUntil,
  whenRuntime,
  withServer,
} from '../../helpers/voxd.js';
import { type Message, Messages, openSocket, refusal, type SocketOptions } from '../../helpers/websocket.js';

const TLS = fileURLToPath(new URL('../../../../test/fixtures/tls/', import.meta.url));
const CA = readFileSync(`${TLS}cert.pem`);
const SECURE = { tls_cert_file: `${TLS}cert.pem`, tls_key_file: `${TLS}key.pem` };

type Event = Message;

/** A raw client on `base` (http(s) URL) and `path`; its events are `events`. */
async function connect(base: string, path = '/v1/realtime', options: Omit<SocketOptions, 'ca'> = {}) {
  const { ws, messages, send } = await openSocket(base + path, { ...options, ca: CA });
  return { ws, events: messages, send };
}

/** The refusal of an upgrade: its status and error body. */
const refused = (base: string, path: string, options: Omit<SocketOptions, 'ca'> = {}) =>
  refusal(base + path, { ...options, ca: CA });

/** Registers `asr`, whose runs wait on the gate at `gate` (the session cannot send options). */
async function gatedModel(s: TestServer, gate: string): Promise<void> {
  const res = await post(
    s.url,
    '/v1/models/load',
    fixtureModel('asr', { task: 'asr', default_request_options: { run_gate: gate } }),
  );
  assert.equal(res.status, 200, res.body.toString());
}

const silence = (bytes: number) => Buffer.alloc(bytes).toString('base64');
const report = (completed: Event) => JSON.parse(completed.transcript);

describe('/v1/realtime through the official openai SDK', () => {
  const s = suiteServer({
    ...SECURE,
    models: [fixtureModel('asr', { task: 'asr' }), fixtureModel('tts', { task: 'tts' })],
  });

  const open = async (model: string) => {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused' });
    const rt = new OpenAIRealtimeWS({ model, options: { ca: CA } }, client);
    const events = new Messages();
    rt.on('event', (e: Event) => events.push(e));
    rt.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      rt.socket.on('open', resolve);
      rt.socket.on('error', reject);
    });
    return { rt, events };
  };

  test('GA shape, audio/pcm at 24 kHz, manual commit: committed, the item, deltas, then completed', async () => {
    const { rt, events } = await open('asr');
    try {
      const created = await events.next('session.created');
      assert.equal(created.session.type, 'transcription');
      assert.deepEqual(created.session.audio.input.format, { type: 'audio/pcm', rate: 24000 });
      assert.equal(created.session.audio.input.transcription.model, 'asr');
      rt.send({
        type: 'session.update',
        session: {
          type: 'transcription',
          audio: {
            input: {
              format: { type: 'audio/pcm', rate: 24000 },
              transcription: { language: 'en', prompt: 'context' },
              turn_detection: null,
            },
          },
        },
      });
      const updated = await events.next('session.updated');
      assert.equal(updated.session.audio.input.transcription.language, 'en');
      // 1.5 s in three appends, one of them cutting a sample in two.
      const pcm = Buffer.alloc(72000);
      rt.send({ type: 'input_audio_buffer.append', audio: pcm.subarray(0, 24001).toString('base64') });
      rt.send({ type: 'input_audio_buffer.append', audio: pcm.subarray(24001, 48000).toString('base64') });
      rt.send({ type: 'input_audio_buffer.append', audio: pcm.subarray(48000).toString('base64') });
      rt.send({ type: 'input_audio_buffer.commit' });
      const completed = await events.next('conversation.item.input_audio_transcription.completed');
      const committed = await events.next('input_audio_buffer.committed');
      assert.equal(committed.previous_item_id, null);
      assert.equal(completed.item_id, committed.item_id);
      const types = events.types();
      const order = [
        'input_audio_buffer.committed',
        'conversation.item.added',
        'conversation.item.done',
        'conversation.item.input_audio_transcription.delta',
        'conversation.item.input_audio_transcription.completed',
      ].map((t) => types.indexOf(t));
      assert.deepEqual(
        [...order].sort((a, b) => a - b),
        order,
        types.join(' '),
      );
      assert.ok(
        order.every((i) => i >= 0),
        types.join(' '),
      );
      const deltas = events.all.filter((e) => e.type === 'conversation.item.input_audio_transcription.delta');
      assert.equal(deltas.map((d) => d.delta).join(''), completed.transcript);
      // The fixture reports what it was given: 1.5 s resampled to its 16 kHz, the language.
      const heard = report(completed);
      assert.equal(heard.audio.samples, 24000);
      assert.equal(heard.language, 'en');
      assert.deepEqual(completed.usage, { type: 'duration', seconds: 2 });
      // A second turn names the first as its previous item.
      rt.send({ type: 'input_audio_buffer.append', audio: silence(4800) });
      rt.send({ type: 'input_audio_buffer.commit' });
      const second = await events.next('input_audio_buffer.committed', types.length);
      assert.equal(second.previous_item_id, committed.item_id);
      await events.next('conversation.item.input_audio_transcription.completed', types.length);
    } finally {
      rt.close();
    }
  });

  test("a beta transcription session (OpenAI-Beta: realtime=v1, ?intent=transcription) opens with transcription_session.created, as OpenAI's does", async () => {
    for (const options of [
      { headers: { 'OpenAI-Beta': 'realtime=v1' } },
      // A browser sets no header: it offers the beta subprotocol.
      { protocols: ['realtime', 'openai-beta.realtime-v1'] },
    ]) {
      const { ws, events, send } = await connect(
        s.url,
        '/v1/realtime?intent=transcription&model=asr',
        options,
      );
      try {
        const first = await events.next(() => true);
        assert.equal(first.type, 'transcription_session.created', JSON.stringify(options));
        assert.equal(first.session.input_audio_transcription.model, 'asr');
        send({
          type: 'transcription_session.update',
          session: { input_audio_format: 'pcm16', turn_detection: null },
        });
        await events.next('transcription_session.updated');
        // Created once: the update answers with updated alone.
        assert.deepEqual(
          events.all.filter((e) => e.type.endsWith('.created')).map((e) => e.type),
          ['transcription_session.created'],
        );
      } finally {
        ws.close();
      }
    }
    // Without the beta signal the same URL opens a GA session.
    const ga = await connect(s.url, '/v1/realtime?intent=transcription&model=asr');
    try {
      assert.equal((await ga.events.next(() => true)).type, 'session.created');
    } finally {
      ga.ws.close();
    }
  });

  test('beta shape, g711_ulaw at 8 kHz: transcription_session.created/updated and conversation.item.created', async () => {
    const { rt, events } = await open('asr');
    try {
      await events.next('session.created');
      // The SDK's own types are GA only; older SDKs (and .NET's) send this beta shape.
      rt.send({
        type: 'transcription_session.update',
        session: {
          input_audio_format: 'g711_ulaw',
          input_audio_transcription: { model: 'asr' },
          turn_detection: null,
        },
      } as never);
      assert.equal(
        (await events.next('transcription_session.created')).session.input_audio_format,
        'g711_ulaw',
      );
      const updated = await events.next('transcription_session.updated');
      assert.equal(updated.session.input_audio_transcription.model, 'asr');
      // One second of a 200 Hz tone at a quarter of full scale, as µ-law bytes (0xff is its zero,
      // 0x80 its largest positive step): it must arrive at the engine with that loudness.
      const tone = Buffer.from(
        Array.from({ length: 8000 }, (_, i) =>
          muLaw(Math.round(8192 * Math.sin((2 * Math.PI * 200 * i) / 8000))),
        ),
      );
      rt.send({ type: 'input_audio_buffer.append', audio: tone.toString('base64') });
      rt.send({ type: 'input_audio_buffer.commit' });
      const completed = await events.next('conversation.item.input_audio_transcription.completed');
      assert.ok(events.types().includes('conversation.item.created'));
      assert.ok(!events.types().includes('conversation.item.added'));
      assert.equal(report(completed).audio.samples, 16000);
      const rms = report(completed).audio.rms;
      assert.ok(Math.abs(rms - 0.25 / Math.SQRT2) < 0.01, `rms ${rms}`);
    } finally {
      rt.close();
    }
  });
});

describe('/v1/realtime edges, with a raw ws client', () => {
  const s = suiteServer({
    models: [
      fixtureModel('asr', { task: 'asr' }),
      fixtureModel('tts', { task: 'tts' }),
      fixtureModel('diar', { task: 'diar', default_request_options: { chunks: '3' } }),
    ],
  });

  test('session, item and event ids are unique across sessions, each with its prefix', async () => {
    const ids: string[] = [];
    for (let n = 0; n < 2; n++) {
      const { ws, events, send } = await connect(s.url, '/v1/realtime?model=asr');
      try {
        for (let turn = 0; turn < 2; turn++) {
          send({ type: 'input_audio_buffer.append', audio: silence(4800) });
          send({ type: 'input_audio_buffer.commit' });
          await events.nth('conversation.item.input_audio_transcription.completed', turn);
        }
        const created = events.all.find(
          (e) => e.type === 'transcription_session.created' || e.type === 'session.created',
        )!;
        assert.match(created.session.id, /^sess_[A-Za-z0-9_-]+$/);
        ids.push(created.session.id);
        for (const event of events.all) {
          assert.match(event.event_id, /^event_[A-Za-z0-9_-]+$/);
          ids.push(event.event_id);
        }
        const items = new Set(events.all.filter((e) => e.item_id !== undefined).map((e) => e.item_id));
        assert.equal(items.size, 2, 'one item a turn');
        for (const item of items) assert.match(item, /^item_[A-Za-z0-9_-]+$/);
        ids.push(...items);
      } finally {
        ws.close();
      }
    }
    assert.equal(new Set(ids).size, ids.length, 'no id given twice');
  });

  test("a diarizer's turn: its speakers as .segment events before completed, as diarized_json has them", async () => {
    // 0.6 s of a tone at 24 kHz; the fixture diarizer splits it in three turns of speakers 0, 1, 0.
    const pcm = Buffer.alloc(14400 * 2);
    for (let i = 0; i < 14400; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin(i / 5)), i * 2);
    const { ws, events, send } = await connect(s.url, '/v1/realtime?model=diar');
    try {
      send({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') });
      send({ type: 'input_audio_buffer.commit' });
      const completed = await events.next('conversation.item.input_audio_transcription.completed');
      const segments = events.all.filter(
        (e) => e.type === 'conversation.item.input_audio_transcription.segment',
      );
      assert.equal(segments.length, 3, events.types().join(' '));
      const types = events.types();
      assert.ok(
        types.lastIndexOf('conversation.item.input_audio_transcription.segment') <
          types.indexOf(completed.type),
      );
      for (const segment of segments) {
        assert.equal(segment.item_id, completed.item_id);
        assert.equal(segment.content_index, 0);
      }
      // The same audio as an upload answers the same segments.
      const form = new FormData();
      form.set('model', 'diar');
      form.set('response_format', 'diarized_json');
      const samples = Float32Array.from({ length: 14400 }, (_, i) => pcm.readInt16LE(i * 2) / 32768);
      form.set(
        'file',
        new Blob([encodeWav({ samples, sampleRate: 24000, channels: 1 })], { type: 'audio/wav' }),
        'a.wav',
      );
      const res = await request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
      assert.equal(res.status, 200, res.body.toString());
      const answer = JSON.parse(res.body.toString()) as { segments: Record<string, unknown>[] };
      assert.deepEqual(
        segments.map(({ id, start, end, speaker, text }) => ({ id, start, end, speaker, text })),
        answer.segments.map(({ id, start, end, speaker, text }) => ({ id, start, end, speaker, text })),
      );
      assert.deepEqual(
        segments.map((e) => e.speaker),
        ['A', 'B', 'A'],
      );
    } finally {
      ws.close();
    }
  });

  test('errors are events naming the field, and the session goes on', async () => {
    const { ws, events, send } = await connect(s.url, '/v1/realtime?model=asr');
    try {
      await events.next('session.created');
      const errorAfter = async (act: () => void) => {
        const seen = events.all.length;
        act();
        return (await events.next('error', seen)).error;
      };
      let error = await errorAfter(() => ws.send('{"type": "session.update", '));
      assert.equal(error.type, 'invalid_request_error');
      error = await errorAfter(() => ws.send(Buffer.from([1, 2, 3])));
      assert.match(error.message, /binary frames/);
      error = await errorAfter(() => send({ type: 'response.create', event_id: 'mine' }));
      assert.equal(error.param, 'type');
      assert.equal(error.event_id, 'mine');
      // Found by the fuzzer: a type that is an object, or a name of Object's own members.
      for (const type of [[{}], { a: 1 }, 'constructor', '__proto__', 'toString']) {
        error = await errorAfter(() => send({ type }));
        assert.equal(error.param, 'type', JSON.stringify(type));
        assert.equal(error.type, 'invalid_request_error');
      }
      error = await errorAfter(() => send({ type: 'input_audio_buffer.append', audio: 'not base64!' }));
      assert.equal(error.param, 'audio');
      error = await errorAfter(() =>
        send({
          type: 'session.update',
          session: { audio: { input: { format: { type: 'audio/pcm', rate: 'fast' } } } },
        }),
      );
      assert.equal(error.param, 'session.audio.input.format.rate');
      assert.match(error.message, /"fast"/);
      error = await errorAfter(() =>
        send({ type: 'session.update', session: { audio: { input: { transcription: { model: 'nope' } } } } }),
      );
      assert.equal(error.param, 'session.audio.input.transcription.model');
      assert.equal(error.code, 'model_not_found');
      error = await errorAfter(() =>
        send({ type: 'session.update', session: { audio: { input: { transcription: { model: 'tts' } } } } }),
      );
      assert.equal(error.param, 'session.audio.input.transcription.model');
      assert.match(error.message, /task 'tts'/);
      error = await errorAfter(() =>
        send({
          type: 'session.update',
          session: { audio: { input: { turn_detection: { type: 'server_vad' } } } },
        }),
      );
      // This server registers no VAD model: server VAD says which setting names the one it needs.
      assert.equal(error.param, 'session.audio.input.turn_detection');
      assert.match(error.message, /chunking_vad_model "silero-vad" is not registered/);
      error = await errorAfter(() =>
        send({
          type: 'session.update',
          session: { audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: -1 } } } },
        }),
      );
      assert.equal(error.param, 'session.audio.input.turn_detection.silence_duration_ms');
      assert.match(error.message, /-1/);
      error = await errorAfter(() =>
        send({
          type: 'transcription_session.update',
          session: { turn_detection: { type: 'semantic_vad', eagerness: 'eager' } },
        }),
      );
      assert.equal(error.param, 'session.turn_detection.eagerness');
      error = await errorAfter(() => send({ type: 'input_audio_buffer.commit' }));
      assert.equal(error.code, 'input_audio_buffer_commit_empty');
      // A refused update changed nothing: the model is still asr and a turn goes through.
      send({ type: 'input_audio_buffer.append', audio: silence(4800) });
      send({ type: 'input_audio_buffer.clear' });
      await events.next('input_audio_buffer.cleared');
      send({ type: 'input_audio_buffer.append', audio: silence(4800) });
      send({ type: 'input_audio_buffer.commit' });
      const completed = await events.next('conversation.item.input_audio_transcription.completed');
      assert.equal(report(completed).audio.samples, 1600);
    } finally {
      ws.close();
    }
  });

  test('refusals happen at the upgrade, as HTTP answers with the error body', async () => {
    let r = await refused(s.url, '/v1/elsewhere');
    assert.equal(r.status, 404);
    r = await refused(s.url, '/v1/realtime?model=nope');
    assert.equal(r.status, 404);
    assert.equal(r.error.code, 'model_not_found');
    r = await refused(s.url, '/v1/realtime?model=tts');
    assert.equal(r.status, 400);
    r = await refused(s.url, '/v1/realtime?model=asr', { headers: { Origin: 'https://elsewhere.example' } });
    assert.equal(r.status, 403);
    assert.match(r.error.message, /--cors-origins/);
    // A page of voxd's own origin may.
    const host = new URL(s.url).host;
    const own = await connect(s.url, '/v1/realtime?model=asr', { headers: { Origin: `https://${host}` } });
    own.ws.close();
    const plain = await get(s.url, '/v1/realtime');
    assert.equal(plain.status, 426);
    assert.equal(plain.json.error.code, 'upgrade_required');
  });
});

describe('/v1/realtime keys', () => {
  const KEY = 'sk-realtime-test-0123456789';
  const s = suiteServer({
    ...SECURE,
    api_keys: [{ key: KEY, scope: 'inference' }],
    models: [fixtureModel('asr', { task: 'asr' })],
  });

  test('no key is a 401 at the upgrade; a Bearer header, ?api_key= or the key subprotocol opens a session', async () => {
    const r = await refused(s.url, '/v1/realtime?model=asr');
    assert.equal(r.status, 401);
    assert.equal((await refused(s.url, '/v1/realtime?model=asr&api_key=wrong')).status, 401);
    for (const way of [
      connect(s.url, '/v1/realtime?model=asr', { headers: { Authorization: `Bearer ${KEY}` } }),
      connect(s.url, `/v1/realtime?model=asr&api_key=${KEY}`),
      connect(s.url, '/v1/realtime?model=asr', { protocols: ['realtime', `openai-insecure-api-key.${KEY}`] }),
    ]) {
      const { ws, events } = await way;
      await events.next('session.created');
      ws.close();
    }
    const { ws } = await connect(s.url, '/v1/realtime?model=asr', {
      protocols: ['realtime', `openai-insecure-api-key.${KEY}`],
    });
    assert.equal(ws.protocol, 'realtime', 'the answer is the realtime subprotocol, never the key');
    ws.close();
  });
});

describe('/v1/realtime turns under the admission contract', () => {
  test('[time.disconnect-executing] a realtime turn holds one slot while it runs; a client that leaves cancels it and frees the slot', async () => {
    await withServer({ ui_management: true }, async (s) => {
      const gate = s.gate('rt-turn');
      await gatedModel(s, gate.path);
      const { ws, events, send } = await connect(s.url, '/v1/realtime?model=asr');
      await events.next('session.created');
      const scheduler = () => s.voxd.runtime.get('asr').scheduler.snapshot();
      assert.equal(scheduler().activeRequests, 0, 'an idle session holds nothing');
      send({ type: 'input_audio_buffer.append', audio: silence(4800) });
      send({ type: 'input_audio_buffer.commit' });
      await waitUntil('the turn runs', () => s.fixture.record.of('asr', 'run-start').length === 1);
      assert.equal(scheduler().activeRequests, 1);
      ws.terminate();
      await whenRuntime(s.voxd.runtime, 'the slot is free', () => scheduler().activeRequests === 0);
      const ends = s.fixture.record.of('asr', 'run-end');
      assert.equal((ends.at(-1) as { outcome?: string } | undefined)?.outcome, 'aborted');
    });
  });

  test('a failing run is a failed event with the engine error; the next turn still runs', async () => {
    await withServer(
      {
        models: [
          fixtureModel('asr', { task: 'asr' }),
          fixtureModel('bad', { task: 'asr', default_request_options: { run_fail: 'true' } }),
        ],
      },
      async (s) => {
        const { ws, events, send } = await connect(s.url, '/v1/realtime?model=bad');
        await events.next('session.created');
        send({ type: 'input_audio_buffer.append', audio: silence(4800) });
        send({ type: 'input_audio_buffer.commit' });
        const failed = await events.next('conversation.item.input_audio_transcription.failed');
        assert.equal(failed.error.code, 'engine_error');
        send({ type: 'session.update', session: { audio: { input: { transcription: { model: 'asr' } } } } });
        send({ type: 'input_audio_buffer.append', audio: silence(4800) });
        send({ type: 'input_audio_buffer.commit' });
        await events.next('conversation.item.input_audio_transcription.completed');
        ws.close();
      },
    );
  });

  test('metrics: sessions open now, turns by outcome, the time from commit to transcript', async () => {
    await withServer(
      {
        models: [
          fixtureModel('asr', { task: 'asr' }),
          fixtureModel('bad', { task: 'asr', default_request_options: { run_fail: 'true' } }),
        ],
      },
      async (s) => {
        const metric = async (pattern: string) => {
          const text = (await get(s.url, '/metrics')).body.toString('utf8');
          const line = text.split('\n').find((l) => l.startsWith(pattern));
          return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
        };
        const { ws, events, send } = await connect(s.url, '/v1/realtime?model=asr');
        await events.next('session.created');
        assert.equal(await metric('voxd_realtime_sessions '), 1);
        send({ type: 'input_audio_buffer.append', audio: silence(4800) });
        send({ type: 'input_audio_buffer.commit' });
        await events.next('conversation.item.input_audio_transcription.completed');
        send({ type: 'session.update', session: { audio: { input: { transcription: { model: 'bad' } } } } });
        send({ type: 'input_audio_buffer.append', audio: silence(4800) });
        send({ type: 'input_audio_buffer.commit' });
        await events.next('conversation.item.input_audio_transcription.failed');
        assert.equal(await metric('voxd_realtime_turns_total{model="asr",outcome="completed"}'), 1);
        assert.equal(await metric('voxd_realtime_turns_total{model="bad",outcome="failed"}'), 1);
        assert.equal(await metric('voxd_realtime_transcript_seconds_count{model="asr"}'), 1);
        const closed = new Promise((resolve) => ws.on('close', resolve));
        ws.close();
        await closed;
        await waitUntil(
          'the session is counted out',
          async () => (await metric('voxd_realtime_sessions ')) === 0,
        );
      },
    );
  });

  test('[time.custom-listener] a shutdown lets a realtime turn in progress finish, then sends an error event and closes with 1001', async () => {
    await withServer({ ui_management: true }, async (s) => {
      const gate = s.gate('rt-shutdown');
      await gatedModel(s, gate.path);
      const { ws, events, send } = await connect(s.url, '/v1/realtime?model=asr');
      await events.next('session.created');
      const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
      send({ type: 'input_audio_buffer.append', audio: silence(4800) });
      send({ type: 'input_audio_buffer.commit' });
      await waitUntil('the turn runs', () => s.fixture.record.of('asr', 'run-start').length === 1);
      const closing = s.voxd.close();
      await gate.open();
      await events.next('conversation.item.input_audio_transcription.completed');
      const error = await events.next('error');
      assert.equal(error.error.code, 'shutting_down');
      assert.equal(await closed, 1001);
      await closing;
    });
  });
});

describe('/v1/realtime limits', () => {
  const closedWith = (ws: WebSocket) =>
    new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));

  test('max_realtime_sessions: one more is a 503 too_many_sessions with Retry-After; a closed one makes room', async () => {
    await withServer(
      { max_realtime_sessions: 1, models: [fixtureModel('asr', { task: 'asr' })] },
      async (s) => {
        const first = await connect(s.url, '/v1/realtime?model=asr');
        await first.events.next('session.created');
        const err = await connect(s.url, '/v1/realtime?model=asr').then(
          () => assert.fail('a second session was accepted'),
          (e: { status?: number; body?: string }) => e,
        );
        assert.equal(err.status, 503);
        assert.equal(JSON.parse(err.body!).error.code, 'too_many_sessions');
        const closed = closedWith(first.ws);
        first.ws.close();
        await closed;
        await waitUntil('the session is gone', async () => {
          const next = await connect(s.url, '/v1/realtime?model=asr').catch(() => undefined);
          next?.ws.close();
          return next !== undefined;
        });
      },
    );
  });

  test('a turn longer than 120 s is refused whatever max_audio_seconds allows', async () => {
    await withServer({ models: [fixtureModel('asr', { task: 'asr' })] }, async (s) => {
      const { ws, events, send } = await connect(s.url, '/v1/realtime?model=asr');
      await events.next('session.created');
      // 121 s at 8 kHz µ-law: 968,000 bytes in one event.
      send({ type: 'transcription_session.update', session: { input_audio_format: 'g711_ulaw' } });
      await events.next('transcription_session.updated');
      send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(8000 * 121, 0xff).toString('base64') });
      const error = (await events.next('error')).error;
      assert.equal(error.code, 'audio_too_long');
      assert.match(error.message, /120 s/);
      ws.close();
    });
  });

  test('an append past max_audio_seconds is an audio_too_long error event, and the buffer keeps what it had', async () => {
    await withServer({ max_audio_seconds: 1, models: [fixtureModel('asr', { task: 'asr' })] }, async (s) => {
      const { ws, events, send } = await connect(s.url, '/v1/realtime?model=asr');
      await events.next('session.created');
      // 0.75 s and one byte: the odd byte waits for its pair, also across the refused append.
      send({ type: 'input_audio_buffer.append', audio: silence(36001) });
      send({ type: 'input_audio_buffer.append', audio: silence(24000) });
      const error = (await events.next('error')).error;
      assert.equal(error.code, 'audio_too_long');
      assert.equal(error.param, 'audio');
      send({ type: 'input_audio_buffer.append', audio: silence(1) });
      send({ type: 'input_audio_buffer.commit' });
      const completed = await events.next('conversation.item.input_audio_transcription.completed');
      assert.equal(report(completed).audio.samples, 12001);
      ws.close();
    });
  });

  test('idle and lifetime limits run on the server clock and end the session with a reason', async () => {
    const clock = new ManualClock();
    await withServer(
      {
        realtime_idle_timeout_ms: 1000,
        realtime_max_session_ms: 5000,
        models: [fixtureModel('asr', { task: 'asr' })],
      },
      { clock },
      async (s) => {
        let { ws, events, send } = await connect(s.url, '/v1/realtime?model=asr');
        await events.next('session.created');
        clock.advance(999);
        send({ type: 'input_audio_buffer.clear' });
        await events.next('input_audio_buffer.cleared');
        // The event restarted the idle timer: 999 ms more is still within it.
        clock.advance(999);
        let closed = closedWith(ws);
        clock.advance(1);
        assert.equal((await events.next('error')).error.code, 'session_idle_timeout');
        assert.equal(await closed, 1000);

        ({ ws, events, send } = await connect(s.url, '/v1/realtime?model=asr'));
        await events.next('session.created');
        closed = closedWith(ws);
        for (let t = 0; t < 5; t++) {
          // Busy enough never to be idle (an event every 900 ms), it still ends at its lifetime.
          const seen = events.all.length;
          send({ type: 'input_audio_buffer.clear' });
          await events.next('input_audio_buffer.cleared', seen);
          clock.advance(900);
        }
        assert.ok(!events.types().includes('error'), 'not idle, not expired at 4.5 s');
        const seen = events.all.length;
        send({ type: 'input_audio_buffer.clear' });
        await events.next('input_audio_buffer.cleared', seen);
        clock.advance(500);
        await events.next('error');
        assert.equal(events.all.find((e) => e.type === 'error')?.error.code, 'session_expired');
        assert.equal(await closed, 1000);
      },
    );
  });

  test('a peer that does not answer pings is dropped at the next ping; one that answers stays', async () => {
    const clock = new ManualClock();
    await withServer({ models: [fixtureModel('asr', { task: 'asr' })] }, { clock }, async (s) => {
      const live = await connect(s.url, '/v1/realtime?model=asr');
      const mute = new WebSocket(`${s.url.replace(/^http/, 'ws')}/v1/realtime?model=asr`, {
        autoPong: false,
      });
      const pinged = new Promise<void>((resolve) => mute.once('ping', () => resolve()));
      await new Promise((resolve) => mute.on('open', resolve));
      const closed = closedWith(mute);
      const livePinged = new Promise<void>((resolve) => live.ws.once('ping', () => resolve()));
      clock.advance(30_000);
      await Promise.all([pinged, livePinged]);
      // The answering peer's pong went out before its 'ping' event; an event sent after it and
      // answered proves the server has read the pong before the next ping decides.
      live.send({ type: 'input_audio_buffer.clear' });
      await live.events.next('input_audio_buffer.cleared');
      clock.advance(30_000);
      assert.equal(await closed, 1006);
      assert.equal(live.ws.readyState, WebSocket.OPEN);
      live.ws.close();
    });
  });
});
