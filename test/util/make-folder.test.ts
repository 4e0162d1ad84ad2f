import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { MakeFolderError, makeFolder } from '../../src/util/make-folder.js';
import { withDeadline } from '../helpers/voxd.js';

const work = mkdtempSync(join(tmpdir(), 'voxd-make-folder-'));
after(() => rmSync(work, { recursive: true, force: true }));

const refusal = (errno: string, message: RegExp) => (err: unknown) =>
  err instanceof MakeFolderError && err.errno === errno && message.test(err.message);

test('makes a folder and its missing parents; an existing folder (or a link to one) is fine', async () => {
  await makeFolder(join(work, 'a', 'b', 'c'));
  assert.ok(statSync(join(work, 'a', 'b', 'c')).isDirectory());
  await makeFolder(join(work, 'a', 'b'));
  symlinkSync(join(work, 'a'), join(work, 'link'));
  await makeFolder(join(work, 'link', 'd'));
  assert.ok(statSync(join(work, 'a', 'd')).isDirectory());
});

test('stops at the first refusal, naming the level', async () => {
  writeFileSync(join(work, 'file'), 'x');
  await assert.rejects(
    makeFolder(join(work, 'file', 'x')),
    refusal('ENOTDIR', /file exists and is not a folder/),
  );
  symlinkSync(join(work, 'nowhere'), join(work, 'dangling'));
  await assert.rejects(makeFolder(join(work, 'dangling', 'x')), refusal('ENOENT', /dangling cannot be read/));
  // Node 20's recursive mkdir never returns for this path.
  await withDeadline(
    assert.rejects(makeFolder('/proc/nope/x'), refusal('ENOENT', /^mkdir \/proc\/nope failed \(ENOENT\)/)),
    'makeFolder(/proc/nope/x)',
    5000,
  );
  assert.ok(!existsSync(join(work, 'file', 'x')));
});

test('makes at most the bound of new levels, and nothing when past it', async () => {
  const deep = join(work, 'deep', ...Array.from({ length: 20 }, (_, i) => `l${i}`));
  await assert.rejects(makeFolder(deep), refusal('ETOODEEP', /would need more than 16 new folders/));
  assert.ok(!existsSync(join(work, 'deep')));
  await makeFolder(join(work, 'two', 'levels'), 2);
  await assert.rejects(makeFolder(join(work, 'x', 'y', 'z'), 2), refusal('ETOODEEP', /more than 2/));
});

test('many callers making the same folders at once all succeed (two servers starting on one data folder)', async () => {
  for (let round = 0; round < 20; round++) {
    const target = join(work, `race-${round}`, 'data', 'models');
    // Each caller starts a turn of the event loop after the one before, so that one's mkdir falls
    // between another's look-ups.
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, async (_, k) => {
        for (let turn = 0; turn < k; turn++) await new Promise((resolve) => setImmediate(resolve));
        return makeFolder(target);
      }),
    );
    const failed = results.filter((r) => r.status === 'rejected');
    assert.deepEqual(
      failed.map((r) => String((r as PromiseRejectedResult).reason)),
      [],
      `round ${round}: every caller finds the folder made`,
    );
    assert.ok(statSync(target).isDirectory());
  }
});
