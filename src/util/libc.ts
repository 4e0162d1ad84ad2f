/**
 * The few glibc functions node does not expose, bound once at import through koffi: when one is
 * needed the process may be out of file descriptors or memory, and loading a library then could
 * fail. Each is undefined where koffi, glibc or that function is missing (musl, another OS), and
 * every caller has a way on without it.
 */
import { createRequire } from 'node:module';

type Koffi = typeof import('koffi').default;

const libc = (() => {
  try {
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    return { koffi, lib: koffi.load('libc.so.6') };
  } catch {
    return undefined;
  }
})();

function bind<F>(declaration: string): F | undefined {
  try {
    return libc?.lib.func(declaration) as F | undefined;
  } catch {
    return undefined;
  }
}

/** Ends the process without joining libuv's threads (see hard-exit.ts). */
export const libcExit = bind<(code: number) => void>('void _exit(int status)');

/** Gives the allocator's free pages back to the system. */
export const mallocTrim = bind<(pad: number) => number>('int malloc_trim(size_t pad)');

/** Sets one of the allocator's parameters (<malloc.h> mallopt); 1 on success. */
export const mallopt = bind<(param: number, value: number) => number>('int mallopt(int param, int value)');
/** mallopt's parameter for the size from which blocks are mmapped (<malloc.h> M_MMAP_THRESHOLD). */
export const M_MMAP_THRESHOLD = -3;

/** What glibc's allocator holds, in bytes, over all its arenas. */
export interface MallocStats {
  /** Handed out and not yet freed: live native allocations, ArrayBuffer contents among them. */
  inUse: number;
  /** Freed and kept in the arenas for reuse; malloc_trim returns the whole pages among it. */
  free: number;
  /** Of `inUse`, the blocks mmapped on their own, which go back to the system when freed. */
  mapped: number;
}

const mallinfo2 = (() => {
  if (!libc) return undefined;
  try {
    // struct mallinfo2 of <malloc.h>: ten size_t fields, in this order.
    const struct = libc.koffi.struct('voxd_mallinfo2', {
      arena: 'size_t',
      ordblks: 'size_t',
      smblks: 'size_t',
      hblks: 'size_t',
      hblkhd: 'size_t',
      usmblks: 'size_t',
      fsmblks: 'size_t',
      uordblks: 'size_t',
      fordblks: 'size_t',
      keepcost: 'size_t',
    });
    return libc.lib.func('mallinfo2', struct, []) as () => Record<string, number | bigint>;
  } catch {
    return undefined;
  }
})();

/** The allocator's figures now (glibc 2.33 and later); undefined elsewhere. */
export function mallocStats(): MallocStats | undefined {
  if (!mallinfo2) return undefined;
  const m = mallinfo2();
  // Memory mmapped for large blocks (hblkhd) is in use until freed, and unmapped when it is.
  const mapped = Number(m['hblkhd']);
  return { inUse: Number(m['uordblks']) + mapped, free: Number(m['fordblks']), mapped };
}
