/**
 * Keepalive pings judge a peer only on what it could have sent: a pong, or any message (a pong
 * queued behind the audio a realtime client is sending arrives late), and nothing while voxd itself
 * does not read the socket (a session paced to its speech detector was dropped after 60 s, its
 * client's pong unread behind 400 MB it had not been let send yet). A silent peer is still dropped.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { WebSocket } from 'ws';
import { KEEPALIVE_MS, keepAlive } from '../../src/session/keepalive.js';
import { ManualClock } from '../helpers/manual-clock.js';

/** The part of a WebSocket the keepalive uses. */
class FakeSocket extends EventEmitter {
  isPaused = false;
  pings = 0;
  terminated = false;
  ping(): void {
    this.pings++;
  }
  terminate(): void {
    this.terminated = true;
  }
}

function watched() {
  const clock = new ManualClock();
  const ws = new FakeSocket();
  const timer = keepAlive(ws as unknown as WebSocket, clock);
  return { clock, ws, timer, tick: () => clock.advance(KEEPALIVE_MS) };
}

test('a peer that answers nothing is dropped at the next ping; one that pongs stays', () => {
  const { ws, tick, timer } = watched();
  tick();
  assert.equal(ws.pings, 1);
  ws.emit('pong');
  tick();
  assert.equal(ws.terminated, false);
  tick();
  assert.equal(ws.terminated, true);
  timer.cancel();
});

test('a message from the peer shows it is there, as a pong does', () => {
  const { ws, tick, timer } = watched();
  tick();
  ws.emit('message', Buffer.from('{}'), false);
  tick();
  assert.equal(ws.terminated, false);
  assert.equal(ws.pings, 2);
  timer.cancel();
  assert.equal(ws.listenerCount('message') + ws.listenerCount('pong'), 0, 'cancel removes its listeners');
});

test('while voxd does not read the socket, the peer is not judged; once it reads again, it is', () => {
  const { ws, tick, timer } = watched();
  tick();
  ws.isPaused = true;
  tick();
  tick();
  assert.equal(ws.terminated, false);
  ws.isPaused = false;
  tick();
  assert.equal(ws.terminated, false, 'a fresh ping after the pause');
  tick();
  assert.equal(ws.terminated, true);
  timer.cancel();
});
