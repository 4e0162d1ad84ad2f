/**
 * Large arrays through the runner's temporary folder (src/engines/runner-bulk.ts): what goes in a
 * file and what stays in the message, the arrays read back as they were, every file removed once
 * read, and only names the module makes ever read.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  BULK_IN_MIN_BYTES,
  BULK_MIN_BYTES,
  hasBulk,
  readBulk,
  readBulkSync,
  writeBulk,
  writeBulkSync,
} from '../../src/engines/runner-bulk.js';

test('large arrays go through files both ways and come back the same type and values; small ones and other fields stay in the message', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'voxd-bulk-'));
  try {
    const pcm = Int16Array.from({ length: BULK_IN_MIN_BYTES / 2 }, (_, i) => (i % 200) - 100);
    // A job's array below BULK_IN_MIN_BYTES stays in the message, though a reply's would not.
    const small = new Float32Array(BULK_IN_MIN_BYTES / 4 - 1);
    assert.ok(small.byteLength >= BULK_MIN_BYTES);
    const job = { id: 7, kind: 'decode', samples: pcm, small };
    const sent = await writeBulk(job, dir);
    assert.equal(sent.id, 7);
    assert.equal(sent.small, small, 'a small array stays in the message');
    assert.ok(!ArrayBuffer.isView(sent.samples) && hasBulk(sent), 'the large one is a reference');
    assert.equal((await readdir(dir)).length, 1);
    const got = readBulkSync(sent, dir);
    assert.ok(got.samples instanceof Int16Array);
    assert.deepEqual(got.samples, pcm);
    assert.deepEqual(await readdir(dir), [], 'read and removed');

    const samples = Float32Array.from({ length: BULK_MIN_BYTES / 4 }, (_, i) => i / 1000);
    const reply = writeBulkSync({ id: 7, ok: true, samples, sampleRate: 22050 }, dir);
    const back = await readBulk(reply, dir);
    assert.ok(back.samples instanceof Float32Array);
    assert.deepEqual(back.samples, samples);
    assert.equal(back.sampleRate, 22050);
    assert.deepEqual(await readdir(dir), []);

    const plain = { id: 8, text: 'hello' };
    assert.equal(await writeBulk(plain, dir), plain, 'nothing to move: the same message');
    assert.ok(!hasBulk(plain));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a reference naming any other file is not read', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'voxd-bulk-'));
  try {
    await writeFile(join(dir, 'secret'), 'not for the runner');
    for (const bulkFile of ['secret', '../secret', '/etc/passwd', 'bulk-in-1-x']) {
      const message = { id: 1, ok: true, samples: { bulkFile, type: 'Uint8Array', length: 4 } };
      assert.deepEqual(await readBulk(message, dir), message, bulkFile);
      assert.deepEqual(readBulkSync(message, dir), message, bulkFile);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
