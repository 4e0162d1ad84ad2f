/**
 * A live upload answered while the client is still sending (here: refused at max_body_bytes) ends
 * with a lingering close (src/http/transport/lingering-close.ts): the client reads the whole answer and then
 * the server's FIN, never a reset, however much it keeps sending; and the server does not wait for
 * it for ever. Before the lingering close, node:http destroyed such a socket with the client's
 * bytes unread, and the kernel's reset could cost the client its answer (the chaos soak saw it).
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { LINGER_MS } from '../../../src/http/transport/lingering-close.js';
import { parseResponse } from '../../helpers/raw-http.js';
import {
  fixtureModel,
  ManualClock,
  runTask,
  type TestServer,
  waitUntil,
  withDeadline,
  withServer,
} from '../../helpers/voxd.js';

const LIMIT = 4000;
const model = fixtureModel('live', { mode: 'streaming', live_ingest: { max_body_bytes: LIMIT } });

interface Client {
  socket: Socket;
  received: () => Buffer;
  /** The server's FIN arrived. */
  ended: Promise<void>;
  closed: Promise<void>;
  errors: Error[];
}

/** A live transcription upload to `model` on a raw connection; the head only. */
function liveUpload(s: TestServer, model: string): Client {
  const { port } = new URL(s.url);
  const socket = connect(Number(port), '127.0.0.1');
  const parts: Buffer[] = [];
  const errors: Error[] = [];
  socket.on('data', (d: Buffer) => parts.push(d));
  socket.on('error', (err) => errors.push(err));
  const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `POST /v1/audio/transcriptions/live?model=${model} HTTP/1.1\r\nHost: voxd\r\nTransfer-Encoding: chunked\r\n\r\n`,
  );
  return { socket, received: () => Buffer.concat(parts), ended, closed, errors };
}

/** A live transcription whose body passes max_body_bytes at once. */
function overLimit(s: TestServer): Client {
  const client = liveUpload(s, 'live');
  client.socket.write(
    Buffer.concat([
      Buffer.from(`${(LIMIT + 2).toString(16)}\r\n`),
      Buffer.alloc(LIMIT + 2),
      Buffer.from('\r\n'),
    ]),
  );
  return client;
}

const connections = (s: TestServer) =>
  new Promise<number>((resolve) => s.voxd.server.getConnections((_, n) => resolve(n)));

/** The refusal, whole: a 200 SSE stream whose error event names max_body_bytes. */
function assertRefusal(raw: Buffer): void {
  const res = parseResponse(raw);
  assert.ok(res, `an answer: ${raw.toString('latin1').slice(0, 200)}`);
  assert.equal(res.complete, true, 'the answer is whole');
  assert.match(res.body.toString('utf8'), /max_body_bytes/);
}

describe('lingering close of the live routes', () => {
  test('a client whose upload is refused while the server is not reading gets the whole answer, then a FIN, never a reset', async () => {
    const clock = new ManualClock();
    const busy = fixtureModel('busy', { mode: 'streaming', busy_timeout_ms: 1000 });
    await withServer({ models: [busy] }, { clock }, async (s) => {
      // The one slot is held, so the live upload waits for it while its client keeps sending.
      const gate = s.gate('hold');
      const holder = runTask(s, 'busy', { run_gate: gate.path });
      await waitUntil('the holder runs', () => s.fixture.record.of('busy', 'run-start').length === 1);
      let live: Socket | undefined;
      s.voxd.server.once('connection', (socket: Socket) => {
        live = socket;
      });
      const client = liveUpload(s, 'busy');
      const chunk = Buffer.concat([Buffer.from('4000\r\n'), Buffer.alloc(0x4000), Buffer.from('\r\n')]);
      let stop = false;
      void client.ended.then(() => {
        stop = true;
      });
      // The server reads 1 MiB of the waiting body, then stops (backpressure): the client's bytes
      // back up in the socket buffers, where a close would find them unread.
      for (let i = 0; i < 512 && !stop && client.errors.length === 0; i++) client.socket.write(chunk);
      await waitUntil('the server stopped reading', () => client.socket.writableLength > 1 << 20);
      await s.voxd.runtime.whenQueued('busy', 1);
      clock.advance(1000); // the busy timeout: the answer goes out with the body unread
      await withDeadline(client.ended, "the server's FIN", 10_000);
      assert.deepEqual(client.errors, [], 'no reset reached the client');
      const res = parseResponse(client.received());
      assert.ok(res?.complete, `the whole answer: ${client.received().toString('latin1').slice(0, 300)}`);
      assert.match(res.body.toString('utf8'), /timed out after 1000 ms waiting for a slot/);
      // The server keeps the connection, reading and dropping what still comes, until the client
      // closes its side (node's client does on the server's FIN) or LINGER_MS, which this clock
      // never reaches.
      assert.equal(live?.destroyed, false, 'the connection lingers after the answer');
      await withDeadline(client.closed, 'the connection to close', 10_000);
      assert.deepEqual(client.errors, [], 'no reset reached the client, before or after its close');
      await gate.open();
      assert.equal((await holder).status, 200);
      await waitUntil('the server holds no connection', async () => (await connections(s)) === 0);
    });
  });

  test('a client that never closes its side is let go LINGER_MS after the answer', async () => {
    const clock = new ManualClock();
    await withServer({ models: [model] }, { clock }, async (s) => {
      const client = overLimit(s);
      await withDeadline(client.ended, "the server's FIN", 10_000);
      assertRefusal(client.received());
      clock.advance(LINGER_MS - 1);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(await connections(s), 1, 'the connection lingers');
      clock.advance(1);
      await withDeadline(client.closed, 'the server to let the connection go', 10_000);
      await waitUntil('the server holds no connection', async () => (await connections(s)) === 0);
      assert.deepEqual(client.errors, [], 'nothing was left unread: a plain close, no reset');
    });
  });
});
