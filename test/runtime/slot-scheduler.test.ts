import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import { VoxdError } from '../../src/errors.js';
import { type Lease, SlotScheduler } from '../../src/runtime/slot-scheduler.js';
import { ManualClock } from '../helpers/voxd.js';

/** Lets pending promise callbacks run, so "still waiting" is observed after the scheduler had every chance. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function track(promise: Promise<Lease>) {
  const state: { lease?: Lease; error?: unknown } = {};
  promise.then(
    (lease) => {
      state.lease = lease;
    },
    (error: unknown) => {
      state.error = error;
    },
  );
  // Functions, not fields: TypeScript would keep a narrowed field type across the awaits below.
  return { lease: () => state.lease, error: () => state.error };
}

describe('SlotScheduler', () => {
  test('tryAcquire grants only what acquire would grant without a wait, and refuses an aborted caller', async () => {
    const s = new SlotScheduler('m', 2, new ManualClock());
    const gone = new AbortController();
    gone.abort(new VoxdError('E_CLIENT_GONE', 'gone'));
    assert.throws(() => s.tryAcquire('request', gone.signal), { code: 'E_CLIENT_GONE' });
    const first = s.tryAcquire('request');
    assert.ok(first, 'a free slot is granted at once');
    const manager = track(s.acquire('manager', { timeoutMs: 0 }));
    await settle();
    assert.equal(s.tryAcquire('request'), null, 'a slot is free, but a waiter is queued ahead');
    assert.equal(s.snapshot().queuedRequests, 0, 'tryAcquire never queues');
    first.release();
    await settle();
    assert.ok(manager.lease(), 'the queued manager got the model');
    assert.equal(s.tryAcquire('request'), null, 'the manager holds the model');
    manager.lease()!.release();
    const again = s.tryAcquire('request');
    assert.ok(again);
    again.release();
    assert.equal(s.idle, true);
  });

  test('grants requests up to capacity and queues later ones in FIFO order', async () => {
    const s = new SlotScheduler('m', 2, new ManualClock());
    const a = await s.acquire('request', { timeoutMs: 0 });
    const b = await s.acquire('request', { timeoutMs: 0 });
    const order: string[] = [];
    const c = s.acquire('request', { timeoutMs: 0 }).then((l) => {
      order.push('c');
      return l;
    });
    const d = s.acquire('request', { timeoutMs: 0 }).then((l) => {
      order.push('d');
      return l;
    });
    await settle();
    assert.deepEqual(order, []);
    assert.equal(s.snapshot().queuedRequests, 2);
    a.release();
    await settle();
    assert.deepEqual(order, ['c']);
    b.release();
    await settle();
    assert.deepEqual(order, ['c', 'd']);
    (await c).release();
    (await d).release();
    assert.equal(s.idle, true);
  });

  test('a waiting manager blocks later requests even while slots are free, and waits for earlier ones', async () => {
    const s = new SlotScheduler('m', 3, new ManualClock());
    const first = await s.acquire('request', { timeoutMs: 0 });
    const manager = track(s.acquire('manager', { timeoutMs: 0 }));
    const later = track(s.acquire('request', { timeoutMs: 0 }));
    await settle();
    assert.equal(manager.lease(), undefined, 'manager waits for the earlier request');
    assert.equal(later.lease(), undefined, 'later request may not use a spare slot ahead of the manager');
    assert.equal(s.snapshot().activeRequests, 1);
    first.release();
    await settle();
    assert.ok(manager.lease(), 'manager granted once earlier work drained');
    assert.equal(later.lease(), undefined, 'request waits for the manager to finish');
    manager.lease()!.release();
    await settle();
    assert.ok(later.lease());
    later.lease()!.release();
  });

  test('fails fast when the current holder already ran longer than the timeout', async () => {
    const clock = new ManualClock();
    const s = new SlotScheduler('m', 1, clock);
    const holder = await s.acquire('request', { timeoutMs: 0 });
    clock.advance(1500);
    await assert.rejects(s.acquire('request', { timeoutMs: 1000 }), (err: unknown) => {
      assert.ok(err instanceof VoxdError);
      assert.equal(err.code, 'E_BUSY');
      assert.match(err.message, /current inference has run 1500 ms \(busy_timeout_ms=1000\)/);
      return true;
    });
    assert.equal(s.snapshot().queuedRequests, 0, 'the rejected caller never queued');
    holder.release();
  });

  test('fails fast behind a manager that overran, and when every occupied slot overran despite spare slots', async () => {
    const clock = new ManualClock();
    const s = new SlotScheduler('m', 3, clock);
    const r1 = await s.acquire('request', { timeoutMs: 0 });
    const r2 = await s.acquire('request', { timeoutMs: 0 });
    const manager = track(s.acquire('manager', { timeoutMs: 0 }));
    clock.advance(600);
    await assert.rejects(s.acquire('request', { timeoutMs: 500 }), { code: 'E_BUSY' });
    r1.release();
    r2.release();
    await settle();
    assert.ok(manager.lease());
    clock.advance(600);
    await assert.rejects(s.acquire('request', { timeoutMs: 500 }), /management operation has run 600 ms/);
    manager.lease()!.release();
  });

  test('a healthy holder allows a bounded wait that ends in E_BUSY and leaves no trace', async () => {
    const clock = new ManualClock();
    const s = new SlotScheduler('m', 1, clock);
    const holder = await s.acquire('request', { timeoutMs: 0 });
    const waiter = track(s.acquire('request', { timeoutMs: 20 }));
    clock.advance(19);
    await settle();
    assert.equal(waiter.error(), undefined, 'still waiting 1 ms before its busy timeout');
    assert.equal(s.snapshot().queuedRequests, 1);
    clock.advance(1);
    await settle();
    assert.ok(waiter.error(), 'refused once the busy timeout came');
    await assert.rejects(Promise.reject(waiter.error()), (err: unknown) => {
      assert.ok(err instanceof VoxdError);
      assert.equal(err.code, 'E_BUSY');
      assert.match(err.message, /timed out after 20 ms waiting for a slot/);
      return true;
    });
    assert.equal(s.snapshot().queuedRequests, 0);
    holder.release();
    assert.equal(s.idle, true, 'the timed-out waiter took no slot');
  });

  test('timeout 0 waits without limit', async () => {
    const clock = new ManualClock();
    const s = new SlotScheduler('m', 1, clock);
    const holder = await s.acquire('request', { timeoutMs: 0 });
    clock.advance(10_000_000);
    const waiter = track(s.acquire('request', { timeoutMs: 0 }));
    await settle();
    assert.equal(waiter.error(), undefined);
    holder.release();
    await settle();
    assert.ok(waiter.lease());
    waiter.lease()!.release();
  });

  test('an aborted waiter leaves the queue at once, unblocks those behind it and detaches its listener', async () => {
    const s = new SlotScheduler('m', 1, new ManualClock());
    const holder = await s.acquire('request', { timeoutMs: 0 });
    const controller = new AbortController();
    const manager = track(s.acquire('manager', { timeoutMs: 0, signal: controller.signal }));
    const behind = track(s.acquire('request', { timeoutMs: 0 }));
    await settle();
    assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
    controller.abort(new Error('client gone'));
    await settle();
    assert.match(String(manager.error()), /client gone/);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    assert.equal(s.snapshot().queuedManagers, 0);
    holder.release();
    await settle();
    assert.ok(behind.lease(), 'the request behind the departed manager got the slot');
    behind.lease()!.release();
  });

  test('a granted waiter detaches its abort listener', async () => {
    const s = new SlotScheduler('m', 1, new ManualClock());
    const holder = await s.acquire('request', { timeoutMs: 0 });
    const controller = new AbortController();
    const waiter = s.acquire('request', { timeoutMs: 50_000, signal: controller.signal });
    holder.release();
    (await waiter).release();
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  });

  test('an already aborted signal rejects without queueing', async () => {
    const s = new SlotScheduler('m', 1, new ManualClock());
    await assert.rejects(
      s.acquire('request', { timeoutMs: 0, signal: AbortSignal.abort(new Error('gone')) }),
      /gone/,
    );
    assert.equal(s.idle, true);
  });

  test('tryAcquireManager succeeds only on an entirely idle model', async () => {
    const s = new SlotScheduler('m', 2, new ManualClock());
    const r = await s.acquire('request', { timeoutMs: 0 });
    assert.equal(s.tryAcquireManager(), null);
    r.release();
    const unpin = s.pin();
    assert.equal(s.tryAcquireManager(), null, 'a shared initialisation keeps managers out');
    unpin();
    const m = s.tryAcquireManager();
    assert.ok(m);
    assert.equal(s.tryAcquireManager(), null);
    m.release();
  });

  test('a pin holds back a queued manager until the initialisation ends', async () => {
    const s = new SlotScheduler('m', 1, new ManualClock());
    const unpin = s.pin();
    const manager = track(s.acquire('manager', { timeoutMs: 0 }));
    await settle();
    assert.equal(manager.lease(), undefined);
    unpin();
    await settle();
    assert.ok(manager.lease());
    manager.lease()!.release();
  });

  test('release is idempotent', async () => {
    const s = new SlotScheduler('m', 2, new ManualClock());
    const a = await s.acquire('request', { timeoutMs: 0 });
    const b = await s.acquire('request', { timeoutMs: 0 });
    a.release();
    a.release();
    assert.equal(s.snapshot().activeRequests, 1);
    b.release();
  });

  test('setCapacity admits queued requests when raised', async () => {
    const s = new SlotScheduler('m', 1, new ManualClock());
    const a = await s.acquire('request', { timeoutMs: 0 });
    const b = track(s.acquire('request', { timeoutMs: 0 }));
    await settle();
    assert.equal(b.lease(), undefined);
    s.setCapacity(2);
    await settle();
    assert.ok(b.lease());
    a.release();
    b.lease()!.release();
  });
});
