import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { libcExit, mallocStats, mallocTrim } from '../../src/util/libc.js';
import { waitUntil } from '../helpers/voxd.js';

// This machine runs glibc (Debian): every binding is there. Elsewhere each is undefined, by design.
test('glibc is bound: _exit, malloc_trim and mallinfo2', () => {
  assert.equal(typeof libcExit, 'function');
  assert.equal(typeof mallocTrim, 'function');
  assert.ok(mallocStats());
});

test('memory in use follows a Buffer from allocation to its release', async () => {
  const size = 8 * 1024 * 1024;
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // Buffer contents are the allocator's: 8 MiB more in use while it lives. V8's helper threads may
  // free earlier garbage between the two readings and hide part of it (seen once: 7.3 of 8 MiB),
  // so a reading spoiled that way is taken again, from a fresh collection, a few times at most.
  let buffer: Buffer | undefined;
  let before = 0;
  let during = 0;
  for (let attempt = 0; attempt < 5 && during - before < size; attempt++) {
    buffer = undefined;
    gc();
    before = mallocStats()!.inUse;
    buffer = Buffer.alloc(size, 1);
    during = mallocStats()!.inUse;
  }
  assert.ok(during - before >= size, `${before} -> ${during} bytes in use`);
  assert.equal(buffer![size - 1], 1);
  buffer = undefined;
  // A full collection frees it (V8 may sweep array buffers on a helper thread: wait for that).
  // Freed means back near the first reading: less than half the buffer above it. Requiring the
  // whole 8 MiB off the second reading failed under load, when the process had allocated a few
  // KiB elsewhere in between; a buffer still held stays a whole 8 MiB above.
  gc();
  await waitUntil('the buffer is freed', () => {
    gc();
    return mallocStats()!.inUse - before < size / 2;
  });
});
