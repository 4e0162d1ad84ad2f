/**
 * Unpacks a package archive (tar.bz2, tar.gz/tgz, plain tar, zip) into a folder without ever
 * writing outside it. One parser per format reads every entry, in process: node-tar's `Parser`
 * for tar (after node:zlib's gunzip, or `bzip2 -dc` as a decompressing pipe: bzip2 is not in
 * node:zlib) and yauzl for zip (its central directory, then each entry's data). What that parser
 * reports is what is checked and what is written, so a listing and an extraction cannot disagree.
 *
 * Three layers, each enough on its own for the common attacks:
 *   1. the listing refuses the archive as it goes, naming the entry, for an absolute path, a `..`
 *      component, a symbolic link that is absolute or has a `..` in its target, a hard link
 *      outside, a device file, FIFO, sparse file or unknown entry type, a pax global header that
 *      sets paths, an oversized or undecodable entry; and it bounds the archive: at most
 *      `maxEntries` entries (MAX_ARCHIVE_ENTRIES by default), at most `maxBytes` expanded bytes
 *      (max_package_bytes), and no more than the destination has free. The tar listing stops as
 *      soon as a bound is passed, so a bomb is decompressed only up to the bound and never
 *      written; a zip's bounds come from its central directory, before any data is inflated;
 *   2. the extraction (tar read again by the same parser, each entry compared with the listing)
 *      writes as the unprivileged owner with fixed modes (0644, or 0755 when an execute bit is
 *      set; no owner, no setuid), creates folders itself and refuses a path through a symbolic
 *      link, never writes through an existing link (a file or link in the way is unlinked first),
 *      and stops an entry that holds more bytes than it declared (or whose zip CRC-32 differs);
 *   3. afterwards every path under the folder is resolved with realpath and must stay inside.
 * On any failure once writing began, what this call added to the folder is removed again.
 */
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { link, lstat, mkdir, open, readdir, realpath, rm, statfs, symlink, unlink } from 'node:fs/promises';
import { isAbsolute, join, posix, relative, sep } from 'node:path';
import { pipeline, type Readable } from 'node:stream';
import { crc32, createGunzip } from 'node:zlib';
import { Parser, type ReadEntry, types as tarTypes } from 'tar';
import yauzl from 'yauzl';
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
  /** Bytes the entry takes once extracted (0 for folders and links). */
  size: number;
}

/** Entries an archive may hold: model packages have a few dozen files, espeak-ng data a few hundred. */
export const MAX_ARCHIVE_ENTRIES = 20_000;

/** A zip symlink's target is its data; longer than this is no path. */
const MAX_LINK_TARGET = 4096;

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
  /** `boundBytes: false` leaves the byte bound to the caller (a zip's exact total is known at once). */
  add(size: number, boundBytes = true): void {
    this.entries++;
    this.bytes += size;
    if (this.entries > this.maxEntries) throw tooMany(this.archive, this.maxEntries);
    if (boundBytes && this.maxBytes > 0 && this.bytes > this.maxBytes)
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

/** VoxdErrors as they are; a full disk as E_INSUFFICIENT_STORAGE; anything else: unreadable. */
function asArchiveError(archive: string, err: unknown): VoxdError {
  if (err instanceof VoxdError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return new VoxdError(
      'E_INSUFFICIENT_STORAGE',
      `archive ${archive}: the disk filled while extracting (${code})`,
      {
        cause: err,
      },
    );
  return badArchive(archive, err instanceof Error ? err.message : String(err), err);
}

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

/** A decompressed tar stream. `done` settles once the decompressor has exited (bzip2's exit
 * status; at once for the others, whose errors fail the stream); `stop` ends it early. */
interface TarSource {
  stream: Readable;
  done: Promise<void>;
  stop(): void;
}

function tarSource(path: string, format: ArchiveFormat): TarSource {
  if (format !== 'tar.bz2') {
    const file = createReadStream(path);
    // pipeline: a destroyed gunzip closes the file too, and an error of either fails the last stream.
    const stream = format === 'tar.gz' ? pipeline(file, createGunzip(), () => {}) : file;
    return { stream, done: Promise.resolve(), stop: () => stream.destroy() };
  }
  const child = spawn('bzip2', ['-dc', path], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stopped = false;
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    if (stderr.length < 2000) stderr += d;
  });
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', (err: NodeJS.ErrnoException) => {
      const failure =
        err.code === 'ENOENT' ? new Error('bzip2 is not installed (the Debian package bzip2)') : err;
      child.stdout.destroy(failure);
      reject(failure);
    });
    child.on('close', (code, signal) => {
      if (code === 0 || stopped) return resolve();
      const failure = new Error(`bzip2 exited with ${code ?? signal}: ${stderr.trim().slice(0, 500)}`);
      child.stdout.destroy(failure);
      reject(failure);
    });
  });
  done.catch(() => {}); // read by the caller; a stopped or failed listing may never look
  return {
    stream: child.stdout,
    done,
    stop: () => {
      stopped = true;
      child.stdout.destroy();
      child.kill();
    },
  };
}

