/**
 * A refused WebSocket upgrade's socket ends however its client behaves (the fuzzer's open finding:
 * a server close that never finished, the one handle left a socket voxd had half-closed). The
 * refusal is written and the socket's end sent; a client that then neither reads nor closes is
 * dropped after REFUSED_SOCKET_MS, and a shutdown never waits for it: a net.Server counts an
 * upgraded socket among its connections until it closes.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { REFUSED_SOCKET_MS } from '../../../src/http/transport/upgrade-refusal.js';
import { fixtureModel, type TestServer, waitUntil, withDeadline, withServer } from '../../helpers/voxd.js';

/** Opens a socket, sends an upgrade to `path` and resolves with the socket and the answer's head once it came. */
async function refusedUpgrade(url: string, path: string): Promise<{ socket: Socket; head: string }> {
  const { hostname, port } = new URL(url);
  // Half-open allowed: the client's side stays open after the server's end, as a peer that never closes.
  const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  let head = '';
  await new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      resolve();
    };
    socket.on('data', onData);
  });
  // The client reads no more and never ends its side.
  socket.pause();
  return { socket, head };
}

const CONFIG = {
  frontend_listener: 'websocket',
  shutdown_timeout_ms: 3000,
  models: [fixtureModel('asr', { task: 'asr' })],
};

/** The sockets the server's listener holds, upgraded ones included: what its close waits for. */
const connections = (s: TestServer) =>
  new Promise<number>((resolve) => s.voxd.server.getConnections((_, n) => resolve(n)));

test('a refused upgrade whose client stays silent is dropped after REFUSED_SOCKET_MS, on realtime and the bridge', async () => {
  await withServer(CONFIG, async (s) => {
    for (const path of ['/v1/realtime?model=nope', '/v1/no-such-route']) {
      const started = Date.now();
      const { socket, head } = await refusedUpgrade(s.url, path);
      try {
        assert.match(head, /^HTTP\/1\.1 4\d\d /, path);
        assert.equal(await connections(s), 1, 'the refused socket waits for its client');
        await waitUntil(
          `the refused socket of ${path} is dropped`,
          async () => (await connections(s)) === 0,
          REFUSED_SOCKET_MS + 3000,
        );
        assert.ok(
          Date.now() - started >= REFUSED_SOCKET_MS - 100,
          `dropped after ${Date.now() - started} ms`,
        );
      } finally {
        socket.destroy();
      }
    }
  });
});

test('a shutdown does not wait for refused upgrades whose clients stay silent', async () => {
  await withServer(CONFIG, async (s) => {
    const refused = [
      await refusedUpgrade(s.url, '/v1/realtime?model=nope'),
      await refusedUpgrade(s.url, '/v1/no-such-route'),
    ];
    try {
      const started = Date.now();
      await withDeadline(s.voxd.close(), 'the server closes', 10_000);
      assert.ok(
        Date.now() - started < CONFIG.shutdown_timeout_ms,
        `the close took ${Date.now() - started} ms`,
      );
    } finally {
      for (const r of refused) r.socket.destroy();
    }
  });
});
