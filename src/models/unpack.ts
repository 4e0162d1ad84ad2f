/**
 * Unpacks a package archive (tar.bz2, tar.gz/tgz, plain tar, zip) into a folder without ever
 * writing outside it. Three layers, each enough on its own for the common attacks:
 *   1. every entry is listed first, by voxd's own tar header parser or `unzip -Z`, and the archive
 *      is refused, naming the entry, for an absolute path, a `..` component, a link that is
 *      absolute or climbs with `..`, a device file or FIFO, an unknown entry type;
 *   2. GNU tar / Info-ZIP unzip extract it, as the unprivileged owner (`--no-same-owner
 *      --no-same-permissions`), and they refuse `..` names and writes through symlinks themselves;
 *   3. afterwards every path under the folder is resolved with realpath and must stay inside.
 * bzip2 is not in node:zlib, so `bzip2 -dc` (Debian's bzip2) decompresses for the listing.
 *
 * Before anything is extracted, the listing also bounds the archive: at most `maxEntries` entries
 * (MAX_ARCHIVE_ENTRIES by default) and at most `maxBytes` expanded bytes (max_package_bytes), and
 * no more than the destination has free. The tar listing stops as soon as a bound is passed, so a
 * bomb is only decompressed up to the bound, never written.
 */
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { lstat, open, readdir, realpath, statfs } from 'node:fs/promises';
import { isAbsolute, join, posix, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { VoxdError } from '../errors.js';

export type ArchiveFormat = 'tar.bz2' | 'tar.gz' | 'tar' | 'zip';

export type EntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'other';

export interface ArchiveEntry {
  name: string;
  type: EntryType;
  /** Symlink and hardlink targets. */
  linkTarget?: string;
  /** What `other` is (a tar type flag, a zip mode). */
  detail?: string;
  /** Bytes the entry takes once extracted (a sparse file's real size; 0 for folders and links). */
  size: number;
}

/** Entries an archive may hold: model packages have a few dozen files, espeak-ng data a few hundred. */
export const MAX_ARCHIVE_ENTRIES = 20_000;

export interface UnpackLimits {
  /** @default MAX_ARCHIVE_ENTRIES */
  maxEntries?: number;
  /** Expanded bytes at most; 0 = no limit. @default 0 */
  maxBytes?: number;
  /** Free bytes at a path (a seam for tests). @default statfs's bavail × bsize */
  freeSpace?: (dir: string) => Promise<number>;
}

const tooMany = (archive: string, max: number) =>
  new VoxdError(
    'E_PACKAGE_TOO_LARGE',
    `archive ${archive} refused before extraction: more than ${max} entries`,
  );

const tooBig = (archive: string, bytes: number, max: number, partial: boolean) =>
  new VoxdError(
    'E_PACKAGE_TOO_LARGE',
    `archive ${archive} refused before extraction: it expands to ${partial ? 'at least ' : ''}${bytes} bytes, past max_package_bytes (${max})`,
  );

/** Counts entries and bytes as a listing goes, throwing as soon as a bound is passed. */
class Tally {
  entries = 0;
  bytes = 0;
  constructor(
    readonly archive: string,
    readonly maxEntries: number,
    readonly maxBytes: number,
  ) {}
  add(size: number): void {
    this.entries++;
    this.bytes += size;
    if (this.entries > this.maxEntries) throw tooMany(this.archive, this.maxEntries);
    if (this.maxBytes > 0 && this.bytes > this.maxBytes)
      throw tooBig(this.archive, this.bytes, this.maxBytes, true);
  }
}

const noLimits = (archive: string) => new Tally(archive, Number.POSITIVE_INFINITY, 0);

export interface UnpackResult {
  /** The package folder: `dest`, or its single top-level folder. */
  folder: string;
  entries: number;
}

const unsafe = (archive: string, entry: string, why: string) =>
  new VoxdError('E_UNSAFE_ARCHIVE', `archive ${archive}: entry ${JSON.stringify(entry)} refused: ${why}`);

const badArchive = (archive: string, what: string, cause?: unknown) =>
  new VoxdError('E_DOWNLOAD', `archive ${archive} cannot be read: ${what}`, { cause });

/** The format from the first bytes (names lie more often than magic numbers). */
export async function detectFormat(path: string): Promise<ArchiveFormat> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await file.read(head, 0, 512, 0);
    if (head.subarray(0, 3).toString('latin1') === 'BZh') return 'tar.bz2';
    if (head[0] === 0x1f && head[1] === 0x8b) return 'tar.gz';
    if (head.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))) return 'zip';
    if (bytesRead >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
    throw badArchive(path, 'not a tar.bz2, tar.gz, tar or zip archive');
  } finally {
    await file.close();
  }
}

