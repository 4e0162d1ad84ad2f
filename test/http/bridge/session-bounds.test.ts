/**
 * A bridge socket's session bounds on a real voxd (probe 2026-12, F10/F11/L1/L2): frames waiting
 * behind a running request are held on the server-wide byte budget (503 body_budget past it, memory
 * bounded whatever the number of sockets); a socket with no frame for bridge_idle_timeout_ms while
 * none of its requests runs is closed and its connection slot freed; a peer that stops answering
 * pings is dropped; a WebSocket is one connection under max_connections and its in-memory requests
 * are none; a frame's query of non-ASCII bytes is a 400.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { WebSocket } from 'ws';
import { bodyBudgetOf } from '../../../src/http/transport/body-budget.js';
import { KEEPALIVE_MS } from '../../../src/session/keepalive.js';
import { paddedJson, watchHighest } from '../../helpers/budget.js';
import { RawClient } from '../../helpers/raw-http.js';
import {
  fixtureModel,
  ManualClock,
  type TestServer,
  tempDir,
  waitUntil,
  whenRuntime,
  withDeadline,
  withServer,
} from '../../helpers/voxd.js';
import { Messages, openSocket, type Socket } from '../../helpers/websocket.js';

const MIB = 1024 * 1024;
const mb = (bytes: number) => (bytes / 1e6).toFixed(0);

const peakKb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5');

/**
 * A tts model whose runs wait until the gate file exists, named in the config itself: loading it
 * over HTTP would leave a keep-alive connection counting under max_connections.
 */
function gatedModel() {
  const dir = tempDir('voxd-bridge-gate-');
  const path = join(dir, 'gate');
  return {
    model: fixtureModel('slow', { task: 'tts', default_request_options: { run_gate: path } }),
    open: () => writeFileSync(path, ''),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Runs `body` with a gated model; the gate is opened before the server closes, and removed. */
async function withGate<T>(
  raw: Record<string, unknown>,
  options: { clock?: ManualClock },
  body: (s: TestServer, gate: ReturnType<typeof gatedModel>) => Promise<T>,
): Promise<T> {
  const gate = gatedModel();
  try {
    return await withServer(
      { frontend_listener: 'websocket', ...raw, models: [gate.model] },
      { ...options, beforeClose: [gate.open] },
      (s) => body(s, gate),
    );
  } finally {
    gate.remove();
  }
}

const scheduler = (s: TestServer) => s.voxd.runtime.get('slow').scheduler.snapshot();

/** One HTTP request on a connection of its own, closed after the answer: its status. */
async function healthOnce(url: string): Promise<number> {
  const client = new RawClient(url);
  await client.write('GET /health HTTP/1.1\r\nHost: voxd\r\nConnection: close\r\n\r\n');
  const res = await client.finished();
  client.socket.destroy();
  return res.status;
}

/** Client connections the server holds now (TCP and TLS; the bridge's in-memory ones are none). */
const connectionsOf = (s: TestServer) =>
  new Promise<number>((resolve) => s.voxd.server.getConnections((_, n) => resolve(n)));

/** A `/v1/audio/speech` frame for the slow model of exactly `bytes` bytes, its id 2 characters at `ID_AT`. */
const bigFrame = (bytes: number) => paddedJson('{"id":"00","model":"slow","input":"hi","pad":["', bytes);
const ID_AT = 7;

/**
 * A socket whose frames go out unmasked (an all-zero mask): ws then writes the caller's buffer as
 * it is instead of a masked copy of each 20 MiB frame, which would count in this process's memory
 * as if the server held it.
 */
async function openUnmasked(url: string): Promise<Socket> {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), { generateMask: () => {} });
  const messages = new Messages();
  ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
  const closed = new Promise<number>((resolve) => ws.on('close', resolve));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, messages, closed, send: (m) => ws.send(JSON.stringify(m)) };
}

/** Sends `frame` as a text frame; resolves once written out, so that one frame at a time is in flight. */
const sendText = (c: Socket, frame: Buffer) =>
  new Promise<void>((resolve, reject) =>
    c.ws.send(frame, { binary: false }, (err) => (err ? reject(err) : resolve())),
  );

