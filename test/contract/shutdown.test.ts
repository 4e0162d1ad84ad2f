/**
 * Contract cells of a shutdown: `state.<state>.shutdown` (a shutdown arriving in each model state),
 * `state.shutting-down.*` (each operation arriving during a shutdown) and `time.shutdown-*`
 * (active, queued, hung and stalled work). The shutdown is the in-process `Voxd.close()`, the one
 * SIGTERM calls (test/cli/shutdown.test.ts runs it through a real process and signals).
 *
 * voxd does better than the contract here, and these tests hold it to that: queued requests and
 * waiting managers are answered 503 server_busy at once; running finite work completes and its
 * response is delivered (with `Connection: close`) before the model is destroyed; work still
 * running at shutdown_timeout_ms is cancelled through its AbortSignal and answered 503; stalled
 * sockets are cut, so close() resolves within the deadline plus a small margin; the listener takes
 * no new connection once close() began; no session is disposed while a run on it is open; a
 * second close() joins the first.
 *
 * States are held by fixture gates, never by sleeps. The listener is closed during a shutdown, so
 * status is read in process (the runtime's snapshots, as GET /v1/models shows them).
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { modelStatus } from '../../src/api/model-status.js';
import type { ModelConfig } from '../../src/config/types.js';
import { ROUTES } from '../../src/http/index.js';
import type { RouteContext } from '../../src/http/transport/route.js';
import { CUT_GRACE_MS } from '../../src/runtime/shutdown-timing.js';
import { RawClient, type RawResponse } from '../helpers/raw-http.js';
import {
  errorOf,
  type HttpResult,
  ManualClock,
  post,
  reportOf,
  waitUntil,
  whenRuntime,
} from '../helpers/voxd.js';
import {
  COUNTS,
  lifecycle,
  loadOf,
  pick,
  probeOf,
  queued,
  range,
  readyView,
  teardownOf,
  track,
  unloadedView,
  type View,
  view,
  within,
} from './assertions.js';
import { type ContractServer, slotted, type ToggleGate, withContractServer } from './harness.js';

/** The shutdown_timeout_ms of the tests about the deadline. */
const DEADLINE_MS = 500;

// ---- helpers ----

/** The GET /v1/models fields of a model, read in process (the listener is closed in a shutdown). */
function statusNow(c: ContractServer, id: string): View {
  const { runtime } = c.s.voxd;
  const st = runtime.snapshots().find((m) => m.id === id);
  assert.ok(st, `${id} is registered`);
  return pick(modelStatus(st, runtime.parallel));
}

/**
 * Runs `body` with a server of one model M (n slots) on a manual clock, whose shutdown gives
 * running work DEADLINE_MS.
 */
function withDeadlineServer(n: number, body: (c: ContractServer, clock: ManualClock) => Promise<void>) {
  const clock = new ManualClock();
  return withContractServer([{ id: 'M', slots: n }], { shutdown_timeout_ms: DEADLINE_MS, clock }, (c) =>
    body(c, clock),
  );
}

/** The model (n slots) is unloaded, after one load and one teardown. */
function expectTornDown(c: ContractServer, id: string, n: number): void {
  assert.deepEqual(statusNow(c, id), unloadedView(n));
  assert.deepEqual(lifecycle(c, id), [...loadOf(1, n), ...teardownOf(1, n)]);
}

interface Shutdown {
  readonly promise: Promise<void>;
  readonly settled: boolean;
}

/** Starts the shutdown (Voxd.close(), what SIGTERM calls) and tracks it. */
function shutdown(c: ContractServer): Shutdown {
  const t = { promise: c.s.voxd.close(), settled: false };
  t.promise.then(
    () => {
      t.settled = true;
    },
    () => {
      t.settled = true;
    },
  );
  return t;
}

/**
 * The servers of the deadline tests run on a ManualClock, which only the test moves: moves it to
 * 1 ms before `ms` after the shutdown began, lets the server act on every event it has, checks that
 * `held` still holds (nothing was cancelled or cut early), then moves it the last millisecond.
 */
async function justBefore(clock: ManualClock, ms: number, held: () => void): Promise<void> {
  clock.advance(ms - 1);
  await new Promise((resolve) => setImmediate(resolve));
  held();
  clock.advance(1);
}

/** A new connection is refused: the listener closed when the shutdown began. */
function refused(url: string): Promise<void> {
  const { hostname, port } = new URL(url);
  return within(
    new Promise<void>((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      socket.once('connect', () => {
        socket.destroy();
        reject(new Error('a new connection was accepted after the shutdown began'));
      });
      socket.once('error', (err: NodeJS.ErrnoException) =>
        err.code === 'ECONNREFUSED' ? resolve() : reject(err),
      );
    }),
    'a new connection to be refused',
  );
}

/** 503 server_busy saying voxd is shutting down; returns the message. */
function shuttingDown(res: HttpResult, detail: RegExp = /shutting down/): string {
  const message = errorOf(res, 503, 'server_busy');
  assert.match(message, /voxd is shutting down/);
  assert.match(message, detail);
  return message;
}

