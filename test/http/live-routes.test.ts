/**
 * The live routes, POST /v1/audio/transcriptions/live and /v1/audio/speech/live, over a real voxd
 * on loopback, fed exact chunked bytes by raw TCP clients: normal runs (fixture and real engines),
 * parameter errors, every live_ingest limit, busy models, and the slot freed after each failure.
 * Ordering comes from events (the response headers arrived, a delta arrived, a run started), never
 * from sleeps; deadlines only bound a wait.
 *
 * How a failed body ends, as these tests pin it down:
 * - The limits (idle_timeout_ms, total_timeout_ms, max_body_bytes, max_chunk_bytes) fail while the
 *   connection is healthy, so the stream ends properly (terminating chunk) with an SSE
 *   `{"type":"error",...}` event naming the limit, and no `done` / `[DONE]`.
 * - Malformed chunk framing, and a body cut off before its terminating zero chunk (the client
 *   half-closes but still reads), are parse errors for node:http; voxd's clientError handler leaves
 *   such a connection to its stream, which ends with an SSE error event naming the problem (no
 *   `done` / `[DONE]`) and closes it. A client that resets the connection gets nothing, of course.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { RawClient, type RawResponse } from '../helpers/raw-http.js';
import { type SseEvent, sseEvents, typeOf } from '../helpers/sse.js';
import {
  badRequest,
  fixtureModel,
  type HttpResult,
  modelStatus,
  post,
  request,
  runTask,
  startServer,
  type TestServer,
  transcribe,
  waitUntil,
  withServer,
} from '../helpers/voxd.js';

/** One request on its own connection: the head is sent at once, the body as the test says. */
class LiveClient extends RawClient {
  constructor(
    url: string,
    path: string,
    headers: Record<string, string> = { 'Transfer-Encoding': 'chunked' },
  ) {
    super(url);
    const head = [
      `POST ${path} HTTP/1.1`,
      'Host: voxd',
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    this.socket.write(`${head.join('\r\n')}\r\n\r\n`);
  }

  get events(): SseEvent[] {
    const res = this.response;
    return res ? sseEvents(res.body) : [];
  }

  /** One chunk of the chunked encoding. */
  chunk(data: Buffer): Promise<void> {
    return this.write(frame(data));
  }

  /** The terminating zero-length chunk. */
  end(): Promise<void> {
    return this.write(END);
  }

  /** The status line and headers arrived. */
  headers(): Promise<void> {
    return this.until('the response headers', () => this.response !== undefined);
  }
}

const END = '0\r\n\r\n';

function frame(data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
}

/** `bytes` framed as chunks whose sizes cycle through `sizes`. */
function framed(bytes: Buffer, sizes: number[]): Buffer {
  const out: Buffer[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    out.push(frame(bytes.subarray(at, at + size)));
    at += size;
  }
  return Buffer.concat(out);
}

/** Writes `bytes` in pieces whose sizes cycle through `sizes`, each write awaited. */
async function writeInPieces(client: LiveClient, bytes: Buffer, sizes: number[]): Promise<void> {
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    await client.write(bytes.subarray(at, at + size));
    at += size;
  }
}

// ---- audio ----

/** A 440 Hz sine at amplitude 0.5, `frames` frames of `channels` equal channels. */
function sine(frames: number, rate: number, channels = 1): Float32Array {
  const out = new Float32Array(frames * channels);
  for (let f = 0; f < frames; f++) {
    const x = 0.5 * Math.sin((2 * Math.PI * 440 * f) / rate);
    for (let c = 0; c < channels; c++) out[f * channels + c] = x;
  }
  return out;
}

function s16le(samples: Float32Array): Buffer {
  const buf = Buffer.alloc(samples.length * 2);
  for (const [i, x] of samples.entries()) buf.writeInt16LE(Math.round(x * 32767), i * 2);
  return buf;
}

