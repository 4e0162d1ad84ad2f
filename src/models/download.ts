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

/** One download's options with their defaults applied. */
interface Job {
  options: DownloadOptions;
  url: string;
  dest: string;
  part: string;
  signal: AbortSignal | undefined;
  stallMs: number;
  expected: number | null;
  want: string | null;
  maxBytes: number;
}

/** What the server's answer means for the `.part` file. */
interface Answer {
  /** Whether the body continues the `.part` file (206) or replaces it. */
  append: boolean;
  /** Bytes of the `.part` file the body continues (0 unless appending). */
  have: number;
  /** The whole file's size, when known. */
  total: number | null;
  /** The body's Content-Length, when declared. */
  length: number | null;
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
  const job: Job = {
    options,
    url: options.url,
    dest: options.dest,
    part: partialPath(options.dest),
    signal: options.signal,
    stallMs: options.stallTimeoutMs ?? 30_000,
    expected: options.expectedSize ?? null,
    want: options.sha256?.toLowerCase() ?? null,
    maxBytes: options.maxBytes ?? 0,
  };
  job.signal?.throwIfAborted();
  if (job.maxBytes > 0 && job.expected !== null && job.expected > job.maxBytes)
    throw tooLarge(job.url, `its size ${job.expected} is past max_download_bytes (${job.maxBytes})`);
  const kept = await keptFile(job);
  if (kept !== undefined) return kept;
  const have = await partialSize(job);
  const opened = await open(job.url, have > 0 ? { range: `bytes=${have}-` } : {}, {
    signal: job.signal,
    stallMs: job.stallMs,
    redirectsLeft: options.maxRedirects ?? 5,
    original: job.url,
    hosts: options.hosts ?? PUBLIC_ONLY,
  });
  const answer = await readAnswer(job, opened, have);
  if (answer === 'whole') return finish(options, job.part, have, job.want, job.expected);
  if (answer === 'restart') return download(options);
  const ceiling = await room(job, opened.req, answer);
  const { downloaded, hash } = await receive(job, opened, answer, ceiling);
  if (answer.length !== null && downloaded !== answer.have + answer.length)
    throw downloadError(job.url, `connection closed after ${downloaded} bytes`);
  return finish(options, job.part, downloaded, job.want, job.expected, hash, answer.have);
}

/** A file finished by an earlier attempt (its job failed later, or on another file) is kept. */
async function keptFile({ part, dest, expected, want }: Job): Promise<DownloadResult | undefined> {
  if ((await sizeOf(part)) !== -1 || (await sizeOf(dest)) < 0) return undefined;
  const hash = createHash('sha256');
  await hashFile(dest, hash);
  const size = await sizeOf(dest);
  const sha256 = hash.digest('hex');
  if ((expected === null || size === expected) && (want === null || sha256 === want))
    return { path: dest, size, sha256, resumedFrom: size };
  await unlink(dest);
  return undefined;
}

/** Bytes of an earlier attempt's `.part` to resume from (one longer than the file is dropped). */
async function partialSize({ part, expected }: Job): Promise<number> {
  const have = Math.max(0, await sizeOf(part));
  if (expected === null || have <= expected) return have;
  await unlink(part);
  return 0;
}

/**
 * What the answer's status and headers say: a body to write (a resume's 206 or a whole 200), a
 * partial file that was whole already (416 with its size), or a partial file to drop and start over.
 */
async function readAnswer(
  { url, part, expected }: Job,
  { req, res, url: answered }: Opened,
  have: number,
): Promise<Answer | 'whole' | 'restart'> {
  const status = res.statusCode ?? 0;
  const declared = Number(res.headers['content-length']);
  const length = Number.isFinite(declared) && res.headers['content-length'] !== undefined ? declared : null;
  let answer: Answer;
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
    answer = { append: true, have, total: expected ?? (range[3] !== '*' ? Number(range[3]) : null), length };
  } else if (status === 416 && have > 0) {
    // The partial may already be whole: "bytes */<size>" equal to what we have.
    res.resume();
    req.destroy();
    const whole = /^bytes \*\/(\d+)$/.exec(res.headers['content-range'] ?? '');
    if (whole && Number(whole[1]) === have) return 'whole';
    await unlink(part).catch(() => {});
    return 'restart';
  } else if (status === 200) {
    // A fresh download, or a server that ignores Range: either way from byte 0.
    answer = { append: false, have: 0, total: expected ?? length, length };
  } else {
    res.resume();
    req.destroy();
    throw statusError(url, answered, res);
  }
  if (length !== null && answer.total !== null && answer.have + length !== answer.total) {
    req.destroy();
    throw downloadError(url, `the server sends ${length} bytes, expected ${answer.total - answer.have}`);
  }
  return answer;
}