const TAR_TYPES = new Map<string, EntryType>([
  ['File', 'file'],
  ['OldFile', 'file'],
  ['ContiguousFile', 'file'],
  ['Directory', 'directory'],
  ['SymbolicLink', 'symlink'],
  ['Link', 'hardlink'],
]);

/** A pax header with GNU.sparse records: the next entry is a sparse file whose data is a map. */
const SPARSE_PAX = /(?:^|\n)\d+ GNU\.sparse\./;

/** The entry as node-tar reads it: its path and link after GNU long names and pax records. */
function fromTar(entry: ReadEntry, sparse: boolean): ArchiveEntry {
  const known = TAR_TYPES.get(entry.type);
  const type: EntryType = sparse ? 'other' : (known ?? 'other');
  // The bytes the parser hands over for it (a pax `size` counts, as every tar reads it).
  const content = entry.header.size ?? 0;
  const code = tarTypes.code.get(entry.type) ?? entry.type;
  return {
    name: entry.path,
    type,
    size: type === 'file' || type === 'other' ? content : 0,
    ...(type === 'symlink' || type === 'hardlink' ? { linkTarget: entry.linkpath ?? '' } : {}),
    ...(type === 'other'
      ? {
          detail:
            sparse || entry.type === 'SparseFile' ? 'a sparse file' : `tar type ${JSON.stringify(code)}`,
        }
      : {}),
  };
}

type Body = () => AsyncIterable<Buffer>;

/** A file entry's data, or none; its mode bits. */
interface EntryData {
  body?: Body;
  mode: number;
  /** A zip entry's CRC-32, checked as it is written. */
  crc?: number;
}

/**
 * The first failure of a reading, and the waits it must end. Not a race against one long-lived
 * promise: each race would add a reaction to it that keeps its result (a chunk of data) alive
 * until the end.
 */
class FirstFailure {
  error: unknown;
  readonly #waiting = new Set<(err: unknown) => void>();

  get failed(): boolean {
    return this.error !== undefined;
  }

