/**
 * Realtime sessions (the WebSocket at /v1/realtime) through a real nginx (the Debian package) in
 * front of two `voxd serve` replicas, with the configuration of ./nginx.ts (docs/deploy.md's: a
 * `location = /v1/realtime` with HTTP/1.1 to the upstream, `Upgrade` and `Connection
 * $connection_upgrade`, the client's Host, read and send timeouts past realtime_idle_timeout_ms).
 * One replica gets SIGTERM while it holds a session with a turn in progress.
 *
 * What the test shows, each through nginx with a raw `ws` client:
 * - the upgrade crosses nginx (101, session.created) and a turn completes (append, commit,
 *   `...transcription.completed`); the client sends a browser's Origin, which voxd accepts only
 *   because nginx passes the client's Host on;
 * - least_conn spreads two open sessions over the two replicas (a WebSocket is an open connection);
 * - SIGTERM to the replica R holding session X, whose turn is running behind a gate file: R closes
 *   its listener at once and X stays open; once the turn may finish, X gets the turn's
 *   `completed`, then an `error` event with code `shutting_down`, then a close with code 1001
 *   (voxd's drain, carried through nginx frame by frame), and R exits 0;
 * - session Y on the other replica O is untouched: it completes a turn after the SIGTERM;
 * - X's client reconnects through nginx at once: least_conn tries R first (no connection open to it
 *   any more), R refuses the connection (its listener closed at the SIGTERM), nginx retries the
 *   upgrade on O (`proxy_next_upstream error`), and the new session completes a turn there.
 *
 * Which replica holds a session comes from what each replica records, not from nginx's choice:
 * every replica's fixture engine records its runs to its own file (VOXD_FIXTURE_RECORD), so a
 * completed turn names its replica; nginx's X-Upstream header on the 101 and its access log
 * ($upstream_addr per request) must agree. Orderings come from events, record files, voxd's log
 * lines and exits, never from sleeps.
 *
 * The replicas are started on 127.0.0.1 with VOXD_ENABLE_FIXTURE=1; every process is stopped by its
 * own pid in the after hook.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { WebSocket } from 'ws';
import { configFolder, VoxdProcess } from '../helpers/cli.js';
import { fixtureModel, get, waitUntil, withDeadline } from '../helpers/voxd.js';
import { freePort, MISSING, NGINX, Nginx, nginxConf, realtimeProxyTimeoutSeconds } from './nginx.js';

/** Generous: these bound waits on a loaded 2-core machine; nothing is asserted about durations. */
const WAIT_MS = 30_000;
/** voxd's default, set explicitly so that nginx's timeouts are derived from what the replicas use. */
const IDLE_MS = 300_000;

const configs = configFolder('voxd-scale-out-realtime-');

// biome-ignore lint/suspicious/noExplicitAny: events are checked as plain JSON
type Event = any;

/** A voxd replica with two fixture ASR models, `asr` (free) and `held` (its runs wait on `gate`). */
function replica(name: string, gate: string) {
  const record = join(configs.dir, `${name}-record.jsonl`);
  const path = configs.write({
    ui: false,
    shutdown_timeout_ms: 60_000,
    realtime_idle_timeout_ms: IDLE_MS,
    models: [
      fixtureModel('asr', { task: 'asr' }),
      fixtureModel('held', { task: 'asr', default_request_options: { run_gate: gate } }),
    ],
  });
  const voxd = new VoxdProcess(
    ['serve', '--config', path, '--host', '127.0.0.1', '--port', '0', '--parallel-jobs'],
    { env: { ...process.env, VOXD_FIXTURE_RECORD: record, VOXD_ENABLE_FIXTURE: '1' } },
  );
  const runStarts = (model: string) =>
    existsSync(record)
      ? readFileSync(record, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { type: string; model: string })
          .filter((e) => e.type === 'run-start' && e.model === model).length
      : 0;
  return { name, voxd, runStarts, addr: '' };
}
type Replica = ReturnType<typeof replica>;

/** The events a socket received, and a wait for the first one of a type after the `seen` first ones. */
class Events {
  readonly all: Event[] = [];
  readonly #waiters = new Set<() => void>();

