import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { listTar, unpack } from '../../src/models/unpack.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import {
  hasZip,
  paxRecord,
  type RawEntry,
  type RawZipEntry,
  rawTarGz,
  rawZip,
  tarOf,
  zipOf,
} from './archives.js';

let dir: string;
let n = 0;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'voxd-unpack-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh case folder: `box/` holds the archive and `box/out/` is the destination, so a write
 * outside `out` (one `..`) lands in `box` and shows. */
function caseDir() {
  const box = join(dir, `case-${++n}`);
  const out = join(box, 'out');
  mkdirSync(out, { recursive: true });
  return { box, out };
}

for (const compress of ['gz', 'bz2'] as const) {
  test(`tar.${compress} made by Debian tar: the single top-level folder is the package folder`, async () => {
    const { box, out } = caseDir();
    const archive = join(box, `nemo.tar.${compress}`);
    tarOf('fake-nemo-ctc', archive, compress);
    const entries = await listTar(archive, compress === 'gz' ? 'tar.gz' : 'tar.bz2');
    assert.deepEqual(entries.map((e) => e.name).sort(), [
      'fake-nemo-ctc/',
      'fake-nemo-ctc/model.int8.onnx',
      'fake-nemo-ctc/model.onnx',
      'fake-nemo-ctc/tokens.txt',
    ]);
    const result = await unpack(archive, out);
    assert.equal(result.folder, join(out, 'fake-nemo-ctc'));
    assert.deepEqual(readdirSync(result.folder).sort(), ['model.int8.onnx', 'model.onnx', 'tokens.txt']);
  });
}

test('zip made by zip: files at the top level make the destination the package folder', async (t) => {
  if (!hasZip()) return t.skip('zip not installed');
  const { box, out } = caseDir();
  const archive = join(box, 'piper.zip');
  zipOf('fake-piper', archive);
  const result = await unpack(archive, out);
  assert.equal(result.folder, out);
  assert.deepEqual(readdirSync(out).sort(), ['model.onnx', 'tokens.txt']);
});

for (const format of ['gnu', 'pax'] as const) {
  test(`long names (${format} format) are read in full`, async () => {
    const { box, out } = caseDir();
    const deep = join(box, 'src', 'a'.repeat(60), 'b'.repeat(60));
    mkdirSync(deep, { recursive: true });
    writeFileSync(join(deep, `${'c'.repeat(80)}.txt`), 'x');
    const archive = join(box, 'long.tar.gz');
    execFileSync('tar', [`--format=${format}`, '-czf', archive, '-C', join(box, 'src'), '.']);
    const names = (await listTar(archive, 'tar.gz')).map((e) => e.name);
    assert.ok(names.some((name) => name.endsWith(`${'c'.repeat(80)}.txt`) && name.length > 200));
    await unpack(archive, out);
  });
}