/** A 200 delivered during the drain: it closes its connection. */
function delivered(res: HttpResult): HttpResult {
  assert.equal(res.status, 200, res.body.toString());
  assert.equal(res.headers.get('connection'), 'close', 'a response during the drain closes its connection');
  return res;
}

/**
 * No session of the model was disposed while a run on it was open, and no run started on a
 * generation after its disposal began; every run that started ended.
 */
function assertDrainedBeforeDisposal(c: ContractServer, id: string): void {
  const events = c.events(id);
  const open = new Map<number, number>();
  const disposed = new Set<number>();
  for (const e of events) {
    if (e.type === 'run-start') {
      assert.ok(
        !disposed.has(e.generation),
        `${id}: a run started on generation ${e.generation} after its disposal`,
      );
      open.set(e.generation, (open.get(e.generation) ?? 0) + 1);
    } else if (e.type === 'run-end') open.set(e.generation, (open.get(e.generation) ?? 0) - 1);
    else if (e.type === 'session-disposed') {
      assert.equal(
        open.get(e.generation) ?? 0,
        0,
        `${id}: a session of generation ${e.generation} was disposed in use`,
      );
      disposed.add(e.generation);
    }
  }
  assert.equal(c.count(id, 'run-start'), c.count(id, 'run-end'), `${id}: every run ended`);
}

/** Outcomes of the model's runs, in order. */
const outcomes = (c: ContractServer, id: string): string[] =>
  c.events(id, 'run-end').map((e) => ('outcome' in e ? e.outcome : '?'));

/** Resolves when the server has parsed the head of the request tagged `tag` (its 'request' event). */
function headArrives(c: ContractServer, tag: string): Promise<void> {
  const server = c.s.voxd.server;
  return within(
    new Promise<void>((resolve) => {
      const onRequest = (req: IncomingMessage) => {
        if (req.headers['x-test'] !== tag) return;
        server.off('request', onRequest);
        resolve();
      };
      server.on('request', onRequest);
    }),
    `the head of request ${tag} to arrive`,
  );
}

let tags = 0;

/**
 * A request accepted before the shutdown: its head and the first byte of its JSON body are sent
 * and parsed; `finish()` sends the rest (after the shutdown began) and returns the whole response.
 */
async function preAccepted(c: ContractServer, path: string, body: unknown) {
  const payload = Buffer.from(JSON.stringify(body));
  const tag = `pre-${++tags}`;
  const arrived = headArrives(c, tag);
  const client = new RawClient(c.url);
  await client.write(
    `POST ${path} HTTP/1.1\r\nHost: voxd\r\nContent-Type: application/json\r\n`,
    `Content-Length: ${payload.length}\r\nX-Test: ${tag}\r\n\r\n`,
    payload.subarray(0, 1),
  );
  await arrived;
  return {
    client,
    finish: async (): Promise<HttpResult> => {
      await client.write(payload.subarray(1));
      return asResult(await client.finished());
    },
  };
}

/** A raw response as the helpers' HttpResult. */
function asResult(res: RawResponse): HttpResult {
  const json = res.headers['content-type']?.includes('application/json')
    ? JSON.parse(res.body.toString('utf8'))
    : undefined;
  return { status: res.status, headers: new Headers(res.headers), body: res.body, json };
}

const BIG_TEXT_BYTES = 16 * 1024 * 1024;

/**
 * A request whose 16 MiB of options come back in the fixture's report (far more than the socket
 * buffers hold), from a client that does not read until the test says so (`socket.resume()`).
 * Sixteen values of 1 MiB: one JSON string may be at most 1 MiB.
 */
function bigRequest(c: ContractServer): RawClient {
  const options = Object.fromEntries(
    Array.from({ length: BIG_TEXT_BYTES >> 20 }, (_, i) => [`pad${i}`, 'x'.repeat(1 << 20)]),
  );
  const payload = Buffer.from(JSON.stringify({ model: 'M', request: { text: 'big', options } }));
  const client = new RawClient(c.url, { read: false });
  void client.write(
    'POST /v1/tasks/run HTTP/1.1\r\nHost: voxd\r\nContent-Type: application/json\r\n',
    `Content-Length: ${payload.length}\r\n\r\n`,
    payload,
  );
  return client;
}

/** Calls a route's handler directly, as a custom front end or a direct caller would. */
function callRoute(c: ContractServer, method: 'GET' | 'POST', path: string) {
  const route = ROUTES.find((r) => r.method === method && r.path === path);
  assert.ok(route, `${method} ${path} is a route`);
  const runtime = c.s.voxd.runtime;
  const ctx = {
    url: new URL(`http://voxd${path}`),
    runtime,
    config: runtime.config,
    log: () => {},
    signal: new AbortController().signal,
  } as unknown as RouteContext;
  return route.handler(ctx);
}

