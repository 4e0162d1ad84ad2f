/**
 * GET /metrics after known traffic: counts per route and status, histogram counts, the gauges while
 * fixture gates hold a slot and a queued request, a stream's first output, a runner crash. The
 * text is parsed as Prometheus exposition, so a malformed line fails the test.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  fixtureModel,
  get,
  post,
  request,
  runTask,
  startServer,
  type TestServer,
  waitUntil,
  withServer,
} from '../helpers/voxd.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Scrape {
  types: Map<string, string>;
  samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** A strict reading of the text format: every line a comment, a TYPE/HELP line or a sample. */
function parseExposition(text: string): Scrape {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      assert.ok(name && ['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type!), line);
      types.set(name, type!);
      continue;
    }
    if (line.startsWith('# HELP ')) continue;
    const match = SAMPLE.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of match[2]?.matchAll(LABEL) ?? []) labels[key!] = value!;
    // Go's ParseFloat, which Prometheus uses, takes NaN and Inf in any case (prom-client writes Nan).
    const value = Number(match[3]);
    assert.ok(!Number.isNaN(value) || /^nan$/i.test(match[3]!), line);
    samples.push({ name: match[1]!, labels, value });
  }
  return { types, samples };
}

async function scrape(s: TestServer): Promise<Scrape> {
  const res = await get(s.url, '/metrics');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseExposition(res.body.toString('utf8'));
}

/** The value of the one sample of `name` whose labels include `labels`; 0 when there is none. */
function sampleOf(m: Scrape, name: string, labels: Record<string, string> = {}): number {
  const found = m.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value ?? 0;
}

