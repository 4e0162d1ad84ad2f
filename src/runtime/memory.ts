/** Free host memory and model footprints, for the min_free_memory_mb guard. */
import { readdir, readFile, stat } from 'node:fs/promises';
import { freemem } from 'node:os';
import { join } from 'node:path';
import type { EngineFamily, LoadSpec } from '../engines/types.js';

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

/**
 * What one engine runner process costs besides its weights: a Node runtime with the engine's
 * library loaded (measured: 40-60 MB resident; docs/performance.md, "Shared weights").
 */
export const RUNNER_BYTES = 50 * 1024 * 1024;

/**
 * What each slot adds besides weights and runners: its calls' own buffers and activations
 * (measured: 6-8 MB a slot for a 300 MB NeMo CTC model shared by 4 slots; docs/performance.md).
 */
export const SLOT_BYTES = 10 * 1024 * 1024;

/**
 * Bytes of memory a load of `slots` sessions will take: the family's own estimate where it has
 * one, else the model's files once per copy of the weights, a runner process per copy, and a
 * slot's own share per slot. A shared engine (isolation "model") holds one copy whatever the
 * slots; isolation "session" holds one per slot. Undefined when unknown (no files to measure).
 */
export async function loadFootprint(
  family: EngineFamily,
  spec: LoadSpec,
  slots: number,
): Promise<number | undefined> {
  if (family.estimateFootprint) return family.estimateFootprint(spec, slots);
  const weights = await diskFootprint(spec.path);
  if (weights === undefined) return undefined;
  const copies = spec.isolation === 'session' ? slots : 1;
  return copies * (weights + RUNNER_BYTES) + slots * SLOT_BYTES;
}
