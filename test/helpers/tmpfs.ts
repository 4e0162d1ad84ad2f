/**
 * A small real file system for disk-full tests: a tmpfs mounted on a fresh folder
 * (`mount -t tmpfs -o size=N`, which needs root, as CI and the dev machines run). Where mount is
 * refused, `mountTmpfs` returns the reason and the test skips, saying so.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Tmpfs {
  dir: string;
  /** Bytes free now. */
  free(): number;
  size: number;
  unmount(): void;
}

export function mountTmpfs(size: number): Tmpfs | string {
  const dir = mkdtempSync(join(tmpdir(), 'voxd-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `mount -t tmpfs refused here (${(err as Error).message.split('\n')[0]})`;
  }
  return {
    dir,
    size,
    free: () => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    },
    unmount: () => {
      execFileSync('umount', [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
