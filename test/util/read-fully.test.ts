/**
 * Reading a file region whole (src/util/read-fully.ts): the three readers fill the array or stop at
 * the end of the file and say how much they got; a missing file is an error, not an empty read.
 */
import assert from 'node:assert/strict';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readFileInto, readFully, readFullySync } from '../../src/util/read-fully.js';

test('each reader fills the array from the file, or returns the shorter count at its end', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'voxd-read-'));
  try {
    const path = join(dir, 'data');
    // Larger than one read of the pool's usual size, so the loops run more than once where they may.
    const data = Buffer.from(Array.from({ length: 3 << 20 }, (_, i) => (i * 7) % 251));
    await writeFile(path, data);

    const whole = new Uint8Array(data.length);
    assert.equal(await readFileInto(path, whole), data.length);
    assert.ok(Buffer.from(whole).equals(data));
    const more = new Uint8Array(data.length + 100);
    assert.equal(await readFileInto(path, more), data.length, 'the file ended first');
    assert.ok(Buffer.from(more.subarray(0, data.length)).equals(data));

    const file = await open(path, 'r');
    try {
      const region = new Uint8Array(1000);
      assert.equal(await readFully(file, region, 5000), 1000);
      assert.ok(Buffer.from(region).equals(data.subarray(5000, 6000)));
      assert.equal(await readFully(file, region, data.length - 10), 10);
    } finally {
      await file.close();
    }
    const fd = openSync(path, 'r');
    try {
      const region = new Uint8Array(1000);
      assert.equal(readFullySync(fd, region, 7000), 1000);
      assert.ok(Buffer.from(region).equals(data.subarray(7000, 8000)));
      assert.equal(readFullySync(fd, region, data.length), 0);
    } finally {
      closeSync(fd);
    }

    await assert.rejects(readFileInto(join(dir, 'missing'), whole), { code: 'ENOENT' });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