  fail(err: unknown): void {
    if (this.error !== undefined) return;
    this.error = err;
    for (const stop of this.#waiting) stop(err);
    this.#waiting.clear();
  }

  /** `promise`'s result, or a rejection with the failure as soon as there is one. */
  unless<T>(promise: Promise<T>): Promise<T> {
    if (this.error !== undefined) return Promise.reject(this.error);
    return new Promise<T>((resolve, reject) => {
      this.#waiting.add(reject);
      promise.then(
        (value) => {
          this.#waiting.delete(reject);
          resolve(value);
        },
        (err: unknown) => {
          this.#waiting.delete(reject);
          reject(err);
        },
      );
    });
  }
}

/** What the parser has told of the archive so far. */
interface TarReading {
  /** The entries' visits, one after the other; settles after the last. */
  readonly chain: Promise<void>;
  /** Whether the end-of-archive blocks were read (what follows them is never decompressed). */
  readonly atEnd: boolean;
  /** Settles once the parser has ended. */
  readonly ended: Promise<void>;
}

/**
 * Reads a tar archive with node-tar's Parser and calls `visit` for each entry, one at a time, in
 * order; an entry's data is what `body` yields (what `visit` leaves unread is skipped). Stops
 * reading at the first refusal or error, and at the end-of-archive blocks (what follows them is
 * never decompressed). Rejects with the first error; every stream and child is ended by then.
 */
async function readTar(
  path: string,
  format: ArchiveFormat,
  visit: (entry: ArchiveEntry, data: EntryData) => void | Promise<void>,
): Promise<void> {
  const failure = new FirstFailure();
  // strict: a header node-tar would skip with a warning (a bad checksum, truncated data) is an error.
  const parser = new Parser({ strict: true, brotli: false, zstd: false });
  const reading = visitEntries(path, parser, failure, visit);
  await feedTar(path, tarSource(path, format), parser, failure, reading);
  if (!failure.failed) {
    parser.end();
    await failure.unless(reading.ended).catch(() => {});
  }
  await reading.chain;
  if (failure.failed) throw failure.error;
}

/** Hands each entry the parser reads to `visit`, after the previous one's visit has ended. */
function visitEntries(
  path: string,
  parser: Parser,
  failure: FirstFailure,
  visit: (entry: ArchiveEntry, data: EntryData) => void | Promise<void>,
): TarReading {
  let chain: Promise<void> = Promise.resolve();
  let atEnd = false;
  let sparseNext = false;
  const ended = new Promise<void>((resolve) => parser.on('end', () => resolve()));
  const bodyOf = (entry: ReadEntry): Body =>
    async function* () {
      const chunks = entry[Symbol.asyncIterator]();
      for (;;) {
        const next = await failure.unless(chunks.next());
        if (next.done) return;
        yield next.value as Buffer;
      }
    };
  const onEntry = (entry: ReadEntry) => {
    const sparse = sparseNext;
    sparseNext = false;
    chain = chain.then(async () => {
      try {
        if (failure.failed) return;
        const listed = checkedTarEntry(path, entry, sparse);
        await visit(listed, {
          ...(listed.type === 'file' ? { body: bodyOf(entry) } : {}),
          mode: entry.mode ?? 0o644,
        });
      } catch (err) {
        failure.fail(err);
      } finally {
        entry.resume();
      }
    });
  };
  parser.on('entry', onEntry);
  // Unknown types (and sparse 'S' files) node-tar skips, and meta headers past its 1 MiB bound:
  // both are refused in turn, not skipped.
  parser.on('ignoredEntry', onEntry);
  parser.on('meta', (text: string) => {
    if (SPARSE_PAX.test(text)) sparseNext = true;
  });
  parser.on('error', (err: Error) => failure.fail(badArchive(path, err.message, err)));
  parser.on('eof', () => {
    atEnd = true;
  });
  return {
    get chain() {
      return chain;
    },
    get atEnd() {
      return atEnd;
    },
    ended,
  };
}

/** The entry as listed, or a refusal of a header that would change other entries or is too big to read. */
function checkedTarEntry(path: string, entry: ReadEntry, sparse: boolean): ArchiveEntry {
  const global = entry.globalExtended;
  if (global && (global.path !== undefined || global.linkpath !== undefined))
    // A global header naming paths would rename every later entry.
    throw unsafe(path, 'pax global header', 'it sets path or linkpath for every entry');
  if (entry.meta) throw badArchive(path, `a ${entry.type} header of ${entry.size} bytes`);
  return fromTar(entry, sparse);
}

/** Writes the decompressed archive into the parser until its end, a failure, or the source's end. */
async function feedTar(
  path: string,
  source: TarSource,
  parser: Parser,
  failure: FirstFailure,
  reading: TarReading,
): Promise<void> {
  try {
    for await (const chunk of source.stream as AsyncIterable<Buffer>) {
      if (failure.failed || reading.atEnd) break;
      if (!parser.write(chunk)) await failure.unless(new Promise((resolve) => parser.once('drain', resolve)));
      if (failure.failed || reading.atEnd) break;
    }
    // A failed bzip2 fails the archive even when what it wrote looked whole.
    if (!failure.failed && !reading.atEnd) await source.done;
  } catch (err) {
    failure.fail(failure.error ?? badArchive(path, (err as Error).message, err));
  } finally {
    source.stop();
  }
}

/**
 * Lists a tar archive's entries (content is skipped, not kept), counting them against `tally`
 * and passing each to `check` as it is read, so a refusal stops the reading at that entry.
 */
export async function listTar(
  path: string,
  format: ArchiveFormat,
  tally: Tally = noLimits(path),
  check: (entry: ArchiveEntry) => void = () => {},
): Promise<ArchiveEntry[]> {
  const entries: ArchiveEntry[] = [];
  await readTar(path, format, (entry) => {
    check(entry);
    entries.push(entry);
    tally.add(entry.size);
  });
  return entries;
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/** A zip entry and what it is: Unix modes when a Unix zip wrote them; a name ending in `/` is a
 * folder. An entry without file-type bits in its mode (Python's zipfile writes `?rw-------`), or
 * from another system, is a plain file, as unzip extracts it. */
interface ZipItem {
  entry: ArchiveEntry;
  raw: yauzl.Entry;
  mode: number;
}

function fromZip(raw: yauzl.Entry): ZipItem {
  // Decoded as yauzl does (UTF-8 flag, Info-ZIP Unicode path field, else CP437; `\` read as `/`)
  // but checked by voxd, so that a refusal names the entry.
  const name = yauzl.getFileNameLowLevel(raw.generalPurposeBitFlag, raw.fileNameRaw, raw.extraFields, false);
  const unix = raw.versionMadeBy >> 8 === 3;
  const mode = unix ? (raw.externalFileAttributes >>> 16) & 0xffff : 0;
  const kind = mode & S_IFMT;
  const dosFolder = !unix && (raw.externalFileAttributes & 0x10) !== 0;
  const size = raw.uncompressedSize;
  let entry: ArchiveEntry;
  if (name.endsWith('/') || kind === S_IFDIR || dosFolder) entry = { name, type: 'directory', size: 0 };
  else if (kind === S_IFLNK) entry = { name, type: 'symlink', linkTarget: '', size: 0 };
  else if (kind === 0 || kind === S_IFREG) entry = { name, type: 'file', size };
  else entry = { name, type: 'other', detail: `zip mode 0${mode.toString(8)}`, size };
  return { entry, raw, mode };
}

const zipOptions: yauzl.Options = {
  lazyEntries: true,
  autoClose: false,
  // Names are decoded and checked here (yauzl would refuse `..` without naming it as voxd does);
  // sizes are counted as the data is written, so a lie stops the entry.
  decodeStrings: false,
  validateEntrySizes: false,
  strictFileNames: false,
};

async function withZip<T>(path: string, use: (zip: yauzl.ZipFile) => Promise<T>): Promise<T> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(path, zipOptions);
  } catch (err) {
    throw badArchive(path, (err as Error).message, err);
  }
  // Errors reach the reader through eachEntry and the entry streams; one after those (closing the
  // file) must not go unheard and crash the process.
  zip.on('error', () => {});
  try {
    return await use(zip);
  } finally {
    zip.close();
  }
}

