/**
 * One file fetched over HTTP(S) into `<dest>.part`, then renamed to `dest` once its size and
 * sha256 check out. A `.part` left by a broken or stopped download is resumed with a Range request;
 * a server that answers the whole file (200) instead restarts it from byte 0. Only node:http and
 * node:https: no dependency, and a mirror or a test server stands in through the catalogue's bases.
 *
 * Bounds: a file never grows past `maxBytes`, nor (when its length is unknown) past the free space
 * found when it started, so a server that sends without end cannot fill the disk; past either, or
 * on ENOSPC, the `.part` is deleted (a full disk must not stay full for a resume). Targets are
 * checked by url-guard.ts on every hop. A host that cannot be reached is E_HOST_UNREACHABLE, told
 * apart from an HTTP error status (E_DOWNLOAD): a name that does not resolve says so, and every
 * other failure before an HTTP answer (refused, reset, timed out, not HTTP) reads the same
 * ("no HTTP answer"), so the messages do not tell an open port from a closed one.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open as fsOpen, rename, stat, statfs, unlink } from 'node:fs/promises';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { dirname } from 'node:path';
import { VoxdError } from '../errors.js';
import { checkUrlHost, guardedLookup, type HostPolicy, PUBLIC_ONLY, showUrl } from './url-guard.js';

export interface DownloadOptions {
  url: string;
  /** The final path; bytes arrive in `<dest>.part` first. */
  dest: string;
  /** Checked when known (null/undefined: not checked, the server's Content-Length still is). */
  expectedSize?: number | null;
  /** Lowercase hex; checked when known. */
  sha256?: string | null;
  /** Stops the download at once: the socket is destroyed and the promise rejects with the reason. */
  signal?: AbortSignal;
  /** Called as bytes arrive; `total` is null while unknown. */
  onProgress?: (downloaded: number, total: number | null) => void;
  /** A connection that sends nothing for this long fails with E_DOWNLOAD_STALLED. @default 30000 (ms) */
  stallTimeoutMs?: number;
  /** @default 5 */
  maxRedirects?: number;
  /** Free bytes at a path (a seam for tests). @default statfs's bavail × bsize */
  freeSpace?: (dir: string) => Promise<number>;
  /** The largest file (E_PACKAGE_TOO_LARGE past it); 0 = no limit. @default 0 */
  maxBytes?: number;
  /** Which hosts may be fetched from. @default public addresses only */
  hosts?: HostPolicy;
}

export interface DownloadResult {
  path: string;
  size: number;
  sha256: string;
  /** Bytes that were already there from an earlier attempt (0: a fresh download). */
  resumedFrom: number;
}

export const partialPath = (dest: string) => `${dest}.part`;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** The installer's step prefix says "download failed"; the cause is told without saying it again. */
const downloadError = (url: string, what: string, cause?: unknown) =>
  new VoxdError('E_DOWNLOAD', `${showUrl(url)}: ${what}`, { cause });

const unreachable = (url: URL, why: string, cause?: unknown) =>
  new VoxdError('E_HOST_UNREACHABLE', `could not reach ${url.host}: ${why}`, { cause });

/** One message for every failure before an HTTP answer: refused, reset, filtered, not HTTP. */
const noAnswer = (url: URL, cause?: unknown) =>
  unreachable(url, 'no HTTP answer (is this machine offline, or is the host down?)', cause);

/** An HTTP status that is not the file, worded by who is at fault: the URL, the access, the server. */
function statusError(original: string, final: URL, res: IncomingMessage): VoxdError {
  const status = res.statusCode ?? 0;
  const answer = `HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}`;
  const at = final.href === new URL(original).href ? '' : ` (redirected to ${showUrl(final.href)})`;
  const what =
    status === 404 || status === 410
      ? `there is no such file on ${final.host}${at}: ${answer}`
      : status === 401 || status === 403
        ? `${final.host} refused to send it${at}: ${answer}`
        : status >= 500
          ? `${final.host} could not send it${at}: ${answer}; try again later`
          : `${final.host} answered ${answer}${at}`;
  return new VoxdError('E_DOWNLOAD', `${showUrl(original)}: ${what}`);
}

