/**
 * max_queued_requests over real HTTP: past the bound a request that would wait is refused at once
 * (503 queue_full with Retry-After) while the queued ones keep their FIFO places, in both runtimes
 * and on the stream and batch paths; /ready with ready_when_saturated and its low mark.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseServeArgs } from '../../src/cli/args.js';
import {
  errorOf,
  fixtureModel,
  get,
  type HttpResult,
  modelStatus,
  post,
  startServer,
  type TestServer,
  transcribe,
  waitUntil,
  withServer,
} from '../helpers/voxd.js';

/** One slot: the serial runtime's only one, or the parallel runtime's `slots: 1` (serial rejects the key). */
const model = (extra: Record<string, unknown> = {}, parallel = false) =>
  fixtureModel('m', { mode: 'streaming', ...(parallel ? { slots: 1 } : {}), ...extra });

const run = (s: TestServer, gate?: string) =>
  post(s.url, '/v1/tasks/run', {
    model: 'm',
    request: { text: 'x', options: gate ? { run_gate: gate } : {} },
  });

const runStarts = (s: TestServer) => s.fixture.record.of('m', 'run-start').length;

/** Where this runtime shows the queue: /v1/models in the parallel runtime, the scheduler in the serial one. */
async function queued(s: TestServer, parallel: boolean): Promise<number> {
  if (parallel) return (await modelStatus(s.url, 'm')).queued_requests as number;
  return s.voxd.runtime.get('m').scheduler.snapshot().queuedRequests;
}

function queueFull(res: HttpResult): string {
  const message = errorOf(res, 503, 'server_busy');
  assert.equal(res.json.error.code, 'queue_full');
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(
    Number.isInteger(retryAfter) && retryAfter >= 1,
    `Retry-After: ${res.headers.get('retry-after')}`,
  );
  return message;
}

/** A holder on the one slot and `count` requests queued behind it, each held by its own gate. */
async function fill(s: TestServer, parallel: boolean, count: number) {
  const gates = Array.from({ length: count + 1 }, (_, i) => s.gate(`g${i}`));
  const holder = run(s, gates[0]!.path);
  await waitUntil('the holder runs', () => runStarts(s) === 1);
  const waiting: Promise<HttpResult>[] = [];
  for (let i = 1; i <= count; i++) {
    waiting.push(run(s, gates[i]!.path));
    await waitUntil(`${i} queued`, async () => (await queued(s, parallel)) === i);
  }
  return { gates, results: [holder, ...waiting] };
}

for (const parallel of [false, true]) {
  describe(`max_queued_requests (${parallel ? 'parallel' : 'serial'} runtime)`, () => {
    test('past the bound a request is refused at once with 503 queue_full and Retry-After; the queue keeps FIFO order', async () => {
      await withServer({ max_queued_requests: 2, models: [model({}, parallel)] }, { parallel }, async (s) => {
        const gate0 = s.gate('hold');
        const gate1 = s.gate('first');
        const holder = run(s, gate0.path);
        await waitUntil('the holder runs', () => runStarts(s) === 1);
        const first = run(s, gate1.path);
        await waitUntil('one queued', async () => (await queued(s, parallel)) === 1);
        const second = run(s);
        await waitUntil('two queued', async () => (await queued(s, parallel)) === 2);

        const message = queueFull(await run(s));
        assert.match(
          message,
          /model 'm' is busy: its queue is full with 2 waiting \(max_queued_requests=2\)/,
        );
        assert.equal(await queued(s, parallel), 2, 'the refused request never queued');

        await gate0.open();
        assert.equal((await holder).status, 200);
        // The first in line runs (held by its gate) while the second still waits behind it.
        await waitUntil('the first queued runs', () => runStarts(s) === 2);
        assert.equal(await queued(s, parallel), 1);
        await gate1.open();
        assert.equal((await first).status, 200);
        assert.equal((await second).status, 200);
        assert.equal(runStarts(s), 3, 'the refused request never ran');
        assert.equal((await run(s)).status, 200, 'room again once the queue drained');
      });
    });

    test("a model's own max_queued_requests wins over the server's", async () => {
      await withServer(
        { max_queued_requests: 5, models: [model({ max_queued_requests: 1 }, parallel)] },
        { parallel },
        async (s) => {
          const { gates, results } = await fill(s, parallel, 1);
          assert.match(queueFull(await run(s)), /max_queued_requests=1/);
          for (const gate of gates) await gate.open();
          for (const result of results) assert.equal((await result).status, 200);
        },
      );
    });

    test('a stream or a batch past the bound is refused before any stream header, a transcription before decoding', async () => {
      await withServer({ max_queued_requests: 1, models: [model({}, parallel)] }, { parallel }, async (s) => {
        const { gates, results } = await fill(s, parallel, 1);
        const stream = await post(s.url, '/v1/tasks/stream', { model: 'm', text: 'x', stream_format: 'sse' });
        queueFull(stream);
        assert.equal(stream.headers.get('content-type'), 'application/json');
        const batch = await post(s.url, '/v1/tasks/batch', { model: 'm', requests: [{ text: 'a' }] });
        queueFull(batch);
        // Not a WAV: a 400 if it were decoded, so the 503 shows the queue was checked first.
        queueFull(await transcribe(s.url, 'm', Buffer.from('not a wav')));
        assert.equal(await queued(s, parallel), 1);
        for (const gate of gates) await gate.open();
        for (const result of results) assert.equal((await result).status, 200);
        assert.equal(runStarts(s), 2);
      });
    });

    test('0 leaves the queue unbounded', async () => {
      await withServer({ models: [model({}, parallel)] }, { parallel }, async (s) => {
        const { gates, results } = await fill(s, parallel, 3);
        for (const gate of gates) await gate.open();
        for (const result of results) assert.equal((await result).status, 200);
      });
    });
  });
}

