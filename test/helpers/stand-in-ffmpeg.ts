/**
 * Stand-ins for ffmpeg, for tests that need one that hangs, makes nothing or waits for a gate, and
 * a count of the ffmpeg children a test server left running.
 */
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { tempDir } from './voxd.js';

/**
 * Writes a stand-in for ffmpeg: it answers voxd's startup probe (`-encoders`, with an MP3 encoder)
 * as ffmpeg does, then runs `work`, a shell script body, for any real job. Returns its path.
 */
export function standInFfmpeg(dir: string, name: string, work: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    `#!/bin/sh\ncase "$*" in *-encoders*) echo " A..... libmp3lame  MP3"; exit 0;; esac\n${work}\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

/**
 * A stand-in ffmpeg `name` (see standInFfmpeg) for the tests of a describe block: its scratch
 * folder (`dir` once the block's before hook ran) is made there and removed by its after hook.
 */
export function suiteStandInFfmpeg(prefix: string, name: string, work: string): { readonly dir: string } {
  const made = { dir: '' };
  before(() => {
    made.dir = tempDir(prefix);
    standInFfmpeg(made.dir, name, work);
  });
  after(() => rmSync(made.dir, { recursive: true, force: true }));
  return made;
}

/** Children of this process (a test server runs in it) whose command is one of `commands`. */
export function childrenNamed(commands: string[]): number {
  let count = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && commands.includes(comm)) count++;
    } catch {
      // the process ended while being read
    }
  }
  return count;
}