describe('bridge: frames waiting behind a running request are on the server byte budget (F10)', () => {
  test('six sockets with requests running and 20 MiB frames waiting: past 64 MiB the frames get 503 body_budget, the budget never passes its limit and empties, memory stays bounded', async () => {
    const LIMIT = 64 * MIB;
    const FRAME = 20 * MIB;
    const SOCKETS = 6;
    await withGate(
      { max_inflight_body_bytes: LIMIT, max_websocket_message_bytes: 32 * MIB, ui_management: true },
      {},
      async (s, gate) => {
        const budget = bodyBudgetOf(s.voxd.server)!;
        const watch = watchHighest(budget);
        const sockets: Socket[] = [];
        for (let i = 0; i < SOCKETS; i++) sockets.push(await openUnmasked(`${s.url}/v1/audio/speech`));
        for (const [i, c] of sockets.entries()) c.send({ id: `slow${i}`, model: 'slow', input: 'held' });
        await whenRuntime(
          s.voxd.runtime,
          'one request runs and five wait for the slot',
          () => scheduler(s).activeRequests === 1 && scheduler(s).queuedRequests === SOCKETS - 1,
        );
        // What fits beside the running requests' own small bodies.
        const fitting = Math.floor((LIMIT - budget.inUse) / FRAME);
        const frame = bigFrame(FRAME);
        const base = rssKb();
        resetPeak();
        for (const [i, c] of sockets.entries()) {
          for (const n of [1, 2]) {
            frame.write(`${i}${n}`, ID_AT);
            await sendText(c, frame);
          }
        }
        const refusals = () => sockets.flatMap((c) => c.messages.all.filter((m) => m.status === 503));
        await waitUntil(
          'every frame past the budget is answered',
          () => refusals().length === 2 * SOCKETS - fitting,
          30_000,
        );
        const grown = (rssKb() - base) * 1024;
        const peak = (peakKb() - base) * 1024;
        for (const r of refusals()) {
          assert.match(String(r.id), /^\d\d$/);
          assert.equal(JSON.parse(r.body).error.code, 'body_budget');
          assert.equal(r.headers['Retry-After'], '1');
        }
        assert.ok(watch.highest <= LIMIT, `the budget held ${watch.highest} bytes`);
        assert.ok(
          budget.inUse >= fitting * FRAME,
          `${budget.inUse} bytes held for ${fitting} frames waiting`,
        );
        process.stdout.write(
          `# F10: ${fitting} frames waiting, budget ${budget.inUse} bytes (highest ${watch.highest}), RSS +${mb(grown)} MB, peak +${mb(peak)} MB\n`,
        );
        // The peak counts what the frames cost passing through too, not only what stays held.
        assert.ok(peak < LIMIT + 100e6, `RSS peaked ${mb(peak)} MB above its start`);
        // The frames that waited run once the slot frees: their bytes leave the bridge's lease as the
        // request's own body lease takes them, so the budget empties with the sockets still open.
        gate.open();
        await waitUntil(
          'every request is answered',
          () => sockets.every((c) => c.messages.all.length === 3),
          30_000,
        );
        const ran = sockets.flatMap((c) => c.messages.all.filter((m) => m.status !== 503));
        assert.equal(ran.length, SOCKETS + fitting);
        assert.ok(
          ran.every((m) => m.status === 200),
          JSON.stringify(ran.map((m) => [m.id, m.status])),
        );
        await waitUntil('the budget is empty', () => budget.inUse === 0);
        assert.ok(watch.highest <= LIMIT, `the budget held ${watch.highest} bytes`);
        for (const c of sockets) c.ws.close();
      },
    );
  });

  test('frames waiting on a socket that closes give their bytes back', async () => {
    await withGate({ max_inflight_body_bytes: 64 * MIB, ui_management: true }, {}, async (s) => {
      const budget = bodyBudgetOf(s.voxd.server)!;
      const c = await openSocket(`${s.url}/v1/audio/speech`);
      c.send({ id: 'slow', model: 'slow', input: 'held' });
      await whenRuntime(s.voxd.runtime, 'the request runs', () => scheduler(s).activeRequests === 1);
      const frame = bigFrame(4 * MIB);
      await sendText(c, frame);
      await waitUntil('the frame waits on the budget', () => budget.inUse >= 4 * MIB);
      c.ws.terminate();
      await waitUntil('the budget is empty', () => budget.inUse === 0);
    });
  });
});

