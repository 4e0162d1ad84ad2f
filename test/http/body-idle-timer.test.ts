/**
 * body_timeout_ms on the runtime's clock (a manual one here): the wait counts from the last chunk,
 * not from the first, fires once with the 408's error, and a stopped timer never fires.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { VoxdError } from '../../src/errors.js';
import { bodyIdleTimer } from '../../src/http/request/body.js';
import { ManualClock } from '../helpers/voxd.js';

test('the idle wait restarts at each chunk and ends in E_BODY_TIMEOUT once', () => {
  const clock = new ManualClock();
  const fired: VoxdError[] = [];
  const timer = bodyIdleTimer(400, (err) => fired.push(err), clock);
  clock.advance(300);
  timer.touch();
  clock.advance(300);
  assert.equal(fired.length, 0, '300 ms after the last chunk: still waiting');
  timer.touch();
  clock.advance(399);
  assert.equal(fired.length, 0);
  clock.advance(1);
  assert.equal(fired.length, 1);
  assert.equal(fired[0]!.code, 'E_BODY_TIMEOUT');
  assert.match(fired[0]!.message, /no data arrived for 400 ms \(body_timeout_ms=400\)/);
  clock.advance(10_000);
  assert.equal(fired.length, 1, 'once');
  assert.equal(clock.timers, 0, 'no timer left behind');
});

test('a stopped timer never fires, and 0 is no limit', () => {
  const clock = new ManualClock();
  let fired = 0;
  const timer = bodyIdleTimer(400, () => fired++, clock);
  clock.advance(200);
  timer.stop();
  clock.advance(1000);
  const none = bodyIdleTimer(0, () => fired++, clock);
  none.touch();
  clock.advance(1_000_000);
  assert.equal(fired, 0);
  assert.equal(clock.timers, 0);
});