  push(event: Event): void {
    this.all.push(event);
    for (const waiter of this.#waiters) waiter();
  }

  next(type: string, seen = 0): Promise<Event> {
    let check = () => {};
    const found = new Promise<Event>((resolve) => {
      check = () => {
        const event = this.all.slice(seen).find((e) => e.type === type);
        if (event) resolve(event);
      };
      this.#waiters.add(check);
      check();
    });
    return withDeadline(found, `a ${type} event (got ${this.types().join(' ')})`, WAIT_MS).finally(() =>
      this.#waiters.delete(check),
    );
  }

  types(): string[] {
    return this.all.map((e) => e.type);
  }
}

interface Client {
  ws: WebSocket;
  events: Events;
  /** nginx's X-Upstream on the 101: every replica tried for this upgrade, in order. */
  upstreams: string[];
  /** The close code and reason the client saw. */
  closed: Promise<{ code: number; reason: string }>;
  send(event: unknown): void;
}

/** A raw `ws` client through nginx, as a browser page served from nginx's address would send it. */
function open(port: number, model: string): Promise<Client> {
  const origin = `http://127.0.0.1:${port}`;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/realtime?model=${model}`, { headers: { origin } });
  const events = new Events();
  ws.on('message', (data) => events.push(JSON.parse(data.toString())));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  let upstreams: string[] = [];
  ws.on('upgrade', (res) => {
    upstreams = String(res.headers['x-upstream'] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  });
  return withDeadline(
    new Promise<Client>((resolve, reject) => {
      ws.on('open', () =>
        resolve({ ws, events, upstreams, closed, send: (event) => ws.send(JSON.stringify(event)) }),
      );
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk;
        });
        res.on('end', () => reject(new Error(`the upgrade was refused with ${res.statusCode}: ${body}`)));
      });
      ws.on('error', reject);
    }),
    'the session to open',
    WAIT_MS,
  );
}

/** Half a second of 24 kHz PCM16 silence (the session's default format), as base64. */
const AUDIO = Buffer.alloc(24_000).toString('base64');

/** Appends and commits one turn; resolves with its `completed` event. */
function turn(client: Client): Promise<Event> {
  const seen = client.events.all.length;
  client.send({ type: 'input_audio_buffer.append', audio: AUDIO });
  client.send({ type: 'input_audio_buffer.commit' });
  return client.events.next('conversation.item.input_audio_transcription.completed', seen);
}

describe('scale-out: realtime sessions behind nginx, one replica terminated', () => {
  const stops: (() => Promise<unknown>)[] = [];
  after(async () => {
    // Reverse order of start: the clients, nginx, then the replicas, each process by its own pid.
    for (const stop of stops.reverse()) await stop().catch(() => {});
  });

  test('a SIGTERM closes the session with shutting_down and 1001 after its turn; the client reconnects to the other replica', async () => {
    assert.ok(existsSync(NGINX), MISSING);
    const gate = join(configs.dir, 'gate');
    const replicas = [replica('a', gate), replica('b', gate)];
    for (const r of replicas) stops.push(() => r.voxd.stop());
    // Should the test fail with the gated turn still waiting, the drains need not wait for it.
    stops.push(async () => writeFileSync(gate, ''));
    for (const r of replicas) r.addr = (await r.voxd.listening()).url.replace('http://', '');

    const dir = join(configs.dir, 'nginx');
    mkdirSync(dir);
    const port = await freePort();
    const conf = join(dir, 'nginx.conf');
    const confText = nginxConf(
      port,
      replicas.map((r) => Number(r.addr.split(':')[1])),
      dir,
      IDLE_MS,
    );
    writeFileSync(conf, confText);
    // The relation docs/deploy.md states: nginx never times out a session voxd would keep.
    const timeout = realtimeProxyTimeoutSeconds(IDLE_MS);
    assert.ok(timeout * 1000 > IDLE_MS);
    assert.match(confText, new RegExp(`proxy_read_timeout ${timeout}s;\\s+proxy_send_timeout ${timeout}s;`));
    const nginx = new Nginx(dir, conf, WAIT_MS);
    stops.push(() => nginx.stop());
    await waitUntil(
      'nginx proxies /health',
      async () => {
        if (nginx.child.exitCode !== null) throw new Error(`nginx exited:\n${nginx.log}`);
        return (await get(`http://127.0.0.1:${port}`, '/health').catch(() => ({ status: 0 }))).status === 200;
      },
      WAIT_MS,
    );

    const clients: Client[] = [];
    stops.push(async () => {
      for (const c of clients) c.ws.terminate();
    });
    const connect = async (model: string) => {
      const client = await open(port, model);
      clients.push(client);
      await client.events.next('session.created');
      return client;
    };
    /** The replica that ran the model's run number `n` (by the replicas' own records). */
    const ranOn = (model: string, n: number): Replica => {
      const on = replicas.filter((r) => r.runStarts(model) >= n);
      assert.equal(on.length, 1, `run ${n} of ${model}: ${replicas.map((r) => r.runStarts(model))}`);
      return on[0]!;
    };

    // Session X: a turn through nginx names the replica R that holds it.
    const x = await connect('asr');
    const first = await turn(x);
    assert.equal(typeof first.transcript, 'string');
    const r = ranOn('asr', 1);
    const o = replicas.find((other) => other !== r)!;
    assert.equal(x.upstreams.at(-1), r.addr, `X-Upstream ${x.upstreams} on X's 101; X ran on ${r.addr}`);

    // Session Y, opened while X is open: least_conn sends it to the other replica.
    const y = await connect('asr');
    await turn(y);
    assert.deepEqual([r.runStarts('asr'), o.runStarts('asr')], [1, 1], 'one session on each replica');
    assert.equal(y.upstreams.at(-1), o.addr);

    // X's second turn, on the gated model, runs on R and waits.
    const updates = x.events.all.length;
    x.send({
      type: 'session.update',
      session: { type: 'transcription', audio: { input: { transcription: { model: 'held' } } } },
    });
    const updated = await x.events.next('session.updated', updates);
    assert.equal(updated.session.audio.input.transcription.model, 'held');
    const beforeHeld = x.events.all.length;
    x.send({ type: 'input_audio_buffer.append', audio: AUDIO });
    x.send({ type: 'input_audio_buffer.commit' });
    await waitUntil('the held turn runs on R', () => r.runStarts('held') === 1, WAIT_MS);

    // SIGTERM to R: its listener closes at once ("shutting down" is logged just before), X stays
    // open while its turn runs.
    r.voxd.child.kill('SIGTERM');
    await r.voxd.waitForStderr(/shutting down/, "R's shutdown", WAIT_MS);
    assert.equal(x.ws.readyState, WebSocket.OPEN, 'X is open while its turn runs');
    assert.ok(!x.events.types().includes('error'), x.events.types().join(' '));

    // Y, on O, goes on.
    await turn(y);
    assert.equal(o.runStarts('asr'), 2);

    // The turn finishes, then voxd's goodbye reaches the client through nginx.
    writeFileSync(gate, '');
    const held = await x.events.next('conversation.item.input_audio_transcription.completed', beforeHeld);
    const error = await x.events.next('error', beforeHeld);
    assert.equal(error.error.code, 'shutting_down', JSON.stringify(error));
    const types = x.events.types();
    assert.ok(
      types.lastIndexOf('conversation.item.input_audio_transcription.completed') < types.indexOf('error'),
    );
    assert.equal(
      held.item_id,
      x.events.all.filter((e) => e.type === 'input_audio_buffer.committed').at(-1).item_id,
    );
    const close = await withDeadline(x.closed, "X's close", WAIT_MS);
    assert.deepEqual(close, { code: 1001, reason: 'shutting_down' });

    // The client reconnects at once: its new session lands on O and completes a turn there.
    // least_conn tries R first (no connection open to it now, Y's to O), R refuses the connection
    // (its listener is closed), and nginx retries the upgrade on O (`proxy_next_upstream error`).
    const x2 = await connect('asr');
    assert.deepEqual(x2.upstreams, [r.addr, o.addr], 'X-Upstream of the reconnect: R refused it, O took it');
    await turn(x2);
    assert.deepEqual([r.runStarts('asr'), o.runStarts('asr')], [1, 3], 'the new session ran on O');

    const exit = await withDeadline(r.voxd.closed, 'R to exit', WAIT_MS);
    assert.deepEqual(exit, { code: 0, signal: null }, `R's stderr:\n${r.voxd.stderr}`);
    assert.equal(o.voxd.child.exitCode, null, 'O still runs');
    assert.equal(y.ws.readyState, WebSocket.OPEN, 'Y is still open');
    assert.equal(x2.ws.readyState, WebSocket.OPEN);

    // nginx's own record agrees: X's upgrade (logged once its connection ended) went to R.
    await waitUntil(
      "X's upgrade is in the access log",
      () => nginx.accessLog.some((line) => line.startsWith('/v1/realtime')),
      WAIT_MS,
    );
    const realtimeLines = nginx.accessLog.filter((line) => line.startsWith('/v1/realtime'));
    assert.deepEqual(realtimeLines, [`/v1/realtime?model=asr 101 ${r.addr}`], nginx.accessLog.join('\n'));
  });
});