/** The model's registration as the runtime takes it, with changes. */
function configOf(c: ContractServer, id: string, change: Partial<ModelConfig> = {}): ModelConfig {
  return { ...c.s.voxd.runtime.get(id).config, ...change };
}

// ---- a shutdown arriving in each model state ----

/**
 * Starts the shutdown with a request queued on M: the request is answered 503 at once and new
 * connections are refused. Returns the shutdown.
 */
async function shutdownRefusingQueued(c: ContractServer): Promise<Shutdown> {
  const waiting = track(c.infer('M'));
  await queued(c, 'M', 1);
  const closing = shutdown(c);
  shuttingDown(await within(waiting.promise, 'the queued request to be refused'), /not started/);
  await refused(c.url);
  return closing;
}

/** Opens the gate the running `requests` wait on and asserts that each is delivered. */
async function deliverRunning(gate: ToggleGate, requests: Promise<HttpResult>[]): Promise<void> {
  await gate.open();
  for (const r of requests) delivered(await within(r, 'a running request'));
}

describe('shutdown x model state', () => {
  for (const n of COUNTS) {
    test(`[state.unloaded.shutdown] slots=${n}: an unloaded model stays unloaded; the shutdown loads nothing, takes no new work and resolves at once`, async () => {
      await withContractServer(slotted({ M: n, B: n }), async (c) => {
        await c.ready('B');
        assert.deepEqual(await view(c, 'M'), unloadedView(n));
        await within(c.s.voxd.close(), 'the shutdown of an idle server');
        await refused(c.url);
        assert.deepEqual(statusNow(c, 'M'), unloadedView(n));
        assert.deepEqual(statusNow(c, 'B'), unloadedView(n));
        // Nothing that comes later can load it.
        const runtime = c.s.voxd.runtime;
        await assert.rejects(
          runtime.infer(
            'M',
            { task: 'asr', text: 'x', options: {} },
            { signal: new AbortController().signal },
          ),
          { code: 'E_SHUTTING_DOWN' },
        );
        await assert.rejects(runtime.register(configOf(c, 'M')), { code: 'E_SHUTTING_DOWN' });
        assert.deepEqual(statusNow(c, 'M'), unloadedView(n));
        assert.deepEqual(lifecycle(c, 'M'), []);
        assert.deepEqual(lifecycle(c, 'B'), [...loadOf(1, n), ...teardownOf(1, n)]);
      });
    });

    test(`[state.loading.shutdown] slots=${n}: requests admitted into the load wait for it and run; queued ones get 503 at once; the pool is destroyed after them`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        const { request } = await c.loading('M');
        const admitted = [request, ...range(n - 1).map(() => c.infer('M'))].map(track);
        const waiting = range(2).map(() => track(c.infer('M')));
        await queued(c, 'M', 2);
        assert.deepEqual(
          await view(c, 'M'),
          unloadedView(n, { state: 'loading', active_slots: n, queued_requests: 2 }),
        );
        const closing = shutdown(c);
        for (const w of waiting)
          shuttingDown(await within(w.promise, 'a queued request to be refused'), /not started/);
        await refused(c.url);
        assert.deepEqual(statusNow(c, 'M'), unloadedView(n, { state: 'loading', active_slots: n }));
        assert.equal(closing.settled || admitted.some((a) => a.settled), false, 'the finite load is joined');
        await c.load('M').open();
        for (const a of admitted)
          assert.equal(reportOf(delivered(await within(a.promise, 'an admitted request'))).generation, 1);
        await within(closing.promise, 'the shutdown');
        expectTornDown(c, 'M', n);
        assert.deepEqual(outcomes(c, 'M'), Array(n).fill('ok'));
        assertDrainedBeforeDisposal(c, 'M');
      });
    });

    test(`[state.loading.shutdown] [time.shutdown-queued-hung] slots=${n}: a cold load that never finishes is abandoned at shutdown_timeout_ms; its requests get 503 and close() resolves`, async () => {
      await withDeadlineServer(n, async (c, clock) => {
        const { request } = await c.loading('M');
        const admitted = [request, ...range(n - 1).map(() => c.infer('M'))].map(track);
        await whenRuntime(
          c.s.voxd.runtime,
          'every slot is admitted',
          () => c.snapshot('M').activeRequests === n,
        );
        const closing = shutdown(c);
        await justBefore(clock, DEADLINE_MS, () => {
          assert.equal(statusNow(c, 'M').state, 'loading', 'the load is given until the deadline');
          assert.equal(closing.settled || admitted.some((a) => a.settled), false);
          assert.deepEqual(lifecycle(c, 'M'), []);
        });
        for (const a of admitted) {
          shuttingDown(
            await within(a.promise, 'a request waiting on the hung load'),
            /shutdown_timeout_ms=500/,
          );
        }
        await within(closing.promise, 'the shutdown');
        assert.deepEqual(statusNow(c, 'M'), unloadedView(n));
        // The load stopped waiting on its gate: it failed and published nothing.
        assert.deepEqual(lifecycle(c, 'M'), ['load-failed:1']);
        assert.equal(c.count('M', 'run-start'), 0);
      });
    });

    test(`[state.ready.shutdown] slots=${n}: running requests finish and are answered; queued requests and a waiting manager get 503 at once; then the pool is destroyed`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        const waiting = range(2).map(() => track(c.infer('M')));
        await queued(c, 'M', 2);
        const manager = track(c.register('M', { load_options: { variant: 'next' } }));
        await queued(c, 'M', 2, 1);
        const closing = shutdown(c);
        for (const w of [...waiting, manager]) {
          shuttingDown(await within(w.promise, 'a waiting request or manager to be refused'), /not started/);
        }
        await refused(c.url);
        assert.deepEqual(statusNow(c, 'M'), readyView(n, { active_slots: n }));
        assert.equal(closing.settled, false, 'the running requests are joined');
        await gate.open();
        for (const r of requests)
          assert.equal(reportOf(delivered(await within(r, 'a running request'))).generation, 1);
        await within(closing.promise, 'the shutdown');
        assert.deepEqual(statusNow(c, 'M'), unloadedView(n));
        // The refused manager never ran: no probe, no replacement.
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...teardownOf(1, n)]);
        assertDrainedBeforeDisposal(c, 'M');
      });
    });

    test(`[state.reconfiguring.shutdown] slots=${n}: the reconfiguration in progress finishes and is answered 200; a request queued behind it gets 503 at once; then the replacement is destroyed`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { request } = await c.reconfiguring('M');
        const reg = track(request);
        const closing = await shutdownRefusingQueued(c);
        assert.equal(closing.settled || reg.settled, false, 'the finite management is joined');
        assert.equal(statusNow(c, 'M').state, 'reconfiguring');
        await c.load('M').open();
        const res = delivered(await within(reg.promise, 'the reconfiguration'));
        assert.deepEqual(res.json, { id: 'M', loaded: true, reconfigured: true });
        await within(closing.promise, 'the shutdown');
        assert.deepEqual(statusNow(c, 'M'), unloadedView(n));
        // One slot: the replacement loads as generation 2. More: a private probe (2) comes first.
        assert.deepEqual(
          lifecycle(c, 'M'),
          n === 1
            ? [...loadOf(1, 1), ...teardownOf(1, 1), ...loadOf(2, 1), ...teardownOf(2, 1)]
            : [...loadOf(1, n), ...probeOf(2), ...teardownOf(1, n), ...loadOf(3, n), ...teardownOf(3, n)],
        );
        assert.equal(c.count('M', 'run-start'), 0);
      });
    });

    test(`[state.reconfiguring.shutdown] slots=${n}: a reconfiguration whose load never finishes is cancelled at shutdown_timeout_ms and answered 503; close() resolves`, async () => {
      await withDeadlineServer(n, async (c, clock) => {
        await c.ready('M');
        const { request } = await c.reconfiguring('M');
        const reg = track(request);
        const closing = shutdown(c);
        await justBefore(clock, DEADLINE_MS, () => {
          assert.equal(statusNow(c, 'M').state, 'reconfiguring', 'the load is given until the deadline');
          assert.equal(closing.settled || reg.settled, false);
        });
        shuttingDown(await within(reg.promise, 'the hung reconfiguration'), /shutdown_timeout_ms=500/);
        await within(closing.promise, 'the shutdown');
        assert.deepEqual(statusNow(c, 'M'), unloadedView(n));
        // One slot: the old pool went first, the replacement's load failed. More: the private
        // probe failed, the old pool stayed until the shutdown unloaded it.
        assert.deepEqual(
          lifecycle(c, 'M'),
          n === 1
            ? [...loadOf(1, 1), ...teardownOf(1, 1), 'load-failed:2']
            : [...loadOf(1, n), 'load-failed:2', ...teardownOf(1, n)],
        );
      });
    });

    test(`[state.unloading.shutdown] slots=${n}: the unload in progress finishes its finite teardown and is answered; a queued request gets 503 at once; the model is torn down once`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { request } = await c.unloading('M');
        const unload = track(request);
        const closing = await shutdownRefusingQueued(c);
        assert.deepEqual(statusNow(c, 'M'), unloadedView(n, { state: 'unloading' }));
        assert.equal(closing.settled || unload.settled, false, 'the finite teardown is joined');
        await c.teardown('M').open();
        assert.deepEqual(delivered(await within(unload.promise, 'the unload')).json, {
          id: 'M',
          loaded: false,
        });
        await within(closing.promise, 'the shutdown');
        expectTornDown(c, 'M', n);
      });
    });
  }
});

