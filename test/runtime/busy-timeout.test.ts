import assert from 'node:assert/strict';
import { test } from 'node:test';
import { effectiveBusyTimeout } from '../../src/runtime/busy-timeout.js';

test('effective busy timeout = min(request, ceiling) with 0 unbounded on both sides', () => {
  assert.equal(effectiveBusyTimeout(undefined, 300_000), 300_000);
  assert.equal(effectiveBusyTimeout(100, 300_000), 100, 'a request may shorten the ceiling');
  assert.equal(effectiveBusyTimeout(500_000, 300_000), 300_000, 'but not lengthen it');
  assert.equal(effectiveBusyTimeout(0, 300_000), 300_000, 'request 0 leaves the ceiling');
  assert.equal(effectiveBusyTimeout(250, 0), 250, 'an unbounded ceiling takes the request value');
  assert.equal(effectiveBusyTimeout(0, 0), 0, 'both unbounded');
  assert.equal(effectiveBusyTimeout(undefined, 0), 0);
});
