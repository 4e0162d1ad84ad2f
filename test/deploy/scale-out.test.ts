/**
 * Scale-out behind a real nginx (the Debian package): two `voxd serve` processes behind a
 * `least_conn` upstream with `proxy_next_upstream error timeout http_503 non_idempotent` and
 * `proxy_next_upstream_tries 2` (the configuration docs/deploy.md recommends), under steady load
 * from concurrent clients; one replica gets SIGTERM. No client request may fail, the terminated
 * replica must exit 0, and the other must serve requests after the SIGTERM.
 *
 * What a draining voxd does (docs/configuration.md, Shutdown) and which mechanism covers each case:
 * - a request running on the draining replica finishes there and is answered 200 (voxd's drain,
 *   within shutdown_timeout_ms): the test holds one running behind a gate file across the SIGTERM;
 * - a request queued there is answered 503 `server_busy`: nginx retries it on the other replica
 *   (`http_503`, and `non_idempotent` because it is a POST): the test places one in the queue
 *   before the SIGTERM and watches it arrive in the other replica's queue;
 * - a new connection is refused (the listener is closed) and a connection still sending its request
 *   is closed: nginx retries on the other replica (`error`);
 * - nginx opens a fresh upstream connection per request (no upstream keepalive), so there is no
 *   idle pooled connection for the drain to close under it.
 *
 * Orderings come from observable states (the fixture engine's record files, GET /v1/models queue
 * depths, the replica's exit), never from sleeps. The load is a seeded, bounded loop: it runs until
 * the terminated replica has exited and every client has finished MORE_AFTER_EXIT more requests, and
 * fails if it reaches MAX_REQUESTS first.
 *
 * The replicas are started on 127.0.0.1 and get VOXD_ENABLE_FIXTURE=1 (for builds where the fixture
 * engine must be enabled; older builds ignore it).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { configFolder, type Exit, VoxdProcess } from '../helpers/cli.js';
import { mulberry32 } from '../helpers/prng.js';
import { fixtureModel, get, waitUntil, withDeadline } from '../helpers/voxd.js';
import { freePort, MISSING, NGINX, Nginx, nginxConf } from './nginx.js';

const CLIENTS = 4;
const MORE_AFTER_EXIT = 5;
const MAX_REQUESTS = 20_000;
/** Generous: these bound waits on a loaded 2-core machine; nothing is asserted about durations. */
const WAIT_MS = 30_000;

const configs = configFolder('voxd-scale-out-');

/** The load's texts come from a fixed seed, so a failing run can be replayed. */
const seeded = mulberry32;

interface Reply {
  status: number;
  /** nginx's $upstream_addr: every replica tried, in order ("a, b" after a retry). */
  upstreams: string[];
  body: string;
}