// ---- operations arriving while a shutdown is in progress ----

describe('operations while shutting down', () => {
  for (const n of COUNTS) {
    test(`[state.shutting-down.inference] slots=${n}: new connections are refused; a request accepted before the shutdown is answered 503 and never runs; the running ones finish`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        const late = await preAccepted(c, '/v1/tasks/run', {
          model: 'M',
          request: { text: 'x', options: {} },
        });
        const closing = shutdown(c);
        await refused(c.url);
        const res = await late.finish();
        shuttingDown(res, /takes no new work/);
        assert.equal(res.headers.get('connection'), 'close');
        // A direct caller is refused the same way, before it takes a place in the queue.
        await assert.rejects(c.s.voxd.runtime.admit('M', { signal: new AbortController().signal }), {
          code: 'E_SHUTTING_DOWN',
        });
        assert.deepEqual(statusNow(c, 'M'), readyView(n, { active_slots: n }));
        assert.equal(c.count('M', 'run-start'), n, 'the late request never ran');
        await deliverRunning(gate, requests);
        await within(closing.promise, 'the shutdown');
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...teardownOf(1, n)]);
        assertDrainedBeforeDisposal(c, 'M');
      });
    });

    test(`[state.shutting-down.register] slots=${n}: registrations accepted before the shutdown are answered 503 and change nothing; the running requests finish`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        const reconfigure = await preAccepted(
          c,
          '/v1/models/load',
          c.body('M', { load_options: { variant: 'next' } }),
        );
        const fresh = await preAccepted(c, '/v1/models/load', { ...c.body('M'), id: 'N' });
        const closing = shutdown(c);
        await refused(c.url);
        shuttingDown(await reconfigure.finish(), /takes no new work/);
        shuttingDown(await fresh.finish(), /takes no new work/);
        assert.equal(c.s.voxd.runtime.has('N'), false, 'no new model is published');
        assert.deepEqual(statusNow(c, 'M'), readyView(n, { active_slots: n }));
        await gate.open();
        for (const r of requests)
          assert.equal(reportOf(delivered(await within(r, 'a running request'))).generation, 1);
        await within(closing.promise, 'the shutdown');
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...teardownOf(1, n)]);
        assert.deepEqual(lifecycle(c, 'N'), []);
      });
    });

    test(`[state.shutting-down.unload] slots=${n}: an unload waiting at the shutdown gets 503 at once; one accepted before it is answered 200 once the model is unloaded; one teardown`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        const waiting = track(c.unload('M'));
        await queued(c, 'M', 0, 1);
        const late = await preAccepted(c, '/v1/models/unload', { id: 'M' });
        const closing = shutdown(c);
        shuttingDown(await within(waiting.promise, 'the waiting unload to be refused'), /not started/);
        await refused(c.url);
        const answer = track(late.finish());
        // It queues behind the shutdown's own unload, which waits for the running requests.
        await queued(c, 'M', 0, 2);
        assert.equal(answer.settled || closing.settled, false);
        await deliverRunning(gate, requests);
        assert.deepEqual(delivered(await within(answer.promise, 'the accepted unload')).json, {
          id: 'M',
          loaded: false,
        });
        await within(closing.promise, 'the shutdown');
        expectTornDown(c, 'M', n);
        assertDrainedBeforeDisposal(c, 'M');
      });
    });

    test(`[state.shutting-down.bulk-unload] slots=${n}: a bulk unload whose barrier waits at the shutdown gets 503 at once; one accepted before it is answered 200 after the drain`, async () => {
      await withContractServer(slotted({ M: n, B: n }), async (c) => {
        await c.ready('M');
        await c.ready('B');
        const { gate, requests } = await c.running('M', n);
        const bulk = track(c.bulkUnload(['B', 'M']));
        // Idle B is freed at once; M's barrier waits for the running requests.
        await c.waitCount('B', 'weights-disposed', 1);
        await queued(c, 'M', 0, 1);
        const late = await preAccepted(c, '/v1/tasks/unload_models', { model_ids: ['M', 'B', 'X'] });
        const closing = shutdown(c);
        shuttingDown(await within(bulk.promise, 'the waiting bulk unload to be refused'), /not started/);
        await refused(c.url);
        assert.deepEqual(statusNow(c, 'M'), readyView(n, { active_slots: n }));
        const answer = track(late.finish());
        await queued(c, 'M', 0, 2);
        assert.equal(answer.settled || closing.settled, false);
        await deliverRunning(gate, requests);
        assert.deepEqual(delivered(await within(answer.promise, 'the accepted bulk unload')).json, {
          unloaded: ['M', 'B'],
          not_found: ['X'],
        });
        await within(closing.promise, 'the shutdown');
        for (const id of ['M', 'B']) {
          assert.deepEqual(statusNow(c, id), unloadedView(n));
          assert.deepEqual(lifecycle(c, id), [...loadOf(1, n), ...teardownOf(1, n)]);
        }
        assertDrainedBeforeDisposal(c, 'M');
      });
    });

    test(`[state.shutting-down.evict] slots=${n}: idle retirement stops; a sweep during the shutdown skips the busy model, which is destroyed only after its runs`, async () => {
      const clock = new ManualClock();
      await withContractServer(slotted({ M: n, I: 1 }), { idle_unload_ms: 1000, clock }, async (c) => {
        await c.ready('M');
        await c.ready('I');
        const { gate, requests } = await c.running('M', n);
        const closing = shutdown(c);
        // The idle model is unloaded by the shutdown itself, at once.
        await waitUntil('the idle model is unloaded', () => c.count('I', 'weights-disposed') === 1);
        clock.advance(10_000);
        // Everything is overdue now; a sweep (what the idle timer runs) must still skip M.
        assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), []);
        assert.deepEqual(statusNow(c, 'M'), readyView(n, { active_slots: n }));
        assert.equal(c.count('M', 'session-disposed'), 0, 'nothing of M is destroyed in use');
        await deliverRunning(gate, requests);
        await within(closing.promise, 'the shutdown');
        assert.deepEqual(await c.s.voxd.runtime.residency.sweepIdle(), []);
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...teardownOf(1, n)]);
        assert.deepEqual(lifecycle(c, 'I'), [...loadOf(1, 1), ...teardownOf(1, 1)]);
        assert.equal(c.s.logs.filter((l) => l.startsWith('idle ')).length, 0, 'no idle retirement ran');
        assertDrainedBeforeDisposal(c, 'M');
      });
    });
  }

  test('[state.shutting-down.register] a registration that began just before the shutdown does not load anything after it', async () => {
    await withContractServer([{ id: 'M', slots: 2 }], async (c) => {
      await c.ready('M');
      const runtime = c.s.voxd.runtime;
      // Both pass the closing check, then yield (resolving presets) before taking their lease.
      const reconfigure = runtime.register(
        configOf(c, 'M', { load_options: { ...configOf(c, 'M').load_options, variant: 'next' } }),
      );
      const fresh = runtime.register(configOf(c, 'M', { id: 'N' }));
      const settled = Promise.allSettled([reconfigure, fresh]);
      await within(c.s.voxd.close(), 'the shutdown');
      for (const r of await within(settled, 'both registrations')) {
        assert.equal(r.status, 'rejected', 'refused: the shutdown began before it took its lease');
        assert.equal((r as PromiseRejectedResult).reason.code, 'E_SHUTTING_DOWN');
      }
      assert.deepEqual(statusNow(c, 'M'), unloadedView(2));
      assert.equal(runtime.has('N'), false);
      assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, 2), ...teardownOf(1, 2)]);
      assert.deepEqual(lifecycle(c, 'N'), []);
    });
  });

  test('[state.shutting-down.status] status stays readable in process and reports the drain; probes answer 503; new connections are refused', async () => {
    await withContractServer(slotted({ M: 2, B: 1 }), async (c) => {
      await c.ready('M');
      const { gate, requests } = await c.running('M', 2);
      const closing = shutdown(c);
      await refused(c.url);
      const health = await callRoute(c, 'GET', '/health');
      assert.equal(health.status, 503);
      assert.equal((health.json as { status: string }).status, 'shutting_down');
      await assert.rejects(callRoute(c, 'GET', '/ready'), { code: 'E_SHUTTING_DOWN' });
      // biome-ignore lint/suspicious/noExplicitAny: a GET /v1/models body
      const models = async () => ((await callRoute(c, 'GET', '/v1/models')).json as any).data.map(pick);
      // M's running requests hold it; the shutdown's unload waits behind them; B was never loaded.
      assert.deepEqual(await models(), [readyView(2, { active_slots: 2 }), unloadedView(1)]);
      assert.equal(c.snapshot('M').queuedManagers, 1);
      await deliverRunning(gate, requests);
      await within(closing.promise, 'the shutdown');
      // After it, still a consistent answer: every model unloaded.
      assert.deepEqual(await models(), [unloadedView(2), unloadedView(1)]);
      assert.equal((await callRoute(c, 'GET', '/health')).status, 503);
    });
  });

  for (const n of COUNTS) {
    test(`[state.shutting-down.shutdown] slots=${n}: a second close() joins the first: one drain, one teardown, both resolve after the running requests`, async () => {
      await withContractServer([{ id: 'M', slots: n }], async (c) => {
        await c.ready('M');
        const { gate, requests } = await c.running('M', n);
        const first = shutdown(c);
        const second = shutdown(c);
        assert.equal(first.promise, second.promise, 'the same shutdown');
        const runtime = c.s.voxd.runtime;
        assert.equal(runtime.close(), runtime.close());
        await refused(c.url);
        assert.equal(first.settled || second.settled, false);
        await deliverRunning(gate, requests);
        await within(Promise.all([first.promise, second.promise]), 'both closes');
        assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, n), ...teardownOf(1, n)]);
        assertDrainedBeforeDisposal(c, 'M');
      });
    });

    test(`[state.shutting-down.shutdown] slots=${n}: a second signal (abandon) cancels hung requests at once, without waiting for the deadline`, async () => {
      await withContractServer([{ id: 'M', slots: n }], { shutdown_timeout_ms: 60_000 }, async (c) => {
        await c.ready('M');
        const hung = range(n).map(() => track(c.infer('M', { hang: 'true' })));
        await c.waitCount('M', 'run-start', n);
        const closing = shutdown(c);
        await refused(c.url);
        assert.equal(closing.settled || hung.some((h) => h.settled), false);
        c.s.voxd.abandon('a second SIGTERM');
        for (const h of hung)
          shuttingDown(await within(h.promise, 'a hung request to be cancelled'), /a second SIGTERM/);
        await within(closing.promise, 'the shutdown after the second signal');
        assert.deepEqual(outcomes(c, 'M'), Array(n).fill('aborted'));
        expectTornDown(c, 'M', n);
        assertDrainedBeforeDisposal(c, 'M');
      });
    });
  }
});

