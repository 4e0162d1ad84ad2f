import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { VoxdError } from '../../src/errors.js';
import { QueueBound } from '../../src/runtime/queue-bound.js';

function refusal(bound: QueueBound, queued: number, capacity = 1): VoxdError {
  try {
    bound.checkRoom('m', queued, 1, capacity);
  } catch (err) {
    assert.ok(err instanceof VoxdError);
    return err;
  }
  assert.fail('expected a refusal');
}

describe('QueueBound', () => {
  test('Retry-After: average hold time x queue length / slots, rounded up, at least 1', () => {
    const bound = new QueueBound();
    bound.max = 4;
    assert.equal(refusal(bound, 4).retryAfterS, 1, 'no hold time yet');
    bound.held(2000);
    assert.equal(refusal(bound, 4).retryAfterS, 8);
    assert.equal(refusal(bound, 4, 3).retryAfterS, 3, '8000 ms over 3 slots');
    // The newest hold weighs 1/5: 2000 + (7000 - 2000) / 5 = 3000 ms.
    bound.held(7000);
    const err = refusal(bound, 4, 2);
    assert.equal(err.retryAfterS, 6);
    assert.equal(err.code, 'E_QUEUE_FULL');
    assert.match(err.message, /queue is full with 4 waiting \(max_queued_requests=4\); retry after 6 s/);
    bound.held(10_000_000);
    assert.equal(refusal(bound, 4).retryAfterS, 3600, 'capped at an hour');
  });

  test('room up to the bound; 0 is unbounded', () => {
    const bound = new QueueBound();
    bound.checkRoom('m', 1000, 1, 1);
    bound.max = 2;
    bound.checkRoom('m', 1, 1, 1);
    assert.throws(() => bound.checkRoom('m', 2, 1, 1), /max_queued_requests=2/);
    assert.throws(() => bound.checkRoom('m', 0, 3, 1), /\(3 places asked\)/);
  });

  test('saturated from the bound until drained to half of it', () => {
    const bound = new QueueBound();
    bound.max = 5;
    for (const queued of [1, 2, 3, 4]) bound.queued(queued);
    assert.equal(bound.saturated, false);
    bound.queued(5);
    assert.equal(bound.saturated, true);
    bound.drained(4);
    bound.drained(3);
    assert.equal(bound.saturated, true, 'above the low mark 2');
    bound.drained(2);
    assert.equal(bound.saturated, false);
    bound.queued(3);
    assert.equal(bound.saturated, false, 'not again until the bound');
    bound.queued(5);
    bound.max = 6;
    assert.equal(bound.saturated, false, 'a new bound starts unsaturated');
    const unbounded = new QueueBound();
    unbounded.queued(100);
    assert.equal(unbounded.saturated, false);
  });
});