function f32le(samples: Float32Array): Buffer {
  const buf = Buffer.alloc(samples.length * 4);
  for (const [i, x] of samples.entries()) buf.writeFloatLE(x, i * 4);
  return buf;
}

/** A WAV (PCM16) of interleaved samples. */
function wav(samples: Float32Array, rate: number, channels: number): Buffer {
  const data = s16le(samples);
  const head = Buffer.alloc(44);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(36 + data.length, 4);
  head.write('WAVEfmt ', 8, 'latin1');
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(1, 20);
  head.writeUInt16LE(channels, 22);
  head.writeUInt32LE(rate, 24);
  head.writeUInt32LE(rate * channels * 2, 28);
  head.writeUInt16LE(channels * 2, 32);
  head.writeUInt16LE(16, 34);
  head.write('data', 36, 'latin1');
  head.writeUInt32LE(data.length, 40);
  return Buffer.concat([head, data]);
}

/** 20 ms of a 16 kHz mono s16le tone: a small valid body. */
const SHORT_PCM = s16le(sine(320, 16000));

// ---- the two routes ----

interface LiveRoute {
  name: string;
  /** The task of the fixture models the route is tested with. */
  task: 'asr' | 'tts';
  path: string;
  /** Query parameters every request on the route needs besides the model. */
  base: string;
  /** The event that ends a successful stream, before [DONE]. */
  done: string;
}

const ROUTES: LiveRoute[] = [
  {
    name: 'transcriptions/live',
    task: 'asr',
    path: '/v1/audio/transcriptions/live',
    base: '',
    done: 'transcript.text.done',
  },
  {
    name: 'speech/live',
    task: 'tts',
    path: '/v1/audio/speech/live',
    base: '&input=hello%20live',
    done: 'speech.audio.done',
  },
];

const target = (route: LiveRoute, model: string, extra = '') =>
  `${route.path}?model=${encodeURIComponent(model)}${route.base}${extra}`;

/** A whole request with a small valid body, sent at once; the whole response. */
async function liveOnce(s: TestServer, path: string, body = SHORT_PCM): Promise<RawResponse> {
  const client = new LiveClient(s.url, path);
  await client.write(frame(body), END);
  return client.finished();
}

/** A successful stream: 200 SSE with Connection: close, ending with the route's done, then [DONE]. */
function assertNormal(res: RawResponse, route: LiveRoute): SseEvent[] {
  const events = sseEvents(res.body);
  assert.equal(res.status, 200, res.body.toString());
  assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
  assert.equal(res.headers['connection'], 'close');
  assert.equal(res.complete, true, 'the stream ends with its terminating chunk');
  assert.deepEqual(events.slice(-2).map(typeOf), [route.done, '[DONE]'], JSON.stringify(events));
  return events;
}

/** No normal ending: neither the route's done event nor [DONE]. */
function assertNoDone(events: SseEvent[], route: LiveRoute): void {
  const types = events.map(typeOf);
  assert.ok(!types.includes(route.done), `unexpected ${route.done}: ${JSON.stringify(events)}`);
  assert.ok(!types.includes('[DONE]'), `unexpected [DONE]: ${JSON.stringify(events)}`);
}

/** A limit failure: a 200 stream that ends properly with an SSE error event naming the limit. */
function assertLimitError(res: RawResponse, route: LiveRoute, limit: string): void {
  assert.equal(res.status, 200, res.body.toString());
  const events = sseEvents(res.body);
  assertNoDone(events, route);
  const last = events.at(-1) as { type: string; error: { message: string; type: string } } | undefined;
  assert.equal(last?.type, 'error', JSON.stringify(events));
  assert.equal(last.error.type, 'invalid_request_error');
  assert.ok(last.error.message.includes(`live_ingest.${limit}`), last.error.message);
  assert.equal(res.complete, true, 'the error event is followed by the terminating chunk');
}