// ---- timeouts: active, queued, hung and stalled work ----

describe('shutdown: active, queued and hung work', () => {
  for (const n of COUNTS) {
    test(`[time.shutdown-active] slots=${n}: running offline handlers and a stream in progress complete and are delivered before their models are destroyed`, async () => {
      await withContractServer(
        [
          { id: 'M', slots: n },
          { id: 'S', slots: 1, mode: 'streaming' },
        ],
        async (c) => {
          await c.ready('M');
          await c.ready('S');
          const { gate, requests } = await c.running('M', n);
          const stream = track(
            post(c.url, '/v1/tasks/stream', {
              model: 'S',
              request: { text: 'streamed', options: { run_gate: gate.path, chunks: '3' } },
              stream_format: 'sse',
            }),
          );
          await c.waitCount('S', 'run-start', 1);
          const closing = shutdown(c);
          await refused(c.url);
          assert.equal(closing.settled || stream.settled, false);
          await gate.open();
          for (const r of requests)
            assert.equal(reportOf(delivered(await within(r, 'a running request'))).generation, 1);
          const res = await within(stream.promise, 'the stream');
          assert.equal(res.status, 200);
          const frames = res.body.toString('utf8').split('\n\n').filter(Boolean);
          assert.equal(frames.filter((f) => f.includes('"task.stream.event"')).length, 4, frames.join('|'));
          assert.deepEqual(
            frames.slice(-2).map((f) => (f.includes('task.stream.done') ? 'done' : f)),
            ['done', 'data: [DONE]'],
          );
          await within(closing.promise, 'the shutdown');
          for (const id of ['M', 'S']) {
            assert.deepEqual(outcomes(c, id), Array(id === 'M' ? n : 1).fill('ok'));
            assertDrainedBeforeDisposal(c, id);
          }
          assert.deepEqual(lifecycle(c, 'S'), [...loadOf(1, 1), ...teardownOf(1, 1)]);
        },
      );
    });

    test(`[time.shutdown-queued-hung] slots=${n}: queued requests and a waiting manager get 503 at once; hung runs are cancelled at shutdown_timeout_ms and answered 503; close() resolves within the deadline`, async () => {
      await withDeadlineServer(n, async (c, clock) => {
        await c.ready('M');
        const hung = range(n).map(() => track(c.infer('M', { hang: 'true' })));
        await c.waitCount('M', 'run-start', n);
        const waiting = range(2).map(() => track(c.infer('M')));
        await queued(c, 'M', 2);
        const manager = track(c.unload('M'));
        await queued(c, 'M', 2, 1);
        const closing = shutdown(c);
        // Refused at once: the server's clock has not moved.
        for (const w of [...waiting, manager]) {
          shuttingDown(await within(w.promise, 'a waiting request or manager to be refused'), /not started/);
        }
        await justBefore(clock, DEADLINE_MS, () => {
          assert.equal(
            hung.some((h) => h.settled),
            false,
            'hung runs are given until the deadline',
          );
          assert.equal(c.snapshot('M').activeRequests, n);
        });
        for (const h of hung) {
          shuttingDown(await within(h.promise, 'a hung request to be cancelled'), /shutdown_timeout_ms=500/);
        }
        await within(closing.promise, 'the shutdown');
        assert.deepEqual(outcomes(c, 'M'), Array(n).fill('aborted'));
        expectTornDown(c, 'M', n);
        assertDrainedBeforeDisposal(c, 'M');
      });
    });
  }
});

