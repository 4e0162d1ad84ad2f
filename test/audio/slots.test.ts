/** The ffmpeg children's slots: fair between owners, round-robin, every wait cancellable. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Slots } from '../../src/audio/slots.js';

const never = new AbortController().signal;

/** The order in which `takes` are granted, as their labels, once `settle` has run. */
function recorder() {
  const order: string[] = [];
  const releases = new Map<string, () => void>();
  const take = (slots: Slots, owner: string | undefined, label: string, signal = never) =>
    slots.take(owner, signal).then((release) => {
      order.push(label);
      releases.set(label, release);
      return release;
    });
  return { order, releases, take };
}

/** Lets granted takes run their continuations. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

test('an owner alone may take every slot; while another waits, the next freed slot is the other owner’s', async () => {
  const slots = new Slots(3);
  const { order, releases, take } = recorder();
  for (const i of [1, 2, 3, 4, 5]) void take(slots, 'a', `a${i}`);
  await settle();
  assert.deepEqual(order, ['a1', 'a2', 'a3'], 'a alone takes all three');
  void take(slots, 'b', 'b1');
  await settle();
  assert.equal(slots.waiting, 3);
  releases.get('a1')!();
  await settle();
  // a waited first, but holds 2 = size - 1 while b waits: b's turn.
  assert.deepEqual(order.slice(3), ['b1']);
  releases.get('a2')!();
  await settle();
  // a holds 1 now: below its cap, its next waiter goes.
  assert.deepEqual(order.slice(4), ['a4']);
  releases.get('b1')!();
  await settle();
  assert.deepEqual(order.slice(5), ['a5'], 'no one else waits: a may take the last slot');
  assert.equal(slots.busy, 3);
});

test('waiters are served round-robin across owners, each owner in its own arrival order', async () => {
  const slots = new Slots(2);
  const { order, releases, take } = recorder();
  void take(slots, 'x', 'x0');
  void take(slots, 'x', 'x00');
  await settle();
  for (const label of ['a1', 'a2', 'a3']) void take(slots, 'a', label);
  for (const label of ['b1', 'b2']) void take(slots, 'b', label);
  void take(slots, 'c', 'c1');
  await settle();
  // Each release frees one slot; whoever took it gives it back before the next.
  releases.get('x0')!();
  await settle();
  releases.get('x00')!();
  await settle();
  for (let i = 0; i < 4; i++) {
    releases.get(order.at(-2)!)?.();
    await settle();
  }
  assert.deepEqual(order.slice(2), ['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
});

test('a waiter whose signal aborts leaves the queue, and its leaving lets a capped owner take the slot', async () => {
  const slots = new Slots(2);
  const { order, take } = recorder();
  void take(slots, 'a', 'a1');
  await settle();
  const b = new AbortController();
  const bWait = take(slots, 'b', 'b1', b.signal);
  await settle();
  assert.deepEqual(order, ['a1', 'b1'], 'one slot was free for b');
  // Both slots held: a second b and a second a wait.
  const b2 = new AbortController();
  const b2Wait = take(slots, 'b', 'b2', b2.signal);
  void take(slots, 'a', 'a2');
  await settle();
  assert.equal(slots.waiting, 2);
  (await bWait)();
  await settle();
  // a holds 1 (= its cap while b waits) and b holds 0: b2 gets it.
  assert.deepEqual(order.slice(2), ['b2']);
  (await b2Wait)();
  await settle();
  assert.deepEqual(order.slice(3), ['a2']);

  const c = new AbortController();
  const cWait = take(slots, 'c', 'c1', c.signal);
  c.abort(new Error('client gone'));
  await assert.rejects(cWait, /client gone/);
  assert.equal(slots.waiting, 0);
});

test('an owner at its cap takes a freed slot again once no other owner waits', async () => {
  const slots = new Slots(2);
  const { order, releases, take } = recorder();
  void take(slots, 'a', 'a1');
  void take(slots, 'a', 'a2');
  await settle();
  const bWait = take(slots, 'b', 'b1');
  void take(slots, 'a', 'a3');
  await settle();
  releases.get('a1')!();
  await settle();
  assert.deepEqual(order, ['a1', 'a2', 'b1']);
  (await bWait)();
  await settle();
  assert.deepEqual(order, ['a1', 'a2', 'b1', 'a3']);
});

test('size 1: owners still take turns (no owner is capped at 0)', async () => {
  const slots = new Slots(1);
  const { order, releases, take } = recorder();
  void take(slots, 'a', 'a1');
  void take(slots, 'a', 'a2');
  void take(slots, 'b', 'b1');
  await settle();
  releases.get('a1')!();
  await settle();
  releases.get('b1')!();
  await settle();
  assert.deepEqual(order, ['a1', 'b1', 'a2']);
});

test('takes without an owner are each their own: first come, first served, no cap', async () => {
  const slots = new Slots(2);
  const { order, releases, take } = recorder();
  for (const label of ['1', '2', '3', '4']) void take(slots, undefined, label);
  await settle();
  releases.get('1')!();
  releases.get('1')!(); // a second release is a no-op
  await settle();
  assert.deepEqual(order, ['1', '2', '3']);
  assert.equal(slots.busy, 2);
  assert.equal(slots.waiting, 1);
  await assert.rejects(
    slots.take(undefined, AbortSignal.abort(new Error('gone'))),
    /gone/,
    'an aborted signal is refused before any wait',
  );
});