/** A stream ended by a broken body: one SSE error event naming the problem, no `done`, no [DONE]. */
function assertBodyError(res: RawResponse, route: LiveRoute, problem: RegExp): void {
  assert.equal(res.status, 200, res.body.toString());
  const events = sseEvents(res.body);
  assertNoDone(events, route);
  const last = events.at(-1) as { type: string; error: { message: string; type: string } } | undefined;
  assert.equal(last?.type, 'error', JSON.stringify(events));
  assert.equal(last.error.type, 'invalid_request_error');
  assert.match(last.error.message, problem);
}

/** Answers of a raw request as the helpers' HttpResult (for badRequest and friends). */
function asResult(res: RawResponse): HttpResult {
  const json = res.headers['content-type']?.includes('application/json')
    ? JSON.parse(res.body.toString('utf8'))
    : undefined;
  return { status: res.status, headers: new Headers(res.headers), body: res.body, json };
}

/** The model holds no slot and queues nothing (parallel), and a following request streams normally. */
async function assertRecovered(s: TestServer, parallel: boolean, route: LiveRoute, model: string) {
  if (parallel) {
    await waitUntil(`'${model}' has no active slot`, async () => {
      const status = await modelStatus(s.url, model);
      return status.active_slots === 0 && status.queued_requests === 0;
    });
  }
  // A bounded busy timeout: a leaked slot or lock shows as a busy error, never as a hang.
  assertNormal(await liveOnce(s, target(route, model, '&busy_timeout_ms=5000')), route);
}

// ---- fixture models ----

function fixtureModels(parallel: boolean): Record<string, unknown>[] {
  const slots = parallel ? { slots: 2 } : {};
  const models: Record<string, unknown>[] = [];
  for (const task of ['asr', 'tts'] as const) {
    const chunks = { default_request_options: { chunks: task === 'asr' ? '3' : '2' } };
    const streaming = { task, mode: 'streaming', ...chunks };
    models.push(
      fixtureModel(task, { ...streaming, ...slots }),
      fixtureModel(`${task}-offline`, { task }),
      // One slot in both runtimes: the busy cases.
      fixtureModel(`${task}-one`, streaming),
      // Small per-model live_ingest overrides, one limit each (the server's defaults stay as they are).
      fixtureModel(`${task}-idle`, { ...streaming, ...slots, live_ingest: { idle_timeout_ms: 250 } }),
      fixtureModel(`${task}-total`, {
        ...streaming,
        ...slots,
        live_ingest: { idle_timeout_ms: 0, total_timeout_ms: 400 },
      }),
      fixtureModel(`${task}-size`, {
        ...streaming,
        ...slots,
        live_ingest: { max_body_bytes: 4000, max_chunk_bytes: 1000 },
      }),
      fixtureModel(`${task}-seconds`, { ...streaming, ...slots, max_audio_seconds: 1 }),
    );
  }
  return models;
}

/** The fixture's JSON report out of a transcript.text.done event (the deltas add up to it). */
// biome-ignore lint/suspicious/noExplicitAny: the report is arbitrary JSON
function reportOfLive(events: SseEvent[]): any {
  const deltas = events.filter((e) => e !== '[DONE]' && e.type === 'transcript.text.delta') as {
    delta: string;
  }[];
  const done = events.at(-2) as { type: string; text: string; timing: { ttft_ms: number | null } };
  assert.equal(done.type, 'transcript.text.done');
  assert.equal(deltas.length, 3, 'chunks: 3 gives three deltas');
  assert.equal(deltas.map((d) => d.delta).join(''), done.text);
  assert.ok(Number.isInteger(done.timing.ttft_ms), JSON.stringify(done.timing));
  return JSON.parse(done.text);
}