/** An entry's data as yauzl inflates it (the stream is destroyed when the reader stops early). */
function zipBody(zip: yauzl.ZipFile, raw: yauzl.Entry): Body {
  return async function* () {
    const stream = await zip.openReadStreamPromise(raw);
    for await (const chunk of stream as AsyncIterable<Buffer>) yield chunk;
  };
}

/** A zip symlink's target: its data, read whole (it is short). */
async function zipLinkTarget(archive: string, zip: yauzl.ZipFile, item: ZipItem): Promise<string> {
  const { raw, entry } = item;
  if (raw.uncompressedSize > MAX_LINK_TARGET)
    throw unsafe(archive, entry.name, `a symbolic link target of ${raw.uncompressedSize} bytes`);
  const chunks: Buffer[] = [];
  let got = 0;
  for await (const chunk of zipBody(zip, raw)()) {
    got += chunk.length;
    if (got > MAX_LINK_TARGET) throw unsafe(archive, entry.name, 'a symbolic link target past 4096 bytes');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a zip's central directory, checking each entry as it comes; after the entry count (from
 * the end record, before a name is read) and the total expanded size are checked. */
async function readZipListing(
  archive: string,
  zip: yauzl.ZipFile,
  tally: Tally,
  check: (entry: ArchiveEntry) => void,
): Promise<ZipItem[]> {
  if (zip.entryCount > tally.maxEntries) throw tooMany(archive, tally.maxEntries);
  const items: ZipItem[] = [];
  try {
    for await (const raw of zip.eachEntry()) {
      const item = fromZip(raw);
      const { entry } = item;
      if (entry.type === 'file' || entry.type === 'symlink') {
        if (raw.isEncrypted()) throw badArchive(archive, `entry ${JSON.stringify(entry.name)} is encrypted`);
        if (raw.compressionMethod !== 0 && raw.compressionMethod !== 8)
          throw badArchive(
            archive,
            `entry ${JSON.stringify(entry.name)} uses compression method ${raw.compressionMethod} (only stored and deflated are read)`,
          );
        if (raw.compressionMethod === 0 && raw.compressedSize !== raw.uncompressedSize)
          throw unsafe(
            archive,
            entry.name,
            `a stored entry of ${raw.compressedSize} bytes that declares ${raw.uncompressedSize}`,
          );
      }
      if (entry.type === 'symlink') {
        check({ ...entry, linkTarget: '.' }); // its name first, before its data is read
        entry.linkTarget = await zipLinkTarget(archive, zip, item);
      }
      check(entry);
      items.push(item);
      tally.add(entry.size, false);
    }
  } catch (err) {
    throw asArchiveError(archive, err);
  }
  if (tally.maxBytes > 0 && tally.bytes > tally.maxBytes)
    throw tooBig(archive, tally.bytes, tally.maxBytes, false);
  return items;
}

/** Lists a zip's entries from its central directory (symlink targets read from their data). */
export async function listZip(path: string, tally: Tally = noLimits(path)): Promise<ArchiveEntry[]> {
  return withZip(path, async (zip) => (await readZipListing(path, zip, tally, () => {})).map((i) => i.entry));
}

async function freeBytes(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

const components = (name: string) => name.split('/').filter((c) => c !== '' && c !== '.');

/** Throws E_UNSAFE_ARCHIVE if the entry could land outside the folder, naming it. */
export function checkEntry(archive: string, entry: ArchiveEntry): void {
  const { name } = entry;
  if (name === '' || name.includes('\0')) throw unsafe(archive, name, 'an empty name');
  if (name.startsWith('/') || /^[A-Za-z]:[\\/]/.test(name) || name.startsWith('\\'))
    throw unsafe(archive, name, 'an absolute path');
  if (name.split(/[\\/]/).includes('..')) throw unsafe(archive, name, "a '..' path component");
  if (entry.type === 'other') throw unsafe(archive, name, `not a file, folder or link (${entry.detail})`);
  if (entry.type !== 'directory' && components(name).length === 0)
    throw unsafe(archive, name, 'a file or link in place of the folder itself');
  if (entry.type === 'symlink') {
    const target = entry.linkTarget ?? '';
    if (target === '' || isAbsolute(target) || target.startsWith('\\') || /^[A-Za-z]:[\\/]/.test(target))
      throw unsafe(archive, name, `a symbolic link to an absolute path (${target})`);
    const resolved = posix.normalize(posix.join(posix.dirname(name), target));
    if (resolved === '..' || resolved.startsWith('../'))
      throw unsafe(archive, name, `a symbolic link pointing outside the folder (${target})`);
    // A link through another link with '..' can climb out although it looks inside; only
    // links pointing down are accepted.
    if (target.split(/[\\/]/).includes('..'))
      throw unsafe(archive, name, `a symbolic link with a '..' component (${target})`);
  }
  if (entry.type === 'hardlink') {
    const target = entry.linkTarget ?? '';
    if (target === '' || isAbsolute(target) || target.split(/[\\/]/).includes('..'))
      throw unsafe(archive, name, `a hard link pointing outside the folder (${target})`);
    if (components(target).length === 0) throw unsafe(archive, name, 'a hard link to the folder itself');
  }
}

/** Throws E_UNSAFE_ARCHIVE naming the first entry that could land outside the folder. */
export function checkEntries(archive: string, entries: readonly ArchiveEntry[]): void {
  for (const entry of entries) checkEntry(archive, entry);
}

const sameEntry = (a: ArchiveEntry, b: ArchiveEntry | undefined) =>
  b !== undefined &&
  a.name === b.name &&
  a.type === b.type &&
  a.size === b.size &&
  (a.linkTarget ?? '') === (b.linkTarget ?? '');

const lstatOrNone = (path: string) =>
  lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });

