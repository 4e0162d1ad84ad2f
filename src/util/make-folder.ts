/**
 * Makes a folder and its missing parents one level at a time with plain mkdir, for paths that a
 * client, an operator or a config names. Node 20's `mkdir(p, { recursive: true })` never returns
 * for some paths (`/proc/nope/x`: it retries ENOENT forever and spins a libuv thread, so every
 * later fs call queued behind that thread waits too); a plain mkdir answers at once. The number of
 * folders made is bounded, and the first refusal ends the walk with a message naming the level.
 *
 * @example
 * await makeFolder('/srv/voxd/models'); // makes /srv/voxd and /srv/voxd/models when missing
 */
import { lstat, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** Missing levels one call makes at most (a models root is rarely more than two below a folder). */
export const MAX_NEW_LEVELS = 16;

export class MakeFolderError extends Error {
  constructor(
    message: string,
    /** The errno code when mkdir or stat refused (ENOENT, EACCES, EEXIST...). */
    readonly errno?: string,
  ) {
    super(message);
    this.name = 'MakeFolderError';
  }
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code ?? 'error';

/**
 * Makes `target` (absolute, or resolved against the cwd) and its missing parents. Resolves when
 * it ends at a folder (a link to a folder counts: callers check where it really is); throws
 * MakeFolderError when a level exists but is no folder, a mkdir fails, or more than `maxNew`
 * levels are missing.
 */
export async function makeFolder(target: string, maxNew = MAX_NEW_LEVELS): Promise<void> {
  const wanted = path.resolve(target);
  const missing: string[] = [];
  let at = wanted;
  for (;;) {
    const info = await stat(at).catch((err: unknown) => err as NodeJS.ErrnoException);
    if (!(info instanceof Error)) {
      if (!info.isDirectory()) throw new MakeFolderError(`${at} exists and is not a folder`, 'ENOTDIR');
      break;
    }
    // A dangling link, a loop, a permission problem: not a missing level to make. (ENOTDIR: a
    // level above is a file; the walk up finds and names it.)
    const absent = info.code === 'ENOENT' || info.code === 'ENOTDIR';
    const entry =
      absent &&
      (await lstat(at).then(
        () => true,
        () => false,
      ));
    // A level that appeared between the two look-ups was made by someone else meanwhile (another
    // voxd starting on the same data folder): found, if it is a folder now.
    if (entry && (await isFolder(at))) break;
    if (!absent || entry) throw new MakeFolderError(`${at} cannot be read (${code(info)})`, code(info));
    missing.push(at);
    if (missing.length > maxNew)
      throw new MakeFolderError(`${wanted} would need more than ${maxNew} new folders`, 'ETOODEEP');
    const parent = path.dirname(at);
    if (parent === at) throw new MakeFolderError(`${at} does not exist`, 'ENOENT');
    at = parent;
  }
  for (const level of missing.reverse()) {
    try {
      await mkdir(level);
    } catch (err) {
      // Made meanwhile by someone else: fine if it is a folder now.
      if (code(err) === 'EEXIST' && (await isFolder(level))) continue;
      throw new MakeFolderError(`mkdir ${level} failed (${code(err)})`, code(err));
    }
  }
}

function isFolder(at: string): Promise<boolean> {
  return stat(at).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
