/**
 * multipart/form-data bodies within max_request_body_bytes. Small files stay in memory; a file
 * part past SPOOL_THRESHOLD is written to a temporary file instead, so an upload of hundreds of
 * megabytes costs disk, not memory. Every failure (a body cut inside a part, malformed framing, a
 * limit, the client gone) rejects with one error and removes what was spooled; on success the
 * caller owns the body and must call dispose(). The bytes held in memory (file parts below the
 * threshold, fields) are taken from the request's share of the body budget as they arrive, and a
 * part's bytes go back to it once they are written to its spool file (body-budget.ts). A temporary
 * folder that fills up (ENOSPC, EDQUOT) is a 507, the server's condition, not a malformed request.
 */

import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { AudioSource } from '../../audio/input.js';
import { invalidField, invalidRequest, showValue, VoxdError } from '../../errors.js';
import { ownsItsMemory } from '../../util/own-memory.js';
import { memoryRelease } from '../../util/release-memory.js';
import { storageFull } from '../../util/storage-full.js';
import { type BodyLease, bodyLeaseOf } from '../transport/body-budget.js';
import { bodyIdleTimer, checkDeclaredLength } from './body.js';

/** Larger file parts go to disk. */
export const SPOOL_THRESHOLD = 1 << 20;
/** Plain fields (model, language, options...) are short; a longer one is refused, not truncated. */
const MAX_FIELD_BYTES = 1 << 20;

export interface UploadedFile {
  field: string;
  filename: string;
  size: number;
  /** The content: in memory, or an open temporary file that dispose() removes. */
  source: AudioSource;
}

export interface MultipartBody {
  fields: Map<string, string>;
  /** Every value of every field, in order: `fields` keeps only the last of a repeated name (`include[]`). */
  lists: Map<string, string[]>;
  files: UploadedFile[];
  /** Closes and removes the spooled files. Idempotent. */
  dispose(): Promise<void>;
}

export interface MultipartOptions {
  /** max_request_body_bytes */
  limit: number;
  /** body_timeout_ms: the body may pause this long between chunks; 0 = no limit. */
  idleMs: number;
}

export function isMultipart(req: IncomingMessage): boolean {
  return /^multipart\/form-data/i.test(req.headers['content-type'] ?? '');
}

/** The temporary folder of one request's spooled parts, made on first use. */
class Spool {
  #dir: Promise<string> | undefined;
  readonly #handles: FileHandle[] = [];
  #disposed = false;