for (const parallel of [false, true]) {
  describe(`live routes with the fixture (${parallel ? 'parallel' : 'serial'} runtime)`, () => {
    let s: TestServer;
    before(async () => {
      s = await startServer({ busy_timeout_ms: 0, models: fixtureModels(parallel) }, { parallel });
    });
    after(() => s.close());

    const ASR = ROUTES[0]!;
    const SPEECH = ROUTES[1]!;

    test('transcription: s16le and f32le bodies split at odd byte boundaries keep every sample', async () => {
      for (const format of ['s16le', 'f32le'] as const) {
        const frames = format === 's16le' ? 4001 : 3001;
        const pcm = format === 's16le' ? s16le(sine(frames, 16000)) : f32le(sine(frames, 16000));
        const client = new LiveClient(s.url, target(ASR, 'asr', `&sample_format=${format}`));
        // Chunks that cut samples apart, written in pieces that cut the chunk framing apart.
        await writeInPieces(client, framed(pcm, [1, 3, 7, 1000, 5, 333]), [37, 1, 500, 2, 1201]);
        await client.end();
        const res = await client.finished();
        const events = assertNormal(res, ASR);
        const report = reportOfLive(events);
        assert.equal(report.audio.samples, frames, format);
        // All the body brought, 4001 or 3001 frames at 16 kHz: a quarter second and a bit, rounded up.
        assert.deepEqual((events.at(-2) as { usage: unknown }).usage, { type: 'duration', seconds: 1 });
        assert.equal(report.audio.sample_rate, 16000);
        assert.equal(report.audio.channels, 1);
        assert.ok(Math.abs(report.audio.rms - 0.5 / Math.SQRT2) < 0.005, `rms ${report.audio.rms}`);
      }
    });

    test('transcription: a 44.1 kHz stereo body is converted to the model input format, as an upload is', async () => {
      const samples = sine(44100, 44100, 2);
      const client = new LiveClient(s.url, target(ASR, 'asr', '&sample_rate=44100&channels=2'));
      // Many small chunks, each write awaited, so the body arrives in many pieces.
      const body = framed(s16le(samples), [1764, 883]);
      await writeInPieces(client, body, [1771, 2650]);
      await client.end();
      const report = reportOfLive(assertNormal(await client.finished(), ASR));
      assert.equal(report.audio.sample_rate, 16000, 'the model input rate');
      assert.equal(report.audio.channels, 1, 'the model input channel count');
      // The same audio uploaded as a WAV: the live body is converted exactly as a whole file is.
      const offline = JSON.parse((await transcribe(s.url, 'asr', wav(samples, 44100, 2))).json.text);
      assert.deepEqual(report.audio, offline.audio);
      assert.equal(report.audio.samples, 16000);
    });

    test('speech: audio deltas, then speech.audio.done with the live timing fields; PCM equals offline speech', async () => {
      const client = new LiveClient(s.url, target(SPEECH, 'tts', '&seed=3'));
      await client.chunk(SHORT_PCM);
      // The stream is accepted while the input is still open; the input ends after that.
      await client.headers();
      assert.equal(client.response!.status, 200);
      await client.chunk(SHORT_PCM);
      await client.end();
      const events = assertNormal(await client.finished(), SPEECH);
      assert.deepEqual(events.map(typeOf), [
        'speech.audio.delta',
        'speech.audio.delta',
        'speech.audio.done',
        '[DONE]',
      ]);
      // OpenAI's usage before voxd's timing: the characters of "hello live".
      assert.deepEqual(Object.keys(events[2] as object), ['type', 'usage', 'timing']);
      assert.deepEqual((events[2] as { usage: unknown }).usage, {
        input_tokens: 10,
        output_tokens: 0,
        total_tokens: 10,
      });
      const t = (events[2] as { timing: Record<string, unknown> }).timing;
      assert.deepEqual(Object.keys(t).sort(), [
        'first_audio_before_input_end',
        'input_end_ms',
        'overlap_ms',
        'request_start_to_first_audio_ms',
        'ttft_ms',
      ]);
      // The fixture speaks once the whole input is in: audio after the input's end, no overlap.
      assert.equal(t['first_audio_before_input_end'], false);
      assert.equal(t['overlap_ms'], 0);
      for (const key of ['ttft_ms', 'input_end_ms', 'request_start_to_first_audio_ms'])
        assert.ok(Number.isInteger(t[key]) && (t[key] as number) >= 0, `${key}: ${t[key]}`);
      const gap = (t['request_start_to_first_audio_ms'] as number) - (t['input_end_ms'] as number);
      assert.ok(Math.abs(gap - (t['ttft_ms'] as number)) <= 1, JSON.stringify(t));
      const pcm = Buffer.concat(
        events.slice(0, 2).map((e) => Buffer.from((e as { audio: string }).audio, 'base64')),
      );
      const offline = await post(s.url, '/v1/audio/speech', { model: 'tts', input: 'hello live', seed: 3 });
      assert.equal(offline.status, 200);
      assert.ok(pcm.length > 0);
      assert.deepEqual(pcm, offline.body.subarray(44));
    });

    test('speech: stream_format=audio answers the raw PCM16 only', async () => {
      const res = await liveOnce(s, target(SPEECH, 'tts', '&seed=3&stream_format=audio'));
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'application/octet-stream');
      assert.equal(res.complete, true);
      const offline = await post(s.url, '/v1/audio/speech', { model: 'tts', input: 'hello live', seed: 3 });
      assert.deepEqual(res.body, offline.body.subarray(44));
    });

    test('speech: return_text on an engine that speaks no text ends with an error, not a done', async () => {
      // The fixture emits audio only; "no text at all is an error" (reference §1.5). The text order
      // with an engine that does emit text is checked with flite below.
      const res = await liveOnce(s, target(SPEECH, 'tts', '&return_text=true'));
      assert.equal(res.status, 200);
      const events = sseEvents(res.body);
      assertNoDone(events, SPEECH);
      assert.deepEqual(events.map(typeOf), ['speech.audio.delta', 'speech.audio.delta', 'error']);
      assert.match((events[2] as { error: { message: string } }).error.message, /produced no text/);
    });

    test('speech: request errors are 400s naming the parameter', async () => {
      const bad = async (path: string) => asResult(await liveOnce(s, path));
      badRequest(await bad('/v1/audio/speech/live?model=tts'), 'input');
      badRequest(await bad(target(SPEECH, 'tts', '&return_text=true&stream_format=audio')), 'return_text');
      badRequest(await bad(target(SPEECH, 'tts', '&return_text=yes')), 'return_text', '"yes"');
      badRequest(await bad(target(SPEECH, 'tts', '&stream_format=ogg')), 'stream_format', '"ogg"');
      badRequest(await bad(target(SPEECH, 'tts', '&response_format=wav')), 'response_format', '"wav"');
    });

    for (const route of ROUTES) {
      const other = route.task === 'asr' ? 'tts' : 'asr';

      test(`${route.name}: parameter errors are 400 invalid_request_error naming the parameter`, async () => {
        const bad = async (path: string) => asResult(await liveOnce(s, path));
        badRequest(await bad(`${route.path}?sample_rate=16000${route.base}`), 'model');
        badRequest(await bad(target(route, 'nope')), 'model', 'nope');
        badRequest(
          await bad(target(route, route.task, '&sample_rate=16000junk')),
          'sample_rate',
          '16000junk',
        );
        badRequest(await bad(target(route, route.task, '&channels=0')), 'channels', '"0"');
        badRequest(await bad(target(route, route.task, '&sample_format=u8')), 'sample_format', 'u8');
        badRequest(await bad(target(route, `${route.task}-offline`)), `${route.task}-offline`, 'streaming');
        badRequest(await bad(target(route, other)), 'model', `'${other}'`, route.path);
        // A body with a Content-Length instead of chunks.
        badRequest(
          await request(s.url, 'POST', target(route, route.task), { body: SHORT_PCM }),
          'chunked',
          'Transfer-Encoding',
        );
        // The server still works.
        assertNormal(await liveOnce(s, target(route, route.task)), route);
      });

      test(`${route.name}: idle_timeout_ms ends a stalled body with an SSE error event`, async () => {
        const client = new LiveClient(s.url, target(route, `${route.task}-idle`));
        await client.chunk(SHORT_PCM);
        await client.headers();
        // ...and nothing more: the body stalls.
        assertLimitError(await client.finished(), route, 'idle_timeout_ms');
        await assertRecovered(s, parallel, route, `${route.task}-idle`);
      });

      test(`${route.name}: total_timeout_ms ends a body that takes too long`, async () => {
        // idle_timeout_ms is 0 on this model: only the total time can end it.
        const client = new LiveClient(s.url, target(route, `${route.task}-total`));
        await client.chunk(SHORT_PCM);
        await client.headers();
        assertLimitError(await client.finished(), route, 'total_timeout_ms');
        await assertRecovered(s, parallel, route, `${route.task}-total`);
      });

      test(`${route.name}: max_body_bytes: one byte over fails`, async () => {
        const client = new LiveClient(s.url, target(route, `${route.task}-size`));
        const pcm = s16le(sine(2001, 16000)).subarray(0, 4001);
        await client.write(framed(pcm, [1000]));
        assertLimitError(await client.finished(), route, 'max_body_bytes');
        await assertRecovered(s, parallel, route, `${route.task}-size`);
      });

      test(`${route.name}: max_audio_seconds: one frame over the model's limit fails`, async () => {
        const client = new LiveClient(s.url, target(route, `${route.task}-seconds`));
        await client.write(framed(s16le(sine(16001, 16000)), [4000]));
        const res = await client.finished();
        const events = sseEvents(res.body);
        assertNoDone(events, route);
        const last = events.at(-1) as { type: string; error: { message: string; type: string } };
        assert.equal(last?.type, 'error', JSON.stringify(events));
        assert.equal(last.error.type, 'invalid_request_error');
        assert.ok(last.error.message.includes('max_audio_seconds'), last.error.message);
        await assertRecovered(s, parallel, route, `${route.task}-seconds`);
      });

      test(`${route.name}: max_chunk_bytes: a chunk over the limit arriving at once fails`, async () => {
        const client = new LiveClient(s.url, target(route, `${route.task}-size`));
        await client.chunk(SHORT_PCM);
        // 1001 bytes in one write: node:http hands them over as one piece, over the limit (1000).
        // The size a chunk declares is not seen (api.md, Limits).
        await client.chunk(Buffer.alloc(1001));
        assertLimitError(await client.finished(), route, 'max_chunk_bytes');
        await assertRecovered(s, parallel, route, `${route.task}-size`);
      });

      test(`${route.name}: malformed chunk framing ends with an SSE error event naming it`, async () => {
        const client = new LiveClient(s.url, target(route, route.task));
        await client.chunk(SHORT_PCM);
        await client.headers();
        await client.write('zz\r\n').catch(() => undefined);
        // node:http's parser fails on the bad size line; the stream still reports it before closing.
        assertBodyError(await client.finished(), route, /malformed chunked framing/);
        await assertRecovered(s, parallel, route, route.task);
      });

      test(`${route.name}: a body cut off before its terminating chunk ends with an SSE error event`, async () => {
        const client = new LiveClient(s.url, target(route, route.task));
        await client.chunk(SHORT_PCM);
        await client.headers();
        client.socket.end(); // half-close: the body ends without its zero chunk, the client still reads
        assertBodyError(await client.finished(), route, /closed before the terminating zero-length chunk/);
        await assertRecovered(s, parallel, route, route.task);
      });

      test(`${route.name}: a body that ends inside a sample fails with an SSE error event`, async () => {
        const client = new LiveClient(s.url, target(route, route.task));
        // 20 ms of s16le; once the stream runs (its samples are taken as they come), one stray
        // byte in a chunk of its own, then a proper end.
        await client.chunk(SHORT_PCM);
        await client.headers();
        await client.write(frame(Buffer.from([1])), END);
        const res = await client.finished();
        assert.equal(res.status, 200);
        const events = sseEvents(res.body);
        assertNoDone(events, route);
        const last = events.at(-1) as { type: string; error: { message: string; type: string } };
        assert.equal(last.type, 'error', JSON.stringify(events));
        assert.equal(last.error.type, 'invalid_request_error');
        assert.match(last.error.message, /1 bytes that are not a whole frame/);
        await assertRecovered(s, parallel, route, route.task);
      });

      test(`${route.name}: a client that resets the connection mid-body frees the slot`, async () => {
        const client = new LiveClient(s.url, target(route, route.task));
        await client.chunk(SHORT_PCM);
        await client.headers();
        client.socket.resetAndDestroy();
        await assertRecovered(s, parallel, route, route.task);
      });

      test(`${route.name}: a busy model is ${parallel ? 'an HTTP 503 before the headers' : 'an SSE error event'}`, async () => {
        const model = `${route.task}-one`;
        const gate = s.gate(`busy-${route.task}-${parallel}`);
        const starts = () => s.fixture.record.of(model, 'run-start').length;
        const before = starts();
        const held = runTask(s, model, { run_gate: gate.path });
        await waitUntil('the gated run holds the only slot', () => starts() === before + 1);
        const res = await liveOnce(s, target(route, model, '&busy_timeout_ms=1'));
        if (parallel) {
          assert.equal(res.status, 503, res.body.toString());
          assert.equal(asResult(res).json.error.type, 'server_busy');
        } else {
          assert.equal(res.status, 200);
          const events = sseEvents(res.body);
          assert.deepEqual(events.map(typeOf), ['error'], JSON.stringify(events));
          assert.equal((events[0] as { error: { type: string } }).error.type, 'server_busy');
        }
        await gate.open();
        assert.equal((await held).status, 200);
        await assertRecovered(s, parallel, route, model);
      });
    }

    test('no request above crashed a handler or failed a stream with an internal error', () => {
      const faults = s.logs.filter((line) => /unhandled error|stream failed|failed:/.test(line));
      // The one expected fault: return_text on the fixture (an engine error, logged as such).
      const expected = (line: string) =>
        line.includes("stream failed: VoxdError: model 'tts' produced no text");
      assert.equal(faults.filter(expected).length, 1, faults.join('\n'));
      assert.deepEqual(
        faults.filter((line) => !expected(line)),
        [],
      );
    });
  });
}