/** One POST through nginx on its own connection. */
function post(port: number, body: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/tasks/run',
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            upstreams: String(res.headers['x-upstream'] ?? '')
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
            body: text,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** A voxd replica whose fixture engine records to a file. */
function replica(name: string) {
  const record = join(configs.dir, `${name}-record.jsonl`);
  const path = configs.write({
    ui: false,
    shutdown_timeout_ms: 60_000,
    models: [
      // One slot: a gated request holds it, so the next one queues (the 503-on-drain case).
      fixtureModel('hold'),
      // The steady load's model: two slots, a fast run.
      fixtureModel('m', { slots: 2 }),
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
  return { voxd, runStarts };
}

/** The same promise, marked handled so a rejection before the test awaits it is not fatal. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

async function queued(url: string, model: string): Promise<number> {
  const { json } = await get(url, '/v1/models');
  return json.data.find((m: { id: string }) => m.id === model).queued_requests;
}

describe('scale-out: two replicas behind nginx, one terminated under load', () => {
  const stops: (() => Promise<unknown>)[] = [];
  after(async () => {
    // Reverse order of start: nginx first, then the replicas, each by its own pid.
    for (const stop of stops.reverse()) await stop().catch(() => {});
  });

  test('no client request fails, the terminated replica exits 0, the other keeps serving', async () => {
    assert.ok(existsSync(NGINX), MISSING);
    const a = replica('a');
    const b = replica('b');
    stops.push(
      () => a.voxd.stop(),
      () => b.voxd.stop(),
    );
    const [aUrl, bUrl] = [(await a.voxd.listening()).url, (await b.voxd.listening()).url];
    const aAddr = aUrl.replace('http://', '');
    const bAddr = bUrl.replace('http://', '');

    const dir = join(configs.dir, 'nginx');
    mkdirSync(dir);
    const port = await freePort();
    const conf = join(dir, 'nginx.conf');
    const upstreams = [Number(aAddr.split(':')[1]), Number(bAddr.split(':')[1])];
    writeFileSync(conf, nginxConf(port, upstreams, dir));
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

    // One gated request running on each replica: with one connection open to neither, least_conn
    // sends the first anywhere and the second to the other replica.
    const gate = join(configs.dir, 'gate');
    const held: Promise<Reply>[] = [];
    const starts = () => a.runStarts('hold') + b.runStarts('hold');
    for (const n of [1, 2]) {
      held.push(quiet(post(port, { model: 'hold', text: `held-${n}`, options: { run_gate: gate } })));
      await waitUntil(`held request ${n} runs`, () => starts() === n, WAIT_MS);
    }
    assert.deepEqual([a.runStarts('hold'), b.runStarts('hold')], [1, 1], 'one held request per replica');
    // One queued behind each (least_conn again: one each).
    for (const n of [1, 2]) {
      held.push(quiet(post(port, { model: 'hold', text: `queued-${n}` })));
      await waitUntil(
        `queued request ${n} waits`,
        async () => (await queued(aUrl, 'hold')) + (await queued(bUrl, 'hold')) === n,
        WAIT_MS,
      );
    }
    assert.deepEqual([await queued(aUrl, 'hold'), await queued(bUrl, 'hold')], [1, 1]);

    // The steady load.
    const replies: { reply: Reply; afterTerm: boolean; afterExit: boolean }[] = [];
    const failures: string[] = [];
    let termSent = false;
    let aExit: Exit | undefined;
    let sent = 0;
    const afterExitPerClient = new Array<number>(CLIENTS).fill(0);
    const clients = Array.from({ length: CLIENTS }, async (_, client) => {
      const random = seeded(1000 + client);
      while (afterExitPerClient[client]! < MORE_AFTER_EXIT) {
        sent += 1;
        if (sent > MAX_REQUESTS) throw new Error(`the load reached ${MAX_REQUESTS} requests first`);
        const afterTerm = termSent;
        const afterExit = aExit !== undefined;
        const text = `load-${client}-${Math.floor(random() * 1e9)}`;
        try {
          const reply = await post(port, { model: 'm', text });
          replies.push({ reply, afterTerm, afterExit });
          if (reply.status !== 200) failures.push(`${text}: ${reply.status} ${reply.body}`);
        } catch (err) {
          failures.push(`${text}: ${err instanceof Error ? err.message : String(err)}`);
        }
        if (afterExit) afterExitPerClient[client]! += 1;
      }
    });
    const load = Promise.all(clients);
    load.catch(() => {});

    const servedBy = (addr: string, when: (r: (typeof replies)[number]) => boolean) =>
      replies.filter((r) => when(r) && r.reply.status === 200 && r.reply.upstreams.at(-1) === addr).length;
    await waitUntil(
      'both replicas serve the load',
      () => servedBy(aAddr, () => true) >= 5 && servedBy(bAddr, () => true) >= 5,
      WAIT_MS,
    );

    termSent = true;
    a.voxd.child.kill('SIGTERM');
    const aClosed = a.voxd.closed.then((exit) => {
      aExit = exit;
      return exit;
    });
    // A's queued request is answered 503 and nginx retries it on B, where it queues behind B's own.
    await waitUntil('the queued request moves to B', async () => (await queued(bUrl, 'hold')) === 2, WAIT_MS);
    await waitUntil(
      'B serves load after the SIGTERM',
      () => servedBy(bAddr, (r) => r.afterTerm) >= 5,
      WAIT_MS,
    );
    assert.equal(aExit, undefined, 'A still drains: its held request is running');

    writeFileSync(gate, '');
    const exit = await withDeadline(aClosed, 'A to exit', WAIT_MS);
    await withDeadline(load, 'the load to finish', WAIT_MS);
    const heldReplies = await withDeadline(Promise.all(held), 'the held and queued requests', WAIT_MS);

    assert.deepEqual(failures, [], `failed requests; nginx log:\n${nginx.log}`);
    assert.deepEqual(exit, { code: 0, signal: null }, `A's stderr:\n${a.voxd.stderr}`);
    assert.deepEqual(
      heldReplies.map((r) => r.status),
      [200, 200, 200, 200],
      JSON.stringify(heldReplies),
    );
    // The request queued on A reached B after A refused it: nginx's $upstream_addr shows both.
    assert.ok(
      heldReplies.some((r) => r.upstreams.join(' ') === `${aAddr} ${bAddr}`),
      `no held request was retried from A to B: ${JSON.stringify(heldReplies.map((r) => r.upstreams))}`,
    );
    assert.ok(servedBy(bAddr, (r) => r.afterExit) >= CLIENTS * MORE_AFTER_EXIT);
    assert.equal(
      servedBy(aAddr, (r) => r.afterExit),
      0,
      'nothing is served by a replica that has exited',
    );
    assert.equal(b.voxd.child.exitCode, null, 'B still runs');
  });
});
