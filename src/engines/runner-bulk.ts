/**
 * Large typed arrays between the server and a runner process go through a file in the runner's
 * temporary folder rather than through the IPC pipe (issue 27). Through the pipe, the server's main
 * thread serialises them (a copy into V8's serializer, grown by doubling, then another into the
 * framed message) and parses the replies (more copies), and the garbage of each copy is the main
 * thread's to collect: about 0.5 ms for 5 s of 16 kHz audio. Through a file, the copies are made by
 * libuv's pool threads (the server's side) and by the runner itself; the main thread only starts the
 * file operations. Small arrays stay in the message, where three file operations would cost more;
 * so does a job's input audio below BULK_IN_MIN_BYTES.
 *
 * The runner's folder is removed when the runner exits (runner-temp.ts), so a file a dead runner or
 * a cancelled call leaves behind goes with it.
 */
import { closeSync, openSync, unlink, unlinkSync, writeFile, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readFileInto, readFullySync } from '../util/read-fully.js';

/**
 * Arrays of at least this many bytes go through a file (1 s of 16 kHz PCM16 is 32 KB). Measured:
 * a 20-word flite answer (180 KB) cost the main thread 1.6 ms parsed from the pipe and 1.1-1.2 ms
 * read from a file; 5 s of input audio (160 KB) cost the same either way (within 0.1 ms in 150
 * rounds each), and 60 s, with the serializer's buffer grown by doubling, costs more in the pipe.
 */
export const BULK_MIN_BYTES = 64 * 1024;

/**
 * A job's arrays (the server's input audio to the runner) go through a file only from this size on.
 * The pipe costs the server's main thread about what the file does, but the file costs the runner
 * a fresh buffer, three system calls and an unlink per job, and the server three trips through
 * libuv's pool: a 6 s VAD request took 20.8-22.5 ms through the file and 18.0 ms through the pipe,
 * the runner's CPU 19.9-21.6 against 17.1-17.3 ms (issue 42, docs/performance.md). Replies keep
 * BULK_MIN_BYTES: a 180 KB TTS answer parsed from the pipe costs the main thread 0.3 ms more than
 * one read from its file.
 */
export const BULK_IN_MIN_BYTES = 1024 * 1024;

const TYPES = { Int16Array, Float32Array, Uint8Array } as const;
type BulkType = keyof typeof TYPES;

/** What a message carries in place of an array that went through a file. */
interface BulkRef {
  bulkFile: string;
  type: BulkType;
  length: number;
}

const isBulkRef = (value: unknown): value is BulkRef =>
  typeof value === 'object' && value !== null && typeof (value as BulkRef).bulkFile === 'string';

function bulkType(value: unknown, minBytes: number): BulkType | undefined {
  if (!ArrayBuffer.isView(value) || value.byteLength < minBytes) return undefined;
  const name = value.constructor.name;
  return name in TYPES ? (name as BulkType) : undefined;
}

let nextFile = 0;
/** A file name unique within the folder: the writer's side and a counter. */
const fileName = (side: 'in' | 'out') => `bulk-${side}-${process.pid}-${nextFile++}`;

/** Only names this module makes are read: a runner's reply never names a path of its choosing. */
const SAFE_NAME = /^bulk-(in|out)-\d+-\d+$/;

function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** `message` with some of its fields replaced; itself when none is. */
function replaced<M extends object>(message: M, fields: Record<string, unknown>): M {
  return Object.keys(fields).length > 0 ? { ...message, ...fields } : message;
}

/** The large arrays of `message`, each with the reference that stands for it (not yet written). */
function largeArrays(message: object, side: 'in' | 'out'): [string, Uint8Array, BulkRef][] {
  return Object.entries(message).flatMap(([key, value]) => {
    const type = bulkType(value, side === 'in' ? BULK_IN_MIN_BYTES : BULK_MIN_BYTES);
    if (!type) return [];
    const view = value as ArrayBufferView & { length: number };
    return [[key, bytesOf(view), { bulkFile: fileName(side), type, length: view.length }]];
  });
}

/** References to arrays, each checked: only names this module makes are read. */
function bulkRefs(message: object): [string, BulkRef][] {
  return Object.entries(message).filter(
    (entry): entry is [string, BulkRef] => isBulkRef(entry[1]) && SAFE_NAME.test(entry[1].bulkFile),
  );
}

/** Server side: `message` with its large arrays written to files of `dir`; unchanged if none. */
export async function writeBulk<M extends object>(message: M, dir: string): Promise<M> {
  const fields: Record<string, unknown> = {};
  for (const [key, bytes, ref] of largeArrays(message, 'in')) {
    // fs's callback form: fs/promises' opens a FileHandle, an object of its own for every file.
    await new Promise<void>((resolve, reject) =>
      writeFile(join(dir, ref.bulkFile), bytes, { mode: 0o600, flag: 'wx' }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    fields[key] = ref;
  }
  return replaced(message, fields);
}

/**
 * An array of `ref`'s type and length whose memory is not zeroed first: the file's bytes overwrite
 * it whole (a short read is an error). Blocks of a TTS answer's size (190 KB) come from the
 * allocator's arenas rather than fresh zero pages (release-memory.ts), and zeroing them took a
 * 20-word TTS request's main thread from 2.2-2.5 ms to 2.9-3.8 ms; without it, 1.9-2.2 ms.
 */
function unfilled(ref: BulkRef): InstanceType<(typeof TYPES)[BulkType]> {
  const Type = TYPES[ref.type];
  const memory = Buffer.allocUnsafeSlow(ref.length * Type.BYTES_PER_ELEMENT);
  return new Type(memory.buffer, memory.byteOffset, ref.length);
}

/** Server side: a reply's arrays read back from `dir` (each straight into its own typed array), files removed. */
export async function readBulk<M extends object>(message: M, dir: string): Promise<M> {
  const fields: Record<string, unknown> = {};
  for (const [key, ref] of bulkRefs(message)) {
    const array = unfilled(ref);
    const bytes = bytesOf(array);
    const path = join(dir, ref.bulkFile);
    try {
      if ((await readFileInto(path, bytes)) < bytes.byteLength)
        throw new Error(`${ref.bulkFile} ended early`);
    } finally {
      // A file a failed unlink leaves goes with the runner's folder.
      await new Promise((resolve) => unlink(path, resolve));
    }
    fields[key] = array;
  }
  return replaced(message, fields);
}

/** Whether a message has arrays to read from files (most do not). */
export const hasBulk = (message: object): boolean => Object.values(message).some(isBulkRef);

/** Runner side: a job's arrays read from its folder, files removed. */
export function readBulkSync<M extends object>(message: M, dir: string): M {
  const fields: Record<string, unknown> = {};
  for (const [key, ref] of bulkRefs(message)) {
    const array = unfilled(ref);
    const bytes = bytesOf(array);
    const path = join(dir, ref.bulkFile);
    const fd = openSync(path, 'r');
    try {
      if (readFullySync(fd, bytes, 0) < bytes.byteLength) throw new Error(`${ref.bulkFile} ended early`);
    } finally {
      closeSync(fd);
      unlinkSync(path);
    }
    fields[key] = array;
  }
  return replaced(message, fields);
}

/** Runner side: a reply's large arrays written to its folder. */
export function writeBulkSync<M extends object>(message: M, dir: string): M {
  const fields: Record<string, unknown> = {};
  for (const [key, bytes, ref] of largeArrays(message, 'out')) {
    writeFileSync(join(dir, ref.bulkFile), bytes, { mode: 0o600, flag: 'wx' });
    fields[key] = ref;
  }
  return replaced(message, fields);
}