  async create(): Promise<FileHandle> {
    this.#dir ??= mkdtemp(join(tmpdir(), 'voxd-upload-'));
    const dir = await this.#dir;
    const handle = await open(join(dir, String(this.#handles.length)), 'w+', 0o600);
    this.#handles.push(handle);
    // A dispose that ran while the file was being created must not miss it.
    if (this.#disposed) await this.dispose();
    return handle;
  }

  async dispose(): Promise<void> {
    this.#disposed = true;
    const handles = this.#handles.splice(0);
    await Promise.all(handles.map((h) => h.close().catch(() => {})));
    if (this.#dir) await rm(await this.#dir.catch(() => ''), { recursive: true, force: true });
  }
}

/** A write may take fewer bytes than given; the rest follows at the file's position. */
async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let done = 0; done < bytes.length; ) {
    done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
  }
}

/**
 * A spooled part's chunks are written this many bytes at a time (one writev): a write per chunk
 * of the socket cost the main thread about 40 µs each, 2 ms for a 60 s WAV (issue 27). What waits
 * for its write is at most this much per upload, beside what the socket holds anyway.
 */
export const SPOOL_BATCH_BYTES = 256 * 1024;

async function writeChunks(handle: FileHandle, chunks: Buffer[], bytes: number): Promise<void> {
  const { bytesWritten } = await handle.writev(chunks);
  if (bytesWritten < bytes) await writeAll(handle, Buffer.concat(chunks, bytes).subarray(bytesWritten));
}

/**
 * A part's chunks joined in memory of their own (not a slice of node's shared pool, as a join below
 * 4 KiB is): this request's alone, so its samples may be read in place rather than copied (decodeData).
 */
function joined(chunks: Buffer[]): AudioSource {
  const bytes = Buffer.concat(chunks);
  return { bytes, owned: ownsItsMemory(bytes) };
}

function malformed(err: Error): VoxdError {
  const detail = /unexpected end of form/i.test(err.message) ? 'the body ended inside a part' : err.message;
  return invalidRequest(`malformed multipart request: ${detail}`);
}

/** busboy for the request, or the 400 when its headers describe no multipart body it can read. */
function parserFor(req: IncomingMessage, limit: number): busboy.Busboy {
  try {
    return busboy({ headers: req.headers, limits: { fieldSize: MAX_FIELD_BYTES, fileSize: limit + 1 } });
  } catch (err) {
    throw invalidRequest(`malformed multipart request: ${(err as Error).message}`);
  }
}

/** Which error a file part's receive failed with: a full temporary folder is the server's, the rest busboy's verdict. */
function receiveFailure(err: unknown, field: string): unknown {
  if (err instanceof VoxdError) return err;
  return (
    storageFull(err, `the upload of field ${showValue(field)} could not be spooled`) ??
    malformed(err as Error)
  );
}

/**
 * One multipart body being read: its parts as they arrive, the bytes it counts against the limit,
 * its first failure. Every failure ends the read at once and keeps the rest of the body from
 * being parsed; `discard` then removes what was spooled.
 */
class MultipartRead {
  readonly #req: IncomingMessage;
  readonly #limit: number;
  readonly #lease: BodyLease | undefined;
  readonly #spool = new Spool();
  readonly #fields = new Map<string, string>();
  readonly #lists = new Map<string, string[]>();
  readonly #files: UploadedFile[] = [];
  readonly #receiving: Promise<void>[] = [];
  readonly #open = new Set<Readable>();
  #size = 0;
  #failure: unknown;
  #timer: { touch(): void; stop(): void } = bodyIdleTimer(0, () => {});
  #deadline: { stop(): void } | undefined;
  #parser: busboy.Busboy | undefined;
  #reject: ((err: unknown) => void) | undefined;

  constructor(req: IncomingMessage, limit: number) {
    this.#req = req;
    this.#limit = limit;
    this.#lease = bodyLeaseOf(req);
  }

  /** Pipes the request into `parser` and settles once the body is read and every file part received. */
  async read(parser: busboy.Busboy, idleMs: number): Promise<void> {
    this.#parser = parser;
    await new Promise<void>((resolve, reject) => {
      this.#reject = reject;
      this.#listen(parser, resolve, idleMs);
    });
    await Promise.all(this.#receiving);
    if (this.#failure !== undefined) throw this.#failure;
  }

  /** After a failure: waits for the parts still being received, then removes the spooled files. */
  async discard(err: unknown): Promise<unknown> {
    await Promise.allSettled(this.#receiving);
    await this.#spool.dispose();
    return this.#failure ?? err;
  }

  body(): MultipartBody {
    const spool = this.#spool;
    return { fields: this.#fields, lists: this.#lists, files: this.#files, dispose: () => spool.dispose() };
  }

  #listen(parser: busboy.Busboy, resolve: () => void, idleMs: number): void {
    const req = this.#req;
    // busboy gives a part without a name (or with name="") an undefined name; such a part is one
    // more field no route reads, so it goes under '' rather than break code that expects a string.
    parser.on('field', (name: string | undefined, value, info) => this.#field(name ?? '', value, info));
    parser.on('file', (field: string | undefined, stream, info) =>
      this.#file(field ?? '', info.filename ?? '', stream),
    );
    parser.on('error', (err: Error) => this.#fail(malformed(err)));
    parser.on('close', () => resolve());
    const fail = (err: unknown) => this.#fail(err);
    this.#timer = bodyIdleTimer(idleMs, fail, this.#lease?.clock);
    this.#deadline = this.#lease?.watchDeadline(fail);
    req.on('data', () => this.#timer.touch());
    req.on('end', () => {
      this.#timer.stop();
      this.#deadline?.stop();
    });
    req.on('error', fail);
    req.on('close', () => {
      if (!req.complete) this.#fail(new VoxdError('E_CLIENT_GONE', 'client closed the connection'));
    });
    req.pipe(parser);
  }

  #fail(err: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = err;
    this.#timer.stop();
    this.#deadline?.stop();
    // Everything read so far is garbage now, spooled or not (the socket's chunks die too).
    (this.#lease?.memory ?? memoryRelease).noteLargeBuffer(this.#size);
    if (this.#parser) this.#req.unpipe(this.#parser);
    // The rest of the body is read and dropped, so the error answer can still be delivered.
    this.#req.resume();
    // Parts still being received end now: their parser gets no more input.
    for (const stream of this.#open) stream.destroy();
    this.#reject?.(err);
  }

  #count(bytes: number): void {
    this.#size += bytes;
    if (this.#size > this.#limit)
      throw new VoxdError('E_BODY_TOO_LARGE', `request body exceeds max_request_body_bytes=${this.#limit}`);
  }

  #field(name: string, value: string, info: busboy.FieldInfo): void {
    if (this.#failure !== undefined) return;
    try {
      if (info.valueTruncated)
        throw invalidField(
          name,
          `${showValue(name)}: a form field may hold at most ${MAX_FIELD_BYTES} bytes`,
        );
      const bytes = Buffer.byteLength(value);
      this.#count(bytes);
      this.#lease?.hold(bytes);
      this.#fields.set(name, value);
      const list = this.#lists.get(name);
      if (list) list.push(value);
      else this.#lists.set(name, [value]);
    } catch (err) {
      this.#fail(err);
    }
  }

  #file(field: string, filename: string, stream: Readable): void {
    if (this.#failure !== undefined) return void stream.resume();
    this.#open.add(stream);
    // Parts keep their order in the body whichever finishes first.
    const index = this.#receiving.length;
    this.#receiving.push(
      this.#receive(index, field, filename, stream)
        .catch((err: unknown) => this.#fail(receiveFailure(err, field)))
        .finally(() => this.#open.delete(stream)),
    );
  }

  /** One file part, into memory and past the threshold into a spooled file; backpressure through for-await. */
  async #receive(index: number, field: string, filename: string, stream: Readable): Promise<void> {
    const chunks: Buffer[] = [];
    let fileSize = 0;
    let handle: FileHandle | undefined;
    let batch: Buffer[] = [];
    let batched = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      this.#count(chunk.length);
      fileSize += chunk.length;
      if (handle) {
        batch.push(chunk);
        batched += chunk.length;
        if (batched >= SPOOL_BATCH_BYTES) {
          const full = batch;
          batch = [];
          await writeChunks(handle, full, batched);
          batched = 0;
        }
        continue;
      }
      this.#lease?.hold(chunk.length);
      chunks.push(chunk);
      if (fileSize > SPOOL_THRESHOLD) {
        handle = await this.#spool.create();
        await writeChunks(handle, chunks, fileSize);
        chunks.length = 0;
        this.#lease?.free(fileSize);
      }
    }
    if (handle && batched > 0) await writeChunks(handle, batch, batched);
    const source: AudioSource = handle ? { file: handle, size: fileSize } : joined(chunks);
    this.#files[index] = { field, filename, size: fileSize, source };
  }
}

export async function readMultipart(req: IncomingMessage, options: MultipartOptions): Promise<MultipartBody> {
  checkDeclaredLength(req, options.limit);
  const parser = parserFor(req, options.limit);
  const read = new MultipartRead(req, options.limit);
  try {
    await read.read(parser, options.idleMs);
  } catch (err) {
    throw await read.discard(err);
  }
  return read.body();
}
