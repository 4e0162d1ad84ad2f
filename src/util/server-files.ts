/**
 * Server-local files that a request names (`audio`, `voice_ref`, path options). A client may read
 * only regular files under the configured file roots, compared after every symlink is resolved.
 * Every refusal is the same 403, whatever the reason (missing, a folder, a device, a FIFO, a
 * socket, outside the roots), so a client learns nothing about the server's files. Files are
 * opened non-blocking (see util/regular-file.ts), so no request can hold a file-I/O thread.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, resolve, sep } from 'node:path';
import { VoxdError } from '../errors.js';
import { openRegularFile, type RegularFile } from './regular-file.js';

export interface FileAccess {
  /** What a relative path resolves against (the config file's folder). */
  baseDir: string;
  /** Absolute folders with their symlinks resolved; empty: no server file may be named. */
  roots: readonly string[];
}

export function fileAccessOf(config: { base_dir: string; file_roots: readonly string[] }): FileAccess {
  return { baseDir: config.base_dir, roots: config.file_roots };
}

/** The one answer for a path a client may not read. */
export function forbiddenPath(field: string, roots: readonly string[]): VoxdError {
  const where =
    roots.length === 0
      ? 'this server has no file roots (set file_roots or --file-roots)'
      : `the file roots are ${roots.join(', ')}`;
  return new VoxdError(
    'E_FORBIDDEN',
    `${field}: a server-local file must be a readable regular file under a file root; ${where}`,
    { param: field },
  );
}

function isInside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/** The real path of a file under a file root, or the 403. */
export async function confinePath(raw: string, field: string, access: FileAccess): Promise<string> {
  const refuse = () => forbiddenPath(field, access.roots);
  if (access.roots.length === 0 || raw.length === 0 || raw.includes('\0')) throw refuse();
  let real: string;
  try {
    real = await realpath(isAbsolute(raw) ? raw : resolve(access.baseDir, raw));
  } catch {
    throw refuse();
  }
  if (!access.roots.some((root) => isInside(root, real))) throw refuse();
  return real;
}

/**
 * Opens a regular file. With `access`, the path must be under a file root (a client named it);
 * without, it is a path the operator configured (the voice library) and only the file checks apply.
 */
export async function openServerFile(
  raw: string,
  field: string,
  access: FileAccess | undefined,
): Promise<RegularFile> {
  const path = access ? await confinePath(raw, field, access) : raw;
  const file = await openRegularFile(path);
  if (file) return file;
  throw access
    ? forbiddenPath(field, access.roots)
    : new VoxdError('E_FORBIDDEN', `${field}: ${path} is not a readable regular file`, { param: field });
}

/** A path option an engine will open itself: confined, and a regular file now. */
export async function serverFilePath(raw: string, field: string, access: FileAccess): Promise<string> {
  const path = await confinePath(raw, field, access);
  const file = await openRegularFile(path);
  if (!file) throw forbiddenPath(field, access.roots);
  await file.handle.close();
  return path;
}
