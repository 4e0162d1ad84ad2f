/**
 * Each runner process's own temporary folder, made by the server before the runner starts (it is
 * the runner's TMPDIR) and removed by the server when the runner exits, however it exits. An engine
 * that writes temporary files (flite writes each sentence's WAV to one) used to make and remove them
 * inside the runner; a cancelled request kills its runner mid-sentence, so the removal never ran and
 * every cancelled flite request left a `voxd-flite-*` folder behind, SIGTERM or not.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Folders of runners alive now, so an exit that cannot wait for their teardown still removes them. */
const live = new Set<string>();

/** A new folder for one runner (a few microseconds, as the fork that follows is synchronous too). */
export function makeRunnerTemp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'voxd-runner-'));
  live.add(dir);
  return dir;
}

/** Removes a runner's folder once it has exited; never fails. */
export async function removeRunnerTemp(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true }).catch(() => {});
  live.delete(dir);
}

/**
 * Removes every live runner's folder now, synchronously: for a process about to end at once (a
 * hard exit), after its runners were killed.
 */
export function removeRunnerTempsNow(): void {
  for (const dir of live) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Nothing more can be done on the way out.
    }
  }
  live.clear();
}