describe('shutdown: a response in delivery', () => {
  test('[time.shutdown-active] a large response still being delivered when the shutdown begins reaches its client whole', async () => {
    // The clock never moves: the shutdown must end without its 30 s deadline passing.
    await withContractServer([{ id: 'M', slots: 1 }], { clock: new ManualClock() }, async (c) => {
      await c.ready('M');
      const client = bigRequest(c);
      await c.waitCount('M', 'run-end', 1);
      await whenRuntime(c.s.voxd.runtime, 'the slot is free', () => c.snapshot('M').activeRequests === 0);
      const closing = shutdown(c);
      await refused(c.url);
      assert.equal(closing.settled, false, 'the response in delivery is waited for');
      const res = await client.finished(10_000);
      assert.equal(res.status, 200);
      assert.equal(res.complete, true, 'the whole body arrived');
      assert.ok(res.body.length > BIG_TEXT_BYTES, `${res.body.length} bytes`);
      const report = JSON.parse(JSON.parse(res.body.toString('utf8')).text);
      const echoed = Object.values(report.options as Record<string, string>).join('');
      assert.equal(echoed.length, BIG_TEXT_BYTES);
      await within(closing.promise, 'the shutdown');
      assert.deepEqual(lifecycle(c, 'M'), [...loadOf(1, 1), ...teardownOf(1, 1)]);
    });
  });
});