const hostile: [string, RawEntry[], RegExp][] = [
  [
    'a ../ component',
    [
      { name: 'ok.txt', content: 'ok' },
      { name: '../escape', content: 'x' },
    ],
    /"\.\.\/escape".*'\.\.'/,
  ],
  [
    'an absolute path',
    [{ name: '/tmp/voxd-absolute-escape', content: 'x' }],
    /"\/tmp\/voxd-absolute-escape".*absolute/,
  ],
  ['a symlink pointing outside', [{ name: 'evil', type: '2', link: '../../outside' }], /"evil".*outside/],
  ['a symlink to an absolute path', [{ name: 'evil', type: '2', link: '/etc/passwd' }], /"evil".*absolute/],
  ['a symlink with .. that stays inside', [{ name: 'd/l', type: '2', link: '../x' }], /"d\/l".*'\.\.'/],
  ['a hard link outside', [{ name: 'h', type: '1', link: '../outside' }], /"h".*hard link/],
  ['a device file', [{ name: 'dev', type: '3' }], /"dev".*not a file/],
  [
    'a pax global header setting paths',
    [
      { name: 'pax_global_header', type: 'g', content: '13 path=../x\n' },
      { name: 'a', content: 'x' },
    ],
    /"pax global header".*path/,
  ],
  [
    'a pax global header setting linkpath',
    [
      { name: 'pax_global_header', type: 'g', content: paxRecord('linkpath', '/etc/passwd') },
      { name: 'l', type: '2', link: 'inside' },
    ],
    /"pax global header".*linkpath/,
  ],
  // The ustar name is harmless; the pax record gives the name every tar uses, and that is checked.
  [
    "a pax header naming the entry with '..'",
    [
      { name: 'PaxHeaders/innocent.txt', type: 'x', content: paxRecord('path', 'pkg/../../escape') },
      { name: 'innocent.txt', content: 'x' },
    ],
    /"pkg\/\.\.\/\.\.\/escape".*'\.\.'/,
  ],
  [
    'a pax header giving a symlink an absolute target',
    [
      { name: 'PaxHeaders/l', type: 'x', content: paxRecord('linkpath', '/etc/passwd') },
      { name: 'l', type: '2', link: 'harmless' },
    ],
    /"l".*absolute path \(\/etc\/passwd\)/,
  ],
  [
    'a hard link to an absolute path',
    [
      { name: 'ok.txt', content: 'ok' },
      { name: 'h', type: '1', link: '/etc/passwd' },
    ],
    /"h".*hard link pointing outside the folder \(\/etc\/passwd\)/,
  ],
  ['a FIFO', [{ name: 'pipe', type: '6' }], /"pipe".*not a file/],
  ['an old GNU sparse file', [{ name: 'sparse', type: 'S', content: 'x' }], /"sparse".*sparse file/],
  [
    'a pax sparse file (GNU.sparse records)',
    [
      {
        name: 'PaxHeaders/f',
        type: 'x',
        content:
          paxRecord('GNU.sparse.major', '1') +
          paxRecord('GNU.sparse.minor', '0') +
          paxRecord('GNU.sparse.name', 'f') +
          paxRecord('GNU.sparse.realsize', '1048576'),
      },
      { name: 'GNUSparseFile.0/f', content: '1\n0\n1\n' },
    ],
    /"GNUSparseFile\.0\/f".*sparse file/,
  ],
];

for (const [what, entries, message] of hostile) {
  test(`an archive with ${what} is refused, naming the entry, and nothing is written`, async () => {
    const { box, out } = caseDir();
    const archive = join(box, 'hostile.tar.gz');
    writeFileSync(archive, rawTarGz(entries));
    await assert.rejects(unpack(archive, out), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'E_UNSAFE_ARCHIVE');
      assert.match(err.message, message);
      return true;
    });
    assert.deepEqual(readdirSync(out), []);
    assert.deepEqual(readdirSync(box).sort(), ['hostile.tar.gz', 'out']);
    assert.ok(!existsSync('/tmp/voxd-absolute-escape'));
  });
}

/** Unpacking `bytes` fails with `code` and `message`, and leaves `out` empty and `box` as it was. */
async function refused(bytes: Buffer, name: string, code: string, message: RegExp) {
  const { box, out } = caseDir();
  const archive = join(box, name);
  writeFileSync(archive, bytes);
  await assert.rejects(unpack(archive, out), (err: Error & { code?: string }) => {
    assert.equal(err.code, code, err.message);
    assert.match(err.message, message);
    return true;
  });
  assert.deepEqual(readdirSync(out), [], 'nothing is left in the folder');
  assert.deepEqual(readdirSync(box).sort(), [name, 'out'].sort());
}

// Refused while extracting (the listing passes): what was written before is removed again.
test('a file written through a symbolic link to a folder inside is refused, and what was written is removed', async () => {
  await refused(
    rawTarGz([
      { name: 'sub/', type: '5' },
      { name: 'sub/model.onnx', content: 'm' },
      { name: 'd', type: '2', link: 'sub' },
      { name: 'd/x', content: 'x' },
    ]),
    'through-link.tar.gz',
    'E_UNSAFE_ARCHIVE',
    /"d\/x".*through the symbolic link "d"/,
  );
});

