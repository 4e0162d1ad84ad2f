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
