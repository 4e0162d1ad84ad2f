/** Which views own their memory (src/util/own-memory.ts): only one that covers its whole buffer. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ownsItsMemory } from '../../src/util/own-memory.js';

test('a view owns its memory only when it covers the whole ArrayBuffer', () => {
  assert.equal(ownsItsMemory(new Int16Array(8)), true);
  assert.equal(ownsItsMemory(Buffer.alloc(64 * 1024)), true, 'a large Buffer has a buffer of its own');
  assert.equal(ownsItsMemory(Buffer.from('small')), false, "a small Buffer lies in node's shared pool");
  const read = new Uint8Array(100);
  assert.equal(ownsItsMemory(read.subarray(10)), false, 'a slice past the start');
  assert.equal(ownsItsMemory(read.subarray(0, 50)), false, 'a slice short of the end');
  assert.equal(
    ownsItsMemory(new Uint8Array(new SharedArrayBuffer(8))),
    false,
    'shared memory is never moved',
  );
});