const tooLarge = (url: string, what: string) =>
  new VoxdError('E_PACKAGE_TOO_LARGE', `download of ${showUrl(url)} refused: ${what}`);

export async function freeSpaceOf(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

async function sizeOf(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => -1,
  );
}

async function hashFile(path: string, hash: Hash): Promise<void> {
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
}

interface Opened {
  req: ClientRequest;
  res: IncomingMessage;
  /** The URL that answered (after redirects). */
  url: URL;
  /** The body, read from the moment the headers arrive (see `collect`). */
  body: AsyncGenerator<Buffer>;
}

const HIGH_WATER = 8 * 1024 * 1024;

/**
 * The response's chunks in order, then its error if any. Reading starts at once, in flowing mode,
 * because Node drops a paused response's buffered bytes when the connection breaks: here every
 * byte that arrived before a cut is still written, so the resume starts after it. Flow pauses
 * above 8 MiB not yet written.
 */
function collect(res: IncomingMessage): AsyncGenerator<Buffer> {
  const chunks: Buffer[] = [];
  let buffered = 0;
  let done = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const poke = () => {
    wake?.();
    wake = undefined;
  };
  res.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    buffered += chunk.length;
    if (buffered > HIGH_WATER) res.pause();
    poke();
  });
  res.on('end', () => {
    done = true;
    poke();
  });
  res.on('error', (err) => {
    failure ??= err;
    done = true;
    poke();
  });
  res.on('close', () => {
    if (!res.complete) failure ??= new Error('connection closed early');
    done = true;
    poke();
  });
  return (async function* () {
    for (;;) {
      const chunk = chunks.shift();
      if (chunk) {
        buffered -= chunk.length;
        if (buffered < HIGH_WATER / 2 && res.isPaused()) res.resume();
        yield chunk;
      } else if (done) {
        if (failure) throw failure;
        return;
      } else await new Promise<void>((resolve) => (wake = resolve));
    }
  })();
}

/** Sends a GET, follows redirects, and resolves with the response once its headers arrive. */
function open(
  url: string,
  headers: Record<string, string>,
  opts: {
    signal: AbortSignal | undefined;
    stallMs: number;
    redirectsLeft: number;
    original: string;
    hosts: HostPolicy;
  },
): Promise<Opened> {
  return new Promise((resolve, reject) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch (err) {
      return reject(downloadError(opts.original, `invalid URL ${showUrl(url)}`, err));
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      return reject(downloadError(opts.original, `unsupported protocol ${parsed.protocol}`));
    try {
      checkUrlHost(parsed, opts.hosts, opts.original);
    } catch (err) {
      return reject(err);
    }
    const get = parsed.protocol === 'https:' ? https.get : http.get;
    const lookup = guardedLookup(parsed, opts.hosts, opts.original);
    const req = get(parsed, {
      headers: { 'user-agent': 'voxd-installer', ...headers },
      ...(lookup ? { lookup: lookup as never } : {}),
    });
    const onAbort = () => req.destroy(opts.signal!.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const detach = () => opts.signal?.removeEventListener('abort', onAbort);
    // No answer within the stall timeout reads like any other missing answer.
    req.setTimeout(opts.stallMs, () => req.destroy(noAnswer(parsed)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      detach();
      reject(
        opts.signal?.aborted
          ? opts.signal.reason
          : err instanceof VoxdError
            ? err
            : err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN'
              ? unreachable(parsed, 'its name does not resolve (is this machine offline?)', err)
              : noAnswer(parsed, err),
      );
    });
    req.on('response', (res) => {
      detach();
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status) && res.headers.location) {
        res.resume();
        req.destroy();
        if (opts.redirectsLeft <= 0) return reject(downloadError(opts.original, 'too many redirects'));
        const next = new URL(res.headers.location, url).toString();
        open(next, headers, { ...opts, redirectsLeft: opts.redirectsLeft - 1 }).then(resolve, reject);
        return;
      }
      resolve({ req, res, url: parsed, body: collect(res) });
    });
  });
}

