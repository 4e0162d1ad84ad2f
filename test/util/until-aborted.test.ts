import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PushQueue } from '../../src/util/push-queue.js';
import { untilAborted } from '../../src/util/until-aborted.js';

test('untilAborted: yields what the source gives and ends with it', async () => {
  const queue = new PushQueue<number>();
  queue.push(1);
  queue.push(2);
  queue.end();
  const seen: number[] = [];
  for await (const n of untilAborted(queue, new AbortController().signal)) seen.push(n);
  assert.deepEqual(seen, [1, 2]);
});

test('untilAborted: an abort wakes a loop parked on the next item, with the abort reason', async () => {
  const queue = new PushQueue<number>();
  queue.push(1);
  const abort = new AbortController();
  const seen: number[] = [];
  const loop = (async () => {
    for await (const n of untilAborted(queue, abort.signal)) {
      seen.push(n);
      // The source has nothing more: the loop now waits for a push that never comes.
      queueMicrotask(() => abort.abort(new Error('gone')));
    }
  })();
  await assert.rejects(loop, /gone/);
  assert.deepEqual(seen, [1]);
});

test('untilAborted: an already aborted signal yields nothing', async () => {
  const abort = new AbortController();
  abort.abort(new Error('before'));
  const queue = new PushQueue<number>();
  queue.push(1);
  await assert.rejects(async () => {
    for await (const _ of untilAborted(queue, abort.signal)) assert.fail('nothing is yielded');
  }, /before/);
});