describe('shutdown: stalled I/O', () => {
  test('[time.shutdown-stalled-io] a client that sent part of a request head is dropped at once', async () => {
    // The clock never moves: the shutdown must end without its 10 s deadline passing.
    await withContractServer(
      [{ id: 'M', slots: 1 }],
      {
        shutdown_timeout_ms: 10_000,
        clock: new ManualClock(),
      },
      async (c) => {
        const client = new RawClient(c.url);
        await client.write('POST /v1/tasks/run HTTP/1.1\r\nHost: voxd\r\nContent-Type: appl');
        // The server holds the connection (the head is incomplete, no request yet).
        await waitUntil('the connection is accepted', async () => {
          const count = await new Promise<number>((resolve) =>
            c.s.voxd.server.getConnections((_, n) => resolve(n)),
          );
          return count === 1;
        });
        const closing = shutdown(c);
        await client.ended('the stalled connection to be closed', 2000);
        assert.equal(client.size, 0, 'nothing was answered');
        await within(closing.promise, 'the shutdown', 2000);
      },
    );
  });

  test('[time.shutdown-stalled-io] a client that stops reading a large response is cut at the deadline; close() resolves within it', async () => {
    const clock = new ManualClock();
    await withContractServer(
      [{ id: 'M', slots: 1 }],
      { shutdown_timeout_ms: DEADLINE_MS, clock },
      async (c) => {
        await c.ready('M');
        const client = bigRequest(c);
        // The run ended and its lease is back; only the write to the client is left.
        await c.waitCount('M', 'run-end', 1);
        await whenRuntime(c.s.voxd.runtime, 'the slot is free', () => c.snapshot('M').activeRequests === 0);
        const closing = shutdown(c);
        // Cancelled requests get CUT_GRACE_MS past the deadline to answer; then connections are cut.
        await justBefore(clock, DEADLINE_MS + CUT_GRACE_MS, () => {
          assert.equal(closing.settled, false, 'the response in delivery is waited for until the cut');
          assert.equal(client.response?.complete ?? false, false);
        });
        await within(closing.promise, 'the shutdown');
        // close() resolving means the listener has no connection left; the client sees a cut body.
        await client.ended('the cut connection to end', 5000);
        const res = client.response;
        assert.equal(res?.status, 200);
        assert.equal(res?.complete, false, 'the stalled response was cut short');
        expectTornDown(c, 'M', 1);
      },
    );
  });

  for (const n of COUNTS) {
    test(`[time.shutdown-stalled-io] slots=${n}: stalled live bodies on /v1/audio/transcriptions/live are cut at the deadline; their slots are freed and close() resolves within it`, async () => {
      const clock = new ManualClock();
      await withContractServer(
        [{ id: 'L', slots: n, mode: 'streaming' }],
        {
          shutdown_timeout_ms: DEADLINE_MS,
          clock,
        },
        async (c) => {
          await c.ready('L');
          const clients = range(n).map(() => {
            const client = new RawClient(c.url);
            void client.write(
              'POST /v1/audio/transcriptions/live?model=L HTTP/1.1\r\nHost: voxd\r\nTransfer-Encoding: chunked\r\n\r\n',
              // One chunk of 20 ms of silence (16 kHz s16le), then nothing more: no terminating chunk.
              `280\r\n`,
              Buffer.alloc(640),
              '\r\n',
            );
            return client;
          });
          for (const client of clients)
            await client.until('the stream headers', () => client.response !== undefined);
          await whenRuntime(
            c.s.voxd.runtime,
            'every slot is held',
            () => c.snapshot('L').activeRequests === n,
          );
          const closing = shutdown(c);
          await refused(c.url);
          await justBefore(clock, DEADLINE_MS, () => {
            assert.equal(closing.settled, false, 'the live bodies are given until the deadline');
            assert.equal(c.snapshot('L').activeRequests, n);
          });
          // Cancelled at the deadline; a body still stalled is cut CUT_GRACE_MS later.
          clock.advance(CUT_GRACE_MS);
          for (const client of clients) await client.ended('a stalled live connection to be cut');
          await within(closing.promise, 'the shutdown');
          for (const client of clients) {
            const res = client.response!;
            assert.equal(res.status, 200);
            assert.ok(!res.body.toString().includes('[DONE]'), 'the stream did not end normally');
          }
          expectTornDown(c, 'L', n);
          assertDrainedBeforeDisposal(c, 'L');
        },
      );
    });
  }
});
