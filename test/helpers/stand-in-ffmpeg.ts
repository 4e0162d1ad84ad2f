/**
 * A stand-in for ffmpeg, for tests that need one that hangs, makes nothing or waits for a gate:
 * it answers voxd's startup probe (`-encoders`, with an MP3 encoder) as ffmpeg does, then runs
 * `work`, a shell script body, for any real job. Returns its path.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function standInFfmpeg(dir: string, name: string, work: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    `#!/bin/sh\ncase "$*" in *-encoders*) echo " A..... libmp3lame  MP3"; exit 0;; esac\n${work}\n`,
  );
  chmodSync(path, 0o755);
  return path;
}