test('a hard link whose target goes through a symbolic link is refused', async () => {
  await refused(
    rawTarGz([
      { name: 'sub/', type: '5' },
      { name: 'sub/f', content: 'f' },
      { name: 's', type: '2', link: 'sub' },
      { name: 'h', type: '1', link: 's/f' },
    ]),
    'hardlink-through-link.tar.gz',
    'E_UNSAFE_ARCHIVE',
    /"h".*hard link to "s\/f"/,
  );
});

test('a later entry of the same name replaces a hard link or symlink, never writing through it', async () => {
  const { box, out } = caseDir();
  const archive = join(box, 'replace.tar.gz');
  writeFileSync(
    archive,
    rawTarGz([
      { name: 'a', content: 'first' },
      { name: 'b', type: '1', link: 'a' },
      { name: 'b', content: 'second' },
      { name: 'l', type: '2', link: 'target' },
      { name: 'l', content: 'plain' },
    ]),
  );
  await unpack(archive, out);
  assert.equal(readFileSync(join(out, 'a'), 'utf8'), 'first');
  assert.equal(readFileSync(join(out, 'b'), 'utf8'), 'second');
  assert.ok(lstatSync(join(out, 'l')).isFile());
  assert.ok(!existsSync(join(out, 'target')), 'nothing was written through the old link');
});

test('files get sane modes: no setuid, never unreadable to their owner, executable kept', async () => {
  const { box, out } = caseDir();
  const archive = join(box, 'modes.tar.gz');
  writeFileSync(
    archive,
    rawTarGz([
      { name: 'setuid', content: '#!/bin/sh\n', mode: '4755' },
      { name: 'locked', content: 'x', mode: '000' },
    ]),
  );
  await unpack(archive, out);
  const setuid = statSync(join(out, 'setuid')).mode;
  const locked = statSync(join(out, 'locked')).mode;
  assert.equal(setuid & 0o7000, 0, `setuid: ${setuid.toString(8)}`);
  assert.equal(setuid & 0o700, 0o700, `setuid: ${setuid.toString(8)}`);
  assert.equal(locked & 0o700, 0o600, `locked: ${locked.toString(8)}`);
});

test('a disk that fills while extracting (a 2 MiB tmpfs) fails E_INSUFFICIENT_STORAGE and is left empty', async (t) => {
  const disk = mountTmpfs(2 * 1024 * 1024);
  if (typeof disk === 'string') return t.skip(disk);
  try {
    const out = join(disk.dir, 'out');
    mkdirSync(out);
    const archive = join(dir, 'fills.tar.gz');
    writeFileSync(
      archive,
      rawTarGz([
        { name: 'pkg/', type: '5' },
        { name: 'pkg/a.bin', content: 'a'.repeat(1536 * 1024) },
        { name: 'pkg/b.bin', content: 'b'.repeat(1536 * 1024) },
      ]),
    );
    // The free space looks ample (as when another writer fills the disk meanwhile).
    await assert.rejects(
      unpack(archive, out, { freeSpace: async () => 1024 * 1024 * 1024 }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'E_INSUFFICIENT_STORAGE', err.message);
        assert.match(err.message, /the disk filled while extracting \(ENOSPC\)/);
        return true;
      },
    );
    assert.deepEqual(readdirSync(out), []);
    assert.ok(disk.free() > disk.size * 0.9, `${disk.free()} bytes free`);
  } finally {
    disk.unmount();
  }
});