describe('GET /metrics', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(
      {
        models: [
          fixtureModel('m', { slots: 1 }),
          fixtureModel('live', { mode: 'streaming' }),
          fixtureModel('tts', { task: 'tts' }),
          fixtureModel('tts-stream', { task: 'tts', mode: 'streaming' }),
        ],
      },
      { parallel: true },
    );
  });
  after(() => s.close());

  test('declares every voxd metric with its type, and the default process metrics', async () => {
    const m = await scrape(s);
    const expected: Record<string, string> = {
      voxd_http_requests_total: 'counter',
      voxd_http_request_duration_seconds: 'histogram',
      voxd_model_requests_total: 'counter',
      voxd_queue_wait_seconds: 'histogram',
      voxd_inference_duration_seconds: 'histogram',
      voxd_realtime_factor: 'histogram',
      voxd_stream_first_output_seconds: 'histogram',
      voxd_queued_requests: 'gauge',
      voxd_active_slots: 'gauge',
      voxd_slots: 'gauge',
      voxd_models_loaded: 'gauge',
      voxd_model_memory_estimate_bytes: 'gauge',
      voxd_model_resident_memory_bytes: 'gauge',
      voxd_runner_restarts_total: 'counter',
      voxd_realtime_sessions: 'gauge',
      voxd_client_secrets: 'gauge',
      voxd_realtime_turns_total: 'counter',
      voxd_realtime_transcript_seconds: 'histogram',
      voxd_wyoming_connections: 'gauge',
      voxd_deepgram_sessions: 'gauge',
      voxd_exchanges_total: 'counter',
      voxd_sessions_ended_total: 'counter',
      voxd_info: 'gauge',
      voxd_heap_code_bytes: 'gauge',
      voxd_heap_resident_bytes: 'gauge',
      voxd_malloc_in_use_bytes: 'gauge',
      voxd_malloc_free_bytes: 'gauge',
      process_cpu_seconds_total: 'counter',
      nodejs_eventloop_lag_seconds: 'gauge',
    };
    for (const [name, type] of Object.entries(expected)) assert.equal(m.types.get(name), type, name);
    assert.equal(sampleOf(m, 'voxd_info'), 1);
    assert.match(m.samples.find((x) => x.name === 'voxd_info')!.labels['version']!, /^\d+\.\d+\.\d+/);
    assert.equal(sampleOf(m, 'voxd_models_loaded'), 4);
    assert.equal(sampleOf(m, 'voxd_slots', { model: 'm' }), 1);
    const code = sampleOf(m, 'voxd_heap_code_bytes');
    assert.ok(code > 0 && code < sampleOf(m, 'nodejs_heap_size_used_bytes'), `${code} bytes of code`);
    const resident = sampleOf(m, 'voxd_heap_resident_bytes');
    assert.ok(
      resident > code && resident < sampleOf(m, 'process_resident_memory_bytes'),
      `${resident} bytes of the heap resident`,
    );
    // glibc's allocator, which this machine has: a live process has native allocations in use.
    const inUse = sampleOf(m, 'voxd_malloc_in_use_bytes');
    assert.ok(inUse > 0 && inUse < sampleOf(m, 'process_resident_memory_bytes'), `${inUse} bytes in use`);
    assert.ok(sampleOf(m, 'voxd_malloc_free_bytes') >= 0);
  });

  test('requests are counted by route template, method and status; unknown paths share one label', async () => {
    const before = await scrape(s);
    const route = '/v1/tasks/run';
    const count = (m: Scrape, status: string) =>
      sampleOf(m, 'voxd_http_requests_total', { route, method: 'POST', status });
    const ok = 3;
    const bad = 2;
    for (let i = 0; i < ok; i++) assert.equal((await runTask(s, 'm')).status, 200);
    for (let i = 0; i < bad; i++) assert.equal((await post(s.url, route, { text: 'no model' })).status, 400);
    assert.equal((await get(s.url, '/no/such/path/1')).status, 404);
    assert.equal((await get(s.url, '/no/such/path/2')).status, 404);
    const m = await scrape(s);
    assert.equal(count(m, '200') - count(before, '200'), ok);
    assert.equal(count(m, '400') - count(before, '400'), bad);
    const durations = (x: Scrape) =>
      sampleOf(x, 'voxd_http_request_duration_seconds_count', { route, method: 'POST' });
    assert.equal(durations(m) - durations(before), ok + bad);
    assert.equal(
      sampleOf(m, 'voxd_http_requests_total', { route: 'unknown', method: 'GET', status: '404' }),
      2,
    );
    assert.ok(!m.samples.some((x) => x.labels['route']?.startsWith('/no/')), 'a client path became a label');
    // Runs and their waits, by model: each ok request was admitted once and ran once.
    const runs = (x: Scrape) =>
      sampleOf(x, 'voxd_model_requests_total', { model: 'm', task: 'asr', outcome: 'ok' });
    assert.equal(runs(m) - runs(before), ok);
    const waits = (x: Scrape) => sampleOf(x, 'voxd_queue_wait_seconds_count', { model: 'm' });
    assert.equal(waits(m) - waits(before), ok);
    const inference = (x: Scrape) =>
      sampleOf(x, 'voxd_inference_duration_seconds_count', { model: 'm', task: 'asr' });
    assert.equal(inference(m) - inference(before), ok);
  });

  test('a speech run observes its realtime factor', async () => {
    const res = await post(s.url, '/v1/audio/speech', {
      model: 'tts',
      input: 'hello there',
      response_format: 'wav',
    });
    assert.equal(res.status, 200);
    const m = await scrape(s);
    assert.equal(sampleOf(m, 'voxd_realtime_factor_count', { model: 'tts', task: 'tts' }), 1);
  });

  test('a streamed speech run, whose engine keeps no audio, observes its realtime factor too', async () => {
    const before = sampleOf(await scrape(s), 'voxd_realtime_factor_count', {
      model: 'tts-stream',
      task: 'tts',
    });
    const res = await post(s.url, '/v1/audio/speech', {
      model: 'tts-stream',
      input: 'hello there. and again.',
      stream: true,
    });
    assert.equal(res.status, 200);
    assert.match(res.body.toString('utf8'), /speech\.audio\.done/);
    const m = await scrape(s);
    assert.equal(sampleOf(m, 'voxd_realtime_factor_count', { model: 'tts-stream', task: 'tts' }), before + 1);
  });

  test('the gauges show a slot held by a gated run and a request queued behind it', async () => {
    const gate = s.gate('run');
    const first = runTask(s, 'm', { run_gate: gate.path });
    await waitUntil(
      'the first run holds the slot',
      async () => sampleOf(await scrape(s), 'voxd_active_slots', { model: 'm' }) === 1,
    );
    const second = runTask(s, 'm', { run_gate: gate.path });
    await waitUntil(
      'the second request queues',
      async () => sampleOf(await scrape(s), 'voxd_queued_requests', { model: 'm' }) === 1,
    );
    const held = await scrape(s);
    assert.equal(sampleOf(held, 'voxd_active_slots', { model: 'm' }), 1);
    assert.equal(sampleOf(held, 'voxd_queued_requests', { model: 'm' }), 1);
    const waits = sampleOf(held, 'voxd_queue_wait_seconds_count', { model: 'm' });
    await gate.open();
    assert.equal((await first).status, 200);
    assert.equal((await second).status, 200);
    const done = await scrape(s);
    assert.equal(sampleOf(done, 'voxd_active_slots', { model: 'm' }), 0);
    assert.equal(sampleOf(done, 'voxd_queued_requests', { model: 'm' }), 0);
    // The queued request's wait is observed once it gets its slot.
    assert.equal(sampleOf(done, 'voxd_queue_wait_seconds_count', { model: 'm' }), waits + 1);
  });

  test('a streamed request observes its first output', async () => {
    const res = await post(s.url, '/v1/tasks/stream', { model: 'live', text: 'x', stream_format: 'sse' });
    assert.equal(res.status, 200);
    const m = await scrape(s);
    assert.equal(
      sampleOf(m, 'voxd_stream_first_output_seconds_count', { model: 'live', route: '/v1/tasks/stream' }),
      1,
    );
  });

  test('a busy request sent away is counted as rejected', async () => {
    const gate = s.gate('busy');
    const held = runTask(s, 'm', { run_gate: gate.path });
    await waitUntil(
      'the run holds the slot',
      async () => sampleOf(await scrape(s), 'voxd_active_slots', { model: 'm' }) === 1,
    );
    const refused = await post(s.url, '/v1/tasks/run', { model: 'm', text: 'x', busy_timeout_ms: 1 });
    assert.equal(refused.status, 503, refused.body.toString());
    await gate.open();
    assert.equal((await held).status, 200);
    const m = await scrape(s);
    assert.equal(
      sampleOf(m, 'voxd_model_requests_total', { model: 'm', task: 'asr', outcome: 'rejected' }),
      1,
    );
  });

  test('every response carries an X-Request-Id, /metrics too', async () => {
    const res = await request(s.url, 'GET', '/metrics');
    assert.match(res.headers.get('x-request-id') ?? '', /^[A-Za-z0-9._:-]{1,128}$/);
  });
});

