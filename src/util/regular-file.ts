/**
 * Opening a file that must be a regular file, without ever blocking one of node's file-I/O
 * threads: O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer, and
 * fstat then refuses FIFOs, devices, sockets and folders before a byte is read.
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';

// O_NOFOLLOW: callers pass resolved paths, so a symlink swapped in since is refused, not followed.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY;

export interface RegularFile {
  handle: FileHandle;
  size: number;
}

/** The open file, or undefined when it cannot be opened or is not a regular file. */
export async function openRegularFile(path: string): Promise<RegularFile | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, OPEN_FLAGS);
  } catch {
    return undefined;
  }
  try {
    const stats = await handle.stat();
    if (stats.isFile()) return { handle, size: stats.size };
  } catch {
    // fall through: unreadable
  }
  await handle.close().catch(() => {});
  return undefined;
}