/** Runs a tool, resolving with its stdout; a non-zero exit is an error carrying its stderr. */
function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${cmd} exited with ${code}: ${err.trim().slice(0, 500)}`)),
    );
  });
}

/** The decompressed tar stream; for bzip2, a failed `bzip2 -dc` fails the stream. */
function tarStream(path: string, format: ArchiveFormat): Readable {
  if (format === 'tar.gz') return createReadStream(path).pipe(createGunzip());
  if (format === 'tar') return createReadStream(path);
  const child = spawn('bzip2', ['-dc', path], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.on('error', (err) => child.stdout.destroy(err));
  child.on('close', (code) => {
    if (code !== 0) child.stdout.destroy(new Error(`bzip2 exited with ${code}: ${stderr.trim()}`));
  });
  return child.stdout;
}

const TAR_TYPES: Record<string, EntryType> = {
  '0': 'file',
  '\0': 'file',
  '7': 'file',
  S: 'file',
  '5': 'directory',
  '2': 'symlink',
  '1': 'hardlink',
};

/** A tar number field: octal text, or GNU's base-256 (high bit set) for large sizes. */
function tarNumber(field: Buffer): number {
  if (field[0]! & 0x80) {
    let value = field[0]! & 0x7f;
    for (const byte of field.subarray(1)) value = value * 256 + byte;
    return value;
  }
  const text = field.toString('latin1').replace(/\0.*$/s, '').trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

const cString = (field: Buffer) => {
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? field.length : end).toString('utf8');
};

/** The records of a pax extended header (`<len> key=value\n`). */
function paxRecords(data: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space === -1) break;
    const len = Number(data.subarray(at, space).toString('latin1'));
    if (!Number.isInteger(len) || len <= 0) break;
    const record = data.subarray(space + 1, at + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) records.set(record.slice(0, eq), record.slice(eq + 1));
    at += len;
  }
  return records;
}

/** A sparse file's real size (GNU old `S` header, or pax GNU.sparse.* records), if it is one. */
function sparseSize(flag: string, header: Buffer, pax: Map<string, string>): number | undefined {
  const fromPax = pax.get('GNU.sparse.realsize') ?? pax.get('GNU.sparse.size');
  if (fromPax !== undefined && /^\d+$/.test(fromPax)) return Number(fromPax);
  if (flag === 'S') return tarNumber(header.subarray(483, 495));
  return undefined;
}

/** Lists a tar stream's entries by reading its headers (content is skipped, not kept). */
export async function listTar(
  path: string,
  format: ArchiveFormat,
  tally: Tally = noLimits(path),
): Promise<ArchiveEntry[]> {
  const entries: ArchiveEntry[] = [];
  let pending: Buffer = Buffer.alloc(0);
  let skip = 0;
  /** Metadata an `L`/`K`/`x` header gives the next entry, and the content being collected for it. */
  let longName: string | undefined;
  let longLink: string | undefined;
  let pax = new Map<string, string>();
  let collecting: { kind: string; size: number; chunks: Buffer[]; got: number } | undefined;
  let ended = false;
  const stream = tarStream(path, format);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (ended) continue;
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      for (;;) {
        if (collecting) {
          const take = Math.min(collecting.size - collecting.got, pending.length);
          collecting.chunks.push(pending.subarray(0, take));
          collecting.got += take;
          pending = pending.subarray(take);
          if (collecting.got < collecting.size) break;
          const data = Buffer.concat(collecting.chunks);
          if (collecting.kind === 'L') longName = cString(data);
          else if (collecting.kind === 'K') longLink = cString(data);
          else if (collecting.kind === 'x') pax = paxRecords(data);
          else if ([...paxRecords(data).keys()].some((key) => key === 'path' || key === 'linkpath'))
            // A global header naming paths would rename later entries in ways this check does not follow.
            throw unsafe(path, 'pax global header', 'it sets path or linkpath for every entry');
          skip = (512 - (collecting.size % 512)) % 512;
          collecting = undefined;
        }
        if (skip > 0) {
          const take = Math.min(skip, pending.length);
          skip -= take;
          pending = pending.subarray(take);
          if (skip > 0) break;
        }
        if (pending.length < 512) break;
        const header = pending.subarray(0, 512);
        pending = pending.subarray(512);
        if (header.every((b) => b === 0)) {
          ended = true;
          break;
        }
        const stored = tarNumber(header.subarray(148, 156));
        let sum = 8 * 0x20;
        for (let i = 0; i < 512; i++) if (i < 148 || i >= 156) sum += header[i]!;
        if (sum !== stored) throw badArchive(path, `bad tar header checksum after ${entries.length} entries`);
        const flag = String.fromCharCode(header[156]!);
        const size = tarNumber(header.subarray(124, 136));
        if (flag === 'L' || flag === 'K' || flag === 'x' || flag === 'g') {
          if (size > 1024 * 1024) throw badArchive(path, `a ${flag} header of ${size} bytes`);
          collecting = { kind: flag, size, chunks: [], got: 0 };
          continue;
        }
        const prefix =
          header.subarray(257, 263).toString('latin1') === 'ustar\0'
            ? cString(header.subarray(345, 500))
            : '';
        const base = cString(header.subarray(0, 100));
        const name = pax.get('path') ?? longName ?? (prefix ? `${prefix}/${base}` : base);
        const link = pax.get('linkpath') ?? longLink ?? cString(header.subarray(157, 257));
        const type = TAR_TYPES[flag] ?? 'other';
        // tar reads a pax `size` instead of the header's: so must the listing, or the two would
        // part ways and the listing would check other entries than those tar extracts.
        const paxSize = pax.get('size');
        const contentSize = paxSize !== undefined && /^\d+$/.test(paxSize) ? Number(paxSize) : size;
        const real = sparseSize(flag, header, pax) ?? contentSize;
        const expanded = type === 'file' || type === 'other' ? real : 0;
        entries.push({
          name,
          type,
          size: expanded,
          ...(type === 'symlink' || type === 'hardlink' ? { linkTarget: link } : {}),
          ...(type === 'other' ? { detail: `tar type ${JSON.stringify(flag)}` } : {}),
        });
        tally.add(expanded);
        longName = undefined;
        longLink = undefined;
        pax = new Map();
        // Directories and links have no content; a file's is skipped with its padding.
        skip = type === 'file' || type === 'other' ? Math.ceil(contentSize / 512) * 512 : 0;
      }
    }
  } catch (err) {
    stream.destroy();
    if (err instanceof VoxdError) throw err;
    throw badArchive(path, (err as Error).message, err);
  }
  if (!ended && entries.length === 0) throw badArchive(path, 'no tar entries');
  return entries;
}

/**
 * Lists a zip's entries with Info-ZIP's zipinfo (`unzip -Z1` for exact names, `-Z -s` for modes
 * and sizes), after its totals (`unzip -Zt`, one line) are checked against the bounds, so a zip of
 * many entries is refused before its listing is even read. An entry without file-type bits in its
 * mode (Python's zipfile writes `?rw-------`) is a plain file, as unzip extracts it.
 */
export async function listZip(path: string, tally: Tally = noLimits(path)): Promise<ArchiveEntry[]> {
  let names: string[];
  let long: string[];
  try {
    const totals = /^(\d+) files?, (\d+) bytes? uncompressed/m.exec(await run('unzip', ['-Zt', path]));
    if (!totals) throw new Error('zipinfo gave no totals');
    if (Number(totals[1]) > tally.maxEntries) throw tooMany(path, tally.maxEntries);
    if (tally.maxBytes > 0 && Number(totals[2]) > tally.maxBytes)
      throw tooBig(path, Number(totals[2]), tally.maxBytes, false);
    names = (await run('unzip', ['-Z1', path])).split('\n').filter((l) => l !== '');
    long = (await run('unzip', ['-Z', '-s', path]))
      .split('\n')
      // Entry lines: mode, zip version, system, size (the first and last lines are a header and a summary).
      .filter((l) => /^\S+\s+\d+\.\d+\s+\S+\s+\d+\s/.test(l));
  } catch (err) {
    if (err instanceof VoxdError) throw err;
    throw badArchive(path, (err as Error).message, err);
  }
  if (names.length !== long.length)
    throw badArchive(path, 'zipinfo listings disagree (a name with a line break?)');
  return names.map((name, i): ArchiveEntry => {
    const line = long[i]!;
    const mode = line[0];
    const size = Number(/^\S+\s+\S+\s+\S+\s+(\d+)\s/.exec(line)?.[1] ?? 0);
    const directory = mode === 'd' || name.endsWith('/');
    tally.add(directory ? 0 : size);
    if (directory) return { name, type: 'directory', size: 0 };
    if (mode === '-' || mode === '?') return { name, type: 'file', size };
    if (mode === 'l') return { name, type: 'symlink', linkTarget: '?', size: 0 };
    return { name, type: 'other', detail: `zip mode ${line.slice(0, 10)}`, size };
  });
}

async function freeBytes(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

const components = (name: string) => name.split('/').filter((c) => c !== '' && c !== '.');

/** Throws E_UNSAFE_ARCHIVE naming the first entry that could land outside the folder. */
export function checkEntries(archive: string, entries: readonly ArchiveEntry[], format: ArchiveFormat): void {
  for (const entry of entries) {
    const { name } = entry;
    if (name === '' || name.includes('\0')) throw unsafe(archive, name, 'an empty name');
    if (name.startsWith('/') || /^[A-Za-z]:[\\/]/.test(name) || name.startsWith('\\'))
      throw unsafe(archive, name, 'an absolute path');
    if (name.split(/[\\/]/).includes('..')) throw unsafe(archive, name, "a '..' path component");
    if (entry.type === 'other') throw unsafe(archive, name, `not a file, folder or link (${entry.detail})`);
    if (entry.type === 'symlink') {
      // zipinfo does not show a zip symlink's target, so zip symlinks are refused outright.
      if (format === 'zip') throw unsafe(archive, name, 'a symbolic link in a zip archive');
      const target = entry.linkTarget ?? '';
      if (target === '' || isAbsolute(target) || target.startsWith('\\'))
        throw unsafe(archive, name, `a symbolic link to an absolute path (${target})`);
      const resolved = posix.normalize(posix.join(posix.dirname(name), target));
      if (resolved === '..' || resolved.startsWith('../'))
        throw unsafe(archive, name, `a symbolic link pointing outside the folder (${target})`);
      // A link through another link with '..' can climb out although it looks inside; only
      // links pointing down are accepted.
      if (target.split('/').includes('..'))
        throw unsafe(archive, name, `a symbolic link with a '..' component (${target})`);
    }
    if (entry.type === 'hardlink') {
      const target = entry.linkTarget ?? '';
      if (target === '' || isAbsolute(target) || target.split('/').includes('..'))
        throw unsafe(archive, name, `a hard link pointing outside the folder (${target})`);
      if (components(target).length === 0) throw unsafe(archive, name, 'a hard link to the folder itself');
    }
  }
}

/** Every path under `root` (links not followed) must resolve inside it. */
async function checkExtracted(archive: string, root: string): Promise<number> {
  const realRoot = await realpath(root);
  let count = 0;
  const walk = async (dir: string): Promise<void> => {
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      const info = await lstat(path);
      const shown = relative(root, path);
      if (!info.isFile() && !info.isDirectory() && !info.isSymbolicLink())
        throw unsafe(archive, shown, 'extracted as a special file');
      const real = await realpath(path).catch(() => {
        throw unsafe(archive, shown, 'a link that resolves nowhere');
      });
      if (real !== realRoot && !real.startsWith(realRoot + sep))
        throw unsafe(archive, shown, `resolves outside the folder (${real})`);
      count++;
      if (info.isDirectory()) await walk(path);
    }
  };
  await walk(root);
  return count;
}

/**
 * Lists, checks and extracts `archive` into `dest` (an empty folder that exists). Returns the
 * package folder: `dest`, or its one top-level folder when the archive holds nothing else.
 * E_UNSAFE_ARCHIVE names a refused entry, E_PACKAGE_TOO_LARGE a bound passed and
 * E_INSUFFICIENT_STORAGE too little free space (nothing is extracted then); E_DOWNLOAD: unreadable.
 */
export async function unpack(
  archive: string,
  dest: string,
  limits: UnpackLimits = {},
): Promise<UnpackResult> {
  const format = await detectFormat(archive);
  const maxBytes = limits.maxBytes ?? 0;
  const tally = new Tally(archive, limits.maxEntries ?? MAX_ARCHIVE_ENTRIES, maxBytes);
  const entries = format === 'zip' ? await listZip(archive, tally) : await listTar(archive, format, tally);
  checkEntries(archive, entries, format);
  const free = await (limits.freeSpace ?? freeBytes)(dest);
  if (tally.bytes > free)
    throw new VoxdError(
      'E_INSUFFICIENT_STORAGE',
      `archive ${archive} refused before extraction: it expands to ${tally.bytes} bytes; ${dest} has ${free} free`,
    );
  try {
    if (format === 'zip') await run('unzip', ['-q', '-o', archive, '-d', dest]);
    else
      await run('tar', [
        '-x',
        ...(format === 'tar.gz' ? ['-z'] : format === 'tar.bz2' ? ['-j'] : []),
        '-f',
        archive,
        '-C',
        dest,
        '--no-same-owner',
        '--no-same-permissions',
      ]);
  } catch (err) {
    throw badArchive(archive, (err as Error).message, err);
  }
  const count = await checkExtracted(archive, dest);
  const top = await readdir(dest);
  if (top.length === 1) {
    const only = join(dest, top[0]!);
    if ((await lstat(only)).isDirectory()) return { folder: only, entries: count };
  }
  return { folder: dest, entries: count };
}