test('a runner that crashes is counted in voxd_runner_restarts_total; a failed load is an error', async () => {
  await withServer(
    { models: [fixtureModel('a'), fixtureModel('bad', { lazy: true, load_options: { fail_load: true } })] },
    { parallel: true },
    async (s) => {
      assert.equal((await runTask(s, 'bad')).status, 500);
      assert.equal((await runTask(s, 'a', { crash: 'true' })).status, 500);
      const m = parseExposition((await get(s.url, '/metrics')).body.toString('utf8'));
      assert.equal(sampleOf(m, 'voxd_runner_restarts_total', { model: 'a' }), 1);
      assert.equal(
        sampleOf(m, 'voxd_model_requests_total', { model: 'a', task: 'asr', outcome: 'error' }),
        1,
      );
      assert.equal(
        sampleOf(m, 'voxd_model_requests_total', { model: 'bad', task: 'asr', outcome: 'error' }),
        1,
      );
      assert.equal(sampleOf(m, 'voxd_runner_restarts_total', { model: 'bad' }), 0);
    },
  );
});

test("the resident memory of a model is its runner processes' own, read while they run", async () => {
  await withServer(
    { ui_management: true, models: [{ id: 'flite', family: 'flite_tts', task: 'tts', lazy: true }] },
    { parallel: true },
    async (s) => {
      const resident = async () =>
        sampleOf(
          parseExposition((await get(s.url, '/metrics')).body.toString('utf8')),
          'voxd_model_resident_memory_bytes',
          {
            model: 'flite',
          },
        );
      assert.equal(await resident(), 0, 'no runner before the model is used');
      assert.equal((await post(s.url, '/v1/audio/speech', { model: 'flite', input: 'Hello.' })).status, 200);
      const pids = s.voxd.runtime.get('flite').runnerProcessIds();
      assert.equal(pids.length, 1, 'one runner serves the one slot');
      const bytes = await resident();
      // A Node process with the flite WASM engine holds tens of MiB; the server's own heap is not counted.
      assert.ok(bytes > 20 * 1024 * 1024, `${bytes} bytes`);
      const own =
        Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pids[0]}/status`, 'latin1'))![1]) * 1024;
      assert.ok(Math.abs(bytes - own) < own / 2, `${bytes} bytes reported, the runner has ${own}`);
      assert.equal((await post(s.url, '/v1/models/unload', { id: 'flite' })).status, 200);
      assert.equal(await resident(), 0, 'no sample once unloaded');
    },
  );
});