describe('bridge: idle timeout and keepalive (F11)', () => {
  test('an idle socket is closed at bridge_idle_timeout_ms (1000, session_idle_timeout) and its connection slot freed; one whose request runs is not', async () => {
    const clock = new ManualClock();
    await withGate(
      { bridge_idle_timeout_ms: 1000, max_connections: 2, ui_management: true },
      { clock },
      async (s, gate) => {
        const idle = await openSocket(`${s.url}/health`);
        const busy = await openSocket(`${s.url}/v1/audio/speech`);
        busy.send({ id: 'run', model: 'slow', input: 'held' });
        await whenRuntime(s.voxd.runtime, 'the request runs', () => scheduler(s).activeRequests === 1);
        // The two WebSockets are the two connections the cap allows.
        assert.equal(await healthOnce(s.url), 503);
        let reason = '';
        idle.ws.once('close', (_code, why) => {
          reason = why.toString();
        });
        const roundTrip = async (id: string) => {
          idle.send({ id, method: 'GET' });
          assert.equal((await idle.messages.next((m) => m.id === id)).status, 200);
        };
        clock.advance(999);
        await roundTrip('at 999');
        // Without that frame it would have closed at 1000.
        clock.advance(999);
        await roundTrip('at 1998');
        clock.advance(1000);
        assert.equal(await withDeadline(idle.closed, 'the idle socket to close', 5000), 1000);
        assert.equal(reason, 'session_idle_timeout');
        await waitUntil('the server let the idle socket go', async () => (await connectionsOf(s)) === 1);
        assert.equal(await healthOnce(s.url), 200, 'the freed slot serves a new client');
        // Far past the timeout while its request runs, the other socket stays.
        clock.advance(10_000);
        const answered = busy.messages.next((m) => m.id === 'run');
        gate.open();
        assert.equal((await answered).status, 200);
        assert.equal(busy.ws.readyState, WebSocket.OPEN);
        // Idle from its answer on: closed in its turn.
        clock.advance(1000);
        assert.equal(
          await withDeadline(busy.closed, 'the socket idle since its answer to close', 5000),
          1000,
        );
      },
    );
  });

  test('a peer that does not answer pings is dropped at the next ping; one that answers stays', async () => {
    const clock = new ManualClock();
    await withServer({ frontend_listener: 'websocket', ui_management: true }, { clock }, async (s) => {
      const live = await openSocket(`${s.url}/health`);
      const mute = new WebSocket(`${s.url.replace(/^http/, 'ws')}/health`, { autoPong: false });
      const pinged = new Promise<void>((resolve) => mute.once('ping', () => resolve()));
      const closed = new Promise<number>((resolve) => mute.once('close', resolve));
      await new Promise((resolve) => mute.once('open', resolve));
      const livePinged = new Promise<void>((resolve) => live.ws.once('ping', () => resolve()));
      clock.advance(KEEPALIVE_MS);
      await withDeadline(Promise.all([pinged, livePinged]), 'the pings', 5000);
      // The live peer's pong went out before its 'ping' event; a frame sent after it and answered
      // proves the server has read the pong before the next ping decides.
      live.send({ id: 'h', method: 'GET' });
      await live.messages.next((m) => m.id === 'h');
      clock.advance(KEEPALIVE_MS);
      assert.equal(await withDeadline(closed, 'the mute peer to be dropped', 5000), 1006);
      assert.equal(live.ws.readyState, WebSocket.OPEN);
      live.ws.close();
    });
  });
});

describe('bridge: what counts under max_connections (L1)', () => {
  test('max_connections 3: a bridge WebSocket with its request running and two TCP clients are all served', async () => {
    await withGate({ max_connections: 3, ui_management: true }, {}, async (s, gate) => {
      const c = await openSocket(`${s.url}/v1/audio/speech`);
      c.send({ id: 'run', model: 'slow', input: 'held' });
      await whenRuntime(s.voxd.runtime, 'the bridged request runs', () => scheduler(s).activeRequests === 1);
      const clients = [new RawClient(s.url), new RawClient(s.url)];
      for (const client of clients) {
        await client.write('GET /health HTTP/1.1\r\nHost: voxd\r\n\r\n');
        await client.until('the health answer', () => client.response?.complete === true);
        assert.equal(client.response!.status, 200, client.response!.body.toString());
      }
      const answered = c.messages.next((m) => m.id === 'run');
      gate.open();
      assert.equal((await answered).status, 200);
      for (const client of clients) client.socket.destroy();
      c.ws.close();
    });
  });
});

describe('bridge: a frame query of non-ASCII bytes (L2)', () => {
  test('is a 400 naming query, not a 500', async () => {
    await withServer({ frontend_listener: 'websocket', ui_management: true }, async (s) => {
      const c = await openSocket(`${s.url}/health`);
      try {
        c.send({ id: 'q', method: 'GET', query: 'a=\u00ff' });
        const r = await c.messages.next((m) => m.id === 'q');
        assert.equal(r.status, 400, r.body);
        assert.equal(JSON.parse(r.body).error.param, 'query');
        // Percent-encoded, the same byte is a query like any other.
        c.send({ id: 'ok', method: 'GET', query: 'a=%C3%BF' });
        assert.equal((await c.messages.next((m) => m.id === 'ok')).status, 200);
      } finally {
        c.ws.close();
      }
    });
  });
});
