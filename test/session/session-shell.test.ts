/**
 * The session shell every streaming protocol is built on: its inbox keeps order and pauses its
 * source past its bound, its timers run on the runtime clock (moved here by hand), work holds off
 * the idle timer and has its own deadline, and the session's bytes go back when it ends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { VoxdError } from '../../src/errors.js';
import { sessionHost } from '../../src/session/session-host.js';
import { SessionShell, type ShellOptions } from '../../src/session/session-shell.js';
import { MemoryRelease } from '../../src/util/release-memory.js';
import { ManualClock } from '../helpers/manual-clock.js';

function shell(overrides: Partial<ShellOptions> = {}, budget = 0) {
  const clock = new ManualClock();
  const memory = new MemoryRelease(clock, () => {});
  const host = sessionHost({ max_inflight_body_bytes: budget, max_connections: 0 }, clock, memory);
  const expired: VoxdError[] = [];
  const flow: string[] = [];
  const s = new SessionShell(host, {
    what: 'test session',
    inboxEvents: 2,
    idleMs: 1000,
    idleSetting: 'idle_ms',
    pause: () => flow.push('pause'),
    resume: () => flow.push('resume'),
    expire: (why) => expired.push(why),
    ...overrides,
  });
  return { s, clock, host, memory, expired, flow };
}

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
};

test('events run one at a time in arrival order; past the bound the source pauses, then resumes', async () => {
  const { s, flow } = shell();
  const order: number[] = [];
  const first = gate();
  s.receive(async () => {
    await first.opened;
    order.push(1);
  });
  s.receive(() => {
    order.push(2);
  });
  assert.deepEqual(flow, ['pause'], 'two events waiting reach the bound of 2');
  s.receive(() => {
    order.push(3);
  });
  first.open();
  await s.settled();
  assert.deepEqual(order, [1, 2, 3]);
  assert.deepEqual(flow, ['pause', 'resume']);
});

test('past inboxBytes of events waiting the source pauses too, and resumes once they drain below it', async () => {
  const { s, flow } = shell({ inboxEvents: 10, inboxBytes: 100 });
  const first = gate();
  s.receive(() => first.opened, 60);
  assert.deepEqual(flow, []);
  s.receive(() => {}, 60);
  assert.deepEqual(flow, ['pause'], '120 bytes wait, over 100');
  first.open();
  await s.settled();
  assert.deepEqual(flow, ['pause', 'resume']);
});

test('a handler that throws does not stop the inbox', async () => {
  const { s } = shell();
  const seen: string[] = [];
  s.receive(() => {
    throw new Error('bad event');
  });
  s.receive(() => {
    seen.push('next');
  });
  await s.settled();
  assert.deepEqual(seen, ['next']);
});

test('idle: no whole event for idleMs ends the session; an event restarts the wait', async () => {
  const { s, clock, expired } = shell();
  clock.advance(900);
  s.receive(() => {});
  await s.settled();
  clock.advance(900);
  assert.equal(expired.length, 0, 'the event restarted the idle wait');
  clock.advance(100);
  assert.equal(expired.length, 1);
  assert.equal(expired[0]!.code, 'E_SESSION_IDLE');
  assert.match(expired[0]!.message, /idle_ms \(1000 ms\)/);
});

test('idle: a session whose work runs is not idle; the wait starts when the work ends', async () => {
  const { s, clock, expired, memory } = shell();
  const running = gate();
  const work = s.work(() => running.opened);
  assert.equal(memory.running, 1, 'work counts for the memory release');
  clock.advance(5000);
  assert.equal(expired.length, 0);
  running.open();
  await work;
  assert.equal(memory.running, 0);
  clock.advance(999);
  assert.equal(expired.length, 0);
  clock.advance(1);
  assert.equal(expired.length, 1);
});

test('an event begun and not completed within eventMs ends the session; bytes alone are no activity', () => {
  const { s, clock, expired } = shell({ eventMs: 300, idleMs: 10_000 });
  s.eventBegun();
  clock.advance(200);
  s.eventBegun(); // more bytes of the same event: the deadline does not move
  clock.advance(100);
  assert.equal(expired.length, 1);
  assert.match(expired[0]!.message, /did not complete it within 300 ms/);
});

test('a whole event cancels the event deadline', async () => {
  const { s, clock, expired } = shell({ eventMs: 300, idleMs: 10_000 });
  s.eventBegun();
  clock.advance(200);
  s.receive(() => {});
  clock.advance(500);
  assert.equal(expired.length, 0);
});

test("an event's deadline waits while the source is paused (the session's own backpressure) and starts afresh at resume", async () => {
  const { s, clock, expired, flow } = shell({ eventMs: 300, idleMs: 10_000 });
  const first = gate();
  s.receive(() => first.opened);
  s.receive(() => {});
  assert.deepEqual(flow, ['pause']);
  s.eventBegun(); // the rest of an event read before the pause
  clock.advance(1000);
  assert.equal(expired.length, 0, 'the client is not the one holding the event back');
  first.open();
  await s.settled();
  assert.deepEqual(flow, ['pause', 'resume']);
  clock.advance(299);
  assert.equal(expired.length, 0);
  clock.advance(1);
  assert.equal(expired.length, 1, 'a full deadline from the resume');
});

test('client-paced work counts for the memory release and its deadline, but the session stays idle meanwhile', async () => {
  const { s, clock, expired, memory } = shell();
  const fed = gate();
  const paced = s.work(
    () => fed.opened,
    { ms: 5000, late: () => new Error('late') as VoxdError },
    { clientPaced: true },
  );
  assert.equal(memory.running, 1);
  assert.equal(s.working, 0);
  clock.advance(1000);
  assert.equal(expired.length, 1, 'idle while the work waits for the client');
  assert.equal(expired[0]!.code, 'E_SESSION_IDLE');
  fed.open();
  await paced;
  assert.equal(memory.running, 0);
});

test('lifetime: the session expires at its longest life, even while work runs', () => {
  const { s, clock, expired } = shell({ lifetimeMs: 5000, lifetimeSetting: 'max_ms' });
  void s.work(() => new Promise(() => {}));
  clock.advance(5000);
  assert.equal(expired.length, 1);
  assert.equal(expired[0]!.code, 'E_SESSION_EXPIRED');
});

test("work's deadline aborts its signal with the work's own error; leaving aborts it too", async () => {
  const { s, clock } = shell();
  let seen: AbortSignal | undefined;
  const late = s.work(
    (signal) => {
      seen = signal;
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    },
    { ms: 2000, late: () => new Error('too long') as VoxdError },
  );
  clock.advance(2000);
  await assert.rejects(late, /too long/);
  assert.equal(seen?.aborted, true);
  const gone = s.work(
    (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    { ms: 2000, late: () => new Error('too long') as VoxdError },
  );
  s.leave(new Error('client left') as VoxdError);
  await assert.rejects(gone, /client left/);
  assert.equal(s.signal.aborted, true);
});

test("the session's bytes come from the server budget and all go back when it ends", () => {
  const { s, host } = shell({}, 1000);
  s.bytes.hold(600);
  assert.equal(host.budget.inUse, 600);
  assert.throws(
    () => s.bytes.hold(500),
    (err: VoxdError) => err.code === 'E_BODY_BUDGET' && /test session/.test(err.message),
  );
  assert.equal(host.budget.inUse, 600, 'a refused hold takes nothing');
  s.leave(new Error('gone') as VoxdError);
  assert.equal(host.budget.inUse, 0);
  s.bytes.hold(10);
  assert.equal(host.budget.inUse, 0, 'an ended session takes nothing');
});

test('after leave no timer fires and no event runs', async () => {
  const { s, clock, expired } = shell({ lifetimeMs: 5000, eventMs: 100 });
  s.eventBegun();
  s.leave(new Error('gone') as VoxdError);
  let ran = false;
  s.receive(() => {
    ran = true;
  });
  await s.settled();
  clock.advance(10_000);
  assert.equal(ran, false);
  assert.equal(expired.length, 0);
  assert.equal(clock.timers, 0, 'every timer was cancelled');
});
