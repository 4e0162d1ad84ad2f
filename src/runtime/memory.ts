/** Free host memory and model footprints, for the min_free_memory_mb guard. */
import { readdir, readFile, stat } from 'node:fs/promises';
import { freemem } from 'node:os';
import { join } from 'node:path';

/** Free memory in MiB: MemAvailable where Linux reports it (it counts reclaimable cache), else os.freemem(). */
export async function systemFreeMemoryMb(): Promise<number> {
  try {
    const match = /^MemAvailable:\s+(\d+) kB/m.exec(await readFile('/proc/meminfo', 'utf8'));
    if (match) return Number(match[1]) / 1024;
  } catch {
    // Not Linux: fall through.
  }
  return freemem() / (1024 * 1024);
}

const MAX_FILES = 10_000;

/** Bytes on disk of a model file or folder; undefined when the path does not exist. */
export async function diskFootprint(path: string): Promise<number | undefined> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch {
    return undefined;
  }
  if (!info.isDirectory()) return info.size;
  let total = 0;
  let seen = 0;
  const pending = [path];
  while (pending.length > 0 && seen < MAX_FILES) {
    const dir = pending.pop()!;
    for (const dirent of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, dirent.name);
      if (dirent.isDirectory()) pending.push(full);
      else if (dirent.isFile()) {
        total += (await stat(full)).size;
        seen++;
      }
    }
  }
  return total;
}