/**
 * Checks the file fits (max_download_bytes, the free space) and returns the most it may reach:
 * without a known length, what the disk had free (so a server that sends without end stops
 * before the disk is full) and max_download_bytes.
 */
async function room({ options, url, dest, part, maxBytes }: Job, req: ClientRequest, answer: Answer) {
  const { total, have, length } = answer;
  if (maxBytes > 0 && total !== null && total > maxBytes) {
    req.destroy();
    await unlink(part).catch(() => {});
    throw tooLarge(url, `the server sends ${total} bytes, past max_download_bytes (${maxBytes})`);
  }
  const needed = length ?? (total !== null ? total - have : 0);
  const free = await (options.freeSpace ?? freeSpaceOf)(dirname(dest));
  if (needed > free) {
    req.destroy();
    throw new VoxdError(
      'E_INSUFFICIENT_STORAGE',
      `download of ${showUrl(url)} needs ${needed} bytes; ${dirname(dest)} has ${free} free`,
    );
  }
  return Math.min(
    maxBytes > 0 ? maxBytes : Number.POSITIVE_INFINITY,
    total !== null ? Number.POSITIVE_INFINITY : have + free,
  );
}

/**
 * Writes the body to the `.part` file, each chunk before the next is read, so a cut connection
 * keeps every byte received; stops at `ceiling`, on an abort, or when the body stalls.
 */
async function receive(
  job: Job,
  { req, res, body }: Opened,
  answer: Answer,
  ceiling: number,
): Promise<{ downloaded: number; hash: Hash }> {
  const { signal, stallMs, url, part, options } = job;
  const hash = createHash('sha256');
  if (answer.append) await hashFile(part, hash);
  let downloaded = answer.have;
  options.onProgress?.(downloaded, answer.total);
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
  // An abort during the awaits before this found no listener yet.
  if (signal?.aborted) onAbort();
  let file: FileHandle | undefined;
  try {
    file = await fsOpen(part, answer.append ? 'a' : 'w');
    for await (const chunk of body) {
      if (downloaded + chunk.length > ceiling) throw new BoundError(downloaded + chunk.length);
      await file.write(chunk);
      hash.update(chunk);
      downloaded += chunk.length;
      options.onProgress?.(downloaded, answer.total);
    }
  } catch (err) {
    req.destroy();
    if (signal?.aborted) throw signal.reason;
    if (stalled) throw stalled;
    if (err instanceof BoundError || (err as NodeJS.ErrnoException).code === 'ENOSPC') {
      await file?.close().catch(() => {});
      file = undefined;
      await unlink(part).catch(() => {});
      throw boundPassed(job, err, ceiling - answer.have, ceiling);
    }
    if (err instanceof VoxdError) throw err;
    throw downloadError(url, `connection lost after ${downloaded} bytes (${(err as Error).message})`, err);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await file?.close();
  }
  return { downloaded, hash };
}

/** The error of a body that passed its ceiling or filled the disk; its partial file is deleted already. */
function boundPassed({ url, dest, maxBytes }: Job, err: unknown, free: number, ceiling: number): VoxdError {
  if (err instanceof BoundError && maxBytes > 0 && ceiling === maxBytes)
    return tooLarge(url, `it sends more than max_download_bytes (${maxBytes}); the partial file is deleted`);
  return new VoxdError(
    'E_INSUFFICIENT_STORAGE',
    err instanceof BoundError
      ? `download of ${showUrl(url)} sends more than the ${free} bytes free in ${dirname(dest)}; the partial file is deleted`
      : `download of ${showUrl(url)}: the disk is full (ENOSPC); the partial file is deleted`,
    { cause: err },
  );
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
