import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { listTar, unpack } from '../../src/models/unpack.js';
import { hasZip, type RawEntry, rawTarGz, tarOf, zipOf } from './archives.js';

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
  if (!hasZip()) return t.skip('zip/unzip not installed');
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
