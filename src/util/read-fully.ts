/**
 * Reading a file region whole: one read may return fewer bytes than asked for, so each loops
 * until `into` is full or the file ends, and returns how many bytes it got (fewer only at the end).
 */
import { readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

export async function readFully(file: FileHandle, into: Uint8Array, position: number): Promise<number> {
  let got = 0;
  while (got < into.byteLength) {
    const { bytesRead } = await file.read(into, got, into.byteLength - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
}

/** The same, blocking: for a thread or a runner that does nothing else meanwhile. */
export function readFullySync(fd: number, into: Uint8Array, position: number): number {
  let got = 0;
  while (got < into.byteLength) {
    const n = readSync(fd, into, got, into.byteLength - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}
