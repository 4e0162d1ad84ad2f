/**
 * Streamed speech and transcriptions over real HTTP: event sequences, byte-exact equality with the
 * offline answer, leases held until the last byte, busy models (503 before the headers in the
 * parallel runtime, an SSE error after them in the serial one), failures after the headers, and
 * clients that go away mid-stream.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { sseEvents } from '../helpers/sse.js';
import { suiteServer } from '../helpers/suite-server.js';
import {
  assertErrorShape,
  badRequest,
  fixtureModel,
  modelStatus,
  post,
  request,
  type TestServer,
  transcribe,
  waitUntil,
  withServer,
} from '../helpers/voxd.js';

const TONE = encodeWav({
  samples: Float32Array.from({ length: 16000 }, (_, i) => 0.3 * Math.sin(i / 7)),
  sampleRate: 16000,
  channels: 1,
});

const MODELS = [
  fixtureModel('tts', { task: 'tts', mode: 'streaming', default_request_options: { chunks: '3' } }),
  fixtureModel('tts-offline', { task: 'tts' }),
  fixtureModel('asr', { task: 'asr', mode: 'streaming', default_request_options: { chunks: '4' } }),
  fixtureModel('diar', { task: 'diar', mode: 'streaming', default_request_options: { chunks: '2' } }),
];

for (const parallel of [false, true]) {
  describe(`streaming (${parallel ? 'parallel' : 'serial'} runtime)`, () => {
    const s = suiteServer({ busy_timeout_ms: 0, models: MODELS }, { parallel });

    const speech = (body: Record<string, unknown>) => post(s.url, '/v1/audio/speech', body);

    test('SSE speech: one delta per engine chunk, then done with ttft_ms, then [DONE]; PCM equals the offline WAV', async () => {
      // At the model's own rate: resampled (OpenAI's 24 kHz, the default), the filter's tail is one
      // delta more, at the end.
      const res = await speech({
        model: 'tts',
        input: 'streamed words',
        stream: true,
        seed: 3,
        sample_rate: 16000,
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      const events = sseEvents(res.body);
      assert.deepEqual(
        events.map((e) => (e === '[DONE]' ? e : e.type)),
        ['speech.audio.delta', 'speech.audio.delta', 'speech.audio.delta', 'speech.audio.done', '[DONE]'],
      );
      const done = events[3] as { usage: unknown; timing: { ttft_ms: number } };
      assert.ok(Number.isInteger(done.timing.ttft_ms) && done.timing.ttft_ms >= 0);
      // OpenAI's usage, counting the input's characters (voxd's engines have no tokens).
      assert.deepEqual(done.usage, { input_tokens: 14, output_tokens: 0, total_tokens: 14 });
      const pcm = Buffer.concat(
        events.slice(0, 3).map((e) => Buffer.from((e as { audio: string }).audio, 'base64')),
      );
      // The same model answering offline: the WAV's data is exactly the streamed PCM.
      const offline = await speech({ model: 'tts', input: 'streamed words', seed: 3 });
      assert.equal(offline.status, 200);
      assert.equal(offline.headers.get('content-type'), 'audio/wav');
      assert.ok(pcm.length > 0);
      assert.deepEqual(pcm, offline.body.subarray(44));
    });

    test("raw audio stream: the PCM16 bytes only, at OpenAI's 24 kHz, equal to the offline answer at that rate", async () => {
      const res = await speech({ model: 'tts', input: 'raw', stream: true, stream_format: 'audio' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/octet-stream');
      const offline = await speech({ model: 'tts', input: 'raw', sample_rate: 24000 });
      assert.deepEqual(res.body, offline.body.subarray(44));
      const wav = decodeWav(offline.body);
      assert.equal(res.body.length, floats(wav).length * 2);
    });

    test('bad stream requests are 400s naming the field', async () => {
      badRequest(
        await speech({ model: 'tts-offline', input: 'x', stream: true }),
        'stream',
        '"mode": "streaming"',
      );
      badRequest(
        await speech({ model: 'tts', input: 'x', stream: true, response_format: 'wav' }),
        'response_format',
        'pcm',
      );
      badRequest(await speech({ model: 'tts', input: 'x', stream_format: 'ogg' }), 'stream_format', '"ogg"');
    });

    test('a non-stream request to a streaming model answers the assembled WAV', async () => {
      const res = await speech({ model: 'tts', input: 'assembled' });
      assert.equal(res.status, 200);
      assert.ok(floats(decodeWav(res.body)).length > 0);
    });

    test('a failure after the headers is an SSE error event and no [DONE]; the slot is free after', async () => {
      const res = await speech({ model: 'tts', input: 'x', stream: true, options: { run_fail: true } });
      assert.equal(res.status, 200);
      const events = sseEvents(res.body);
      assert.equal(events.length, 1, JSON.stringify(events));
      const error = events[0] as { type: string; error: { message: string; type: string; code: string } };
      assert.equal(error.type, 'error');
      assert.equal(error.error.type, 'server_error');
      assert.match(error.error.message, /model 'tts' failed/);
      // The same OpenAI error object as a plain error response: a 5xx names no field.
      assertErrorShape(error.error);
      assert.deepEqual(
        [error.error.code, (error.error as { param?: unknown }).param],
        ['engine_error', null],
      );
      assert.equal((await modelStatus(s.url, 'tts')).loaded, true);
      assert.equal((await speech({ model: 'tts', input: 'after', stream: true })).status, 200);
    });

    test('the lease is held until the last byte: a queued request waits for the stream to end', async () => {
      const gate = s.gate(`hold-${parallel}`);
      const runs = () => s.fixture.record.of('tts', 'run-start').length;
      const before = runs();
      const streaming = speech({
        model: 'tts',
        input: 'held',
        stream: true,
        options: { run_gate: gate.path },
      });
      await waitUntil('the stream runs on the only slot', () => runs() === before + 1);
      // busy_timeout_ms 1: the request gives up almost at once while the slot is held.
      const busy = await speech({ model: 'tts', input: 'busy', stream: true, busy_timeout_ms: 1 });
      if (parallel) {
        // Parallel: the lease is taken before the headers, so busy is a real 503.
        assert.equal(busy.status, 503);
        assert.equal(busy.json.error.type, 'server_busy');
        assertErrorShape(busy.json.error, 503);
      } else {
        // Serial: the headers went out first; the busy error arrives as an SSE error event.
        assert.equal(busy.status, 200);
        const events = sseEvents(busy.body);
        assert.equal((events[0] as { type: string }).type, 'error', JSON.stringify(events));
        assert.equal((events[0] as { error: { type: string } }).error.type, 'server_busy');
        assertErrorShape((events[0] as { error: Record<string, unknown> }).error);
        assert.equal(events.includes('[DONE]'), false);
      }
      await gate.open();
      assert.equal((await streaming).status, 200);
    });

    test('a client that goes away mid-stream frees the slot; other streams are unaffected', async () => {
      const controller = new AbortController();
      const started = fetch(`${s.url}/v1/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'tts',
          input: 'gone',
          stream: true,
          options: { chunks: 50, chunk_ms: 20 },
        }),
        signal: controller.signal,
      });
      const res = await started;
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      await reader.read(); // the first delta arrived: the stream is running
      const other = speech({ model: 'tts', input: 'other', stream: true, options: { chunks: 3 } });
      controller.abort();
      await waitUntil('the abandoned run was stopped', () =>
        s.fixture.record.of('tts', 'run-end').some((r) => 'outcome' in r && r.outcome === 'aborted'),
      );
      const events = sseEvents((await other).body);
      assert.equal(events.at(-1), '[DONE]');
      if (parallel)
        await waitUntil('the slot is free', async () => (await modelStatus(s.url, 'tts')).active_slots === 0);
    });

    test('streamed transcription: text deltas, then done with the full text; the details route adds detail', async () => {
      const res = await transcribe(s.url, 'asr', TONE, { stream: 'true' });
      assert.equal(res.status, 200);
      const events = sseEvents(res.body);
      const deltas = events.filter((e) => e !== '[DONE]' && e.type === 'transcript.text.delta') as {
        delta: string;
      }[];
      assert.equal(deltas.length, 4);
      const done = events.at(-2) as {
        type: string;
        text: string;
        usage: unknown;
        timing: { ttft_ms: number };
      };
      assert.equal(done.type, 'transcript.text.done');
      assert.equal(deltas.map((d) => d.delta).join(''), done.text);
      // OpenAI's usage: the 1 s of input audio.
      assert.deepEqual(done.usage, { type: 'duration', seconds: 1 });
      assert.equal(events.at(-1), '[DONE]');
      // The details route: the same request forms, the text plus every detail the engine gives.
      const details = await request(s.url, 'POST', '/v1/audio/transcriptions/details', { body: form('asr') });
      assert.equal(details.status, 200);
      assert.equal(typeof details.json.text, 'string');
      assert.equal(details.json.timing.audio_duration_ms, 1000);
      badRequest(
        await request(s.url, 'POST', '/v1/audio/transcriptions/details', {
          body: form('asr', { stream: 'true' }),
        }),
        'stream',
        '/v1/audio/transcriptions',
      );
    });

    test('streamed diarization: diarization.delta with the turns and sample_rate, then diarization.done', async () => {
      const res = await transcribe(s.url, 'diar', TONE, { stream: 'true' });
      assert.equal(res.status, 200);
      const events = sseEvents(res.body);
      const types = events.map((e) => (e === '[DONE]' ? e : e.type));
      assert.equal(types.at(-2), 'diarization.done');
      assert.equal(types.at(-1), '[DONE]');
      const done = events.at(-2) as {
        speaker_turns: unknown[];
        sample_rate: number;
        timing: { ttft_ms: number | null };
      };
      assert.equal(done.sample_rate, 16000);
      assert.equal(done.speaker_turns.length, 2, 'the fixture cuts the input into one turn per chunk');
      const streamed = events.filter((e) => e !== '[DONE]' && e.type === 'diarization.delta') as {
        speaker_turns: unknown[];
        sample_rate: number;
      }[];
      assert.equal(streamed.length, 2, 'one delta per turn as it closes');
      assert.deepEqual(
        streamed.flatMap((e) => e.speaker_turns),
        done.speaker_turns,
      );
      assert.ok(Number.isInteger(done.timing.ttft_ms));
      // The details route carries the turns and the rate their positions count in.
      const details = await request(s.url, 'POST', '/v1/audio/transcriptions/details', {
        body: form('diar'),
      });
      assert.deepEqual(details.json.speaker_turns, done.speaker_turns);
      assert.equal(details.json.sample_rate, 16000);
    });
  });
}

function form(model: string, fields: Record<string, string> = {}): FormData {
  const body = new FormData();
  body.set('model', model);
  body.set('file', new Blob([TONE]), 'a.wav');
  for (const [key, value] of Object.entries(fields)) body.set(key, value);
  return body;
}

describe('[time.disconnect-stream] streams that lose their client release their lease', () => {
  for (const slots of [1, 2, 4]) {
    test(`[time.disconnect-stream] mid-stream and never-started streams free their slots (${slots} slot${slots > 1 ? 's' : ''})`, async () => {
      await withServer(
        { busy_timeout_ms: 0, models: [fixtureModel('m', { task: 'tts', mode: 'streaming', slots })] },
        { parallel: true },
        async (s) => {
          const open = (body: Record<string, unknown>, signal: AbortSignal) =>
            fetch(`${s.url}/v1/audio/speech`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ model: 'm', input: 'x', stream: true, ...body }),
              signal,
            });
          // Every slot busy with a stream that has started writing and then keeps going.
          const writers = Array.from({ length: slots }, () => new AbortController());
          const running = await Promise.all(
            writers.map((c) => open({ options: { chunks: 1000, chunk_ms: 20 } }, c.signal)),
          );
          for (const res of running) {
            assert.equal(res.status, 200);
            await res.body!.getReader().read(); // its first delta arrived
          }
          assert.equal((await modelStatus(s.url, 'm')).active_slots, slots);
          // One more stream queues for a slot; its client leaves before it ever started.
          const queuedClient = new AbortController();
          const queued = open({}, queuedClient.signal).catch((err: unknown) => err);
          await waitUntil(
            'the extra stream queues',
            async () => (await modelStatus(s.url, 'm')).queued_requests === 1,
          );
          queuedClient.abort();
          await queued;
          await waitUntil(
            'the abandoned stream left the queue',
            async () => (await modelStatus(s.url, 'm')).queued_requests === 0,
          );
          // The running streams' clients leave mid-stream: every write fails, every lease comes back.
          for (const c of writers) c.abort();
          await waitUntil(
            'every slot is free',
            async () => (await modelStatus(s.url, 'm')).active_slots === 0,
          );
          await waitUntil(
            'every engine run was stopped',
            () =>
              s.fixture.record.of('m', 'run-end').filter((r) => 'outcome' in r && r.outcome === 'aborted')
                .length === slots,
          );
          // The model still serves, at full width.
          const after = await Promise.all(
            Array.from({ length: slots }, () => speechOf(s, { model: 'm', input: 'y', stream: true })),
          );
          for (const res of after) assert.equal(sseEvents(res.body).at(-1), '[DONE]');
        },
      );
    });
  }
});

const speechOf = (s: TestServer, body: Record<string, unknown>) => post(s.url, '/v1/audio/speech', body);
