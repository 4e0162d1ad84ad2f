/** The resident memory of another process, read at scrape time (Linux; 0 where /proc cannot tell). */
import { readFile } from 'node:fs/promises';

/**
 * VmRSS of `pid` in bytes, from /proc/<pid>/status (a few hundred bytes, read without blocking).
 * 0 for a process that ended between the listing and the read, or on a system without /proc: a
 * scrape never fails because a runner went away.
 */
export async function residentBytes(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'latin1');
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
    return kib === undefined ? 0 : Number(kib) * 1024;
  } catch {
    return 0;
  }
}