const hostileZips: [string, RawZipEntry[], string, RegExp][] = [
  [
    'a symlink leaving the package',
    [
      { name: 'pkg/model.onnx', content: 'm' },
      { name: 'pkg/evil', content: '../../outside', mode: 0o120777 },
    ],
    'E_UNSAFE_ARCHIVE',
    /"pkg\/evil".*pointing outside the folder \(\.\.\/\.\.\/outside\)/,
  ],
  [
    'a symlink to an absolute path',
    [{ name: 'evil', content: '/etc/passwd', mode: 0o120777 }],
    'E_UNSAFE_ARCHIVE',
    /"evil".*absolute path \(\/etc\/passwd\)/,
  ],
  [
    'a ../ name',
    [
      { name: 'ok.txt', content: 'ok' },
      { name: '../escape', content: 'x' },
    ],
    'E_UNSAFE_ARCHIVE',
    /"\.\.\/escape".*'\.\.'/,
  ],
  [
    'a ..\\ name (a backslash reads as /)',
    [{ name: '..\\escape', content: 'x' }],
    'E_UNSAFE_ARCHIVE',
    /"\.\.\/escape".*'\.\.'/,
  ],
  ['an absolute name', [{ name: '/tmp/voxd-zip-escape', content: 'x' }], 'E_UNSAFE_ARCHIVE', /absolute/],
  [
    'a device file',
    [{ name: 'dev', content: '', mode: 0o020644 }],
    'E_UNSAFE_ARCHIVE',
    /"dev".*not a file, folder or link \(zip mode 020644\)/,
  ],
  [
    'a stored entry whose sizes disagree',
    [{ name: 'big.bin', content: 'x'.repeat(1000), declaredSize: 10 }],
    'E_UNSAFE_ARCHIVE',
    /"big\.bin".*stored entry of 1000 bytes that declares 10/,
  ],
  // Its size in the listing (and so against max_package_bytes) is 10 bytes; it inflates to 1 MiB.
  [
    'an entry whose declared size lies',
    [
      { name: 'ok.txt', content: 'ok' },
      { name: 'zeros.bin', content: '\0'.repeat(1024 * 1024), deflate: true, declaredSize: 10 },
    ],
    'E_UNSAFE_ARCHIVE',
    /"zeros\.bin".*more than the 10 bytes it declares/,
  ],
  [
    'an entry whose data fails its CRC-32',
    [{ name: 'model.onnx', content: 'model bytes', deflate: true, crc: 1234 }],
    'E_DOWNLOAD',
    /"model\.onnx" fails its CRC-32 check/,
  ],
];

for (const [what, entries, code, message] of hostileZips) {
  test(`a zip with ${what} is refused, naming the entry, and nothing is left`, async () => {
    await refused(rawZip(entries), 'hostile.zip', code, message);
    assert.ok(!existsSync('/tmp/voxd-zip-escape'));
  });
}

test('a zip symlink that points down inside the folder is kept; folders and modes as given', async () => {
  const { box, out } = caseDir();
  const archive = join(box, 'link.zip');
  writeFileSync(
    archive,
    rawZip([
      { name: 'pkg/', mode: 0o040755 },
      { name: 'pkg/model.onnx', content: 'model', deflate: true },
      { name: 'pkg/run.sh', content: '#!/bin/sh\n', mode: 0o100755 },
      { name: 'pkg/alias.onnx', content: 'model.onnx', mode: 0o120777 },
    ]),
  );
  const result = await unpack(archive, out);
  assert.equal(result.folder, join(out, 'pkg'));
  assert.equal(readlinkSync(join(out, 'pkg/alias.onnx')), 'model.onnx');
  assert.equal(readFileSync(join(out, 'pkg/alias.onnx'), 'utf8'), 'model');
  assert.equal(statSync(join(out, 'pkg/run.sh')).mode & 0o100, 0o100);
});

test('a symlink that points down inside the folder is kept', async () => {
  const { box, out } = caseDir();
  const archive = join(box, 'link.tar.gz');
  writeFileSync(
    archive,
    rawTarGz([
      { name: 'pkg/', type: '5' },
      { name: 'pkg/model.onnx', content: 'm' },
      { name: 'pkg/alias.onnx', type: '2', link: 'model.onnx' },
    ]),
  );
  const result = await unpack(archive, out);
  assert.equal(result.folder, join(out, 'pkg'));
});

test('not an archive: a clear error', async () => {
  const { box, out } = caseDir();
  const archive = join(box, 'junk.bin');
  writeFileSync(archive, 'hello, not an archive');
  await assert.rejects(unpack(archive, out), /not a tar\.bz2, tar\.gz, tar or zip archive/);
});