/** Bytes gathered before one write: few syscalls, bounded memory. */
const WRITE_BATCH = 1024 * 1024;

async function writeAll(file: import('node:fs/promises').FileHandle, data: Buffer): Promise<void> {
  for (let at = 0; at < data.length; ) at += (await file.write(data, at)).bytesWritten;
}

/**
 * Writes entries under `root`, itself creating every folder on the way: a path component that
 * is a symbolic link (or not a folder) is refused, a file or link in the way is unlinked (never
 * written through), and a file gets mode 0644, or 0755 when the archive gave it an execute bit.
 */
class Extraction {
  /** Folders (relative, '' = root) known to be real folders: made here, or found so. */
  readonly #folders = new Set<string>(['']);

  constructor(
    readonly archive: string,
    readonly root: string,
  ) {}

  async put(entry: ArchiveEntry, data: EntryData): Promise<void> {
    const parts = components(entry.name);
    if (entry.type === 'directory') {
      await this.#folder(parts, entry.name);
      return;
    }
    const path = await this.#place(parts, entry.name);
    if (entry.type === 'symlink') await symlink(entry.linkTarget ?? '', path);
    else if (entry.type === 'hardlink') await this.#hardlink(entry, path);
    else if (entry.type === 'file') await this.#file(entry, path, data);
    else throw unsafe(this.archive, entry.name, `not a file, folder or link (${entry.detail})`);
  }

