/**
 * The bridge channel's bound on a client that does not read: with more than MAX_UNREAD_BYTES of
 * answers unread, the next request is not started and the socket closes with 1008. A stand-in
 * socket reports the unread bytes (a real client would need megabytes stuck in kernel buffers).
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { WebSocket } from 'ws';
import { BridgeChannel, MAX_UNREAD_BYTES } from '../../../src/http/bridge/channel.js';
import { sessionHost } from '../../../src/session/session-host.js';
import { MemoryRelease } from '../../../src/util/release-memory.js';
import { ManualClock, quietLogger } from '../../helpers/voxd.js';

class StandInSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: string[] = [];
  closedWith: [number, string] | undefined;
  send(frame: string): void {
    this.sent.push(frame);
  }
  close(code: number, reason: string): void {
    this.closedWith = [code, reason];
  }
  pause(): void {}
  resume(): void {}
  ping(): void {}
  terminate(): void {}
}

test('a client with more than MAX_UNREAD_BYTES unread gets no new request run: the socket closes with 1008', async () => {
  const ws = new StandInSocket();
  const clock = new ManualClock();
  const injected: unknown[] = [];
  new BridgeChannel(
    ws as unknown as WebSocket,
    { path: '/health', query: '', headers: { host: 'voxd' }, remoteAddress: undefined },
    {
      inject: (socket) => injected.push(socket),
      logger: quietLogger(),
      maxWaitingBytes: 1 << 20,
      host: sessionHost(
        { max_inflight_body_bytes: 0, max_connections: 0 },
        clock,
        new MemoryRelease(clock, () => {}),
      ),
      idleMs: 0,
    },
  );
  ws.bufferedAmount = MAX_UNREAD_BYTES + 1;
  ws.emit('message', Buffer.from('{"method":"GET"}'), false);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(ws.closedWith, [1008, 'the client does not read its answers']);
  assert.equal(injected.length, 0, 'the request never reached the server');
  assert.equal(ws.sent.length, 0);
});
