/** Archives for installer tests: real ones made by Debian tar/zip, and hostile ones built by hand. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';
import type { CatalogPackage } from '../../src/models/catalog.js';

export const FIXTURES = new URL('../../../test/fixtures/models/', import.meta.url).pathname;

/** `tar` of a fixture model folder (its name is the archive's one top-level folder). */
export function tarOf(fixture: string, out: string, compress: 'gz' | 'bz2'): Buffer {
  execFileSync('tar', [compress === 'gz' ? '-czf' : '-cjf', out, '-C', FIXTURES, fixture]);
  return readFileSync(out);
}

/** Whether Info-ZIP's zip is here to make test zips (voxd reads zips itself, with yauzl). */
export function hasZip(): boolean {
  try {
    execFileSync('zip', ['-v'], { stdio: 'ignore' });
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
  /** Octal mode bits. @default '644' */
  mode?: string;
}

/** One pax extended header record (`<length> key=value\n`, the length counting itself). */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length)
    length = String(length).length + Buffer.byteLength(body);
  return `${length}${body}`;
}

function header(entry: RawEntry, size: number): Buffer {
  const h = Buffer.alloc(512);
  const put = (text: string, at: number, len: number) => h.write(text, at, len, 'utf8');
  put(entry.name, 0, 100);
  put(`${(entry.mode ?? '644').padStart(7, '0')}\0`, 100, 8);
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

export interface RawZipEntry {
  name: string;
  content?: string;
  /** The Unix mode, file-type bits included (0o120777 a symlink). @default 0o100644 */
  mode?: number;
  /** Deflated rather than stored. */
  deflate?: boolean;
  /** The uncompressed size the headers declare. @default the content's length */
  declaredSize?: number;
  /** The CRC-32 the headers declare. @default the content's */
  crc?: number;
}

/** A zip (made on Unix, UTF-8 names) with exactly these entries, sizes and modes as given. */
export function rawZip(entries: RawZipEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const data = Buffer.from(entry.content ?? '');
    const stored = entry.deflate ? deflateRawSync(data) : data;
    const crc = (entry.crc ?? crc32(data)) >>> 0;
    const size = entry.declaredSize ?? data.length;
    const method = entry.deflate ? 8 : 0;
    const name = Buffer.from(entry.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x800, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(stored.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE((3 << 8) | 20, 4); // made on Unix
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(0x800, 8);
    header.writeUInt16LE(method, 10);
    header.writeUInt16LE(0x21, 14);
    header.writeUInt32LE(crc, 16);
    header.writeUInt32LE(stored.length, 20);
    header.writeUInt32LE(size, 24);
    header.writeUInt16LE(name.length, 28);
    header.writeUInt32LE(((entry.mode ?? 0o100644) << 16) >>> 0, 38);
    header.writeUInt32LE(offset, 42);
    parts.push(local, name, stored);
    central.push(header, name);
    offset += local.length + name.length + stored.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directory, end]);
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