  /** Makes (or finds) the folders `parts`; returns the absolute path. */
  async #folder(parts: string[], shown: string): Promise<string> {
    let rel = '';
    for (const part of parts) {
      rel = rel === '' ? part : `${rel}/${part}`;
      if (this.#folders.has(rel)) continue;
      const path = join(this.root, rel);
      const info = await lstatOrNone(path);
      if (info === undefined) await mkdir(path, { mode: 0o755 });
      else if (info.isSymbolicLink())
        throw unsafe(this.archive, shown, `its path goes through the symbolic link ${JSON.stringify(rel)}`);
      else if (!info.isDirectory())
        throw unsafe(
          this.archive,
          shown,
          `its path goes through ${JSON.stringify(rel)}, which is not a folder`,
        );
      this.#folders.add(rel);
    }
    return join(this.root, ...parts);
  }

  /** The path for a file or link: its folder made, whatever is there unlinked (a folder refused). */
  async #place(parts: string[], shown: string): Promise<string> {
    await this.#folder(parts.slice(0, -1), shown);
    const path = join(this.root, ...parts);
    if (this.#folders.has(parts.join('/'))) throw unsafe(this.archive, shown, 'it would replace a folder');
    const info = await lstatOrNone(path);
    if (info?.isDirectory()) throw unsafe(this.archive, shown, 'it would replace a folder');
    if (info !== undefined) await unlink(path);
    return path;
  }

  async #hardlink(entry: ArchiveEntry, path: string): Promise<void> {
    const parts = components(entry.linkTarget ?? '');
    const why = `a hard link to ${JSON.stringify(entry.linkTarget)}, which is not a file extracted before it`;
    let rel = '';
    for (const part of parts.slice(0, -1)) {
      rel = rel === '' ? part : `${rel}/${part}`;
      if (this.#folders.has(rel)) continue;
      const info = await lstatOrNone(join(this.root, rel));
      if (!info?.isDirectory()) throw unsafe(this.archive, entry.name, why);
    }
    const target = join(this.root, ...parts);
    if (!(await lstatOrNone(target))?.isFile()) throw unsafe(this.archive, entry.name, why);
    await link(target, path);
  }