/** A body that passes the file's ceiling (max_download_bytes or the free space). */
class BoundError extends Error {
  constructor(readonly reached: number) {
    super(`the file would reach ${reached} bytes`);
  }
}

/**
 * Downloads `url` to `dest` (see the module comment). Errors are VoxdErrors: E_HOST_UNREACHABLE
 * (no HTTP answer, or a name that does not resolve), E_DOWNLOAD (an HTTP status, named; a cut
 * connection; a size or checksum mismatch, after which the partial file is deleted), E_DOWNLOAD_STALLED, E_INSUFFICIENT_STORAGE (not enough free space, ENOSPC),
 * E_PACKAGE_TOO_LARGE (past maxBytes); an abort rejects with the signal's reason. A cut or
 * stalled connection and an abort keep `<dest>.part` for the next attempt; a full disk or a
 * bound passed deletes it.
 */
export async function download(options: DownloadOptions): Promise<DownloadResult> {
  const { url, dest, signal } = options;
  const stallMs = options.stallTimeoutMs ?? 30_000;
  const freeSpace = options.freeSpace ?? freeSpaceOf;
  const expected = options.expectedSize ?? null;
  const want = options.sha256?.toLowerCase() ?? null;
  const part = partialPath(dest);
  const maxBytes = options.maxBytes ?? 0;
  signal?.throwIfAborted();
  if (maxBytes > 0 && expected !== null && expected > maxBytes)
    throw tooLarge(url, `its size ${expected} is past max_download_bytes (${maxBytes})`);
  // A file finished by an earlier attempt (its job failed later, or on another file) is kept.
  if ((await sizeOf(part)) === -1 && (await sizeOf(dest)) >= 0) {
    const hash = createHash('sha256');
    await hashFile(dest, hash);
    const size = await sizeOf(dest);
    const sha256 = hash.digest('hex');
    if ((expected === null || size === expected) && (want === null || sha256 === want))
      return { path: dest, size, sha256, resumedFrom: size };
    await unlink(dest);
  }

  let have = Math.max(0, await sizeOf(part));
  if (expected !== null && have > expected) {
    await unlink(part);
    have = 0;
  }
  const headers: Record<string, string> = have > 0 ? { range: `bytes=${have}-` } : {};
  const {
    req,
    res,
    url: answered,
    body,
  } = await open(url, headers, {
    signal,
    stallMs,
    redirectsLeft: options.maxRedirects ?? 5,
    original: url,
    hosts: options.hosts ?? PUBLIC_ONLY,
  });
  const status = res.statusCode ?? 0;
  let append = false;
  let total: number | null = expected;
  const length = Number(res.headers['content-length']);
  const knownLength = Number.isFinite(length) && res.headers['content-length'] !== undefined;
  if (status === 206 && have > 0) {
    const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers['content-range'] ?? '');
    if (!range || Number(range[1]) !== have) {
      req.destroy();
      await unlink(part).catch(() => {});
      throw downloadError(
        url,
        `the server answered a resume with a wrong Content-Range (${res.headers['content-range']})`,
      );
    }
    append = true;
    if (range[3] !== '*') total ??= Number(range[3]);
  } else if (status === 416 && have > 0) {
    // The partial may already be whole: "bytes */<size>" equal to what we have.
    res.resume();
    req.destroy();
    const whole = /^bytes \*\/(\d+)$/.exec(res.headers['content-range'] ?? '');
    if (whole && Number(whole[1]) === have) return finish(options, part, have, want, expected);
    await unlink(part).catch(() => {});
    return download(options);
  } else if (status === 200) {
    // A fresh download, or a server that ignores Range: either way from byte 0.
    if (knownLength) total ??= length;
    have = 0;
  } else {
    res.resume();
    req.destroy();
    throw statusError(url, answered, res);
  }
  if (knownLength && total !== null && (append ? have + length : length) !== total) {
    req.destroy();
    throw downloadError(url, `the server sends ${length} bytes, expected ${total - have}`);
  }

  if (maxBytes > 0 && total !== null && total > maxBytes) {
    req.destroy();
    await unlink(part).catch(() => {});
    throw tooLarge(url, `the server sends ${total} bytes, past max_download_bytes (${maxBytes})`);
  }
  const needed = knownLength ? length : total !== null ? total - have : 0;
  const free = await freeSpace(dirname(dest));
  if (needed > free) {
    req.destroy();
    throw new VoxdError(
      'E_INSUFFICIENT_STORAGE',
      `download of ${showUrl(url)} needs ${needed} bytes; ${dirname(dest)} has ${free} free`,
    );
  }
  // The most the file may reach: without a known length, what the disk had free (so a server
  // that sends without end stops before the disk is full) and max_download_bytes.
  const ceiling = Math.min(
    maxBytes > 0 ? maxBytes : Number.POSITIVE_INFINITY,
    total !== null ? Number.POSITIVE_INFINITY : have + free,
  );

  const hash = createHash('sha256');
  if (append) await hashFile(part, hash);
  let downloaded = have;
  options.onProgress?.(downloaded, total);
  const onAbort = () => res.destroy(signal!.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  // The socket's idle timeout guards the body too; its error is kept, as destroying the response
  // makes the pipeline fail with a plain "aborted".
  let stalled: VoxdError | undefined;
  req.removeAllListeners('timeout');
  req.setTimeout(stallMs, () => {
    stalled = new VoxdError(
      'E_DOWNLOAD_STALLED',
      `download of ${showUrl(url)} stalled: no data for ${stallMs} ms after ${downloaded} bytes`,
    );
    res.destroy(stalled);
  });
  // An abort during the awaits above found no listener yet.
  if (signal?.aborted) onAbort();
  // Each chunk is written before the next is read, so a cut connection keeps every byte received.
  let file: FileHandle | undefined;
  try {
    file = await fsOpen(part, append ? 'a' : 'w');
    for await (const chunk of body) {
      if (downloaded + chunk.length > ceiling) throw new BoundError(downloaded + chunk.length);
      await file.write(chunk);
      hash.update(chunk);
      downloaded += chunk.length;
      options.onProgress?.(downloaded, total);
    }
  } catch (err) {
    req.destroy();
    if (signal?.aborted) throw signal.reason;
    if (stalled) throw stalled;
    if (err instanceof BoundError || (err as NodeJS.ErrnoException).code === 'ENOSPC') {
      await file?.close().catch(() => {});
      file = undefined;
      await unlink(part).catch(() => {});
      if (err instanceof BoundError && maxBytes > 0 && ceiling === maxBytes)
        throw tooLarge(
          url,
          `it sends more than max_download_bytes (${maxBytes}); the partial file is deleted`,
        );
      throw new VoxdError(
        'E_INSUFFICIENT_STORAGE',
        err instanceof BoundError
          ? `download of ${showUrl(url)} sends more than the ${ceiling - have} bytes free in ${dirname(dest)}; the partial file is deleted`
          : `download of ${showUrl(url)}: the disk is full (ENOSPC); the partial file is deleted`,
        { cause: err },
      );
    }
    if (err instanceof VoxdError) throw err;
    throw downloadError(url, `connection lost after ${downloaded} bytes (${(err as Error).message})`, err);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await file?.close();
  }
  if (knownLength && downloaded !== (append ? have + length : length))
    throw downloadError(url, `connection closed after ${downloaded} bytes`);
  return finish(options, part, downloaded, want, expected, hash, have);
}

async function finish(
  options: DownloadOptions,
  part: string,
  size: number,
  want: string | null,
  expected: number | null,
  hash?: Hash,
  resumedFrom = size,
): Promise<DownloadResult> {
  const { url, dest } = options;
  if (!hash) {
    hash = createHash('sha256');
    await hashFile(part, hash);
  }
  const sha256 = hash.digest('hex');
  if (expected !== null && size !== expected) {
    await unlink(part).catch(() => {});
    throw downloadError(url, `size mismatch: got ${size} bytes, expected ${expected}`);
  }
  if (want !== null && sha256 !== want) {
    await unlink(part).catch(() => {});
    throw downloadError(url, `sha256 mismatch: got ${sha256}, expected ${want}`);
  }
  await rename(part, dest);
  return { path: dest, size, sha256, resumedFrom };
}