// ---- real engines: pocketsphinx hears flite ----

const SPOKEN = 'Please bring the blue umbrella when you leave the house. It will rain later today.';

describe('live routes with real engines (pocketsphinx_asr, flite_tts)', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(
      {
        busy_timeout_ms: 0,
        models: [
          { id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming', lazy: true },
          {
            id: 'ps',
            family: 'pocketsphinx_asr',
            task: 'asr',
            mode: 'streaming',
            lazy: true,
            live_ingest: { idle_timeout_ms: 4000 },
          },
        ],
      },
      { parallel: true },
    );
    // Loaded before the tests, so a load never counts against the idle limit of a live body.
    const warm = await transcribe(s.url, 'ps', wav(new Float32Array(1600), 16000, 1));
    assert.equal(warm.status, 200, warm.body.toString());
  });
  after(() => s.close());

  const ASR = ROUTES[0]!;

  /** flite's speech for `text` (kal16): the PCM after the 44-byte WAV header, and its rate. */
  async function spoken(text: string): Promise<{ pcm: Buffer; rate: number }> {
    const res = await post(s.url, '/v1/audio/speech', { model: 'flite', input: text, voice: 'kal16' });
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.body.readUInt16LE(22), 1, 'mono');
    return { pcm: res.body.subarray(44), rate: res.body.readUInt32LE(24) };
  }

  const deltasOf = (events: SseEvent[]) =>
    (events.filter((e) => e !== '[DONE]' && e.type === 'transcript.text.delta') as { delta: string }[]).map(
      (d) => d.delta,
    );

  test('pocketsphinx transcribes while the body arrives: settled words stream before the input ends', async () => {
    const { pcm, rate } = await spoken(SPOKEN);
    const client = new LiveClient(s.url, target(ASR, 'ps', `&sample_rate=${rate}`));
    const half = Math.floor(pcm.length / 4) * 2;
    // Small chunks (50 ms), each write awaited; then the client waits for a first delta.
    for (let at = 0; at < half; at += 1600) await client.chunk(pcm.subarray(at, Math.min(at + 1600, half)));
    await client.until('a first transcript delta, mid-body', () => deltasOf(client.events).length > 0, 30000);
    for (let at = half; at < pcm.length; at += 1600) await client.chunk(pcm.subarray(at, at + 1600));
    await client.end();
    const events = assertNormal(await client.finished(30000), ASR);
    const deltas = deltasOf(events);
    const done = events.at(-2) as { text: string };
    assert.ok(deltas.length >= 2, `deltas: ${JSON.stringify(deltas)}`);
    // Words settle when three guesses agree; the done text is the decoder's final answer, which may
    // revise settled words (then the deltas do not add up to it). For this speech they agree.
    assert.equal(deltas.join(''), done.text);
    const heard = done.text.toLowerCase().split(/\s+/);
    const expected = ['bring', 'blue', 'umbrella', 'leave', 'house', 'later', 'today'];
    const found = expected.filter((w) => heard.includes(w));
    assert.ok(found.length >= 4, `heard "${done.text}"`);
  });

  test('pocketsphinx: a stalled body ends with the idle error; the session decodes the next request cleanly', async () => {
    const { pcm, rate } = await spoken(SPOKEN);
    const path = target(ASR, 'ps', `&sample_rate=${rate}`);
    const client = new LiveClient(s.url, path);
    await client.chunk(pcm.subarray(0, 32000));
    await client.headers();
    assertLimitError(await client.finished(), ASR, 'idle_timeout_ms');
    await waitUntil('the slot is free', async () => (await modelStatus(s.url, 'ps')).active_slots === 0);
    const next = new LiveClient(s.url, path);
    await next.write(framed(pcm, [3200]), END);
    const done = assertNormal(await next.finished(30000), ASR).at(-2) as { text: string };
    assert.match(done.text, /\bumbrella\b/, done.text);
  });

  test('flite live speech with return_text: each sentence text before its audio, then text.done and audio.done', async () => {
    const input = 'Good morning. See you soon.';
    const client = new LiveClient(
      s.url,
      `/v1/audio/speech/live?model=flite&voice=kal16&return_text=1&input=${encodeURIComponent(input)}`,
    );
    await client.write(frame(SHORT_PCM), END);
    const events = assertNormal(await client.finished(30000), ROUTES[1]!);
    assert.deepEqual(events.map(typeOf), [
      'speech.text.delta',
      'speech.audio.delta',
      'speech.text.delta',
      'speech.audio.delta',
      'speech.text.done',
      'speech.audio.done',
      '[DONE]',
    ]);
    const deltas = events.filter((e) => e !== '[DONE]' && e.type === 'speech.text.delta') as {
      delta: string;
    }[];
    assert.deepEqual(
      deltas.map((d) => d.delta),
      ['Good morning.', ' See you soon.'],
    );
    assert.equal((events[4] as { text: string }).text, input);
    const timing = (events[5] as { timing: { first_audio_before_input_end: boolean; ttft_ms: number } })
      .timing;
    assert.equal(timing.first_audio_before_input_end, false);
    assert.ok(Number.isInteger(timing.ttft_ms));
  });
});

test('a malformed request that is not a stream still gets a plain 400 and a closed connection', async () => {
  await withServer({ models: [fixtureModel('m')] }, async (s) => {
    const { port } = new URL(s.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write('GET /health HTTP/1.1\r\nHost: x\r\nNot A Header Line\r\n\r\n'),
      );
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1');
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\nConnection: close\r\n/);
  });
});