  async #file(entry: ArchiveEntry, path: string, data: EntryData): Promise<void> {
    const file = await open(path, 'wx', data.mode & 0o111 ? 0o755 : 0o644);
    let written = 0;
    let crc = 0;
    try {
      let batch: Buffer[] = [];
      let batched = 0;
      for await (const chunk of data.body?.() ?? []) {
        written += chunk.length;
        if (written > entry.size)
          throw unsafe(this.archive, entry.name, `it holds more than the ${entry.size} bytes it declares`);
        if (data.crc !== undefined) crc = crc32(chunk, crc);
        batch.push(chunk);
        batched += chunk.length;
        if (batched >= WRITE_BATCH) {
          await writeAll(file, Buffer.concat(batch, batched));
          batch = [];
          batched = 0;
        }
      }
      if (batched > 0) await writeAll(file, Buffer.concat(batch, batched));
    } finally {
      await file.close();
    }
    if (written !== entry.size)
      throw badArchive(
        this.archive,
        `entry ${JSON.stringify(entry.name)} holds ${written} bytes, not the ${entry.size} it declares`,
      );
    if (data.crc !== undefined && crc >>> 0 !== data.crc >>> 0)
      throw badArchive(this.archive, `entry ${JSON.stringify(entry.name)} fails its CRC-32 check`);
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

/** Runs `write` into `dest`, re-checks what it wrote, and returns the package folder; on any
 * failure removes what this call added to `dest` (what was there before stays). */
async function extractInto(
  archive: string,
  dest: string,
  write: (out: Extraction) => Promise<void>,
): Promise<UnpackResult> {
  const before = new Set(await readdir(dest));
  try {
    await write(new Extraction(archive, dest));
    const count = await checkExtracted(archive, dest);
    const top = await readdir(dest);
    if (top.length === 1) {
      const only = join(dest, top[0]!);
      if ((await lstat(only)).isDirectory()) return { folder: only, entries: count };
    }
    return { folder: dest, entries: count };
  } catch (err) {
    for (const name of await readdir(dest).catch(() => []))
      if (!before.has(name)) await rm(join(dest, name), { recursive: true, force: true }).catch(() => {});
    throw asArchiveError(archive, err);
  }
}

async function checkFreeSpace(archive: string, dest: string, bytes: number, limits: UnpackLimits) {
  const free = await (limits.freeSpace ?? freeBytes)(dest);
  if (bytes > free)
    throw new VoxdError(
      'E_INSUFFICIENT_STORAGE',
      `archive ${archive} refused before extraction: it expands to ${bytes} bytes; ${dest} has ${free} free`,
    );
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
  const tally = new Tally(archive, limits.maxEntries ?? MAX_ARCHIVE_ENTRIES, limits.maxBytes ?? 0);
  const check = (entry: ArchiveEntry) => checkEntry(archive, entry);
  if (format === 'zip')
    return withZip(archive, async (zip) => {
      const items = await readZipListing(archive, zip, tally, check);
      await checkFreeSpace(archive, dest, tally.bytes, limits);
      return extractInto(archive, dest, async (out) => {
        for (const { entry, raw, mode } of items)
          await out.put(entry, {
            mode,
            ...(entry.type === 'file' ? { body: zipBody(zip, raw), crc: raw.crc32 } : {}),
          });
      });
    });
  const listed = await listTar(archive, format, tally, check);
  await checkFreeSpace(archive, dest, tally.bytes, limits);
  return extractInto(archive, dest, async (out) => {
    let index = 0;
    await readTar(archive, format, async (entry, data) => {
      // The same parser over the same bytes: anything else means the file changed meanwhile.
      if (!sameEntry(entry, listed[index++]))
        throw badArchive(archive, `entry ${JSON.stringify(entry.name)} differs from the listing read before`);
      await out.put(entry, data);
    });
    if (index !== listed.length) throw badArchive(archive, 'fewer entries than the listing read before');
  });
}
