/** Archives for installer tests: real ones made by Debian tar/zip, and hostile ones built by hand. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { CatalogPackage } from '../../src/models/catalog.js';

export const FIXTURES = new URL('../../../test/fixtures/models/', import.meta.url).pathname;

/** `tar` of a fixture model folder (its name is the archive's one top-level folder). */
export function tarOf(fixture: string, out: string, compress: 'gz' | 'bz2'): Buffer {
  execFileSync('tar', [compress === 'gz' ? '-czf' : '-cjf', out, '-C', FIXTURES, fixture]);
  return readFileSync(out);
}

export function hasZip(): boolean {
  try {
    execFileSync('zip', ['-v'], { stdio: 'ignore' });
    execFileSync('unzip', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A zip of a fixture folder's files (no top-level folder). */
export function zipOf(fixture: string, out: string): Buffer {
  execFileSync('zip', ['-q', '-r', '-j', out, join(FIXTURES, fixture)]);
  return readFileSync(out);
}

export interface RawEntry {
  name: string;
  /** '0' file, '2' symlink, '1' hardlink, '3' char device, '5' directory. */
  type?: string;
  content?: string;
  link?: string;
}

function header(entry: RawEntry, size: number): Buffer {
  const h = Buffer.alloc(512);
  const put = (text: string, at: number, len: number) => h.write(text, at, len, 'utf8');
  put(entry.name, 0, 100);
  put('0000644\0', 100, 8);
  put('0000000\0', 108, 8);
  put('0000000\0', 116, 8);
  put(`${size.toString(8).padStart(11, '0')}\0`, 124, 12);
  put('00000000000\0', 136, 12);
  put(entry.type ?? '0', 156, 1);
  put(entry.link ?? '', 157, 100);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return h;
}

/** A gzipped tar with exactly these entries, names and links as given (no tool would write them). */
export function rawTarGz(entries: RawEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const data = Buffer.from(entry.content ?? '');
    parts.push(header(entry, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(parts));
}

/** A catalogue entry for the fake NeMo CTC folder, served by a test's hub at `url` (GitHub-style). */
export function fakeNemoPackage(id: string, url: string, sizeBytes: number): CatalogPackage {
  return {
    id,
    family: 'nemo_ctc_asr',
    task: 'asr',
    description: 'a fake NeMo CTC model (test)',
    licence: 'test',
    homepage: 'http://example.invalid',
    archive: { source: 'github', url, size_bytes: sizeBytes, sha256: null },
  };
}

/** A gzipped tar of `files` (name, size) whose contents are zeros, streamed (a bomb: tiny, expands huge). */
export async function zerosTarGz(out: string, files: { name: string; size: number }[]): Promise<Buffer> {
  const { createWriteStream } = await import('node:fs');
  const { pipeline } = await import('node:stream/promises');
  const { Readable } = await import('node:stream');
  const { createGzip } = await import('node:zlib');
  const zeros = Buffer.alloc(1024 * 1024);
  async function* tar() {
    for (const file of files) {
      yield header({ name: file.name }, file.size);
      for (let left = file.size; left > 0; left -= zeros.length)
        yield zeros.subarray(0, Math.min(left, zeros.length));
      yield Buffer.alloc((512 - (file.size % 512)) % 512);
    }
    yield Buffer.alloc(1024);
  }
  await pipeline(Readable.from(tar()), createGzip({ level: 1 }), createWriteStream(out));
  return readFileSync(out);
}

/** A gzipped tar of `count` empty files under one folder. */
export function manyFilesTarGz(count: number): Buffer {
  const entries: RawEntry[] = [{ name: 'many/', type: '5' }];
  for (let i = 0; i < count; i++) entries.push({ name: `many/f${i}` });
  return rawTarGz(entries);
}

/**
 * A zip written by Python's zipfile (`writestr`: modes without file-type bits, `?rw-------`): the
 * files of a fixture folder, or `count` empty files, or one file of `zeros` zero bytes.
 */
export function pythonZip(
  out: string,
  what: { fixture: string } | { count: number } | { zeros: number },
): Buffer {
  const script = `
import os, sys, zipfile
out, kind, arg = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    if kind == 'fixture':
        for name in sorted(os.listdir(arg)):
            with open(os.path.join(arg, name), 'rb') as f:
                z.writestr(name, f.read())
    elif kind == 'count':
        for i in range(int(arg)):
            z.writestr('f%d' % i, b'')
    else:
        with z.open('zeros.bin', 'w', force_zip64=True) as f:
            chunk = bytes(1 << 20)
            left = int(arg)
            while left > 0:
                f.write(chunk[:min(left, len(chunk))])
                left -= len(chunk)
`;
  const [kind, arg] =
    'fixture' in what
      ? ['fixture', join(FIXTURES, what.fixture)]
      : 'count' in what
        ? ['count', String(what.count)]
        : ['zeros', String(what.zeros)];
  execFileSync('python3', ['-c', script, out, kind, arg]);
  return readFileSync(out);
}
