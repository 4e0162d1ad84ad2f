/**
 * POST /v1/tasks/stream (JSON and SSE), /v1/tasks/batch and /v1/batches/transcriptions over real
 * HTTP: event shapes and order, completion-order results, a failed item reported on its own,
 * batches running on the model's slots and holding leases, and the 400s.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { sseEvents } from '../helpers/sse.js';
import {
  badRequest,
  fixtureModel,
  post,
  request,
  startServer,
  type TestServer,
  waitUntil,
} from '../helpers/voxd.js';

type Event = Record<string, unknown> & { type?: string };

const sse = (body: Buffer) => sseEvents(body) as (Event | '[DONE]')[];

const wav = (seconds: number) =>
  encodeWav({
    samples: Float32Array.from({ length: 16000 * seconds }, (_, i) => 0.3 * Math.sin(i / 5)),
    sampleRate: 16000,
    channels: 1,
  });

function uploads(model: string, files: [string, Buffer][], fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  form.set('model', model);
  for (const [name, data] of files) form.append('file', new Blob([data]), name);
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  return form;
}

for (const parallel of [false, true]) {
  describe(`task streams and batches (${parallel ? 'parallel, 2 slots' : 'serial'})`, () => {
    let s: TestServer;
    const slots = parallel ? { slots: 2 } : {};
    before(async () => {
      s = await startServer(
        {
          busy_timeout_ms: 0,
          models: [
            fixtureModel('stream-asr', {
              task: 'asr',
              mode: 'streaming',
              default_request_options: { chunks: '3' },
            }),
            fixtureModel('stream-tts', {
              task: 'tts',
              mode: 'streaming',
              default_request_options: { chunks: '2' },
            }),
            fixtureModel('asr', { task: 'asr', ...slots }),
            fixtureModel('tts', { task: 'tts', ...slots }),
          ],
        },
        { parallel },
      );
    });
    after(() => s.close());

    test('tasks/stream (JSON): every event, the last one final, and the result with ttft_ms', async () => {
      const res = await post(s.url, '/v1/tasks/stream', { model: 'stream-asr', text: 'hello' });
      assert.equal(res.status, 200);
      const { events, result } = res.json as {
        events: Event[];
        result: Event & { timing: { ttft_ms: number } };
      };
      assert.equal(events.length, 4);
      assert.deepEqual(
        events.map((e) => e['is_final']),
        [false, false, false, true],
      );
      const deltas = events.slice(0, 3).map((e) => (e['partial_text'] as { text: string }).text);
      assert.equal(deltas.join(''), result['text']);
      assert.equal((events[3]!['partial_text'] as { text: string }).text, result['text']);
      assert.ok(Number.isInteger(result.timing.ttft_ms));
      assert.deepEqual(Object.keys(result.timing), ['ttft_ms']);
    });

    test('tasks/stream (SSE): task.stream.event per event, then task.stream.done, then [DONE]; audio events are WAVs', async () => {
      const res = await post(s.url, '/v1/tasks/stream', {
        model: 'stream-tts',
        text: 'hi there',
        stream_format: 'sse',
      });
      assert.equal(res.status, 200);
      const events = sse(res.body);
      assert.deepEqual(
        events.map((e) => (e === '[DONE]' ? e : e.type)),
        ['task.stream.event', 'task.stream.event', 'task.stream.event', 'task.stream.done', '[DONE]'],
      );
      const audio = Buffer.from(((events[0] as Event)['event'] as { audio: string }).audio, 'base64');
      assert.equal(audio.subarray(0, 4).toString('latin1'), 'RIFF');
      const done = events[3] as { result: { audio: string; sample_rate: number } };
      assert.equal(typeof done.result.audio, 'string');
      badRequest(
        await post(s.url, '/v1/tasks/stream', { model: 'stream-tts', text: 'x', stream_format: 'audio' }),
        'stream_format: "audio" is invalid',
        'expected one of: sse',
      );
      badRequest(
        await post(s.url, '/v1/tasks/stream', { model: 'tts', text: 'x' }),
        'stream',
        '"mode": "streaming"',
      );
    });

    test('tasks/batch: one result per request in completion order, a failed one on its own, then done', async () => {
      // Parallel: item 0 waits on a gate while items 1 and 2 run on the other slot, so they finish
      // first. (Serial has one slot: nothing can overtake, so no gate there.)
      const gate = s.gate(`batch-${parallel}`);
      const ended = () => s.fixture.record.of('tts', 'run-end').length;
      const before = ended();
      const pending = post(s.url, '/v1/tasks/batch', {
        model: 'tts',
        requests: [
          parallel ? { text: 'first, held back', options: { run_gate: gate.path } } : { text: 'first' },
          { text: 'second', options: { run_fail: true } },
          { text: 'third' },
        ],
      });
      if (parallel) {
        await waitUntil('items 1 and 2 ran on the second slot', () => ended() === before + 2);
        await gate.open();
      }
      const res = await pending;
      assert.equal(res.status, 200);
      const events = sse(res.body);
      assert.equal(events.at(-1), '[DONE]');
      const results = events.slice(0, 3) as Event[];
      assert.deepEqual(
        results.map((e) => e.type),
        ['task.batch.result', 'task.batch.result', 'task.batch.result'],
      );
      assert.deepEqual(results.map((e) => e['index']).sort(), [0, 1, 2]);
      const failed = results.find((e) => e['index'] === 1)!;
      assert.equal((failed['error'] as { type: string }).type, 'server_error');
      for (const ok of results.filter((e) => e['index'] !== 1)) {
        const result = ok['result'] as { audio: string; timing: null };
        assert.equal(result.timing, null);
        assert.equal(typeof result.audio, 'string');
      }
      if (parallel) {
        // Two slots: item 0 waits on its gate while items 1 and 2 finish on the other slot first.
        assert.equal(results.at(-1)!['index'], 0, 'completion order, not request order');
      }
      const done = events[3] as {
        type: string;
        result_count: number;
        error_count: number;
        timing: Record<string, number>;
      };
      assert.equal(done.type, 'task.batch.done');
      assert.equal(done.result_count, 2);
      assert.equal(done.error_count, 1);
      assert.deepEqual(Object.keys(done.timing), ['wall_ms'], 'not every request answered audio');
    });

    test('tasks/batch refusals are 400s naming the problem', async () => {
      badRequest(await post(s.url, '/v1/tasks/batch', { model: 'tts', requests: [] }), 'requests');
      badRequest(await post(s.url, '/v1/tasks/batch', { model: 'tts', requests: 'x' }), 'requests');
      badRequest(await post(s.url, '/v1/tasks/batch', { model: 'tts', requests: [{}, 3] }), 'requests[1]');
      // Any mode: the items are ordinary requests on the model's slots.
      assert.equal(
        (await post(s.url, '/v1/tasks/batch', { model: 'stream-tts', requests: [{ text: 'x' }] })).status,
        200,
      );
    });

    test('batches/transcriptions: one result per file with its filename, then done with the summed duration', async () => {
      const res = await request(s.url, 'POST', '/v1/batches/transcriptions', {
        body: uploads('asr', [
          ['one.wav', wav(1)],
          ['two.wav', wav(2)],
        ]),
      });
      assert.equal(res.status, 200);
      const events = sse(res.body);
      const results = events.slice(0, 2) as Event[];
      assert.deepEqual(results.map((e) => e['filename']).sort(), ['one.wav', 'two.wav']);
      for (const r of results) {
        const report = JSON.parse(r['text'] as string) as { audio: { samples: number } };
        assert.equal(
          report.audio.samples,
          r['filename'] === 'one.wav' ? 16000 : 32000,
          'each file ran as itself',
        );
      }
      const done = events[2] as { type: string; result_count: number; timing: { audio_duration_ms: number } };
      assert.equal(done.type, 'batch.transcription.done');
      assert.equal(done.result_count, 2);
      assert.equal(done.timing.audio_duration_ms, 3000);
      assert.equal(events[3], '[DONE]');
    });

    test('batches/transcriptions refusals: not multipart, no file, an empty file, bytes that are no audio', async () => {
      badRequest(await post(s.url, '/v1/batches/transcriptions', { model: 'asr' }), 'multipart');
      badRequest(
        await request(s.url, 'POST', '/v1/batches/transcriptions', { body: uploads('asr', []) }),
        "'file' is required",
      );
      badRequest(
        await request(s.url, 'POST', '/v1/batches/transcriptions', {
          body: uploads('asr', [
            ['a.wav', wav(1)],
            ['b.wav', Buffer.alloc(0)],
          ]),
        }),
        'file[1]',
        'empty',
      );
      badRequest(
        await request(s.url, 'POST', '/v1/batches/transcriptions', {
          body: uploads('asr', [
            ['a.wav', wav(1)],
            ['b.mp3', Buffer.from('not audio at all')],
          ]),
        }),
        'file[1]',
        'could not be decoded',
      );
      const streaming = await request(s.url, 'POST', '/v1/batches/transcriptions', {
        body: uploads('stream-asr', [['a.wav', wav(1)]]),
      });
      assert.equal(streaming.status, 200, 'a streaming model runs batches too');
    });
  });
}