describe('ready_when_saturated', () => {
  test('/ready turns 503 once the queue is full and 200 again only at half the bound', async () => {
    await withServer({ max_queued_requests: 4, ready_when_saturated: true, models: [model()] }, async (s) => {
      assert.equal((await get(s.url, '/ready')).status, 200);
      const { gates, results } = await fill(s, false, 3);
      assert.equal((await get(s.url, '/ready')).status, 200, 'not yet at the bound');
      const fourth = run(s);
      await waitUntil('four queued', async () => (await queued(s, false)) === 4);
      const saturated = await get(s.url, '/ready');
      assert.match(errorOf(saturated, 503, 'server_busy'), /every loaded model's queue is full/);
      assert.equal(saturated.json.error.code, 'queue_full');

      // The holder ends: the first in line runs on its gate, three still wait (above the low mark 2).
      await gates[0]!.open();
      await waitUntil('three queued', async () => (await queued(s, false)) === 3);
      assert.equal((await get(s.url, '/ready')).status, 503, 'no flap at one below the bound');
      await gates[1]!.open();
      await waitUntil('two queued', async () => (await queued(s, false)) === 2);
      assert.equal((await get(s.url, '/ready')).status, 200, 'drained to the low mark');

      // Back to three: still ready, as saturation waits for the bound again.
      const more = run(s);
      await waitUntil('three queued again', async () => (await queued(s, false)) === 3);
      assert.equal((await get(s.url, '/ready')).status, 200);
      for (const gate of gates) await gate.open();
      for (const result of [...results, fourth, more]) assert.equal((await result).status, 200);
    });
  });

  test('off by default: a full queue leaves /ready at 200', async () => {
    await withServer({ max_queued_requests: 1, models: [model()] }, async (s) => {
      const { gates, results } = await fill(s, false, 1);
      queueFull(await run(s));
      assert.equal((await get(s.url, '/ready')).status, 200);
      for (const gate of gates) await gate.open();
      for (const result of results) assert.equal((await result).status, 200);
    });
  });

  test('a loaded model without a bound never saturates', async () => {
    await withServer(
      {
        ready_when_saturated: true,
        models: [model({ max_queued_requests: 1 }), fixtureModel('free')],
      },
      async (s) => {
        const { gates, results } = await fill(s, false, 1);
        queueFull(await run(s));
        assert.equal((await get(s.url, '/ready')).status, 200);
        for (const gate of gates) await gate.open();
        for (const result of results) assert.equal((await result).status, 200);
      },
    );
  });
});

describe('max_queued_requests values', () => {
  for (const bad of [-1, 1.5, '3']) {
    test(`${JSON.stringify(bad)} is rejected naming the key`, async () => {
      await assert.rejects(startServer({ max_queued_requests: bad, models: [model()] }), (err: Error) => {
        assert.match(err.message, /max_queued_requests/);
        assert.match(err.message, /an integer >= 0/);
        return true;
      });
      await assert.rejects(startServer({ models: [model({ max_queued_requests: bad })] }), (err: Error) => {
        assert.match(err.message, /models\[0\]\.max_queued_requests/);
        return true;
      });
    });
  }

  test('a registration with a bad value is a 400 naming the key; a new value takes effect at once', async () => {
    await withServer({ ui_management: true, max_queued_requests: 5, models: [model()] }, async (s) => {
      const bad = await post(s.url, '/v1/models/load', model({ max_queued_requests: -1 }));
      assert.match(errorOf(bad, 400, 'invalid_request_error'), /max_queued_requests: -1 is invalid/);
      assert.equal(bad.json.error.param, 'max_queued_requests');
      const changed = await post(s.url, '/v1/models/load', model({ max_queued_requests: 1 }));
      assert.equal(changed.status, 200);
      const { gates, results } = await fill(s, false, 1);
      assert.match(queueFull(await run(s)), /max_queued_requests=1/);
      for (const gate of gates) await gate.open();
      for (const result of results) assert.equal((await result).status, 200);
    });
  });

  test('--max-queued-requests and --ready-when-saturated reach the config; a bad flag value names the flag', async () => {
    const args = parseServeArgs(['--max-queued-requests', '7', '--ready-when-saturated']);
    assert.equal(args.overrides.max_queued_requests, 7);
    assert.equal(args.overrides.ready_when_saturated, true);
    await assert.rejects(
      startServer({ models: [model()] }, { overrides: { max_queued_requests: -2 } }),
      /--max-queued-requests/,
    );
  });
});
